"""AgentMessage values (seed: agent-message.md) read strictly, and ``authorization_conflict``.

A message arrives as one JSON line in serde's externally tagged shape:
``{"ToolCallRequest": {...}}``, ``"ListCapabilities"`` or ``"Heartbeat"``. Reading it is part
of the conflict check: a field the schema does not have, a field of the wrong type, a missing
one, a duplicate key, a number JSON cannot hold exactly, or a line that is not one message
refuses the whole message, because "a peer that ignores the schema must still be refused rather
than evaluated against a partial authorization set". Then :func:`authorization_conflict`
decides whether the authorization fields can be honoured together. Both come before any
signature is checked, and each refusal names its rule (docs/kernel.md, "Conflict rules").

The approval values mean what docs/kernel.md ("Approvals") says: a governed intent
``{"kind": "bgc.PermissionRequest", "payload": REQUEST_ID}`` names the permission request the
kernel recorded when the call met ``ask``; an approval token is one person's signed
``allow-once`` answer to that request (``bgc approve --token`` prints it); a threshold proposal
says how many of which people the agent counts on, and is checked against the rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bgc.core.values import canonical, jsonline
from bgc import codes
from dataclasses import dataclass
from bgc.core.values.canonical import DataModelError
from bgc.runtime.kernel.nonce import NonceError, read_nonce, request_digest
from bgc.runtime.kernel.token import TokenError, decode_token

MAX_MESSAGE_CHARS = 1024 * 1024
"""A message line longer than this is refused unread (a token is kilobytes, params too)."""


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why a message is refused whole before any signature is checked."""

    code: str
    rule: str
    reason: str


@dataclass(frozen=True, slots=True)
class ApprovalToken:
    """``{"approver": NAME, "intent": REQUEST_ID, "time": SECONDS, "signature": BASE64URL}``: the
    approver's Ed25519 signature over their ``allow-once`` answer to the permission request
    (:class:`bgc.runtime.approvals.Answer`), which the signature binds together with the time."""

    approver: str
    intent: str
    time: int
    signature: bytes


@dataclass(frozen=True, slots=True)
class ThresholdProposal:
    """``{"threshold": N, "approvers": [NAME...]}``: N distinct approvers of the list."""

    threshold: int
    approvers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    id: str
    capability_token: str
    server_id: str
    tool: str
    params: Any
    governed_intent: Any
    approval_token: ApprovalToken | None
    approval_tokens: tuple[ApprovalToken, ...]
    threshold_approval_proposal: ThresholdProposal | None
    supplemental_authorization: Any
    execution_nonce: str | None


@dataclass(frozen=True, slots=True)
class ListCapabilities:
    pass


@dataclass(frozen=True, slots=True)
class Heartbeat:
    pass


AgentMessage = ToolCallRequest | ListCapabilities | Heartbeat

_REQUEST_FIELDS = (
    "id", "capability_token", "server_id", "tool", "params", "governed_intent", "approval_token",
    "approval_tokens", "threshold_approval_proposal", "supplemental_authorization", "execution_nonce",
)  # fmt: skip
_OPTIONAL = frozenset(
    {
        "governed_intent",
        "approval_token",
        "threshold_approval_proposal",
        "supplemental_authorization",
        "execution_nonce",
    }
)
"""serde reads a missing ``Option`` field as ``None``; every other field is required."""


