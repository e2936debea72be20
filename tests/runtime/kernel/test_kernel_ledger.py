"""The ledger records every kernel decision: one entry per message answered, preflights and the
nonces they issue included, each with the message's id, the deciding check's code, and the rule
that decided when a rule did. Both store engines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.messages import read_message
from bgc.runtime.kernel.nonce import read_nonce
from bgc.runtime.ledger import decode_entry, verify
from bgc.runtime.store import open_store
from tests.kernel_support import ISSUER, KERNEL, NOW, OTHER, line, make_token, request

TOKEN = make_token()

MESSAGES: list[tuple[str, dict[str, Any], str, str | None]] = [
    # (what, the request's changes, code, the rule that decided: None when a check did)
    ("allowed", {}, "BGC530", "modes.bgp:18"),
    ("atom outside the grants", {"params": {"path": "/etc/x"}}, "BGC519", None),  # a token carries no deny rules
    ("value refused", {"params": {"path": "src/a.py"}}, "BGC518", None),
    ("needs approval", {"params": {"path": "/migrations/1.py"}}, "BGC520", "modes.bgp:20"),
    ("params do not fill", {"params": {"path": []}}, "BGC517", None),
    ("outside the audience", {"server_id": "prod"}, "BGC515", None),
    ("outside the scope", {"tool": "pkg.install"}, "BGC516", None),
    ("untrusted issuer", {"capability_token": make_token(signer=OTHER).text()}, "BGC512", None),
    (
        "a conflict",
        {"approval_token": {"approver": "a", "intent": "x", "time": 1, "signature": "c2ln"}},
        "BGC506",
        None,
    ),
]


@pytest.fixture
def store(store_location: str) -> Iterator[Any]:
    opened = open_store(store_location)
    yield opened
    opened.close()


def entries(store: Any) -> list[dict[str, Any]]:
    return [dict(decode_entry(*row).body) for row in store.rows()]  # type: ignore[union-attr]


def test_every_authorize_decision_is_recorded_with_its_message_and_rule(store: Any) -> None:
    kernel = Kernel([ISSUER.public], KERNEL, store, clock=lambda: NOW, ledger=True)
    for index, (what, changes, code, rule) in enumerate(MESSAGES):
        message_id = f"0190a3b4-0000-7000-8000-{index:012d}"
        decision = kernel.authorize_line(line(request(TOKEN, id=message_id, **changes)))
        assert decision.code == code, (what, decision)
        entry = entries(store)[-1]
        assert len(entries(store)) == index + 1, what
        assert (entry["kind"], entry["decision"], entry["reason"].split()[0]) == ("authorize", decision.decision, code)
        assert entry.get("message") == message_id, what
        if rule is None:
            assert "rule" not in entry, (what, entry)
        else:
            assert entry["rule"].startswith(rule), (what, entry)
    kernel.authorize_line("not json")
    assert entries(store)[-1]["reason"].startswith("BGC500")
    assert verify(store.rows()).ok


def test_a_preflight_and_the_nonce_it_issues_are_recorded(store: Any) -> None:
    kernel = Kernel([ISSUER.public], KERNEL, store, clock=lambda: NOW, ledger=True)
    decision, nonce = kernel.preflight(read_message(line(request(TOKEN, id="p1"))))
    assert decision.decision == "allow" and nonce is not None
    issued = entries(store)[-1]
    assert (issued["kind"], issued["decision"], issued["message"]) == ("preflight", "allow", "p1")
    assert issued["nonce"] == read_nonce(nonce).nonce and issued["rule"] == "modes.bgp:18"
    assert issued["token"] == TOKEN.id
    refused, none = kernel.preflight(read_message(line(request(TOKEN, id="p2", params={"path": "/etc/x"}))))
    assert none is None and refused.code == "BGC519"
    entry = entries(store)[-1]
    assert (entry["kind"], entry["decision"], entry["message"]) == ("preflight", "deny", "p2") and "nonce" not in entry
    used = kernel.authorize_line(line(request(TOKEN, id="p1", execution_nonce=nonce)))
    assert used.decision == "allow" and entries(store)[-1]["message"] == "p1"
    assert entries(store)[-1]["nonce"] == issued["nonce"]  # the nonce issued is the nonce consumed
    kernel.preflight(read_message(line("Heartbeat")))
    assert entries(store)[-1]["reason"].startswith("BGC532")
    assert len(entries(store)) == 4


def test_a_nonce_that_cannot_be_recorded_is_not_issued(store: Any) -> None:
    class Unrecordable(Kernel):
        def _record(self, kind: str, decision: Any, message: Any, nonce: str | None = None) -> Any:
            self.store = None  # the store went away between the decision and its record
            return super()._record(kind, decision, message, nonce)

    kernel = Unrecordable([ISSUER.public], KERNEL, store, clock=lambda: NOW, ledger=True)
    decision, nonce = kernel.preflight(read_message(line(request(TOKEN))))
    assert (decision.decision, decision.code, nonce) == ("deny", "BGC529", None)
