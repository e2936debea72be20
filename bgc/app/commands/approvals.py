"""``bgc pending``, ``bgc approve``, ``bgc reject``, ``bgc cancel``: people answering ``ask``.

Every answer and cancellation is also appended to the ledger (bgc/runtime/ledger.py) in the same store.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from bgc.app.commands.io import Result, lines_result, store_at
from bgc.errors import ExitCode, UsageError


def _trusted(policy: str | None) -> dict[str, Any]:
    from bgc.runtime.approvals import trusted_approvers
    from bgc.app.commands import io

    loaded, _ = io.load_policy(policy, None)
    return trusted_approvers(loaded.trust)


def _request(store: Any, request_id: str) -> tuple[Any, int | None]:
    from bgc.runtime.approvals import load_request

    loaded = load_request(store, request_id)
    if loaded is None:
        raise UsageError(f"no permission request {request_id} in this store (bgc pending lists them)")
    return loaded


def pending(location: str, *, policy: str | None, output_format: str, everything: bool) -> Result:
    """Live requests (``everything``: also answered, cancelled and expired ones that are kept)."""
    from bgc.runtime.approvals import load_request, stored_standing
    from bgc.text import escape_field

    trusted = _trusted(policy)
    now = int(time.time())
    store = store_at(location, create=False)
    lines = []
    try:
        for request_id, _, _ in store.requests(0 if everything else now):
            loaded = load_request(store, request_id)
            if loaded is None:
                lines.append(f"{request_id}\tunreadable: edited in the store")
                continue
            request, cancelled = loaded
            result = stored_standing(store, request, cancelled, trusted, now)
            if not everything and result.state != "pending":
                continue
            if output_format == "json":
                data = {"id": request_id, "state": result.state, "standing": result.describe(request), **request.body()}
                lines.append(json.dumps(data, sort_keys=True, ensure_ascii=False))
            else:
                fields = [request_id, result.state, f"{request.tool}@{request.server}", request.summary,
                          ", ".join(request.atoms), f"{request.rule} needs {request.needs()}", result.describe(request)]  # fmt: skip
                lines.append("\t".join(escape_field(field) for field in fields))
    finally:
        store.close()
    return lines_result(ExitCode.OK, lines)


def answer(location: str, request_id: str, decision: str, *, key_path: str, approver: str | None,
           policy: str | None, suggest: bool, carry: bool = False) -> Result:  # fmt: skip
    """Sign ``decision`` (allow-once or reject) for one request with the approver's key; with
    ``carry``, also print it as the approval token an agent carries to the kernel."""
    from bgc.runtime.approvals import suggest_rule

    trusted = _trusted(policy)
    key, name = approver_key(key_path, approver, trusted)
    store = store_at(location, create=False)
    try:
        given = sign_and_record(store, request_id, decision, key, name, trusted)
    finally:
        store.close()
    request, result, signed = given.request, given.standing, given.answer
    lines = [
        f"{request_id}: {decision} by {name}"
        + ("" if given.kept else " (already recorded)")
        + f"; now {result.describe(request)}"
    ]
    if suggest:
        lines.append(suggest_rule(request, name))
    if carry:
        from bgc.runtime.kernel.keys import b64url

        token = {"approver": name, "intent": request_id, "time": signed.time, "signature": b64url(signed.signature)}
        lines.append(json.dumps(token, sort_keys=True))
    return lines_result(ExitCode.OK, lines)


def approver_key(key_path: str, approver: str | None, trusted: dict[str, Any]) -> tuple[Any, str]:
    """The approver's private key and name, refused unless the policy trusts that key for that
    name (an answer signed with it would never count)."""
    from bgc.app.commands.key import resolve
    from bgc.runtime.kernel.keys import load_private

    key = load_private(resolve(key_path, private=True))
    name = approver or key.name
    if trusted.get(name) is None or trusted[name].text != key.public.text:
        raise UsageError(
            f"the policy trusts no key {key.public.text} for approver {name!r}: an answer signed with it would "
            "never count (add `trust approver NAME KEY` to the policy, or pass --as NAME)"
        )
    return key, name


@dataclass(frozen=True, slots=True)
class Given:
    """An answer signed and kept: the request, where it stands now, the answer, and whether it
    was new (an approver's second answer of the same kind is not kept)."""

    request: Any
    standing: Any
    answer: Any
    kept: bool


def sign_and_record(store: Any, request_id: str, decision: str, key: Any, name: str, trusted: dict[str, Any]) -> Given:
    """Sign ``decision`` for a live request, keep it in the store and the ledger: the one way
    an answer is given, whether by ``bgc approve``/``bgc reject`` or ``bgc approvals serve``."""
    from bgc.runtime import ledger
    from bgc.runtime.approvals import encode_answer, sign_answer, stored_standing

    request, cancelled = _request(store, request_id)
    now = int(time.time())
    if cancelled is not None:
        raise UsageError(f"permission request {request_id} was cancelled: answers no longer count")
    if now >= request.expires:
        raise UsageError(f"permission request {request_id} expired")
    signed = sign_answer(request_id, decision, name, key, now)  # type: ignore[arg-type]
    kept = store.add_answer(request_id, name, decision, encode_answer(signed))
    ledger.append(store, ledger.Record("approve" if decision == "allow-once" else "reject", decision, now,
                                       request=request_id, tool=request.tool, server=request.server,
                                       params=request.params, rule=request.rule, approvers=(name,)))  # fmt: skip
    return Given(request, stored_standing(store, request, cancelled, trusted, now), signed, kept)


def cancel(location: str, request_id: str) -> Result:
    """PermissionCancelled: the request takes no more answers."""
    from bgc.runtime import ledger

    store = store_at(location, create=False)
    try:
        now = int(time.time())
        if not store.cancel(request_id, now):
            raise UsageError(f"no permission request {request_id} in this store (bgc pending lists them)")
        ledger.append(store, ledger.Record("cancel", "cancelled", now, request=request_id))
    finally:
        store.close()
    return lines_result(ExitCode.OK, [f"{request_id}: cancelled; answers given from now on do not count"])
