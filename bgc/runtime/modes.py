"""A session's mode, chosen by people: who may switch a session to which mode, and which switch
stands (docs/approvals.md, "Modes are chosen by people").

A mode is never the agent's to choose. A switch is a person's signed :class:`ModeDecision`, and
the policy says who may make it: ``mode release approvals 2 of [lead, qa] { … }`` takes two of
the people named, each signing with the key ``trust approver`` binds to their name. A mode whose
block names nobody can be chosen by nobody, except the default mode, which any trusted approver
may restore (it is what applies when nobody chose: choosing it widens nothing).

Which switch stands is decided from signed content alone, never from clocks or from the order
the store returns: every decision names the switch in force when it was signed (``after``: that
switch's id, :data:`NONE` when none was), and a switch is the triple (session, mode, after),
whose id every person signing it shares. A switch takes effect once enough of the people its
mode allows signed it. From no switch, the switch that took effect after the one in force is
followed, then the one after that, and so on, so two ``bgc mode set`` in the same second are one
after the other. Two switches that took effect after the same one (two people at once) are
ordered by their signed time, then by id: every reader follows the same path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bgc.core.values import canonical

DECISION_TAG = "bgc.ModeDecision"
SWITCH_TAG = "bgc.ModeSwitch"
VERSION = 2
"""Version 2: a decision names the switch it follows (version 1 decisions, ordered by their
time in seconds, are not read)."""
NONE = "sha256:" + "0" * 64
"""The ``after`` of a switch made when no switch was in force (the policy's default mode)."""


def switch_id(session: str, mode: str, after: str) -> str:
    """The id every person signing the same switch signs."""
    return canonical.digest_text(canonical.envelope(SWITCH_TAG, VERSION, {"session": session, "mode": mode, "after": after}))


@dataclass(frozen=True, slots=True)
class ModeDecision:
    """One person's signature of one switch: ``session`` to ``mode``, after switch ``after``."""

    session: str
    mode: str
    after: str
    approver: str
    time: int
    signature: bytes

    @property
    def switch(self) -> str:
        return switch_id(self.session, self.mode, self.after)

    @staticmethod
    def signed_bytes(session: str, mode: str, after: str, approver: str, time: int) -> bytes:
        return canonical.envelope(
            DECISION_TAG, VERSION, {"session": session, "mode": mode, "after": after, "approver": approver, "time": time}
        )

    def encode(self) -> bytes:
        return canonical.encode({"session": self.session, "mode": self.mode, "after": self.after,
                                 "approver": self.approver, "time": self.time, "signature": self.signature})  # fmt: skip

    def holds(self, key: Any) -> bool:
        return bool(key.verify(self.signature, self.signed_bytes(self.session, self.mode, self.after, self.approver, self.time)))


def sign_mode(session: str, mode: str, after: str, approver: str, key: Any, time: int) -> ModeDecision:
    signature = key.sign(ModeDecision.signed_bytes(session, mode, after, approver, time))
    return ModeDecision(session, mode, after, approver, time, signature)


def decode_mode(data: bytes) -> ModeDecision | None:
    """A stored decision, or None when the bytes are not one (it decides nothing)."""
    import cbor2

    try:
        value = cbor2.loads(data)
        decision = ModeDecision(
            value["session"], value["mode"], value["after"], value["approver"], value["time"], bytes(value["signature"])
        )
    except Exception:  # noqa: BLE001 - an unreadable decision decides nothing
        return None
    fields = (decision.session, decision.mode, decision.after, decision.approver)
    if not (all(isinstance(field, str) for field in fields) and type(decision.time) is int):
        return None
    return decision if canonical.encode(value) == data else None


@dataclass(frozen=True, slots=True)
class ModeRules:
    """What a policy says about modes: the ones it declares, its default, and who may switch a
    session to each (``mode NAME approvals N of [names]``)."""

    modes: tuple[str, ...]
    default: str | None
    approvals: Mapping[str, tuple[int, tuple[str, ...]]]

    def who_may_set(self, mode: str, trusted: Mapping[str, Any]) -> tuple[int, tuple[str, ...]] | None:
        """How many people, among which names, a switch to ``mode`` takes; None: nobody may."""
        if mode not in self.modes:
            return None
        if mode in self.approvals:
            return self.approvals[mode]
        if mode == self.default:
            return 1, tuple(sorted(trusted))
        return None


@dataclass(frozen=True, slots=True)
class ModeState:
    """The switch in force for a session (``mode`` None and ``switch`` :data:`NONE`: the
    default mode, nobody chose), who signed it, and the switches after it still short of people
    (switch id → mode and the approvers who signed it so far)."""

    mode: str | None
    switch: str
    approvers: tuple[str, ...]
    pending: Mapping[str, tuple[str, tuple[str, ...]]]


def mode_state(
    session: str, decisions: Iterable[ModeDecision], trusted: Mapping[str, Any], rules: ModeRules
) -> ModeState:
    """The switch in force for ``session``: see the module docstring. A decision counts only when
    its signature holds for the key the policy trusts for its approver, its mode is one the
    policy has, and the policy allows that approver for that mode."""
    signed: dict[str, dict[str, int]] = {}  # switch id → approver → signed time
    switches: dict[str, tuple[str, str]] = {}  # switch id → (mode, after)
    for decision in decisions:
        allowed = rules.who_may_set(decision.mode, trusted)
        key = trusted.get(decision.approver)
        if decision.session != session or allowed is None or decision.approver not in allowed[1] or key is None:
            continue
        if not decision.holds(key):
            continue
        switches[decision.switch] = (decision.mode, decision.after)
        by = signed.setdefault(decision.switch, {})
        by[decision.approver] = max(by.get(decision.approver, decision.time), decision.time)
    effective: dict[str, list[tuple[int, str]]] = {}  # after → [(time it took effect, switch id)]
    for switch, (mode, after) in switches.items():
        count = rules.who_may_set(mode, trusted)[0]  # type: ignore[index]
        times = sorted(signed[switch].values())
        if len(times) >= count:
            effective.setdefault(after, []).append((times[count - 1], switch))
    current, mode, visited = NONE, None, {NONE}
    while effective.get(current):
        _, following = max(effective[current])
        if following in visited:  # a cycle would need a digest collision; stop rather than loop
            break
        visited.add(following)
        current, mode = following, switches[following][0]
    pending = {
        switch: (switches[switch][0], tuple(sorted(signed[switch])))
        for switch, (_, after) in switches.items()
        if after == current and switch not in visited
    }
    approvers = tuple(sorted(signed[current])) if current != NONE else ()
    return ModeState(mode, current, approvers, pending)


_VALUE_OPTIONS = frozenset({"--key", "--as", "--store", "-p", "--policy"})
"""The options of ``bgc mode set`` that take the next word as their value."""


def agent_mode_switch(atoms: Iterable[str]) -> str | None:
    """The mode a call asks for by running ``bgc mode set`` (``bgc``, a path ending in ``bgc``,
    or ``python… -m bgc``), as its ``proc:exec`` atoms say; ``"?"`` when the command names no
    mode; None when no atom runs it."""
    for atom in atoms:
        resource, _, rest = atom.partition(":")
        action, _, value = rest.partition(":")
        if resource != "proc" or action != "exec":
            continue
        program, *words = value.split("/")
        program = program.rsplit("\u2215", 1)[-1]  # a program named by its path: its words hold U+2215
        if program.startswith("python") and words[:2] == ["-m", "bgc"]:
            words = words[2:]
        elif program != "bgc":
            continue
        for index, word in enumerate(words[:-1]):
            if word == "mode" and words[index + 1] == "set":
                named, given = [], iter(words[index + 2 :])
                for word in given:
                    if word in _VALUE_OPTIONS:
                        next(given, None)
                    elif not word.startswith("-"):
                        named.append(word)
                return named[1] if len(named) > 1 else "?"
    return None


def refuse_agent_mode(store: Any, session: str | None, mode: str, now: int) -> None:
    """Record that an agent asked to switch ``session`` to ``mode``: refused, never applied."""
    from bgc.runtime import ledger

    reason = "a mode switch is a person's signed decision (bgc mode set); the agent asked for it"
    ledger.append(store, ledger.Record("mode", "refused", now, session=session, reason=f"{reason}: {mode}"))
