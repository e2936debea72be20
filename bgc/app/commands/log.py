"""``bgc log show|verify|stats|checkpoint``: read the decision ledger (bgc/runtime/ledger.py) from
a store, and sign checkpoints of it.

Reading never changes the store. ``show`` and ``stats`` refuse to read a chain that does not
verify unless asked (``--no-verify``): a report built on edited entries would look like
evidence.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence

from bgc.app.commands.io import Result, lines_result, store_at
from bgc.errors import ExitCode, InputError, Span, UsageError

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


def verify(
    location: str,
    expect_head: str | None,
    *,
    signers: Sequence[str] = (),
    checkpoints: Sequence[str] = (),
    entries: Sequence[str] = (),
) -> Result:
    """0 and the head when every entry holds (signed by one of ``signers`` when given), every
    checkpoint file is a prefix of the chain and every entry id lies inside the newest one; 1 and
    the first problem otherwise."""
    from bgc.runtime import ledger
    from bgc.runtime.store import StoreError

    if checkpoints and not signers:
        raise UsageError("--checkpoint needs --signer: a checkpoint proves something only when its key is trusted")
    trusted = [_public(signer) for signer in signers]
    kept = [_checkpoint(path, trusted) for path in checkpoints]
    store = store_at(location, create=False)
    try:
        result = ledger.verify(store.rows(), expect_head, signers=trusted, checkpoints=kept, entries=entries)
    except StoreError as error:
        raise InputError(str(error), Span(location)) from None
    finally:
        store.close()
    if result.problem is None:
        proven = [f"ledger ok: {result.entries} entries, head {result.head}"]
        proven += [f"checkpoint {checkpoint.seq} ({checkpoint.described()}) is a prefix of it" for checkpoint in kept]
        proven += [f"entry {entry} is in it" for entry in entries]
        return lines_result(ExitCode.OK, proven)
    return lines_result(
        ExitCode.FINDINGS,
        [
            f"ledger broken: {result.problem.message}",
            f"the first {result.entries} entries hold (head {result.head})",
        ],
    )


def _public(signer: str):  # type: ignore[no-untyped-def]
    """A trusted key given as ``ed25519:…`` text, a .pub/.key file, or a key name in .bgc/keys."""
    from bgc.app.commands.key import resolve
    from bgc.runtime.kernel.keys import PUBLIC_PREFIX, load_public

    return load_public(signer if signer.startswith(PUBLIC_PREFIX) else resolve(signer, private=False))


def _checkpoint(path: str, trusted: Sequence[object]):  # type: ignore[no-untyped-def]
    from bgc.core.values.files import read_bounded
    from bgc.runtime import ledger

    data = read_bounded(path, error=InputError)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"a checkpoint is UTF-8 JSON; byte {error.start} is not UTF-8", Span(path)) from None
    read = ledger.read_checkpoint(text, trusted)  # type: ignore[arg-type]
    if isinstance(read, str):
        raise InputError(f"not a checkpoint this ledger can use: {read}", Span(path, 1, 1))
    return read


def checkpoint(location: str, *, key_path: str, signers: Sequence[str], output: str | None) -> Result:
    """Sign the head of a chain that verifies (with ``signers``: whose entries are all signed by
    them): the checkpoint ``bgc log verify --checkpoint`` later checks today's chain against."""
    import time

    from bgc.app.commands.key import resolve
    from bgc.runtime import ledger
    from bgc.runtime.kernel.keys import load_private
    from bgc.runtime.store import StoreError

    key = load_private(resolve(key_path, private=True))
    trusted = [_public(signer) for signer in signers]
    store = store_at(location, create=False)
    try:
        result = ledger.verify(store.rows(), signers=trusted)
    except StoreError as error:
        raise InputError(str(error), Span(location)) from None
    finally:
        store.close()
    if result.problem is not None:
        raise InputError(f"the ledger does not verify, so it is not checkpointed: {result.problem.message}", Span(location))
    text = ledger.sign_checkpoint(result, key, int(time.time())).to_text()
    if output is None:
        return lines_result(ExitCode.OK, [text])
    return Result(ExitCode.OK, f"checkpoint of entry {result.entries} written to {output}\n".encode(),
                  files=((output, (text + "\n").encode()),))  # fmt: skip


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
