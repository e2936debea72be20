"""``bgc mode set`` and ``bgc mode show``: a session's mode, chosen by people (docs/approvals.md).

Who may set which mode, and which switch stands, is :mod:`bgc.runtime.modes`.
"""

from __future__ import annotations

import time
from typing import Any

from bgc.app.commands.io import Result, lines_result, store_at
from bgc.errors import ExitCode, UsageError


def _policy_rules(policy: str | None) -> tuple[Any, dict[str, Any]]:
    from bgc.app.commands import io
    from bgc.runtime.approvals import trusted_approvers
    from bgc.runtime.modes import ModeRules

    loaded, _ = io.load_policy(policy, None)
    approvals = {mode: (rule.count, rule.approvers) for mode, rule in loaded.mode_approvals}
    return ModeRules(loaded.modes, loaded.default_mode, approvals), trusted_approvers(loaded.trust)


def _state(store: Any, session: str, trusted: dict[str, Any], rules: Any) -> Any:
    from bgc.runtime.modes import decode_mode, mode_state

    decisions = [decision for decision in map(decode_mode, store.modes(session)) if decision is not None]
    return mode_state(session, decisions, trusted, rules)


def _described(session: str, state: Any) -> list[str]:
    lines = [
        f"session {session}: the policy's default mode (no mode chosen by people)"
        if state.mode is None
        else f"session {session}: mode {state.mode}, set by {', '.join(state.approvers)}"
    ]
    for mode, approvers in sorted(state.pending.values()):
        lines.append(f"session {session}: a switch to {mode} waits for more people (signed by {', '.join(approvers)})")
    return lines


def set_mode(
    location: str, session: str, mode: str, *, key_path: str, approver: str | None, policy: str | None
) -> Result:
    """A person's signed switch of a session's mode, after the switch in force now; kept in the
    store and the ledger. It takes effect once as many people as the mode needs signed it."""
    from bgc.app.commands.key import resolve
    from bgc.runtime import ledger
    from bgc.runtime.kernel.keys import load_private
    from bgc.runtime.modes import sign_mode

    key = load_private(resolve(key_path, private=True))
    name = approver or key.name
    rules, trusted = _policy_rules(policy)
    if trusted.get(name) is None or trusted[name].text != key.public.text:
        raise UsageError(
            f"the policy trusts no key {key.public.text} for approver {name!r}: a mode it signed would never count"
        )
    if mode not in rules.modes:
        raise UsageError(f"the policy has no mode {mode!r}; its modes: {', '.join(sorted(rules.modes)) or '(none)'}")
    allowed = rules.who_may_set(mode, trusted)
    if allowed is None:
        raise UsageError(
            f"the policy names nobody who may switch a session to mode {mode!r}",
            hint=f"write who may on its block: `mode {mode} approvals 1 of [{name}] {{`",
        )
    if name not in allowed[1]:
        raise UsageError(f"{name} may not switch a session to mode {mode!r}: it takes {allowed[0]} of [{', '.join(allowed[1])}]")
    store = store_at(location)
    try:
        now = int(time.time())
        decision = sign_mode(session, mode, _state(store, session, trusted, rules).switch, name, key, now)
        store.add_mode(session, decision.encode())
        state = _state(store, session, trusted, rules)
        took = state.switch == decision.switch
        ledger.append(store, ledger.Record("mode", f"set {mode}" if took else f"signed {mode}", now, session=session,
                                           approvers=state.approvers if took else (name,),
                                           reason=f"switch {decision.switch}"))  # fmt: skip
    finally:
        store.close()
    return lines_result(ExitCode.OK, _described(session, state))


def show_mode(location: str, session: str, *, policy: str | None) -> Result:
    """The mode people chose for a session, and the switches waiting for more people."""
    from bgc.runtime.modes import NONE, ModeState
    from bgc.runtime.store import store_exists

    rules, trusted = _policy_rules(policy)
    state = ModeState(None, NONE, (), {})
    if store_exists(location):  # no store yet: nobody chose a mode
        store = store_at(location, create=False)
        try:
            state = _state(store, session, trusted, rules)
        finally:
            store.close()
    return lines_result(ExitCode.OK, _described(session, state))
