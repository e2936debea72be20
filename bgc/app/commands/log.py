"""``bgc log show|verify|stats``: read the decision ledger (bgc/runtime/ledger.py) from a store.

Reading never changes the store. ``show`` and ``stats`` refuse to read a chain that does not
verify unless asked (``--no-verify``): a report built on edited entries would look like
evidence.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence

from bgc.app.commands.io import Result, lines_result, store_at
from bgc.errors import ExitCode, InputError, Span

FORMATS = ("text", "json", "opa")


def _entries(location: str, verify: bool):  # type: ignore[no-untyped-def]
    from bgc.runtime import ledger
    from bgc.runtime.store import StoreError

    store = store_at(location, create=False)
    try:
        rows = list(store.rows())
    except StoreError as error:
        raise InputError(str(error), Span(location)) from None
    finally:
        store.close()
    if verify:
        result = ledger.verify(rows)
        if result.problem is not None:
            raise InputError(
                f"the ledger does not verify: {result.problem.message} (run `bgc log verify`)", Span(location)
            )
    decoded = [ledger.decode_entry(*row) for row in rows]
    return [entry for entry in decoded if isinstance(entry, ledger.Entry)]


def show(
    location: str,
    *,
    output_format: str,
    verify: bool,
    session: str | None,
    rule: str | None,
    decision: str | None,
    kind: str | None,
    since: str | None,
    until: str | None,
) -> Result:
    """The entries that match every filter, oldest first, one line each."""
    from bgc.runtime import ledger
    from bgc.text import escape_field

    entries = ledger.matching(
        _entries(location, verify), session=session, rule=rule, decision=decision, kind=kind,
        since=_seconds(since, "--since"), until=_seconds(until, "--until"),
    )  # fmt: skip
    lines = []
    for entry in entries:
        if output_format == "json":
            lines.append(json.dumps(entry.to_data(), sort_keys=True, ensure_ascii=False))
        elif output_format == "opa":
            lines.append(json.dumps(ledger.opa_decision(entry), sort_keys=True, ensure_ascii=False))
        else:
            body = entry.body
            subject = body.get("atom") or (
                f"{body['tool']}@{body.get('server', '')}" if "tool" in body else body.get("request", "-")
            )
            fields = [
                str(entry.seq),
                _iso(body["time"]),
                body["kind"],
                body["decision"],
                subject,
                ", ".join(body["rules"]) if body.get("rules") else body.get("rule", "-"),
            ]
            if body.get("approvers"):
                fields.append("approved by " + ", ".join(body["approvers"]))
            lines.append("\t".join(escape_field(str(field)) for field in fields))
    return lines_result(ExitCode.OK, lines)


def verify(location: str, expect_head: str | None) -> Result:
    """0 and the head when every entry holds; 1 and the first problem otherwise."""
    from bgc.runtime import ledger
    from bgc.runtime.store import StoreError

    store = store_at(location, create=False)
    try:
        result = ledger.verify(store.rows(), expect_head)
    except StoreError as error:
        raise InputError(str(error), Span(location)) from None
    finally:
        store.close()
    if result.problem is None:
        return lines_result(ExitCode.OK, [f"ledger ok: {result.entries} entries, head {result.head}"])
    return lines_result(
        ExitCode.FINDINGS,
        [
            f"ledger broken: {result.problem.message}",
            f"the first {result.entries} entries hold (head {result.head})",
        ],
    )


def stats(location: str, *, policy: str | None, verify: bool, output_format: str) -> Result:
    """Hits per rule and decision; with a policy, its rules that never decided anything too."""
    from bgc.runtime import ledger

    rules: Sequence[str] = ()
    if policy is not None:
        from bgc.app.commands import io
        from bgc.core.compiler import rule_ref

        loaded, _ = io.load_policy(policy, None)
        rules = [str(rule_ref(loaded, rule)) for rule in loaded.rules]
    counts = ledger.per_rule(_entries(location, verify), rules)
    if output_format == "json":
        return lines_result(ExitCode.OK, [json.dumps(counts, sort_keys=True)])
    lines = []
    for rule, by_decision in sorted(counts.items(), key=lambda item: (-sum(item[1].values()), item[0])):
        hits = ", ".join(f"{decision} {count}" for decision, count in sorted(by_decision.items())) or "never fired"
        lines.append(f"{rule}\t{sum(by_decision.values())}\t{hits}")
    return lines_result(ExitCode.OK, lines)


def _iso(seconds: int) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(text: str | None, option: str) -> int | None:
    """An ISO 8601 time (``2026-11-30T12:00:00Z``, a date alone) or epoch seconds."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    from bgc.errors import UsageError

    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{option} {text!r} is not a time: write 2026-11-30, 2026-11-30T12:00:00Z or epoch seconds"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return int(parsed.timestamp())