class _Schema(Exception):
    def __init__(self, code: str, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.conflict = Conflict(code, rule, reason)


def _wrong(path: str, expected: str, got: Any) -> _Schema:
    return _Schema(
        codes.MESSAGE_BAD_FIELD, "wrong-type", f"{path}: expected {expected}, got {canonical.kind_name(got)}"
    )


def read_message(line: str) -> AgentMessage | Conflict:
    """The message on ``line``, or the schema rule that refuses it (BGC500-BGC502). The
    authorization fields' rules (:func:`authorization_conflict`) are the kernel's first check,
    for messages read here and for messages a library caller builds alike."""
    try:
        return _read(line)
    except _Schema as error:
        return error.conflict


def _read(line: str) -> AgentMessage:
    if len(line) > MAX_MESSAGE_CHARS:
        raise _Schema(
            codes.MESSAGE_UNREADABLE, "not-a-message", f"a message line is at most {MAX_MESSAGE_CHARS:,} characters"
        )
    try:
        data = jsonline.parse_text(line, data_model=False)  # total: every failure is this refusal
    except jsonline.Unreadable as error:
        raise _Schema(codes.MESSAGE_UNREADABLE, "not-a-message", str(error)) from None
    if data == "ListCapabilities":
        return ListCapabilities()
    if data == "Heartbeat":
        return Heartbeat()
    if isinstance(data, Mapping) and len(data) == 1:
        ((variant, body),) = data.items()
        if variant == "ToolCallRequest":
            return _request(body)
        if variant in ("ListCapabilities", "Heartbeat"):
            raise _Schema(
                codes.MESSAGE_BAD_FIELD, "wrong-type", f"{variant} is a unit variant, written as the string {variant!r}"
            )
    raise _Schema(
        codes.MESSAGE_UNREADABLE, "not-a-message",
        'not an AgentMessage: expected {"ToolCallRequest": {...}}, "ListCapabilities" or "Heartbeat"',
    )  # fmt: skip


def _request(body: Any) -> ToolCallRequest:
    if not isinstance(body, Mapping):
        raise _wrong("ToolCallRequest", "a map", body)
    for key in body:
        if key not in _REQUEST_FIELDS:
            raise _Schema(codes.MESSAGE_UNKNOWN_FIELD, "unknown-field", f"ToolCallRequest has no field {key!r}")
    for key in _REQUEST_FIELDS:
        if key not in body and key not in _OPTIONAL:
            raise _Schema(codes.MESSAGE_BAD_FIELD, "wrong-type", f"ToolCallRequest.{key} is missing")
    field = {key: body.get(key) for key in _REQUEST_FIELDS}
    for key in ("id", "capability_token", "server_id", "tool"):
        if type(field[key]) is not str or not field[key]:
            raise _wrong(f"ToolCallRequest.{key}", "non-empty text", field[key])
    for key in (
        "id",
        "server_id",
        "tool",
        "params",
        "governed_intent",
        "approval_token",
        "approval_tokens",
        "threshold_approval_proposal",
        "supplemental_authorization",
    ):
        try:  # what is hashed or encoded later must lie in the canonical data model
            canonical.check_value(field[key], ("ToolCallRequest", key))
        except DataModelError as error:
            raise _Schema(
                codes.MESSAGE_BAD_FIELD, "wrong-type", f"{canonical.format_path(error.path)}: {error.message}"
            ) from None
    if not isinstance(field["params"], Mapping):
        raise _wrong("ToolCallRequest.params", "a map", field["params"])
    intent = field["governed_intent"]
    if intent is not None:
        _only(intent, "ToolCallRequest.governed_intent", {"kind": str, "payload": None})
    nonce = field["execution_nonce"]
    if nonce is not None and type(nonce) is not str:
        raise _wrong("ToolCallRequest.execution_nonce", "text or null", nonce)
    tokens = field["approval_tokens"]
    if type(tokens) is not list:
        raise _wrong("ToolCallRequest.approval_tokens", "a list", tokens)
    return ToolCallRequest(
        field["id"],
        field["capability_token"],
        field["server_id"],
        field["tool"],
        field["params"],
        intent,
        None
        if field["approval_token"] is None
        else _approval(field["approval_token"], "ToolCallRequest.approval_token"),
        tuple(_approval(item, f"ToolCallRequest.approval_tokens[{i}]") for i, item in enumerate(tokens)),
        _proposal(field["threshold_approval_proposal"]),
        field["supplemental_authorization"],
        nonce,
    )


def _only(data: Any, path: str, kinds: dict[str, type | None]) -> Mapping[str, Any]:
    """``data`` is a map with exactly the fields of ``kinds``, each of its kind (None: any)."""
    if not isinstance(data, Mapping):
        raise _wrong(path, "a map", data)
    for key in data:
        if key not in kinds:
            raise _Schema(codes.MESSAGE_UNKNOWN_FIELD, "unknown-field", f"{path} has no field {key!r}")
    for key, kind in kinds.items():
        if key not in data:
            raise _Schema(codes.MESSAGE_BAD_FIELD, "wrong-type", f"{path}.{key} is missing")
        if kind is not None and type(data[key]) is not kind:
            raise _wrong(f"{path}.{key}", {str: "text", int: "an integer", list: "a list"}[kind], data[key])
    return data


def _approval(data: Any, path: str) -> ApprovalToken:
    from bgc.runtime.kernel.keys import from_b64url

    fields = _only(data, path, {"approver": str, "intent": str, "time": int, "signature": str})
    signature = from_b64url(fields["signature"])
    if signature is None:
        raise _Schema(codes.MESSAGE_BAD_FIELD, "wrong-type", f"{path}.signature: expected unpadded base64url text")
    return ApprovalToken(fields["approver"], fields["intent"], fields["time"], signature)


def _proposal(data: Any) -> ThresholdProposal | None:
    if data is None:
        return None
    path = "ToolCallRequest.threshold_approval_proposal"
    fields = _only(data, path, {"threshold": int, "approvers": list})
    for i, name in enumerate(fields["approvers"]):
        if type(name) is not str or not name:
            raise _wrong(f"{path}.approvers[{i}]", "an approver's name", name)
    return ThresholdProposal(fields["threshold"], tuple(fields["approvers"]))


def authorization_conflict(message: ToolCallRequest) -> Conflict | None:
    """Why the authorization fields cannot be honoured together, or None (the seed's
    ``AgentMessage::authorization_conflict``); the rules in order, docs/kernel.md's table."""
    single, several, proposal = message.approval_token, message.approval_tokens, message.threshold_approval_proposal
    if single is not None and several:
        return Conflict(
            codes.APPROVAL_TOKEN_AND_TOKENS,
            "single-and-threshold",
            "approval_token and approval_tokens cannot both be given",
        )
    if several and proposal is None:
        return Conflict(
            codes.APPROVAL_TOKENS_WITHOUT_PROPOSAL,
            "tokens-without-proposal",
            "approval_tokens without a threshold_approval_proposal to count them against",
        )
    if proposal is not None and not several:
        return Conflict(
            codes.PROPOSAL_WITHOUT_APPROVAL_TOKENS,
            "proposal-without-tokens",
            "a threshold_approval_proposal without approval_tokens",
        )
    if (single is not None or several or proposal is not None) and message.governed_intent is None:
        return Conflict(
            codes.APPROVAL_WITHOUT_INTENT,
            "approval-without-intent",
            "an approval without the governed_intent it approves",
        )
    if proposal is not None and not 1 <= proposal.threshold <= len(proposal.approvers):
        return Conflict(
            codes.BAD_THRESHOLD, "threshold-out-of-range",
            f"threshold {proposal.threshold} is not between 1 and the {len(proposal.approvers)} approvers listed",
        )  # fmt: skip
    intent = message.governed_intent
    for token in (single, *several) if single is not None else several:
        if not (isinstance(intent, Mapping) and intent.get("payload") == token.intent):
            return Conflict(
                codes.APPROVAL_FOR_ANOTHER_INTENT, "approval-for-another-intent",
                f"{token.approver}'s approval is for {token.intent}, not the governed intent's request",
            )  # fmt: skip
    for names, where in (
        ((t.approver for t in several), "approval_tokens"),
        (proposal.approvers if proposal else (), "the proposal's approvers"),
    ):
        seen: set[str] = set()
        for name in names:
            if name in seen:
                return Conflict(codes.APPROVER_TWICE, "approver-twice", f"approver {name!r} appears twice in {where}")
            seen.add(name)
    if message.execution_nonce is not None:
        try:
            nonce = read_nonce(message.execution_nonce)
        except NonceError as error:
            return Conflict(codes.MESSAGE_BAD_FIELD, "wrong-type", f"ToolCallRequest.execution_nonce: {error}")
        try:
            token = decode_token(message.capability_token).id
        except TokenError:
            token = None  # no chain to be bound to: no nonce can be for this request
        if token is None or nonce.request != request_digest(token, message.id, message.tool, message.server_id, message.params):
            return Conflict(
                codes.NONCE_OF_ANOTHER_REQUEST,
                "nonce-bound-elsewhere",
                "the execution_nonce was issued for another request or another token",
            )
    return None
