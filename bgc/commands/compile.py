"""``bgc compile ORDER... -p POLICY``: work orders into granted plans, asked vs granted."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bgc.commands.io import Result

if TYPE_CHECKING:
    from bgc.plan import Plan


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
    ledger: str | None = None,
) -> Result:
    """Compile every order against one policy (one compiler: shared answers), then render, to
    ``output`` when given, else to stdout (nothing with ``quiet``: the exit code answers).

    Exit 0 when everything was granted as asked and every call is covered, 1 at ``fail_on`` or
    worse; a bad order or policy raises (exit 2) before anything is written. With ``ledger`` (a
    store), every request's verdict is appended to the ledger there first; a store that cannot
    record is exit 2, and nothing is written.
    """
    from bgc.answer_cache import kept_answers
    from bgc.commands import io
    from bgc.compiler import Compiler
    from bgc.documents import load_order
    from bgc.render import plans as render
    from bgc.render.color import use_color

    loaded, mode = io.load_policy(policy, mode)
    compiler = Compiler(loaded)
    with kept_answers(loaded.path):  # the algebra's answers from earlier compiles, and this one's for later ones
        plans = [(compiler.compile(load_order(path, input_format), mode), path) for path in orders]
    if ledger is not None:
        _record(ledger, [plan for plan, _ in plans], loaded.id())
    if output_format == "text":
        data = render.render_text(plans, output is None and use_color(color_choice, sys.stdout)).encode()
    elif output_format in ("sarif", "github"):
        from bgc.config import repository_root
        from bgc.documents import read_document
        from bgc.outcomes import plan_findings
        from bgc.render.machine import render as render_findings

        # the plans' findings, located in their order files
        findings = [f for plan, path in plans for f in plan_findings(plan, read_document(path), fail_on)]
        data = render_findings(findings, output_format, root=repository_root()).encode()
    else:
        data = render.render_data(render.plans_data([plan for plan, _ in plans]), output_format)
    code = io.plan_exit_code([plan for plan, _ in plans], fail_on)
    if output is not None:
        return Result(code, files=((output, data),))
    return Result(code, b"" if quiet else data)


def _record(location: str, plans: Sequence[Plan], policy_id: str) -> None:
    """One ledger entry per requested atom: its verdict and the rules that decided it."""
    import time

    from bgc import ledger
    from bgc.commands import io
    from bgc.errors import InputError, Span
    from bgc.store import StoreError

    store = io.open_ledger(location)
    now = int(time.time())
    try:
        for plan in plans:
            plan_id = str(plan.id())
            for request in plan.requests:
                rules = tuple(str(rule) for rule in request.rules)
                ledger.append(store, ledger.Record(
                    "compile", request.verdict, now, order=plan.order, plan=plan_id, policy=policy_id,
                    **ledger.subjects((request.atom,), rules),
                ))  # fmt: skip
    except StoreError as error:
        raise InputError(str(error), Span(location)) from None
    finally:
        store.close()
