"""``authorization_conflict`` and the message schema: one test per rule of docs/kernel.md's
table, each message built by hand, each refused before any signature is checked (the token in
these messages is not even a token: reaching the signature check would say BGC510)."""

from __future__ import annotations

import json

import pytest

from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.messages import Conflict, authorization_conflict, read_message
from bgc.runtime.kernel.nonce import issue_nonce, request_digest
from tests.kernel_support import KERNEL, NOW, make_token

REQUEST = "sha256:" + "1" * 64
INTENT = {"kind": "bgc.PermissionRequest", "payload": REQUEST}


def approval(name: str, intent: str = REQUEST) -> dict:
    return {"approver": name, "intent": intent, "time": NOW, "signature": "c2ln"}


def message(**fields: object) -> str:
    body: dict = {
        "id": "r1", "capability_token": "NOT-A-TOKEN", "server_id": "local", "tool": "fs.write",
        "params": {"path": "/src/a.py"}, "approval_tokens": [],
    }  # fmt: skip
    body.update(fields)
    return json.dumps({"ToolCallRequest": body})


def refused(line: str) -> Conflict:
    result = read_message(line)
    if not isinstance(result, Conflict):
        result = authorization_conflict(result)  # type: ignore[arg-type]
    assert isinstance(result, Conflict), result
    decision = Kernel([]).authorize_line(line)
    assert (decision.decision, decision.code) == ("deny", result.code)
    return result


def test_a_message_without_authorization_fields_has_no_conflict() -> None:
    assert not isinstance(read_message(message()), Conflict)
    assert Kernel([]).authorize_line(message()).code == "BGC510"  # it reached the token check


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"governed_intent": INTENT, "approval_token": approval("alice"), "approval_tokens": [approval("bob")],
          "threshold_approval_proposal": {"threshold": 1, "approvers": ["bob"]}}, "BGC503"),
        ({"governed_intent": INTENT, "approval_tokens": [approval("alice")]}, "BGC504"),
        ({"governed_intent": INTENT, "threshold_approval_proposal": {"threshold": 1, "approvers": ["alice"]}}, "BGC505"),
        ({"approval_token": approval("alice")}, "BGC506"),
        ({"approval_tokens": [approval("alice")], "threshold_approval_proposal": {"threshold": 1, "approvers": ["alice"]}}, "BGC506"),
        ({"governed_intent": INTENT, "approval_tokens": [approval("alice")],
          "threshold_approval_proposal": {"threshold": 0, "approvers": ["alice"]}}, "BGC507"),
        ({"governed_intent": INTENT, "approval_tokens": [approval("alice")],
          "threshold_approval_proposal": {"threshold": 3, "approvers": ["alice", "bob"]}}, "BGC507"),
        ({"governed_intent": INTENT, "approval_tokens": [approval("alice"), approval("alice")],
          "threshold_approval_proposal": {"threshold": 2, "approvers": ["alice", "bob"]}}, "BGC508"),
        ({"governed_intent": INTENT, "approval_tokens": [approval("alice"), approval("bob")],
          "threshold_approval_proposal": {"threshold": 2, "approvers": ["alice", "alice"]}}, "BGC508"),
    ],
    ids=["single-and-threshold", "tokens-without-proposal", "proposal-without-tokens", "single-without-intent",
         "threshold-without-intent", "threshold-zero", "threshold-above-list", "approver-twice-in-tokens",
         "approver-twice-in-proposal"],
)  # fmt: skip
def test_approval_conflicts(fields: dict, code: str) -> None:
    assert refused(message(**fields)).code == code


def test_an_admissible_threshold_set_is_no_conflict() -> None:
    fields = {"governed_intent": INTENT, "approval_tokens": [approval("alice"), approval("bob")],
              "threshold_approval_proposal": {"threshold": 2, "approvers": ["alice", "bob", "carol"]}}  # fmt: skip
    parsed = read_message(message(**fields))
    assert not isinstance(parsed, Conflict) and authorization_conflict(parsed) is None


def test_a_message_a_library_caller_builds_is_checked_for_conflicts_first() -> None:
    from dataclasses import replace

    parsed = read_message(message())
    assert not isinstance(parsed, Conflict)
    both = replace(parsed, governed_intent=INTENT, approval_tokens=(parsed_approval("a"),), approval_token=parsed_approval("b"))
    assert Kernel([]).authorize(both).code == "BGC503"


def parsed_approval(name: str):  # type: ignore[no-untyped-def]
    from bgc.runtime.kernel.messages import ApprovalToken

    return ApprovalToken(name, REQUEST, NOW, b"sig")


