"""A cancelled or expired permission request releases nothing, on every path.

The request is approved while live (a trusted person's signed answer), then ended: cancelled
(``PermissionCancelled``: the turn or session is gone) or left to expire. Then the call is tried
on each path that reads approvals: the kernel with the answer carried as one approval token, as
threshold approval tokens, or only in the store; the hooks' and the MCP proxy's shared
``settle_ask``; the MCP proxy's own reading of a held request and an elicitation's answer. Every
path runs on SQLite and PostgreSQL."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bgc.runtime.approvals import PermissionRequest, Requirement, encode_answer, settle_ask, sign_answer
from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.keys import SigningKey, b64url
from bgc.runtime.store import open_store
from tests.kernel_support import ISSUER, KERNEL, NOW, line, make_token, request

DBA = SigningKey.from_seed(bytes(range(3, 35)), "dba-oncall")
TRUSTED = {"dba-oncall": DBA.public}
MIGRATION = {"path": "/migrations/0042.py"}
TOKEN = make_token(ttl=3 * 86400)
ANSWERED = NOW + 100
"""When the person answered: while the request was live."""


@pytest.fixture
def store(store_location: str) -> Iterator[Any]:
    opened = open_store(store_location)
    yield opened
    opened.close()


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def answer(store: Any, request_id: str, at: int = ANSWERED) -> dict[str, Any]:
    """dba-oncall's allow-once, kept in the store and returned as an approval token."""
    signed = sign_answer(request_id, "allow-once", "dba-oncall", DBA, at)
    store.add_answer(request_id, "dba-oncall", "allow-once", encode_answer(signed))
    return {"approver": "dba-oncall", "intent": request_id, "time": at, "signature": b64url(signed.signature)}


def end(store: Any, clock: Clock, request_id: str, how: str, expires: int) -> None:
    if how == "cancelled":
        store.cancel(request_id, ANSWERED + 50)
    else:
        clock.now = expires  # the first instant it is no longer live


def _single(approval: dict[str, Any], request_id: str) -> dict[str, Any]:
    return {"governed_intent": {"kind": "bgc.PermissionRequest", "payload": request_id}, "approval_token": approval}


def _threshold(approval: dict[str, Any], request_id: str) -> dict[str, Any]:
    return {
        "governed_intent": {"kind": "bgc.PermissionRequest", "payload": request_id},
        "approval_tokens": [approval],
        "threshold_approval_proposal": {"threshold": 1, "approvers": ["dba-oncall"]},
    }


def _stored(approval: dict[str, Any], request_id: str) -> dict[str, Any]:
    return {}


CARRIED: dict[str, tuple[Callable[[dict[str, Any], str], dict[str, Any]], set[str]]] = {
    "approval-token": (_single, {"BGC528"}),
    "threshold-approval-tokens": (_threshold, {"BGC528"}),
    # the same call finds no live request (an ended one is never found again): a new one, waiting
    "answers-in-the-store": (_stored, {"BGC520"}),
}


@pytest.mark.parametrize("how", ["cancelled", "expired"])
@pytest.mark.parametrize("path", sorted(CARRIED))
def test_the_kernel_refuses_an_ended_request(path: str, how: str, store: Any) -> None:
    clock = Clock(NOW + 10)
    kernel = Kernel([ISSUER.public], KERNEL, store, clock=clock, approvers=TRUSTED, ledger=True)
    first = kernel.authorize_line(line(request(TOKEN, params=MIGRATION)))
    found = re.search(r"bgc approve (sha256:[0-9a-f]{64})", first.reason)
    assert first.code == "BGC520" and found is not None
    request_id = found.group(1)
    approval = answer(store, request_id)
    end(store, clock, request_id, how, NOW + 10 + 3600)
    fields, refused = CARRIED[path]
    decision = kernel.authorize_line(line(request(TOKEN, params=MIGRATION, **fields(approval, request_id))))
    assert decision.decision == "deny" and decision.code in refused, decision
    if decision.code == "BGC528":
        assert how in decision.reason


def live_request(now: int) -> PermissionRequest:
    return PermissionRequest(
        "fs.write", "local", "sha256:" + "0" * 64, "fs.write /migrations/0042.py", ("fs:write:/migrations/0042.py",),
        "modes.bgp:21", (Requirement(1, ("dba-oncall",)),), now, now + 3600, session="s1",
    )  # fmt: skip


@pytest.mark.parametrize("how", ["cancelled", "expired"])
def test_the_hooks_and_proxys_settling_refuses_an_ended_request(how: str, store: Any) -> None:
    pending = live_request(NOW)
    first = settle_ask(store, pending, TRUSTED, NOW + 10)
    assert first.effect == "ask"
    answer(store, first.request, NOW + 20)
    if how == "cancelled":
        store.cancel(first.request, NOW + 30)
        later = NOW + 40
    else:
        later = NOW + 3600
    again = settle_ask(store, live_request(later), TRUSTED, later)
    assert again.effect != "allow" and again.request != first.request, again


@pytest.mark.parametrize("how", ["cancelled", "expired"])
def test_the_mcp_proxy_reads_an_ended_request_as_ended(how: str, store_location: str) -> None:
    from bgc.app.commands.mcp_proxy import StoreApprovals, StorePool

    now = int(time.time())
    created = now - 60 if how == "cancelled" else now - 7200
    stores = StorePool(store_location)
    try:
        with stores.lease() as store:
            request_id = settle_ask(store, live_request(created), TRUSTED, created).request
            answer(store, request_id, created + 10)
            if how == "cancelled":
                store.cancel(request_id, created + 20)
        approvals = StoreApprovals(stores, TRUSTED)
        assert approvals.state(request_id) == how
        assert not approvals.elicited(request_id, True)  # an elicitation cannot revive it either
    finally:
        stores.close()
