"""``bgc gate PLAN [ATOM...]``: decide concrete atoms against a plan, one line each."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bgc.app.render.color import use_color
from bgc.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from bgc.core.plan import Plan

EFFECT_CODES = {"allow": ExitCode.OK, "ask": ExitCode.ASK, "deny": ExitCode.DENIED}
"""A decision's exit code; the worst over all atoms is the command's (deny > ask > allow). An
effect not listed counts as denied (fail closed)."""


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
    ledger: str | None = None,
) -> ExitCode:
    """Read and pin the plan, then decide each atom (from ``atoms``, else stdin's lines), writing
    each answer as soon as it is decided (an enforcer reading line by line waits for it).

    Nothing is decided when the plan, a pin or ``root`` is bad (exit 2). Otherwise the exit code
    is the worst answer: 0 when every atom was allowed, :attr:`ExitCode.ASK` when some await a
    human and none is denied, :attr:`ExitCode.DENIED` when any is denied. ``quiet`` prints
    nothing: the exit code alone answers. With ``call``, stdin's lines are tool calls as JSON
    objects instead, each decided through the tool declarations the plans carry (:mod:`bgc.runtime.calls`).
    With ``ledger`` (a store), every decision is also appended to the ledger there; one that
    cannot be recorded is answered deny.
    """
    from bgc.core.values.canonical import Digest
    from bgc.app.commands import io
    from bgc.core.plan import read_plans
    from bgc.core.values.schema import ModelError

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
    store = io.open_ledger(ledger)
    try:
        if call:
            if atoms:
                raise UsageError("--call reads calls as JSON lines on stdin: give no ATOM arguments")
            return _decide_calls(plans, root, output_format, quiet, store)
        return _decide_atoms(plans, atoms, root, output_format, quiet, color_choice, store)
    finally:
        if store is not None:
            store.close()


def _decide_atoms(
    plans: Sequence[Plan], atoms: Sequence[str], root: str | None, output_format: str, quiet: bool,
    color_choice: str, store: object,
) -> ExitCode:  # fmt: skip
    from bgc.app.commands import io
    from bgc.core.gate import Gate

    checker = Gate(plans, root)
    record = _recorder(plans, store)
    texts = list(atoms) if atoms else [line for line in io.stdin_lines() if line.strip()]
    if not texts:
        raise UsageError("no atoms to decide: give ATOM arguments or lines on stdin")
    color = output_format == "text" and use_color(color_choice, sys.stdout)
    if output_format == "json":
        import json

        def line(atom: str, decision, _color: bool) -> str:  # type: ignore[no-untyped-def]
            return json.dumps(decision.to_data(atom), sort_keys=True)
    else:
        from bgc.app.render.gate import gate_line as line
    worst = ExitCode.OK
    for text in texts:
        decision = checker.hinted(text, checker.decide(text))
        if record is not None:
            decision = record(text, decision)
        worst = max(worst, EFFECT_CODES.get(decision.effect, ExitCode.DENIED))
        if not quiet:
            io.write_line(line(text, decision, color))
    return worst


def _recorder(plans: Sequence[Plan], store: object):  # type: ignore[no-untyped-def]
    """What appends an atom's decision to the ledger and returns it (deny when unrecorded)."""
    if store is None:
        return None
    import time

    from bgc.runtime import ledger

    plan_id = ",".join(str(plan.id()) for plan in plans)

    def record(atom, decision):  # type: ignore[no-untyped-def]
        rule = str(decision.rule) if decision.rule is not None else None
        entry = ledger.Record("gate", decision.effect, int(time.time()), plan=plan_id, atom=atom, rule=rule,
                              reason=decision.reason or None, rules=tuple(map(str, decision.asked_by)))  # fmt: skip
        try:
            ledger.append(store, entry)
        except Exception as error:  # noqa: BLE001 - a decision that cannot be recorded is not allowed
            return decision._replace(effect="deny", reason=f"the decision could not be recorded: {error}")
        return decision

    return record


def _decide_calls(plans: Sequence[Plan], root: str | None, output_format: str, quiet: bool, store: object) -> ExitCode:
    """One answer line per JSON line on stdin: a line that is not a call is denied, with why."""
    import json

    from bgc.app.commands import io
    from bgc.core.values.documents import parse_document
    from bgc.errors import BgcError
    from bgc.runtime.calls import CallDecision, call_from_data
    from bgc.runtime.session import plans_session
    from bgc.text import escape_field

    session = plans_session("gate", plans, root=root, store=store, settle=False)  # type: ignore[arg-type]  # a Store or None
    worst, seen = ExitCode.OK, False
    for number, text in enumerate(io.stdin_lines(), 1):
        if not text.strip():
            continue
        seen = True
        try:
            document = parse_document(text.encode("utf-8", "surrogateescape"), "<stdin>", "json")
            tool, server, params = document.build(call_from_data)
            decision = session.decider.decide_call(tool, server, params)
            if store is not None:
                enforced = session.enforce(decision, params)
                if enforced.effect != decision.effect:  # it could not be recorded
                    decision = decision._replace(effect=enforced.effect, reason=enforced.reason)
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
