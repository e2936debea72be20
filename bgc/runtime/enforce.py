"""What every enforcer does with a call's decision before it answers: settle an ``ask`` through
people's signed approvals, and record the decision in the ledger.

The decision itself comes from :mod:`bgc.runtime.calls` (the one mapping of a call to atoms). Then, for
every enforcer alike — ``bgc hook``, ``bgc mcp-proxy``, ``bgc gate --call``, the kernel's
``authorize`` — :meth:`Enforcer.enforce`:

1. turns an ``ask`` into a :class:`~bgc.runtime.approvals.PermissionRequest` bound to the exact call
   (tool, server, the digest of its parameters, the atoms that need approval, the rules and
   their ``approvals N of [...]``, the plan or token, the session) and settles it with
   :func:`~bgc.runtime.approvals.settle_ask`: approved by enough trusted people → **allow, once**;
   rejected, cancelled or expired → **deny**; still waiting → ``ask``, naming the request
   (``bgc approve ID``);
2. appends one ledger entry: the decision as answered, the rule(s) that decided it, the ids
   involved, the request and its approvers.

Fail closed, stated once here: a store that cannot be opened, written or read back, parameters
that cannot be digested, or any other failure while settling or recording turns the answer into
**deny** with the reason. A decision that cannot be recorded is not allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bgc.core.values import canonical
from bgc.runtime.calls import CallDecision, CallEffect

PARAMS_TAG = "bgc.CallParams"
SUMMARY_VALUE_CHARS = 120
"""A parameter's value is shown to people up to this many characters (then ``…``)."""
SUMMARY_CHARS = 600


@dataclass(frozen=True, slots=True)
class Enforced:
    """The answer an enforcer gives, after approvals and the ledger had their say."""

    effect: CallEffect
    reason: str
    decision: CallDecision
    """What the policy alone said (``effect`` differs when people approved or the store failed)."""
    request: str | None = None
    """The permission request the call is bound to, when it met ``ask``."""
    approvers: tuple[str, ...] = ()
    entry: str | None = None
    """The id of the ledger entry that records it, when there is a ledger."""
    standing: str | None = None
    """For a call still waiting: where its request stands, for ``bgc approve`` (None when no
    approver is trusted: :attr:`bgc.runtime.approvals.AskOutcome.standing`)."""

    def anyone_may_answer(self) -> bool:
        """Whether every requirement of every asked atom is one approval by anyone
        (:func:`bgc.runtime.approvals.anyone_may_answer`)."""
        from bgc.runtime.approvals import anyone_may_answer  # only an ask gets here

        return all(anyone_may_answer(atom.approvals) for atom in self.decision.atoms if atom.effect == "ask")


@dataclass(frozen=True, slots=True)
class Context:
    """What a decision is recorded under: the enforcer (a ledger kind) and the ids involved."""

    kind: str
    plan: str | None = None
    policy: str | None = None
    token: str | None = None
    session: str | None = None


def params_digest(params: Any) -> str:
    """The digest of a call's parameters, canonically (people see a summary, never secrets)."""
    return canonical.digest_text(canonical.envelope(PARAMS_TAG, 1, params))


def summary(tool: str, server: str, params: Any) -> str:
    """A call in one line for the person who approves it: each parameter's value, shortened."""
    shown = params_line(params)
    line = f"{tool} on {server}" + (f": {shown}" if shown else "")
    return line if len(line) <= SUMMARY_CHARS else line[:SUMMARY_CHARS] + "…"


def params_line(params: Any) -> str:
    """A call's parameters in one line, by name, each value shortened (``file_path='/src/a.py',
    limit=20``)."""
    shown = []
    if isinstance(params, Mapping):
        for name in sorted(params):
            value = params[name]
            text = value if isinstance(value, str) else canonical_json(value)
            if len(text) > SUMMARY_VALUE_CHARS:
                text = text[:SUMMARY_VALUE_CHARS] + f"… ({len(text):,} chars)"
            shown.append(f"{name}={text!r}" if isinstance(value, str) else f"{name}={text}")
    return ", ".join(shown)


