"""``bgc explain ORDER ATOM -p POLICY``: every rule that touched an atom, and why."""

from __future__ import annotations

import sys

from bgc.app.commands.io import Result
from bgc.errors import ExitCode, UsageError


def run(
    order: str,
    atom: str,
    *,
    policy: str | None = None,
    mode: str | None = None,
    input_format: str | None = None,
    quiet: bool = False,
    color_choice: str = "auto",
) -> Result:
    """The rules that touched ``atom`` in ``order`` (``-``: stdin, format sniffed), in precedence
    order, the result, and what the other modes would give; ``quiet``: the result alone.

    Exit 0 when the atom is granted as asked, 1 otherwise; a bad order, atom or policy raises
    (exit 2).
    """
    from bgc.app.commands import io
    from bgc.core.compiler import Compiler
    from bgc.core.compiler import explain as explain_atom
    from bgc.core.values.documents import load_order
    from bgc.core.values.model import GrantAtom, ModelError
    from bgc.app.render import plans as render
    from bgc.app.render.color import use_color

    loaded, mode = io.load_policy(policy, mode)
    work_order = load_order(order, input_format)
    try:
        requested = GrantAtom.parse(atom)
    except ModelError as error:
        raise UsageError(f"bad atom {atom!r}: {error.message}") from None
    explanation = explain_atom(Compiler(loaded), work_order, requested, mode)
    lines = render.result_lines(explanation) if quiet else render.explanation_lines(explanation)
    text = render.render_lines(lines, use_color(color_choice, sys.stdout))
    return Result(ExitCode.OK if explanation.result.verdict == "granted" else ExitCode.FINDINGS, text.encode())
