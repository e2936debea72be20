"""``bgc gate PLAN [ATOM...]``: decide concrete atoms against a plan, one line each."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bgc.errors import ExitCode, UsageError

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
    call: bool = False,
) -> ExitCode:
    """Read and pin the plan, then decide each atom (from ``atoms``, else stdin's lines).

    Nothing is decided when the plan, a pin or ``root`` is bad (exit 2); 0 when every atom was
    allowed, 1 otherwise. With ``call``, stdin's lines are tool calls as JSON objects instead,
    each decided through the tool declarations the plans carry (:mod:`bgc.calls`).
    """
    from bgc.commands import io
    from bgc.documents import read_document
    from bgc.model import Digest, ModelError
    from bgc.plan import Gate, plans_from_data

    if root is not None and not os.path.isdir(root):
        raise UsageError(f"--root {root!r} is not a directory")
    if plan == "-" and not atoms:
        raise UsageError("the plan is read from stdin, so the atoms must be given as arguments")
    try:
        pinned = [Digest(text) for text in expect_plan]
    except ModelError as error:
        raise UsageError(f"--expect-plan: {error.message}") from None
    from_policy = Digest(io.load_policy(policy, None)[0].id()) if policy is not None else None
    document = read_document(plan, input_format)
    plans = document.build(lambda data: plans_from_data(data, expect_policy=from_policy, expect_plans=pinned))
    if call:
        if atoms:
            raise UsageError("--call reads calls as JSON lines on stdin: give no ATOM arguments")
        return _decide_calls(plans, root, output_format)
    checker = Gate(plans, root)
    texts = list(atoms) if atoms else [line for line in io.stdin_lines() if line.strip()]
    if not texts:
        raise UsageError("no atoms to decide: give ATOM arguments or lines on stdin")
    if output_format == "json":
        import json

        def line(decision) -> str:  # type: ignore[no-untyped-def]
            return json.dumps(decision.to_data(), sort_keys=True)
    else:
        from bgc.render.fields import gate_line as line
    allowed = True
    for text in texts:
        decision = checker.decide(text)
        allowed &= decision.effect == "allow"
        io.write_line(line(decision))
    return ExitCode.OK if allowed else ExitCode.FINDINGS


def _decide_calls(plans: Sequence[Plan], root: str | None, output_format: str) -> ExitCode:
    """One answer line per JSON line on stdin: a line that is not a call is denied, with why."""
    import json

    from bgc.calls import CallDecider, CallDecision, call_from_data
    from bgc.commands import io
    from bgc.documents import parse_document
    from bgc.errors import BgcError
    from bgc.render.fields import escape_field

    decider = CallDecider(plans, root)
    allowed, seen = True, False
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
        allowed &= decision.effect == "allow"
        if output_format == "json":
            io.write_line(json.dumps(decision.to_data(), sort_keys=True, ensure_ascii=False))
        else:
            fields = (decision.effect, f"{decision.tool}@{decision.server}", decision.explanation())
            io.write_line("\t".join(escape_field(field) for field in fields))
    if not seen:
        raise UsageError("no calls to decide: give JSON lines on stdin")
    return ExitCode.OK if allowed else ExitCode.FINDINGS