def canonical_json(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


class Enforcer:
    """Settles asks and records decisions in ``store`` (a :class:`bgc.runtime.store.Store`, or None: no
    ledger and no approvals, so an ``ask`` stays ``ask``), counting answers with ``trusted``
    (approver name → public key, from the policy's ``trust approver`` lines)."""

    def __init__(
        self,
        store: Any,
        trusted: Mapping[str, Any],
        context: Context,
        *,
        clock: Callable[[], float] | None = None,
        lifetime: int | None = None,
        settle: bool = True,
    ) -> None:
        import time

        self.store = store
        self.trusted = trusted
        self.context = context
        self.clock = clock or time.time
        self.lifetime = lifetime
        """Seconds a permission request stays open (None: bgc.runtime.approvals' default, read when a
        request is made: an allow or a deny never imports the approvals)."""
        self.settle = settle
        """False: only record (``bgc gate --call --ledger``, whose plans name no approvers)."""

    def enforce(self, decision: CallDecision, params: Any, *, session: str | None = None) -> Enforced:
        """Settle and record ``decision`` for a call with ``params``; never raises."""
        now = int(self.clock())
        session = session if session is not None else self.context.session
        switch = _mode_switch(decision)
        try:
            if switch is not None:
                answered = Enforced("deny", "a mode switch is a person's signed decision (bgc mode set), never the "
                                    f"agent's; refused and recorded: {switch}", decision)  # fmt: skip
            else:
                answered = self._settle(decision, params, session, now)
        except Exception as error:  # noqa: BLE001 - fail closed: settling that fails denies
            answered = Enforced("deny", f"the approval store failed: {_failure(error)}", decision)
        if self.store is None:
            return answered
        try:
            if switch is not None:
                from bgc.runtime.modes import refuse_agent_mode

                refuse_agent_mode(self.store, session, switch, now)
            entry = self._record(answered, params, session, now)
        except Exception as error:  # noqa: BLE001 - a decision that cannot be recorded is not allowed
            return Enforced("deny", f"the decision could not be recorded in the ledger: {_failure(error)}", decision,
                            answered.request, answered.approvers)  # fmt: skip
        return Enforced(answered.effect, answered.reason, decision, answered.request, answered.approvers, entry,
                        answered.standing)  # fmt: skip

    def _settle(self, decision: CallDecision, params: Any, session: str | None, now: int) -> Enforced:
        if decision.effect != "ask" or self.store is None or not self.settle:
            return Enforced(decision.effect, decision.explanation(), decision)
        from bgc.runtime.approvals import DEFAULT_LIFETIME_SECONDS

        request = permission_request(
            decision, params, now=now, lifetime=self.lifetime or DEFAULT_LIFETIME_SECONDS, plan=self.context.plan,
            token=self.context.token, session=session,
        )  # fmt: skip
        if request is None:  # asked for another reason than a rule (a command not understood)
            return Enforced("ask", decision.explanation(), decision)
        from bgc.runtime.approvals import settle_ask

        outcome = settle_ask(self.store, request, self.trusted, now)
        reason = f"{outcome.reason}; {decision.explanation()}"  # what people said, then the rule that asked
        return Enforced(outcome.effect, reason, decision, outcome.request, outcome.approvers, standing=outcome.standing)

    def _record(self, answered: Enforced, params: Any, session: str | None, now: int) -> str:
        from bgc.runtime import ledger

        decision = answered.decision
        rules = _deciding_rules(decision)
        atoms = tuple(atom.atom for atom in decision.atoms)
        record = ledger.Record(
            self.context.kind, answered.effect, now, session=session, plan=self.context.plan,
            policy=self.context.policy, token=self.context.token,
            tool=decision.tool, server=decision.server, params=params_digest(params), reason=answered.reason,
            request=answered.request, approvers=answered.approvers,
            **ledger.subjects(atoms, rules),
        )  # fmt: skip
        return ledger.append(self.store, record)[1]


def _mode_switch(decision: CallDecision) -> str | None:
    """The mode the call asks for by running ``bgc mode set``, or None (most calls: no import)."""
    if not any(atom.atom.startswith("proc:exec:") and "mode/set" in atom.atom for atom in decision.atoms):
        return None
    from bgc.runtime.modes import agent_mode_switch

    return agent_mode_switch(atom.atom for atom in decision.atoms)


def permission_request(
    decision: CallDecision, params: Any, *, now: int, lifetime: int, plan: str | None, token: str | None,
    session: str | None,
) -> Any:  # fmt: skip
    """The :class:`~bgc.runtime.approvals.PermissionRequest` for a call that met ``ask``, bound to the
    exact call; None when no atom awaits a rule's approval (the ask came from something not
    understood, or something is denied anyway), which no approval can settle."""
    from bgc.runtime.approvals import PermissionRequest, Requirement
    from bgc.core.plan import strongest

    asked = [atom for atom in decision.atoms if atom.effect == "ask" and atom.approvals]
    if not asked or not decision.understood or any(atom.effect == "deny" for atom in decision.atoms):
        return None
    requirements = strongest(requirement for atom in asked for requirement in atom.approvals)
    rules = sorted({str(rule) for atom in asked for rule in (atom.asked_by or (atom.rule,)) if rule is not None})
    return PermissionRequest(
        decision.tool, decision.server, params_digest(params), summary(decision.tool, decision.server, params),
        tuple(atom.atom for atom in asked), ", ".join(rules) or "(no rule)",
        tuple(Requirement(requirement.count, requirement.approvers) for requirement in requirements),
        now, now + lifetime, plan, token, session,
    )  # fmt: skip


def _deciding_rules(decision: CallDecision) -> tuple[str, ...]:
    """The rules that decided what the policy said: the denying atoms' rules for a deny, the
    asking rules for an ask (also when people then approved or rejected it), every atom's rule
    for an allow (each of them granted a part of it)."""
    found: list[str] = []
    for atom in decision.atoms:
        if atom.effect == decision.effect:
            for rule in atom.asked_by if atom.effect == "ask" and atom.asked_by else (atom.rule,):
                if rule is not None and str(rule) not in found:
                    found.append(str(rule))
    return tuple(found)


def _failure(error: Exception) -> str:
    return str(error) or type(error).__name__
