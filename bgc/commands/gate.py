"""``bgc gate PLAN [ATOM...]``: decide concrete atoms against a plan, one line each."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bgc.errors import ExitCode, UsageError
from bgc.render.color import use_color

EFFECT_CODES = {"allow": ExitCode.OK, "ask": ExitCode.ASK, "deny": ExitCode.DENIED}
"""A decision's exit code; the worst over all atoms is the command's (deny > ask > allow). An
effect not listed counts as denied (fail closed)."""

if TYPE_CHECKING:
    from bgc.plan import Plan


def run(
    plan: str,
    atoms: Sequence[str],
    *,
    root: str | None = None,
    output_format: str = "text",
    input_format: str | None = None,
    policy: str | None = None,
    expect_plan: Sequence[str] = (),
    quiet: bool = False,
    color_choice: str = "auto",
    call: bool = False,
) -> ExitCode:
    """Read and pin the plan, then decide each atom (from ``atoms``, else stdin's lines), writing
    each answer as soon as it is decided (an enforcer reading line by line waits for it).

    Nothing is decided when the plan, a pin or ``root`` is bad (exit 2). Otherwise the exit code
    is the worst answer: 0 when every atom was allowed, :attr:`ExitCode.ASK` when some await a
    human and none is denied, :attr:`ExitCode.DENIED` when any is denied. ``quiet`` prints
    nothing: the exit code alone answers. With ``call``, stdin's lines are tool calls as JSON
    objects instead, each decided through the tool declarations the plans carry (:mod:`bgc.calls`).
    """
    from bgc.commands import io
    from bgc.model import Digest, ModelError
    from bgc.plan import Gate, read_plans

    if root is not None and not os.path.isdir(root):
        raise UsageError(f"--root {root!r} is not a directory")
    if plan == "-" and not atoms:
        raise UsageError("the plan is read from stdin, so the atoms must be given as arguments")
    try:
        pinned = [Digest(text) for text in expect_plan]
    except ModelError as error:
        raise UsageError(f"--expect-plan: {error.message}") from None
    from_policy = Digest(io.load_policy(policy, None)[0].id()) if policy is not None else None
    plans = read_plans(plan, input_format, expect_policy=from_policy, expect_plans=pinned)
    if call:
        if atoms:
            raise UsageError("--call reads calls as JSON lines on stdin: give no ATOM arguments")
        return _decide_calls(plans, root, output_format, quiet)
    checker = Gate(plans, root)
    texts = list(atoms) if atoms else [line for line in io.stdin_lines() if line.strip()]
    if not texts:
        raise UsageError("no atoms to decide: give ATOM arguments or lines on stdin")
    color = output_format == "text" and use_color(color_choice, sys.stdout)
    if output_format == "json":
        import json

        def line(decision, _color: bool) -> str:  # type: ignore[no-untyped-def]
            return json.dumps(decision.to_data(), sort_keys=True)
    else:
        from bgc.render.gate import gate_line as line
    worst = ExitCode.OK
    for text in texts:
        decision = checker.decide(text)
        worst = max(worst, EFFECT_CODES.get(decision.effect, ExitCode.DENIED))
        if not quiet:
            io.write_line(line(decision, color))
    return worst


def _decide_calls(plans: Sequence[Plan], root: str | None, output_format: str, quiet: bool) -> ExitCode:
    """One answer line per JSON line on stdin: a line that is not a call is denied, with why."""
    import json

    from bgc.calls import CallDecider, CallDecision, call_from_data
    from bgc.commands import io
    from bgc.documents import parse_document
    from bgc.errors import BgcError
    from bgc.render.fields import escape_field

    decider = CallDecider(plans, root)
    worst, seen = ExitCode.OK, False
    for number, text in enumerate(io.stdin_lines(), 1):
        if not text.strip():
            continue
        seen = True
        try:
            document = parse_document(text.encode("utf-8", "surrogateescape"), "<stdin>", "json")
            tool, server, params = document.build(call_from_data)
            decision = decider.decide_call(tool, server, params)
        except BgcError as error:
            where = f"<stdin>:{number}:{error.span.col or 1}" if error.span is not None else f"<stdin>:{number}"
            decision = CallDecision("?", "?", "deny", f"not a call: {where}: {error.message}", declared=False)
        worst = max(worst, EFFECT_CODES.get(decision.effect, ExitCode.DENIED))
        if quiet:
            continue
        if output_format == "json":
            io.write_line(json.dumps(decision.to_data(), sort_keys=True, ensure_ascii=False))
        else:
            fields = (decision.effect, f"{decision.tool}@{decision.server}", decision.explanation())
            io.write_line("\t".join(escape_field(field) for field in fields))
    if not seen:
        raise UsageError("no calls to decide: give JSON lines on stdin")
    return worst
