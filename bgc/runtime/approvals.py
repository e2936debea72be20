"""From ``ask`` to a person's decision: permission requests and signed answers.

When a call meets an ``ask``, the enforcer records a :class:`PermissionRequest`: the exact call
(tool, server, the digest of its parameters and a readable summary), the atoms that need
approval, the rule and its ``approvals N of [...]``, the plan or token it was decided under, and
until when it is live. Its id is the digest of all of that, so an answer signed for it names
exactly one call: another call, a changed parameter, another plan or a later request is another
id, and an answer for one can never count for another.

A person answers with an :class:`Answer`: ``allow-once`` or ``reject``, their approver name, the
time, and an Ed25519 signature over the canonical CBOR of those fields and the request id. The
policy's ``trust approver NAME ed25519:KEY`` lines say which key speaks for which name.

:func:`standing` decides, fail-closed, where a request stands given the answers the store holds:

- an answer counts only if its approver is named by the rule (or, for ``approvals N`` without
  names, is any trusted approver), the policy trusts a key for that name, the signature verifies
  with that key over this request's id, and it was given while the request was live and before
  any cancellation;
- a valid ``reject`` by any counted approver ends the request: **rejected**, whatever else;
- a cancelled request (``PermissionCancelled``: the turn or session is gone) is **cancelled** and
  one at or past its signed expiry **expired**, whatever answers it holds;
- ``allow-once`` answers from distinct counted approvers that meet every requirement (``N of
  [...]``; several when ask rules overlap, a person counting towards each that names them) make
  it **approved**; the same person twice counts once, and so does one key trusted under two names.

Nothing unsigned in the store decides an allow. A stored request is trusted for a call only when
its body digests to its id (which the answers sign) and the call key recomputed from that body
(:meth:`PermissionRequest.call_key`: the call, session, rule, requirements and lifetime) equals
the key of the request the enforcer makes for the call in hand. The store's ``call``,
``expires`` and ``cancelled`` columns only find requests: writing them can take an allow away,
and clearing a cancellation gives back at most what the signed answers grant.

"Always allow" is not an answer anyone can give: a person who wants it edits the policy
(:func:`suggest_rule` prints the narrowest rule that would have allowed the call).
An approved request allows its call **once**: the enforcer consumes it in the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from bgc.core.values import canonical
from dataclasses import dataclass

REQUEST_TAG = "bgc.PermissionRequest"
ANSWER_TAG = "bgc.PermissionAnswer"
VERSION = 1
DEFAULT_LIFETIME_SECONDS = 3600
"""How long a request stays live when the enforcer says nothing else: an hour."""

AnswerKind = Literal["allow-once", "reject"]


@dataclass(frozen=True, slots=True)
class Requirement:
    """``count`` distinct people among ``approvers`` (anyone the policy trusts when empty)."""

    count: int
    approvers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("a requirement needs at least one approval")
        if self.approvers and self.count > len(self.approvers):
            raise ValueError("more approvals required than approvers named")

    def admits(self, name: str) -> bool:
        return not self.approvers or name in self.approvers

    def met_by(self, people: Sequence[str]) -> bool:
        return sum(1 for person in people if self.admits(person)) >= self.count

    def __str__(self) -> str:
        return (
            f"{self.count} of [{', '.join(self.approvers)}]"
            if self.approvers
            else f"{self.count} of any trusted approver"
        )

    def to_data(self) -> dict[str, Any]:
        return {"count": self.count, "of": list(self.approvers)}


State = Literal["pending", "approved", "rejected", "cancelled", "expired"]


def anyone_may_answer(requirements: Iterable[Any]) -> bool:
    """Whether every requirement (a :class:`Requirement`, or a plan's ``Approvals``: anything
    with ``count`` and ``approvers``) is one approval by anyone, so that the person at the
    agent's own dialog (Claude Code's permission prompt, an MCP client's elicitation), who signs
    nothing, can give it. One that names approvers or counts more is met only by signed answers."""
    return all(requirement.count == 1 and not requirement.approvers for requirement in requirements)


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """One call that waits for people, bound to everything that made it wait."""

    tool: str
    server: str
    params: str
    """The digest of the call's parameters (they may hold secrets; the summary is what people read)."""
    summary: str
    atoms: tuple[str, ...]
    rule: str
    requirements: tuple[Requirement, ...]
    """Every one must be met by the same answers (overlapping ask rules); a person counts
    towards each requirement that admits them."""
    created: int
    expires: int
    plan: str | None = None
    token: str | None = None
    session: str | None = None
    attempt: int = 0
    """Above 0 only when the same call was asked again within the second its twin (same id
    otherwise) was made and already used or cancelled: the new request needs an id of its own."""

    def __post_init__(self) -> None:
        if not self.requirements:
            raise ValueError("a request needs at least one requirement")
        if self.expires <= self.created:
            raise ValueError("a request expires after it is created")

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "tool": self.tool, "server": self.server, "params": self.params, "summary": self.summary,
            "atoms": list(self.atoms), "rule": self.rule,
            "requirements": [requirement.to_data() for requirement in self.requirements],
            "created": self.created, "expires": self.expires,
        }  # fmt: skip
        for name in ("plan", "token", "session"):
            if getattr(self, name) is not None:
                body[name] = getattr(self, name)
        if self.attempt:
            body["attempt"] = self.attempt
        return body

    def encode(self) -> bytes:
        return canonical.envelope(REQUEST_TAG, VERSION, self.body())

    @property
    def id(self) -> str:
        return canonical.digest_text(self.encode())

    def admits(self, name: str) -> bool:
        """Whether ``name`` may answer at all: some requirement admits them."""
        return any(requirement.admits(name) for requirement in self.requirements)

    def needs(self) -> str:
        return " and ".join(str(requirement) for requirement in self.requirements)

    def call_key(self) -> str:
        """Everything the request binds but the time it was asked: the call (tool, server,
        parameters and their summary, atoms, plan, token, session), the rule and every
        requirement it cites, and how long it stays live. An enforcer meeting the same call again
        finds the live request by this key, and trusts what the store gives back only when the
        key recomputed from that request's signed body (its id is the digest of it) equals the
        key of the request it would make now: a stored request for another call, another
        session, a weaker requirement, another rule or a longer life is never this call's."""
        call = self.body()
        for timed in ("created", "expires", "attempt"):
            call.pop(timed, None)
        call["lifetime"] = self.expires - self.created
        return canonical.digest_text(canonical.envelope("bgc.PermissionCall", VERSION, call))

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> PermissionRequest:
        return cls(
            data["tool"], data["server"], data["params"], data["summary"], tuple(data["atoms"]), data["rule"],
            tuple(Requirement(item["count"], tuple(item["of"])) for item in data["requirements"]),
            data["created"], data["expires"],
            data.get("plan"), data.get("token"), data.get("session"), data.get("attempt", 0),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's signed answer to one request."""

    request: str
    decision: AnswerKind
    approver: str
    time: int
    signature: bytes

    @staticmethod
    def signed_bytes(request: str, decision: str, approver: str, time: int) -> bytes:
        body = {"request": request, "decision": decision, "approver": approver, "time": time}
        return canonical.envelope(ANSWER_TAG, VERSION, body)

    def to_data(self) -> dict[str, Any]:
        from bgc.runtime.kernel.keys import b64url

        return {"request": self.request, "decision": self.decision, "approver": self.approver, "time": self.time,
                "signature": b64url(self.signature)}  # fmt: skip


def sign_answer(request: str, decision: AnswerKind, approver: str, key: Any, time: int) -> Answer:
    """``approver``'s answer to ``request``, signed with their key (a :class:`bgc.runtime.kernel.keys.SigningKey`)."""
    if decision not in ("allow-once", "reject"):
        raise ValueError(f"an answer is allow-once or reject, not {decision!r}")
    return Answer(request, decision, approver, time, key.sign(Answer.signed_bytes(request, decision, approver, time)))


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a request stands, who counted, and why each other answer did not."""

    state: State
    counted: tuple[str, ...]
    rejected_by: str | None
    ignored: tuple[tuple[str, str], ...]
    """``(approver as claimed, why it did not count)``."""

    def describe(self, request: PermissionRequest) -> str:
        if self.state == "approved":
            return f"approved by {', '.join(self.counted)}"
        if self.state == "rejected":
            return f"rejected by {self.rejected_by}"
        if self.state == "pending":
            return f"awaits {request.needs()} (have: {', '.join(self.counted) or 'none'})"
        return self.state


def standing(
    request: PermissionRequest,
    answers: Iterable[Answer],
    trusted: Mapping[str, Any],
    *,
    now: int,
    cancelled_at: int | None = None,
) -> Standing:
    """Where ``request`` stands: see the module docstring for the rules, applied in that order.

    ``trusted`` maps approver names to their public keys (:class:`bgc.runtime.kernel.keys.PublicKey`).
    A request cancelled or past its signed expiry is never approved, whatever answers it holds:
    approvals given while it was live release its call only while it is live and not cancelled.
    """
    counted: list[str] = []
    counted_keys: dict[str, str] = {}
    ignored: list[tuple[str, str]] = []
    rejected_by: str | None = None
    for answer in sorted(answers, key=lambda a: (a.time, a.approver, a.decision)):
        why = _why_not(request, answer, trusted, cancelled_at)
        if why is not None:
            ignored.append((answer.approver, why))
            continue
        key = trusted[answer.approver].text
        if answer.decision == "reject":
            rejected_by = rejected_by or answer.approver
        elif answer.approver in counted:
            ignored.append((answer.approver, "the same approver twice counts once"))
        elif counted_keys.get(key, answer.approver) != answer.approver:
            ignored.append((answer.approver, f"the same key already counted for {counted_keys[key]}"))
        else:
            counted.append(answer.approver)
            counted_keys[key] = answer.approver
    if rejected_by is not None:
        state: State = "rejected"
    elif cancelled_at is not None:
        state = "cancelled"
    elif now >= request.expires:
        state = "expired"
    elif all(requirement.met_by(counted) for requirement in request.requirements):
        state = "approved"
    else:
        state = "pending"
    return Standing(state, tuple(counted), rejected_by, tuple(ignored))


def _why_not(
    request: PermissionRequest, answer: Answer, trusted: Mapping[str, Any], cancelled_at: int | None
) -> str | None:
    if answer.request != request.id:
        return "it answers another request"
    if not request.admits(answer.approver):
        return f"{answer.approver} is not among the approvers it needs ({request.needs()})"
    key = trusted.get(answer.approver)
    if key is None:
        return f"the policy trusts no key for approver {answer.approver}"
    if not key.verify(
        answer.signature, Answer.signed_bytes(answer.request, answer.decision, answer.approver, answer.time)
    ):
        return "the signature does not verify with the approver's trusted key"
    if answer.time < request.created or answer.time >= request.expires:
        return "given while the request was not live"
    if cancelled_at is not None and answer.time >= cancelled_at:
        return "given after the request was cancelled"
    return None


def suggest_rule(request: PermissionRequest, approver: str | None = None) -> str:
    """The narrowest rule that would have allowed the call: each atom it needed approval for,
    as a literal pattern (glob characters escaped), for a person to review and paste."""
    from bgc.core.patterns.glob import escape
    from bgc.core.policy.format import pattern_word, quote_string

    atoms = []
    for atom in request.atoms:
        resource, action, value = atom.split(":", 2)
        atoms.append(f"{resource}:{action}:{pattern_word(escape(value))}")
    reason = f"approved for {request.tool} on {request.server}" + (f" by {approver}" if approver else "")
    return f"allow {', '.join(atoms)} because {quote_string(reason)}"


def trusted_approvers(trust: Sequence[Any]) -> dict[str, Any]:
    """The approver names a policy's ``trust approver`` lines bind, with their public keys."""
    from bgc.runtime.kernel.keys import parse_public

    keys: dict[str, Any] = {}
    for line in trust:
        if line.role == "approver":
            parsed = parse_public(line.key)
            if not isinstance(parsed, str):  # a malformed key is bgc check's to report; it trusts no one
                keys[line.name] = parsed
    return keys


# ---- in the store ----------------------------------------------------------------------------------


def encode_answer(answer: Answer) -> bytes:
    return canonical.encode({"request": answer.request, "decision": answer.decision, "approver": answer.approver,
                             "time": answer.time, "signature": answer.signature})  # fmt: skip


def decode_answer(data: bytes) -> Answer | None:
    """A stored answer, or None when the bytes are not one (never counted)."""
    import cbor2

    try:
        value = cbor2.loads(data)
        answer = Answer(
            value["request"], value["decision"], value["approver"], value["time"], bytes(value["signature"])
        )
    except Exception:  # noqa: BLE001 - an unreadable answer counts for nothing
        return None
    return answer if canonical.encode(value) == data and answer.decision in ("allow-once", "reject") else None


def load_request(store: Any, request_id: str) -> tuple[PermissionRequest, int | None] | None:
    """The stored request (checked against its id) and its cancellation time, or None."""
    import cbor2

    found = store.request(request_id)
    if found is None:
        return None
    body, cancelled = found
    try:
        tag, version, data = cbor2.loads(body)
        request = PermissionRequest.from_data(data)
    except Exception:  # noqa: BLE001 - an unreadable request is no request
        return None
    if (tag, version) != (REQUEST_TAG, VERSION) or request.id != request_id:
        return None  # edited in the store: its id no longer names it
    return request, cancelled


def stored_standing(
    store: Any,
    request: PermissionRequest,
    cancelled: int | None,
    trusted: Mapping[str, Any],
    now: int,
    carried: Sequence[Answer] = (),
) -> Standing:
    """Where ``request`` stands with the answers the store holds, and ``carried`` ones (signed
    answers a message brings along, as the kernel's approval tokens do), all counted alike."""
    answers = [answer for answer in map(decode_answer, store.answers(request.id)) if answer is not None]
    return standing(request, [*answers, *carried], trusted, now=now, cancelled_at=cancelled)


class RequestUnreadable(Exception):
    """The store does not give back a request that is this call's own: unreadable, edited
    (its body no longer digests to its id), or a request for another call (its signed body,
    not the store's ``call`` column, says what it is for)."""


def stand_ask(
    store: Any, request: PermissionRequest, trusted: Mapping[str, Any], now: int
) -> tuple[PermissionRequest, Standing]:
    """Record ``request`` (or find the live one for the same call) and where it stands; nothing
    is used up (:func:`settle_ask` uses it; the kernel uses it only after its nonce check)."""
    from dataclasses import replace

    for _ in range(MAX_ATTEMPTS):
        request_id = store.put_request(
            request.id, request.call_key(), request.encode(), request.created, request.expires
        )
        loaded = load_request(store, request_id)
        if loaded is None:
            raise RequestUnreadable(f"permission request {request_id} cannot be read back from the store")
        stored, cancelled = loaded
        if stored.call_key() != request.call_key():
            raise RequestUnreadable(
                f"the store gave permission request {request_id} for this call, but what it binds (the call, "
                "session, rule, requirements or lifetime) is not this call's: the store was edited"
            )
        if request_id == request.id and (cancelled is not None or was_used(store, stored)):
            request = replace(request, attempt=request.attempt + 1)  # its ended twin of the same second
            continue
        return stored, stored_standing(store, stored, cancelled, trusted, now)
    raise RequestUnreadable(f"the same call was asked {MAX_ATTEMPTS} times within one second")


MAX_ATTEMPTS = 64
"""Requests for one call made within one second (each used or cancelled before the next)."""


def was_used(store: Any, request: PermissionRequest) -> bool:
    """Whether an answered request was used by its call already."""
    from bgc.runtime.store.sql import USED_REQUEST

    return bool(store.consumed(USED_REQUEST, request.id))


def use_request(store: Any, request: PermissionRequest) -> bool:
    """Use an answered request for its one call: True the first time, across processes."""
    from bgc.runtime.store.sql import USED_REQUEST

    return bool(store.consume_once(USED_REQUEST, request.id, request.expires))


@dataclass(frozen=True, slots=True)
class AskOutcome:
    """What an enforcer does with a call that met ``ask``: ``allow`` (approved, used now),
    ``deny`` (rejected, cancelled or expired) or ``ask`` (still waiting), and the request."""

    effect: Literal["allow", "ask", "deny"]
    reason: str
    request: str
    approvers: tuple[str, ...] = ()
    standing: str | None = None
    """For ``ask``: where the request stands, for ``bgc approve`` (``awaits 1 approval (have:
    none)``); None when the policy trusts no approver, so no ``bgc approve`` can answer it."""


def settle_ask(store: Any, request: PermissionRequest, trusted: Mapping[str, Any], now: int) -> AskOutcome:
    """Record the request (or find the live one for the same call) and apply its answers.

    An approved or rejected request is used by this call, exactly once across processes (the
    store's consume-once): the next attempt makes a new request. Any store failure propagates
    as :class:`~bgc.runtime.store.StoreError`, which callers turn into a deny.
    """
    try:
        stored, result = stand_ask(store, request, trusted, now)
    except RequestUnreadable as error:
        return AskOutcome("deny", str(error), request.id)
    request_id = stored.id
    if result.state in ("approved", "rejected"):
        if not use_request(store, stored):
            return AskOutcome("deny", f"permission request {request_id} was already used", request_id)
        if result.state == "approved":
            return AskOutcome(
                "allow", f"approved once by {', '.join(result.counted)} ({request_id})", request_id, result.counted
            )
        return AskOutcome("deny", f"rejected by {result.rejected_by} ({request_id})", request_id)
    if result.state != "pending":
        return AskOutcome("deny", f"permission request {request_id} is {result.state}", request_id)
    described = result.describe(stored)
    return AskOutcome("ask", awaiting(request_id, described, trusted), request_id, standing=described if trusted else None)


def awaiting(request_id: str, standing: str, trusted: Mapping[str, Any]) -> str:
    """A pending request as a decision's reason names it: how people approve it (``bgc approve``
    and where it stands), or, when the policy trusts no approver (the starter trusts none), that
    no ``bgc approve`` can: only an agent's own permission dialog may then let the call run."""
    if not trusted:
        return f"needs approval (request {request_id}), which no bgc approve can give: the policy trusts no approver"
    return f"needs approval: bgc approve {request_id} ({standing})"
