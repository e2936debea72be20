"""``authorize``: the kernel's answer to one AgentMessage, and the check that decided it.

For a ToolCallRequest, in this order (DESIGN §6; docs/kernel.md, "Order of checks"), the first
that fails decides and nothing after it runs:

1. ``authorization_conflict`` and the message schema (:mod:`bgc.kernel.messages`);
2. the capability token: well formed, signed, issued by a trusted issuer, every attenuation
   proven narrower; not expired; already valid; its audience holds ``server_id``;
3. ``tool`` in the token's scope;
4. ``params`` mapped to atoms through the token's tool declarations by ``bgc.calls`` (the one
   mapping every enforcer uses), every atom normalised and decided as ``bgc gate`` decides it,
   against the token's grants: an atom outside them is denied, one pending there "needs
   approval" (refused until approvals land);
5. the execution nonce, when the token or the kernel requires one (and whenever one is sent):
   the kernel's signature, its lifetime, and consumed exactly once in the store.

Everything fails closed: an error, an unknown, a store that cannot answer is a deny.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bgc import canonical, codes
from bgc.calls import CallDecider
from bgc.kernel import messages
from bgc.kernel.keys import PublicKey, SigningKey
from bgc.kernel.messages import Conflict, Heartbeat, ListCapabilities, ToolCallRequest
from bgc.kernel.nonce import issue_nonce, read_nonce, request_digest
from bgc.kernel.token import TokenError, Verified, check_time, decode_token, verify_chain
from bgc.store import Store, StoreError

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

    @property
    def allowed(self) -> bool:
        return self.decision in ("allow", "alive", "capabilities")

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"decision": self.decision, "code": self.code, "check": self.check, "reason": self.reason}
        for key in ("id", "counterexample", "supplemental"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        for key in ("rules", "atoms", "capabilities"):
            if getattr(self, key):
                data[key] = list(getattr(self, key))
        return data


@dataclass(frozen=True, slots=True)
class _Held:
    """A verified token as the kernel keeps it: the chain, and the call decider over its grants
    and tool declarations (``bgc.calls``: the one mapping of a call to atoms every enforcer uses)."""

    verified: Verified
    calls: CallDecider

    @classmethod
    def of(cls, verified: Verified) -> _Held:
        return cls(verified, CallDecider([verified.claims.gate_plan()]))


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
    _verified: OrderedDict[str, _Held | TokenError] = field(default_factory=OrderedDict)

    def authorize_line(self, line: str) -> Decision:
        """The decision for one JSON line (a message, or the conflict that refuses it)."""
        return self.authorize(messages.read_message(line))

    def authorize(self, message: messages.AgentMessage | Conflict) -> Decision:
        if isinstance(message, Conflict):
            return Decision("deny", message.code, message.rule, message.reason)
        if isinstance(message, Heartbeat):
            return Decision("alive", codes.HEARTBEAT, "heartbeat", "the kernel is alive")
        if isinstance(message, ListCapabilities):
            return self._capabilities()
        return self._request(message, check_nonce=True)

    def preflight(self, message: messages.AgentMessage | Conflict) -> tuple[Decision, str | None]:
        """A strict execution preflight: every check but the nonce, then a nonce for exactly
        this request, signed by the kernel's key. No nonce unless the request would pass."""
        if not isinstance(message, ToolCallRequest):
            decision = self.authorize(message)
            if decision.decision != "deny":
                decision = Decision("deny", codes.PREFLIGHT_NOT_A_CALL, "preflight", "only a ToolCallRequest is preflighted")
            return decision, None
        if self.key is None:
            return Decision("deny", codes.NONCE_INVALID, "nonce", "the kernel has no key to sign nonces with", message.id), None
        decision = self._request(message, check_nonce=False)
        if decision.decision != "allow":
            return decision, None
        digest = request_digest(message.id, message.tool, message.server_id, message.params)
        return decision, issue_nonce(digest, self.key, now=int(self.clock()))

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
        claims = verified.claims
        if message.server_id not in claims.audience:
            return deny(codes.SERVER_NOT_IN_AUDIENCE, "audience", f"server {message.server_id!r} is not in the token's audience")
        if (message.tool, message.server_id) not in held.calls.specs:
            return deny(codes.TOOL_NOT_IN_SCOPE, "scope", f"tool {message.tool!r} on {message.server_id!r} is not in the token's scope")
        call = held.calls.decide_call(message.tool, message.server_id, message.params)
        atoms = tuple(atom.atom for atom in call.atoms)
        if call.effect != "allow" and not call.atoms:
            return deny(codes.PARAMS_DO_NOT_FILL, "params", f"the call's params do not fill {message.tool!r}'s atoms: {call.reason}")
        for atom in call.atoms:
            if atom.effect == "deny":
                code = codes.VALUE_REFUSED if atom.reason.startswith("rejected") else codes.ATOM_OUTSIDE_GRANTS
                reason = "not in the token's grants" if atom.reason == "not granted by the plan" else atom.reason
                return deny(code, "atoms", f"{atom.atom}: {reason}", atoms=atoms)
        if call.effect != "allow":
            pending = "; ".join(f"{atom.atom} {atom.reason}" for atom in call.atoms if atom.effect == "ask")
            return deny(codes.ATOM_NEEDS_APPROVAL, "approval", f"needs approval: {pending or call.reason}", atoms=atoms)
        if check_nonce and (message.execution_nonce is not None or claims.nonce or self.require_nonce):
            refused = self._nonce(message, now)
            if refused is not None:
                return deny(*refused)
        rules = tuple(sorted({str(atom.rule) for atom in call.atoms if atom.rule is not None}))
        return Decision(
            "allow", codes.AUTHORIZED, "granted", f"every atom is granted by token {claims.token}", message.id,
            rules, atoms, supplemental=supplemental,
        )  # fmt: skip

    def _nonce(self, message: ToolCallRequest, now: int) -> tuple[str, str, str] | None:
        if message.execution_nonce is None:
            return (codes.NONCE_MISSING, "nonce", "an execution nonce is required: run a preflight first")
        if self.key is None or self.store is None:
            return (codes.NONCE_INVALID, "nonce", "the kernel has no key or store to check nonces with")
        nonce = read_nonce(message.execution_nonce)  # well formed: the conflict check read it
        if not nonce.signed_by(self.key.public):
            return (codes.NONCE_INVALID, "nonce", "the execution nonce is not signed by this kernel")
        if now >= nonce.exp or now < nonce.nbf:
            return (codes.NONCE_INVALID, "nonce", f"the execution nonce is valid from {nonce.nbf} to {nonce.exp} (now {now})")
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
                "token": claims.token,
                "audience": list(claims.audience),
                "tools": [spec.to_data() for spec in claims.tools],
                "granted": sorted(str(part) for r in claims.requests for part in r.granted),
                "expires": verified.exp,
            })  # fmt: skip
        return Decision("capabilities", codes.CAPABILITIES_LISTED, "capabilities", f"{len(listed)} valid token(s)", capabilities=tuple(listed))

