"""``authorize``: the kernel's answer to one AgentMessage, and the check that decided it.

For a ToolCallRequest, in this order (DESIGN §6; docs/kernel.md, "Order of checks"), the first
that fails decides and nothing after it runs:

1. ``authorization_conflict`` and the message schema (:mod:`bgc.runtime.kernel.messages`);
2. the capability token: well formed, signed, issued by a trusted issuer, every attenuation
   proven narrower; not expired; already valid; every link's audience holds ``server_id``;
3. ``tool`` in every link's scope;
4. ``params`` mapped to atoms through each link's tool declarations by ``bgc.runtime.calls`` (the
   one mapping every enforcer uses), every atom normalised and decided as ``bgc gate`` decides
   it, against each link's grants, the strictest verdict winning (:func:`decide_every_link`):
   an atom outside them is denied;
5. an atom pending there needs approval (docs/kernel.md, "Approvals"): the kernel records a
   permission request bound to this exact call and to the token's identity, the digest of its
   whole chain (:mod:`bgc.runtime.approvals`), and the call
   is allowed only once enough people the policy trusts approved it — answers given with
   ``bgc approve`` in the kernel's store, or carried in the message as approval tokens for the
   request its ``governed_intent`` names, a threshold proposal never asking less than the rule;
6. the execution nonce, when any link or the kernel requires one (and whenever one is sent):
   the kernel's signature, its lifetime, and consumed exactly once in the store; only then is
   an approved request used up (once, across processes).

With ``ledger`` on, every decision is appended to the ledger in the store, a preflight's with
the nonce it issued; a decision that cannot be recorded is a deny, and no nonce is issued.
Everything fails closed: an error, an unknown, a store that cannot answer is a deny.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bgc.core.values import canonical
from bgc import codes
from dataclasses import dataclass, field
from bgc.core.plan import Approvals, strongest
from bgc.runtime.calls import AtomDecision, CallDecider, CallDecision
from bgc.runtime.kernel import messages
from bgc.runtime.kernel.keys import PublicKey, SigningKey
from bgc.runtime.kernel.messages import Conflict, Heartbeat, ListCapabilities, ToolCallRequest
from bgc.runtime.kernel.nonce import issue_nonce, read_nonce, request_digest
from bgc.runtime.kernel.token import TokenError, Verified, check_time, decode_token, verify_chain
from bgc.runtime.store import Store, StoreError

NONCE_KIND = "execution-nonce"


@dataclass(frozen=True, slots=True)
class Decision:
    """The kernel's answer: ``allow``, ``deny``, ``alive`` or ``capabilities``, the check that
    decided (a BGC5xx code and its rule name), why, and what it was about."""

    decision: str
    code: str
    check: str
    reason: str
    id: str | None = None
    rules: tuple[str, ...] = ()
    atoms: tuple[str, ...] = ()
    counterexample: str | None = None
    supplemental: str | None = None
    """The digest of the opaque supplemental authorization, recorded, never consulted."""
    capabilities: tuple[dict[str, Any], ...] = ()
    request: str | None = None
    """The permission request the call is bound to, when it needed approval."""
    approvers: tuple[str, ...] = ()
    """Who approved it, when people did."""

    @property
    def allowed(self) -> bool:
        return self.decision in ("allow", "alive", "capabilities")

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "decision": self.decision,
            "code": self.code,
            "check": self.check,
            "reason": self.reason,
        }
        for key in ("id", "counterexample", "supplemental", "request"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        for key in ("rules", "atoms", "capabilities", "approvers"):
            if getattr(self, key):
                data[key] = list(getattr(self, key))
        return data


@dataclass(frozen=True, slots=True)
class _Approved:
    """A permission request people approved for this call, not yet used."""

    request: Any
    approvers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Held:
    """A verified token as the kernel keeps it: the chain, its identity (the digest of the whole
    chain), and one call decider per link, root first, over that link's grants and tool
    declarations (``bgc.runtime.calls``: the one mapping of a call to atoms every enforcer uses).

    Every call is decided against every link (:func:`decide_every_link`): a child only adds
    checks, so a gap in the proof that it is narrower can never widen what the chain allows.
    """

    verified: Verified
    id: str
    links: tuple[CallDecider, ...]

    @classmethod
    def of(cls, verified: Verified) -> _Held:
        return cls(verified, verified.id, tuple(CallDecider([claims.gate_plan()]) for claims in verified.chain))

    def serves(self, server: str) -> bool:
        return all(server in claims.audience for claims in self.verified.chain)

    def scopes(self, tool: str, server: str) -> bool:
        return all((tool, server) in decider.specs for decider in self.links)

    @property
    def nonce(self) -> bool:
        return any(claims.nonce for claims in self.verified.chain)


_SEVERITY: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


def _cited(atoms: Iterable[AtomDecision]) -> tuple[str, ...]:
    """The rules the atoms' decisions cite (the asking rules of an ask), sorted."""
    return tuple(sorted({str(rule) for atom in atoms for rule in (*atom.asked_by, atom.rule) if rule is not None}))


