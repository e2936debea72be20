"""``authorize`` meets ``ask``: a permission request bound to the exact call and token, allowed
once when enough trusted people approved it — in the store (`bgc approve`) or carried in the
message as approval tokens. Every message is built by hand, as a peer sends it."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from bgc.runtime.approvals import encode_answer, sign_answer
from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.keys import SigningKey, b64url
from bgc.runtime.ledger import decode_entry
from bgc.runtime.store.sqlite import SqliteStore
from tests.kernel_support import ISSUER, KERNEL, NOW, OTHER, line, make_token, request
from tests.samples import examples

TOKEN = make_token()
DBA = SigningKey.from_seed(bytes(range(3, 35)), "dba-oncall")
MIGRATION = {"path": "/migrations/0042.py"}


@pytest.fixture
def store(tmp_path):  # type: ignore[no-untyped-def]
    opened = SqliteStore(str(tmp_path / "kernel.db"))
    yield opened
    opened.close()


@pytest.fixture
def kernel(store: SqliteStore) -> Kernel:
    return Kernel([ISSUER.public], KERNEL, store, clock=ticking(), approvers={"dba-oncall": DBA.public}, ledger=True)


def ticking() -> Any:
    """A clock a second further on at every reading (a request made later is another request)."""
    return itertools.count(NOW + 10).__next__


def first_request(kernel: Kernel, **fields: Any) -> str:
    """The id of the permission request the call meets (recorded by the kernel)."""
    decision = kernel.authorize_line(line(request(TOKEN, params=MIGRATION, **fields)))
    assert (decision.decision, decision.code) == ("deny", "BGC520"), decision
    found = re.search(r"bgc approve (sha256:[0-9a-f]{64})", decision.reason)
    assert found and "1 of [dba-oncall]" in decision.reason
    return found.group(1)


def carried(request_id: str, key: SigningKey = DBA, name: str = "dba-oncall", time: int = NOW + 1000) -> dict[str, Any]:
    answer = sign_answer(request_id, "allow-once", name, key, time)
    return {"approver": name, "intent": request_id, "time": time, "signature": b64url(answer.signature)}


def intent(request_id: str) -> dict[str, Any]:
    return {"kind": "bgc.PermissionRequest", "payload": request_id}


def test_an_approval_in_the_store_allows_the_call_once(kernel: Kernel, store: SqliteStore) -> None:
    request_id = first_request(kernel)
    assert first_request(kernel) == request_id  # the same call finds the same live request
    store.add_answer(
        request_id,
        "dba-oncall",
        "allow-once",
        encode_answer(sign_answer(request_id, "allow-once", "dba-oncall", DBA, NOW + 100)),
    )
    decision = kernel.authorize_line(line(request(TOKEN, params=MIGRATION)))
    assert (decision.decision, decision.code, decision.request, decision.approvers) == (
        "allow",
        "BGC534",
        request_id,
        ("dba-oncall",),
    )
    assert any(rule.startswith("modes.bgp:") for rule in decision.rules)
    assert first_request(kernel) != request_id  # used: the next attempt is a new request


def test_an_approval_token_carried_in_the_message_allows_the_call_once(kernel: Kernel) -> None:
    request_id = first_request(kernel)
    message = request(TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_token=carried(request_id))
    decision = kernel.authorize_line(line(message))
    assert (decision.decision, decision.code, decision.approvers) == ("allow", "BGC534", ("dba-oncall",))
    replayed = kernel.authorize_line(line(message))
    assert (replayed.decision, replayed.code) == ("deny", "BGC528") and "already used" in replayed.reason


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"params": {"path": "/migrations/0043.py"}}, "BGC526"),  # another parameter: another call
        ({"tool": "fs.delete"}, "BGC516"),  # outside the token's scope before approvals are read
        ({"capability_token": make_token(ttl=7200).text()}, "BGC526"),  # another token: another call
    ],
)
def test_an_approval_never_counts_for_another_call(kernel: Kernel, change: dict[str, Any], code: str) -> None:
    request_id = first_request(kernel)
    message = request(TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_token=carried(request_id))
    message["ToolCallRequest"].update(change)
    decision = kernel.authorize_line(line(message))
    assert (decision.decision, decision.code) == ("deny", code), decision


def test_a_request_the_kernel_never_recorded_is_not_approvable(kernel: Kernel) -> None:
    made_up = "sha256:" + "ab" * 32
    message = request(TOKEN, params=MIGRATION, governed_intent=intent(made_up), approval_token=carried(made_up))
    assert kernel.authorize_line(line(message)).code == "BGC526"


@pytest.mark.parametrize(
    "forge",
    [
        lambda rid: carried(rid, key=OTHER),  # a key the policy does not trust for the name
        lambda rid: carried(rid, name="mallory"),  # a name the rule does not list (and no key)
        lambda rid: {**carried(rid), "time": NOW + 101},  # the signed time changed
        lambda rid: carried(rid, time=NOW - 100),  # signed before the request existed
        lambda rid: {**carried(rid), "signature": b64url(bytes(64))},  # not a signature at all
    ],
    ids=["untrusted-key", "unlisted-name", "time-changed", "before-the-request", "zero-signature"],
)
def test_approval_tokens_that_must_not_count(kernel: Kernel, forge: Any) -> None:
    request_id = first_request(kernel)
    message = request(TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_token=forge(request_id))
    decision = kernel.authorize_line(line(message))
    assert (decision.decision, decision.code) == ("deny", "BGC520"), decision


def test_a_threshold_proposal_never_asks_less_than_the_rule(kernel: Kernel) -> None:
    request_id = first_request(kernel)
    weaker = request(TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_tokens=[carried(request_id)],
                     threshold_approval_proposal={"threshold": 1, "approvers": ["dba-oncall", "mallory"]})  # fmt: skip
    decision = kernel.authorize_line(line(weaker))
    assert (decision.decision, decision.code) == ("deny", "BGC527")
    exact = request(TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_tokens=[carried(request_id)],
                    threshold_approval_proposal={"threshold": 1, "approvers": ["dba-oncall"]})  # fmt: skip
    assert kernel.authorize_line(line(exact)).code == "BGC534"


def test_a_rejection_ends_the_request(kernel: Kernel, store: SqliteStore) -> None:
    request_id = first_request(kernel)
    store.add_answer(
        request_id,
        "dba-oncall",
        "reject",
        encode_answer(sign_answer(request_id, "reject", "dba-oncall", DBA, NOW + 100)),
    )
    message = request(
        TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_token=carried(request_id, time=NOW + 101)
    )
    decision = kernel.authorize_line(line(message))
    assert (decision.decision, decision.code) == ("deny", "BGC528") and "rejected by dba-oncall" in decision.reason


def test_a_failed_nonce_does_not_use_up_the_approval(store: SqliteStore) -> None:
    kernel = Kernel([ISSUER.public], KERNEL, store, require_nonce=True, clock=ticking(),
                    approvers={"dba-oncall": DBA.public})  # fmt: skip
    request_id = first_request(kernel)
    approved = request(TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_token=carried(request_id))
    assert kernel.authorize_line(line(approved)).code == "BGC521"  # no nonce yet: refused, approval kept
    body = approved["ToolCallRequest"]
    preflight, nonce = kernel.preflight(kernel_message(approved))
    assert (preflight.decision, preflight.code, nonce is not None) == ("allow", "BGC534", True)  # not used yet
    body["execution_nonce"] = nonce
    assert kernel.authorize_line(line(approved)).code == "BGC534"
    again, fresh = kernel.preflight(kernel_message({"ToolCallRequest": {**body, "execution_nonce": None}}))
    assert (again.code, fresh) == ("BGC528", None)  # the approval was used once: no nonce for it again


def kernel_message(message: dict[str, Any]) -> Any:
    from bgc.runtime.kernel.messages import read_message

    return read_message(line(message))


def test_every_decision_is_in_the_ledger_with_its_rule_and_approvers(kernel: Kernel, store: SqliteStore) -> None:
    request_id = first_request(kernel)
    kernel.authorize_line(
        line(request(TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_token=carried(request_id)))
    )
    kernel.authorize_line("not json")
    entries = [decode_entry(seq, digest, data) for seq, digest, data in store.rows()]
    bodies = [entry.body for entry in entries]  # type: ignore[union-attr]
    assert [(body["kind"], body["decision"]) for body in bodies] == [
        ("authorize", "deny"),
        ("authorize", "allow"),
        ("authorize", "deny"),
    ]
    allowed = bodies[1]
    assert allowed["request"] == request_id and allowed["approvers"] == ["dba-oncall"]
    assert allowed["rule"].startswith("modes.bgp:") and allowed["tool"] == "fs.write" and allowed["token"]
    assert bodies[2]["reason"].startswith("BGC500")


def test_from_the_command_line_ask_approve_then_allowed_once(tmp_path: Any) -> None:
    from tests.samples import bgc

    bgc("key", "new", "dba-oncall", "--dir", str(tmp_path))
    dba = (tmp_path / "dba-oncall.pub").read_text().strip()
    policy = tmp_path / "trust.bgp"
    policy.write_text(f"trust issuer release-bot {ISSUER.public.text}\ntrust approver dba-oncall {dba}\n")
    message = tmp_path / "call.json"
    message.write_text(line(request(make_token(now=int(__import__("time").time())), params=MIGRATION)) + "\n")
    store = str(tmp_path / "kernel.db")
    args = ("authorize", str(message), "-p", str(policy), "--store", store)
    first = bgc(*args)
    assert first.exit_code == 1 and '"BGC520"' in first.stdout
    request_id = re.search(r"bgc approve (sha256:[0-9a-f]{64})", first.stdout).group(1)  # type: ignore[union-attr]
    approved = bgc(
        "approve", request_id, "--key", str(tmp_path / "dba-oncall.key"), "-p", str(policy), "--store", store, "--token"
    )
    assert approved.exit_code == 0, approved.output
    token = json.loads(approved.stdout.splitlines()[-1])
    assert token["approver"] == "dba-oncall" and token["intent"] == request_id
    allowed = bgc(*args)
    assert allowed.exit_code == 0 and '"BGC534"' in allowed.stdout, allowed.stdout
    again = bgc(*args)
    assert again.exit_code == 1 and '"BGC520"' in again.stdout  # once: a new request
    shown = bgc("log", "show", "--store", store, "--kind", "authorize", "--format", "json")
    assert [json.loads(entry)["decision"] for entry in shown.stdout.splitlines()] == ["deny", "allow", "deny"]


def _mutations() -> Any:
    """Every way one field of a carried approval (or the intent naming its request) can differ
    from what alice signed: by class, not by example."""
    from hypothesis import strategies as st

    text = st.text(min_size=1, max_size=12)
    return st.one_of(
        st.tuples(st.just("approver"), text.filter(lambda name: name != "dba-oncall")),
        st.tuples(st.just("time"), st.integers(NOW, NOW + 3000).filter(lambda t: t != NOW + 100)),
        st.tuples(st.just("signature-bit"), st.integers(0, 64 * 8 - 1)),
        st.tuples(st.just("signature-length"), st.integers(0, 63)),
        st.tuples(st.just("intent"), st.integers(0, 63)),
    )


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=_mutations())
def test_no_mutation_of_a_carried_approval_is_ever_an_allow(tmp_path: Any, mutation: tuple[str, Any]) -> None:
    import base64
    import tempfile

    with tempfile.TemporaryDirectory(dir=tmp_path) as where:
        store = SqliteStore(f"{where}/k.db")
        kernel = Kernel([ISSUER.public], KERNEL, store, clock=ticking(), approvers={"dba-oncall": DBA.public})
        request_id = first_request(kernel)
        token = carried(request_id)
        signature = bytearray(base64.urlsafe_b64decode(token["signature"] + "=="))
        named = request_id
        field, value = mutation
        if field == "signature-bit":
            signature[value // 8] ^= 1 << (value % 8)
        elif field == "signature-length":
            signature = signature[:value]
        elif field == "intent":
            named = request_id[:-1] + ("0" if request_id[-1] != "0" else "1") if value % 2 else "sha256:" + f"{value:02x}" * 32
        else:
            token[field] = value
        token["signature"] = b64url(bytes(signature))
        token["intent"] = named
        message = request(TOKEN, params=MIGRATION, governed_intent=intent(named), approval_token=token)
        assert kernel.authorize_line(line(message)).decision == "deny", mutation
        honest = request(TOKEN, params=MIGRATION, governed_intent=intent(request_id), approval_token=carried(request_id))
        assert kernel.authorize_line(line(honest)).decision == "allow"  # the same request, unmutated, is approved
        store.close()
