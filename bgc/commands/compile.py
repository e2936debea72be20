"""``bgc compile ORDER... -p POLICY``: work orders into granted plans, asked vs granted."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bgc.commands.io import Result


def run(
    orders: Sequence[str],
    *,
    policy: str | None = None,
    mode: str | None = None,
    output_format: str = "text",
    output: str | None = None,
    fail_on: str = "narrowed",
    input_format: str | None = None,
    quiet: bool = False,
    color_choice: str = "auto",
) -> Result:
    """Compile every order against one policy (one compiler: shared answers), then render, to
    ``output`` when given, else to stdout (nothing with ``quiet``: the exit code answers).

    Exit 0 when everything was granted as asked and every call is covered, 1 at ``fail_on`` or
    worse; a bad order or policy raises (exit 2) before anything is written.
    """
    from bgc.commands import io
    from bgc.compiler import Compiler
    from bgc.documents import load_order
    from bgc.render import plans as render
    from bgc.render.color import use_color

    loaded, mode = io.load_policy(policy, mode)
    compiler = Compiler(loaded)
    plans = [(compiler.compile(load_order(path, input_format), mode), path) for path in orders]
    if output_format == "text":
        data = render.render_text(plans, output is None and use_color(color_choice, sys.stdout)).encode()
    elif output_format in ("sarif", "github"):
        from bgc.config import repository_root
        from bgc.outcomes import render_plans

        data = render_plans(plans, output_format, fail_on=fail_on, root=repository_root()).encode()
    else:
        data = render.render_data(render.plans_data([plan for plan, _ in plans]), output_format)
    code = io.plan_exit_code([plan for plan, _ in plans], fail_on)
    if output is not None:
        return Result(code, files=((output, data),))
    return Result(code, b"" if quiet else data)