def decide_every_link(links: Sequence[CallDecider], tool: str, server: str, params: Mapping[str, Any]) -> CallDecision:
    """The call decided by every link's decider (root first), combined strictest-wins.

    A link that refuses the params refuses the call. Each atom takes the strictest verdict any
    link gave it; an atom asked by several links needs every requirement they ask (one that no
    answer can settle stays so). What the decision cites, the reason and the rules, comes from
    the first link, root first, that reached the atom's verdict: for an allow that is always
    the root, the link the issuer signed, so a child can neither cite other rules nor hide the
    issuer's; where a child asks more, its own words are what asked.
    """
    decisions = [decider.decide_call(tool, server, params) for decider in links]
    for decision in decisions:
        if decision.effect != "allow" and not decision.atoms:
            return decision
    if len(decisions) == 1:
        return decisions[0]
    verdicts: dict[str, list[AtomDecision]] = {}
    for decision in decisions:
        for atom in decision.atoms:
            verdicts.setdefault(atom.atom, []).append(atom)
    atoms: list[AtomDecision] = []
    for text, found in verdicts.items():
        effect = max((atom.effect for atom in found), key=_SEVERITY.__getitem__)
        cited = next(atom for atom in found if atom.effect == effect)
        approvals: tuple[Approvals, ...] = ()
        asking = [atom for atom in found if atom.effect == "ask"]
        if effect == "ask" and all(atom.approvals for atom in asking):
            approvals = strongest(requirement for atom in asking for requirement in atom.approvals)
        atoms.append(AtomDecision(text, effect, cited.reason, cited.rule, approvals, cited.asked_by))
    # a decision's effect is the strictest of its atoms', so the strictest decision's is the call's
    effect = max((decision.effect for decision in decisions), key=_SEVERITY.__getitem__)
    reason = next(decision.reason for decision in decisions if decision.effect == effect)
    return CallDecision(
        tool, server, effect, reason, tuple(atoms), all(d.declared for d in decisions), all(d.understood for d in decisions)
    )


