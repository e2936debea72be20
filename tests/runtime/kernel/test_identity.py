"""A token's identity is the digest of its whole chain, never the ``token`` id a link claims.

Whoever holds a token can sign a child of it claiming any id (the id is the signer's choice),
so an attacker holding any token from the same issuer can claim a victim's id, printed in every
allow. Each attack shape below builds such a child and tries to spend what belongs to the
victim: the approvals people gave in the store, the approval tokens the victim carried, the
victim's live permission request, the victim's execution nonce; and the ledger must tell the
two apart. Every store test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bgc.runtime.approvals import encode_answer, sign_answer
from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.keys import SigningKey, b64url
from bgc.runtime.kernel.messages import read_message
from bgc.runtime.kernel.token import Token, attenuate, verify_chain
from bgc.runtime.ledger import decode_entry
from bgc.runtime.store import open_store
from tests.kernel_support import ISSUER, KERNEL, NOW, forge_child, line, make_token, outermost, request

DBA = SigningKey.from_seed(bytes(range(3, 35)), "dba-oncall")
MIGRATION = {"path": "/migrations/0042.py"}


def narrowed(token: Token) -> Token:
    """A child as `bgc token attenuate` makes it (a new label, the same grants)."""
    return attenuate(token, verify_chain(token, [ISSUER.public]), now=NOW)


def _sibling(victim: Token) -> Token:
    """Another token from the same issuer (another root), its child claiming the victim's label."""
    return forge_child(make_token(), token=outermost(victim).token)


def _sibling_copying_everything(victim: Token) -> Token:
    """The same, the child copying every claim of the victim it may (times, audience, scope)."""
    claims = outermost(victim)
    return forge_child(make_token(), token=claims.token, nbf=claims.nbf, exp=claims.exp, tools=claims.tools)


def _parent_holder(victim: Token) -> Token:
    """The victim's token is a child; the attacker holds its parent and signs another child."""
    return forge_child(_PARENTS[victim.id], token=outermost(victim).token)


def _victim_itself_narrowed(victim: Token) -> Token:
    """A grandchild of the attacker's own token, two links deep, claiming the victim's label."""
    return forge_child(narrowed(make_token()), token=outermost(victim).token)


_PARENTS: dict[str, Token] = {}


def _victim(shape: str) -> Token:
    if shape == "parent-holder":
        parent = make_token()
        victim = narrowed(parent)
        _PARENTS[victim.id] = parent
        return victim
    return make_token()


SHAPES: dict[str, Callable[[Token], Token]] = {
    "sibling": _sibling,
    "sibling-copying-everything": _sibling_copying_everything,
    "parent-holder": _parent_holder,
    "two-links-deep": _victim_itself_narrowed,
}


@pytest.fixture
def store(store_location: str) -> Iterator[Any]:
    opened = open_store(store_location)
    yield opened
    opened.close()


def kernel_over(store: Any) -> Kernel:
    clock = itertools.count(NOW + 10).__next__
    return Kernel([ISSUER.public], KERNEL, store, clock=clock, approvers={"dba-oncall": DBA.public}, ledger=True)


def asked(kernel: Kernel, token: Token) -> str:
    decision = kernel.authorize_line(line(request(token, params=MIGRATION)))
    assert (decision.decision, decision.code) == ("deny", "BGC520"), decision
    found = re.search(r"bgc approve (sha256:[0-9a-f]{64})", decision.reason)
    assert found is not None
    return found.group(1)


def carried(request_id: str) -> dict[str, Any]:
    answer = sign_answer(request_id, "allow-once", "dba-oncall", DBA, NOW + 1000)
    return {"approver": "dba-oncall", "intent": request_id, "time": NOW + 1000, "signature": b64url(answer.signature)}


@pytest.fixture(params=sorted(SHAPES))
def pair(request: pytest.FixtureRequest) -> tuple[Token, Token]:
    """(victim, attacker): the attacker's token verifies, and claims the victim's label."""
    victim = _victim(request.param)
    attacker = SHAPES[request.param](victim)
    assert verify_chain(attacker, [ISSUER.public]).claims.token == outermost(victim).token
    assert attacker.id != victim.id
    return victim, attacker


def test_the_victims_approval_in_the_store_is_not_the_attackers(pair: tuple[Token, Token], store: Any) -> None:
    victim, attacker = pair
    kernel = kernel_over(store)
    request_id = asked(kernel, victim)
    store.add_answer(
        request_id, "dba-oncall", "allow-once",
        encode_answer(sign_answer(request_id, "allow-once", "dba-oncall", DBA, NOW + 100)),
    )  # fmt: skip
    assert asked(kernel, attacker) != request_id  # the attacker's call is a request of its own
    allowed = kernel.authorize_line(line(request(victim, params=MIGRATION)))
    assert (allowed.decision, allowed.request) == ("allow", request_id)  # still the victim's to use


def test_the_victims_live_request_is_not_the_attackers(pair: tuple[Token, Token], store: Any) -> None:
    victim, attacker = pair
    kernel = kernel_over(store)
    assert asked(kernel, victim) != asked(kernel, attacker)


def test_approval_tokens_the_victim_carried_do_not_count_for_the_attacker(
    pair: tuple[Token, Token], store: Any
) -> None:
    victim, attacker = pair
    kernel = kernel_over(store)
    request_id = asked(kernel, victim)
    intent = {"kind": "bgc.PermissionRequest", "payload": request_id}
    stolen = request(attacker, params=MIGRATION, governed_intent=intent, approval_token=carried(request_id))
    decision = kernel.authorize_line(line(stolen))
    assert (decision.decision, decision.code) == ("deny", "BGC526"), decision
    own = request(victim, params=MIGRATION, governed_intent=intent, approval_token=carried(request_id))
    assert kernel.authorize_line(line(own)).decision == "allow"


def test_the_victims_execution_nonce_is_not_the_attackers(pair: tuple[Token, Token], store: Any) -> None:
    victim, attacker = pair
    kernel = kernel_over(store)
    decision, nonce = kernel.preflight(read_message(line(request(victim))))
    assert decision.decision == "allow" and nonce is not None
    stolen = kernel.authorize_line(line(request(attacker, execution_nonce=nonce)))
    assert (stolen.decision, stolen.code) == ("deny", "BGC509"), stolen
    assert kernel.authorize_line(line(request(victim, execution_nonce=nonce))).decision == "allow"  # not spent


def test_the_ledger_names_each_chain_not_the_claimed_label(pair: tuple[Token, Token], store: Any) -> None:
    victim, attacker = pair
    kernel = kernel_over(store)
    for token in (victim, attacker):
        assert kernel.authorize_line(line(request(token))).decision == "allow"
    recorded = [decode_entry(*row).body.get("token") for row in store.rows()][-2:]  # type: ignore[union-attr]
    assert recorded == [victim.id, attacker.id]


def test_an_allow_names_the_chain_and_the_label_is_only_a_label() -> None:
    token = make_token()
    decision = Kernel([ISSUER.public], clock=lambda: NOW).authorize_line(line(request(token)))
    assert decision.decision == "allow" and token.id in decision.reason
    assert outermost(token).token not in decision.reason
    relabelled = forge_child(token, token=outermost(token).token)
    assert relabelled.id != token.id  # same label, same grants: another chain, another identity
