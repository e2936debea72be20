"""``bgc explain [ORDER] ATOM... -p POLICY``: every rule that touched an atom, and why."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from bgc.app.commands.io import Result
from bgc.errors import ExitCode, UsageError


def run(
    arguments: Sequence[str],
    *,
    policy: str | None = None,
    mode: str | None = None,
    input_format: str | None = None,
    output_format: str = "text",
    quiet: bool = False,
    color_choice: str = "auto",
) -> Result:
    """The rules that touched each atom, in precedence order, the result, what the other modes
    would give and, for a value no rule takes, the nearest rule and why it did not; ``quiet``:
    the results alone; ``output_format`` ``json``: one object for machines.

    ``arguments`` are atoms, optionally after the work order whose context they are asked in
    (``-``: stdin, format sniffed): the first argument is the order when it does not start as an
    atom does (``resource:action:``).
    Without an order no condition field is known, as for an ``expect`` without ``when``. Exit 0
    when every atom is granted as asked, 1 otherwise; a bad order, atom or policy raises (exit 2).
    """
    from bgc.app.commands import io
    from bgc.core.compiler import Compiler
    from bgc.core.compiler import explain as explain_atom
    from bgc.core.values.documents import load_order
    from bgc.core.values.model import GrantAtom, ModelError

    if output_format not in ("text", "json"):
        raise UsageError(f"unknown --format {output_format!r} (expected text or json)")
    order_path, atoms = _split(arguments)
    loaded, mode = io.load_policy(policy, mode)
    work_order = load_order(order_path, input_format) if order_path is not None else None
    requested = []
    for atom in atoms:
        try:
            requested.append(GrantAtom.parse(atom))
        except ModelError as error:
            raise UsageError(f"bad atom {atom!r}: {error.message}") from None
    compiler = Compiler(loaded)
    explanations = [explain_atom(compiler, work_order, atom, mode) for atom in requested]
    granted = all(explanation.result.verdict == "granted" for explanation in explanations)
    code = ExitCode.OK if granted else ExitCode.FINDINGS
    if output_format == "json":
        from bgc.app.render.plans import render_data

        data = {
            "policy": compiler.policy_id,
            "order": str(work_order.id()) if work_order is not None else None,
            "atoms": [explanation.to_data() for explanation in explanations],
        }
        return Result(code, render_data(data, "json"))
    from bgc.app.render import plans as render
    from bgc.app.render.color import use_color

    color = use_color(color_choice, sys.stdout)
    blocks = [
        render.render_lines(render.result_lines(explanation) if quiet else render.explanation_lines(explanation), color)
        for explanation in explanations
    ]
    return Result(code, ("" if quiet else "\n").join(blocks).encode())


_ATOM_LIKE = re.compile(r"[a-z*][a-z0-9_.*-]*:[a-z*][a-z0-9_.*-]*:")
"""How an atom starts (``resource:action:``): an argument that does is an atom, or a bad one."""


def _split(arguments: Sequence[str]) -> tuple[str | None, list[str]]:
    """The work order (None: none given) and the atoms: the first argument is the order when it
    does not start as an atom does (``-``, a path; a file whose name does is written ``./NAME``)."""
    if not arguments:
        raise UsageError("no atom to explain: bgc explain [ORDER] ATOM... -p POLICY")
    first, *rest = arguments
    if _ATOM_LIKE.match(first):
        return None, list(arguments)
    if not rest:
        raise UsageError(
            f"{first!r} is not an atom (resource:action:pattern) and no atom follows it",
            hint="bgc explain [ORDER] ATOM... -p POLICY: the order is optional; every other argument is an atom",
        )
    return first, rest