@dataclass
class Kernel:
    """Authorizes messages against trusted issuers, with the kernel's key and store for nonces.

    Verified token chains are kept by the token's bytes (a verified chain stays verified; its
    times are checked on every message), so a session's token costs one signature check.
    """

    issuers: Sequence[PublicKey]
    key: SigningKey | None = None
    store: Store | None = None
    require_nonce: bool = False
    clock: Callable[[], float] = time.time
    session_tokens: Sequence[str] = ()
    approvers: Mapping[str, PublicKey] = field(default_factory=dict)
    """Approver name → key, from the policy's ``trust approver`` lines: whose answers count."""
    ledger: bool = False
    """Append every decision to the ledger in ``store``."""
    _verified: OrderedDict[str, _Held | TokenError] = field(default_factory=OrderedDict)

    def authorize_line(self, line: str) -> Decision:
        """The decision for one JSON line (a message, or the conflict that refuses it)."""
        return self.authorize(messages.read_message(line))

    def authorize(self, message: messages.AgentMessage | Conflict) -> Decision:
        if isinstance(message, Conflict):
            decision = Decision("deny", message.code, message.rule, message.reason)
        elif isinstance(message, Heartbeat):
            return Decision("alive", codes.HEARTBEAT, "heartbeat", "the kernel is alive")
        elif isinstance(message, ListCapabilities):
            return self._capabilities()
        else:
            decision = self._request(message, check_nonce=True)
        if not self.ledger:
            return decision
        consumed = None  # an allowed message with a nonce consumed it (well formed: the conflict check read it)
        if isinstance(message, ToolCallRequest) and message.execution_nonce is not None and decision.decision == "allow":
            consumed = read_nonce(message.execution_nonce).nonce
        return self._record("authorize", decision, message, consumed)

    def _record(
        self, kind: str, decision: Decision, message: messages.AgentMessage | Conflict, nonce: str | None = None
    ) -> Decision:
        """Append ``decision`` to the ledger (``kind`` ``authorize`` or ``preflight``, with the
        message's id, the token's identity, the call's digest, the deciding rules and the nonce
        issued or consumed, if any); a decision that cannot be recorded is a deny."""
        from bgc.runtime import ledger
        from bgc.runtime.enforce import params_digest

        call = message if isinstance(message, ToolCallRequest) else None
        try:
            if self.store is None:
                raise StoreError("the kernel has no store to keep its ledger in")
            held = self._token(call.capability_token) if call is not None else None
            ledger.append(self.store, ledger.Record(
                kind, decision.decision, int(self.clock()), token=held.id if isinstance(held, _Held) else None,
                tool=call.tool if call else None, server=call.server_id if call else None,
                params=params_digest(call.params) if call else None,
                reason=f"{decision.code} {decision.check}: {decision.reason}", request=decision.request,
                message=decision.id, nonce=nonce, approvers=decision.approvers,
                **ledger.subjects(decision.atoms, decision.rules),
            ))  # fmt: skip
        except Exception as error:  # noqa: BLE001 - unrecorded is not allowed
            if decision.decision != "allow":
                return decision
            return Decision(
                "deny", codes.LEDGER_UNAVAILABLE, "ledger", f"the decision could not be recorded: {error}", decision.id
            )
        return decision

    def preflight(self, message: messages.AgentMessage | Conflict) -> tuple[Decision, str | None]:
        """A strict execution preflight: every check but the nonce, then a nonce for exactly
        this request and token, signed by the kernel's key. No nonce unless the request would
        pass; with the ledger on, the decision and the nonce it issued are recorded first (a
        nonce that cannot be recorded is not issued)."""
        nonce: str | None = None
        if isinstance(message, Conflict):
            decision = Decision("deny", message.code, message.rule, message.reason)
        elif not isinstance(message, ToolCallRequest):
            decision = Decision("deny", codes.PREFLIGHT_NOT_A_CALL, "preflight", "only a ToolCallRequest is preflighted")
        elif self.key is None:
            decision = Decision("deny", codes.NONCE_INVALID, "nonce", "the kernel has no key to sign nonces with", message.id)
        else:
            decision = self._request(message, check_nonce=False)
            if decision.decision == "allow":
                held = self._token(message.capability_token)
                assert isinstance(held, _Held)  # allowed, so verified
                digest = request_digest(held.id, message.id, message.tool, message.server_id, message.params)
                nonce = issue_nonce(digest, self.key, now=int(self.clock()))
        if self.ledger:
            decision = self._record("preflight", decision, message, read_nonce(nonce).nonce if nonce else None)
        return decision, nonce if decision.decision == "allow" else None

    # -- the checks --

    def _token(self, text: str) -> _Held | TokenError:
        """The verified chain of the token ``text`` and the gate over its grants, kept by the
        token's exact bytes (never by a claimed id: ids are chosen by whoever signs a link)."""
        found = self._verified.get(text)
        if found is None:
            try:
                verified = verify_chain(decode_token(text), self.issuers)
                found = _Held.of(verified)
            except TokenError as error:
                found = error
            self._verified[text] = found
            if len(self._verified) > 4096:
                self._verified.popitem(last=False)
        return found

    def _request(self, message: ToolCallRequest, *, check_nonce: bool) -> Decision:
        def deny(code: str, check: str, reason: str, **extra: Any) -> Decision:
            return Decision("deny", code, check, reason, message.id, supplemental=supplemental, **extra)

        conflict = messages.authorization_conflict(message)
        if conflict is not None:  # first, before any signature is checked
            return Decision("deny", conflict.code, conflict.rule, conflict.reason, message.id)

        supplemental = None
        if message.supplemental_authorization is not None:
            supplemental = canonical.digest_text(canonical.encode(message.supplemental_authorization))
        held = self._token(message.capability_token)
        if isinstance(held, TokenError):
            return deny(held.code, held.check, held.message, counterexample=held.counterexample)
        verified = held.verified
        now = int(self.clock())
        late = check_time(verified, now)
        if late is not None:
            return deny(late.code, late.check, late.message)
        if not held.serves(message.server_id):
            return deny(
                codes.SERVER_NOT_IN_AUDIENCE, "audience", f"server {message.server_id!r} is not in the token's audience"
            )
        if not held.scopes(message.tool, message.server_id):
            return deny(
                codes.TOOL_NOT_IN_SCOPE,
                "scope",
                f"tool {message.tool!r} on {message.server_id!r} is not in the token's scope",
            )
        call = decide_every_link(held.links, message.tool, message.server_id, message.params)
        atoms = tuple(atom.atom for atom in call.atoms)
        if call.effect != "allow" and not call.atoms:
            return deny(
                codes.PARAMS_DO_NOT_FILL,
                "params",
                f"the call's params do not fill {message.tool!r}'s atoms: {call.reason}",
            )
        for atom in call.atoms:
            if atom.effect == "deny":
                code = codes.VALUE_REFUSED if atom.reason.startswith("rejected") else codes.ATOM_OUTSIDE_GRANTS
                reason = "not in the token's grants" if atom.reason == "not granted by the plan" else atom.reason
                return deny(code, "atoms", f"{atom.atom}: {reason}", atoms=atoms, rules=_cited((atom,)))
        approval: _Approved | None = None
        if call.effect != "allow":
            settled = self._approval(message, call, held.id, now)
            if not isinstance(settled, _Approved):
                return deny(*settled, atoms=atoms, rules=_cited(a for a in call.atoms if a.effect == "ask"))
            approval = settled
        if check_nonce and (message.execution_nonce is not None or held.nonce or self.require_nonce):
            refused = self._nonce(message, now)
            if refused is not None:
                return deny(*refused)
        rules = _cited(call.atoms)
        if approval is not None:
            from bgc.runtime.approvals import use_request

            request = approval.request
            if not check_nonce:  # a preflight: the approval is used by the call it vouches for, not here
                return Decision("allow", codes.APPROVED_ONCE, "approval", f"approved by {', '.join(approval.approvers)}, not yet used ({request.id})",
                                message.id, rules, atoms, supplemental=supplemental, request=request.id, approvers=approval.approvers)  # fmt: skip
            try:
                fresh = use_request(self.store, request)
            except StoreError as error:
                return deny(
                    codes.REQUEST_ENDED, "approval", f"the approval could not be used: {error}", request=request.id
                )
            if not fresh:
                return deny(
                    codes.REQUEST_ENDED,
                    "approval",
                    f"permission request {request.id} was already used",
                    request=request.id,
                )
            return Decision(
                "allow", codes.APPROVED_ONCE, "approval", f"approved once by {', '.join(approval.approvers)} ({request.id}); "
                f"every other atom is granted by token {held.id}", message.id, rules, atoms, supplemental=supplemental,
                request=request.id, approvers=approval.approvers,
            )  # fmt: skip
        return Decision(
            "allow", codes.AUTHORIZED, "granted", f"every atom is granted by token {held.id}", message.id,
            rules, atoms, supplemental=supplemental,
        )  # fmt: skip

    def _approval(self, message: ToolCallRequest, call: Any, token: str, now: int) -> _Approved | tuple[str, str, str]:
        """Whether people approved this exact call enough (nothing is used up here), or the
        refusal ``(code, check, reason)``. The request is bound to ``token``, the identity of
        the whole chain, never to a link's claimed id."""
        from bgc.runtime import approvals
        from bgc.runtime.enforce import permission_request
        from bgc.core.plan import Approvals

        pending = "; ".join(f"{atom.atom} {atom.reason}" for atom in call.atoms if atom.effect == "ask") or call.reason
        if any(atom.effect == "ask" and not atom.approvals for atom in call.atoms):
            return (codes.ATOM_NEEDS_APPROVAL, "approval", f"needs approval that no signed answer can give: {pending}")
        if self.store is None:
            return (
                codes.ATOM_NEEDS_APPROVAL,
                "approval",
                f"needs approval: {pending} (the kernel has no store for permission requests)",
            )
        request = permission_request(call, message.params, now=now, lifetime=approvals.DEFAULT_LIFETIME_SECONDS,
                                     plan=None, token=token, session=None)  # fmt: skip
        if request is None:
            return (codes.ATOM_NEEDS_APPROVAL, "approval", f"needs approval: {pending}")
        carried = (message.approval_token,) if message.approval_token is not None else message.approval_tokens
        try:
            if not carried:  # answers given with `bgc approve` in this kernel's store
                stored, result = approvals.stand_ask(self.store, request, self.approvers, now)
            else:
                named = message.governed_intent["payload"]  # the conflict check made every token name it
                loaded = approvals.load_request(self.store, named)
                if loaded is None:
                    return (
                        codes.APPROVAL_NOT_BOUND,
                        "approval",
                        f"no permission request {named} in this kernel's store",
                    )
                stored, cancelled = loaded
                if stored.call_key() != request.call_key():
                    return (codes.APPROVAL_NOT_BOUND, "approval", f"permission request {named} is for another call")
                proposal = message.threshold_approval_proposal
                if proposal is not None:
                    offered = Approvals(proposal.threshold, proposal.approvers)
                    weaker = [r for r in stored.requirements if not offered.implies(Approvals(r.count, r.approvers))]
                    if weaker:
                        return (codes.PROPOSAL_TOO_WEAK, "approval",
                                f"the proposal ({offered}) does not meet what the rule requires ({weaker[0]})")  # fmt: skip
                answers = [approvals.Answer(t.intent, "allow-once", t.approver, t.time, t.signature) for t in carried]
                result = approvals.stored_standing(self.store, stored, cancelled, self.approvers, now, answers)
        except (StoreError, approvals.RequestUnreadable) as error:
            return (codes.ATOM_NEEDS_APPROVAL, "approval", f"needs approval, and the store failed: {error}")
        if result.state == "approved":
            if approvals.was_used(self.store, stored):
                return (codes.REQUEST_ENDED, "approval", f"permission request {stored.id} was already used")
            return _Approved(stored, result.counted)
        if result.state == "pending":
            return (codes.ATOM_NEEDS_APPROVAL, "approval",
                    f"{approvals.awaiting(stored.id, result.describe(stored), self.approvers)}; {pending}")  # fmt: skip
        why = f"rejected by {result.rejected_by}" if result.rejected_by else result.state
        return (codes.REQUEST_ENDED, "approval", f"permission request {stored.id} is {why}")

    def _nonce(self, message: ToolCallRequest, now: int) -> tuple[str, str, str] | None:
        if message.execution_nonce is None:
            return (codes.NONCE_MISSING, "nonce", "an execution nonce is required: run a preflight first")
        if self.key is None or self.store is None:
            return (codes.NONCE_INVALID, "nonce", "the kernel has no key or store to check nonces with")
        nonce = read_nonce(message.execution_nonce)  # well formed: the conflict check read it
        if not nonce.signed_by(self.key.public):
            return (codes.NONCE_INVALID, "nonce", "the execution nonce is not signed by this kernel")
        if now >= nonce.exp or now < nonce.nbf:
            return (
                codes.NONCE_INVALID,
                "nonce",
                f"the execution nonce is valid from {nonce.nbf} to {nonce.exp} (now {now})",
            )
        try:
            fresh = self.store.consume_once(NONCE_KIND, nonce.nonce, nonce.exp)
        except StoreError as error:
            return (codes.NONCE_INVALID, "nonce", f"the nonce could not be consumed: {error}")
        if not fresh:
            return (codes.NONCE_REPLAYED, "replay", "the execution nonce was already used")
        return None

    def _capabilities(self) -> Decision:
        listed = []
        for text in self.session_tokens:
            held = self._token(text)
            if isinstance(held, TokenError) or check_time(held.verified, int(self.clock())) is not None:
                continue
            verified = held.verified
            claims = verified.claims
            listed.append({
                "token": held.id,
                "label": claims.token,
                "audience": list(claims.audience),
                "tools": [spec.to_data() for spec in claims.tools],
                "granted": sorted(str(part) for r in claims.requests for part in r.granted),
                "expires": verified.exp,
            })  # fmt: skip
        return Decision(
            "capabilities",
            codes.CAPABILITIES_LISTED,
            "capabilities",
            f"{len(listed)} valid token(s)",
            capabilities=tuple(listed),
        )