def test_a_nonce_bound_to_another_request() -> None:
    token, other_token = make_token(), make_token()
    other = request_digest(token.id, "r2", "fs.write", "local", {"path": "/src/a.py"})
    assert refused(message(capability_token=token.text(), execution_nonce=issue_nonce(other, KERNEL, now=NOW))).code == "BGC509"
    mine = request_digest(token.id, "r1", "fs.write", "local", {"path": "/src/a.py"})
    for changed in ({"params": {"path": "/src/b.py"}}, {"tool": "fs.read"}, {"server_id": "prod"}, {"id": "r9"},
                    {"capability_token": other_token.text()}, {"capability_token": "NOT-A-TOKEN"}):  # fmt: skip
        fields = {"capability_token": token.text(), "execution_nonce": issue_nonce(mine, KERNEL, now=NOW), **changed}
        assert refused(message(**fields)).code == "BGC509"
    assert authorization_conflict(read_message(message(capability_token=token.text(), execution_nonce=issue_nonce(mine, KERNEL, now=NOW)))) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "line",
    [
        message(admin=True),
        message(governed_intent={"kind": "x", "payload": 1, "extra": 2}),
        message(governed_intent=INTENT, approval_token={**approval("a"), "scope": "all"}),
        message(governed_intent=INTENT, approval_tokens=[approval("a")],
                threshold_approval_proposal={"threshold": 1, "approvers": ["a"], "quorum": 1}),
        json.dumps({"ToolCallRequest": json.loads(message())["ToolCallRequest"], "Extra": {}}),
    ],
    ids=["request", "intent", "approval", "proposal", "second-variant"],
)  # fmt: skip
def test_unknown_fields_refuse_the_whole_message(line: str) -> None:
    assert refused(line).code in ("BGC501", "BGC500")


@pytest.mark.parametrize(
    "fields",
    [
        {"id": 7}, {"id": ""}, {"capability_token": None}, {"server_id": ["local"]}, {"tool": True},
        {"params": ["/src/a.py"]}, {"params": "path"}, {"approval_tokens": None}, {"approval_tokens": {}},
        {"governed_intent": "migrate"}, {"governed_intent": {"kind": 1, "payload": 1}},
        {"approval_token": "alice"}, {"governed_intent": INTENT, "approval_token": {**approval("a"), "approver": 1}},
        {"governed_intent": INTENT, "approval_token": {**approval("a"), "signature": "c2ln=="}},
        {"governed_intent": INTENT, "approval_token": {**approval("a"), "signature": "not base64!"}},
        {"governed_intent": INTENT, "approval_token": {**approval("a"), "time": "now"}},
        {"governed_intent": INTENT, "approval_token": {k: v for k, v in approval("a").items() if k != "time"}},
        {"governed_intent": INTENT, "approval_tokens": [approval("a")], "threshold_approval_proposal": {"threshold": "1", "approvers": ["a"]}},
        {"governed_intent": INTENT, "approval_tokens": [approval("a")], "threshold_approval_proposal": {"threshold": 1.0, "approvers": ["a"]}},
        {"governed_intent": INTENT, "approval_tokens": [approval("a")], "threshold_approval_proposal": {"threshold": True, "approvers": ["a"]}},
        {"governed_intent": INTENT, "approval_tokens": [approval("a")], "threshold_approval_proposal": {"threshold": 1, "approvers": [1]}},
        {"execution_nonce": 5}, {"execution_nonce": "AAAA"}, {"params": {"n": 2**70}},
    ],
)  # fmt: skip
def test_a_wrong_type_anywhere_refuses_the_whole_message(fields: dict) -> None:
    assert refused(message(**fields)).code == "BGC502"


def test_a_missing_required_field() -> None:
    body = json.loads(message())["ToolCallRequest"]
    for key in ("id", "capability_token", "server_id", "tool", "params", "approval_tokens"):
        rest = {k: v for k, v in body.items() if k != key}
        assert refused(json.dumps({"ToolCallRequest": rest})).code == "BGC502"


@pytest.mark.parametrize(
    "line",
    ["", "{", "[]", "42", '"Shutdown"', '{"ListCapabilities": null}', '{"ToolCallRequest": {}, "x": 1}',
     message().replace('"id": "r1"', '"id": "r1", "id": "r2"'), message().replace('"r1"', "NaN"),
     "[" * 100_000, "x" * (1024 * 1024 + 1)],
)  # fmt: skip
def test_what_is_not_one_message(line: str) -> None:
    assert refused(line).code in ("BGC500", "BGC502")


def test_supplemental_authorization_is_opaque() -> None:
    for opaque in ({"anything": [1, 2, {"x": None}]}, "text", 3, [True]):
        parsed = read_message(message(supplemental_authorization=opaque))
        assert not isinstance(parsed, Conflict) and parsed.supplemental_authorization == opaque


def test_the_conflict_function_of_a_parsed_message() -> None:
    parsed = read_message(message())
    assert not isinstance(parsed, Conflict)
    assert authorization_conflict(parsed) is None
