"""``bgc mode set`` and ``bgc mode show``: a session's mode, chosen by people (docs/approvals.md)."""

from __future__ import annotations

import time

from bgc.app.commands.io import Result, lines_result, store_at
from bgc.errors import ExitCode, UsageError


def set_mode(
    location: str, session: str, mode: str, *, key_path: str, approver: str | None, policy: str | None
) -> Result:
    """A person's signed choice of a session's mode, kept in the store and the ledger."""
    from bgc.runtime import ledger
    from bgc.runtime.approvals import sign_mode
    from bgc.app.commands import io
    from bgc.app.commands.key import resolve
    from bgc.runtime.kernel.keys import load_private

    key = load_private(resolve(key_path, private=True))
    name = approver or key.name
    loaded, _ = io.load_policy(policy, None)
    from bgc.runtime.approvals import trusted_approvers

    trusted = trusted_approvers(loaded.trust)
    if trusted.get(name) is None or trusted[name].text != key.public.text:
        raise UsageError(
            f"the policy trusts no key {key.public.text} for approver {name!r}: a mode it signed would never count"
        )
    if mode not in loaded.modes:
        raise UsageError(f"the policy has no mode {mode!r}; its modes: {', '.join(sorted(loaded.modes)) or '(none)'}")
    now = int(time.time())
    decision = sign_mode(session, mode, name, key, now)
    store = store_at(location)
    try:
        store.add_mode(session, name, now, decision.encode())
        ledger.append(store, ledger.Record("mode", f"set {mode}", now, session=session, approvers=(name,)))
    finally:
        store.close()
    return lines_result(ExitCode.OK, [f"session {session}: mode {mode}, set by {name}"])


def show_mode(location: str, session: str, *, policy: str | None) -> Result:
    from bgc.runtime.approvals import decode_mode, effective_mode, trusted_approvers
    from bgc.app.commands import io
    from bgc.runtime.store import store_exists

    loaded, _ = io.load_policy(policy, None)
    decisions = []
    if store_exists(location):  # no store yet: nobody chose a mode
        store = store_at(location, create=False)
        try:
            decisions = [decision for decision in map(decode_mode, store.modes(session)) if decision is not None]
        finally:
            store.close()
    chosen = effective_mode(session, decisions, trusted_approvers(loaded.trust), loaded.modes)
    if chosen is None:
        return lines_result(ExitCode.OK, [f"session {session}: the policy's default mode (no mode chosen by a person)"])
    return lines_result(ExitCode.OK, [f"session {session}: mode {chosen.mode}, set by {chosen.approver}"])
