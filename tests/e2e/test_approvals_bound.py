"""Adversarial review of the enforcers' approvals: each test is a fail-open found by class
(an approval that counts for another session; an unsigned elicitation overriding a signed
rejection; a guessable elicitation id), written to fail before its fix."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_hook_approvals import answer, hook, project, request_id  # noqa: F401, F811 - `project` is a fixture


def test_an_approval_given_for_one_session_never_allows_the_same_call_in_another(project: dict[str, Any]) -> None:  # noqa: F811
    write = {"file_path": f"{project['root']}/migrations/010.sql", "content": "create table t();"}
    effect, reason, _ = hook(project, "Write", write, session="sess-A")
    assert effect == "deny"
    asked = request_id(reason)
    for person in ("alice", "bob"):
        assert answer(project, "approve", asked, person).exit_code == 0
    # alice and bob approved session A's call; session B making the same call is another request
    effect, reason, _ = hook(project, "Write", write, session="sess-B")
    assert effect == "deny" and request_id(reason) != asked
    effect, reason, _ = hook(project, "Write", write, session="sess-A")  # still there for session A, once
    assert effect == "allow" and asked in reason


def ended_request(tmp_path: Any, how: str) -> tuple[Any, Any, str]:
    """A store holding a request any one person may answer, ended ``how``: a trusted person's
    signed rejection, a cancellation (``bgc cancel``, the client went away), or its expiry, each
    also after alice approved it (``approved, then …``); or (``named``) a pending request only
    alice may answer."""
    import time

    from bgc.runtime.approvals import PermissionRequest, Requirement, encode_answer, sign_answer, stand_ask
    from bgc.runtime.kernel.keys import SigningKey
    from bgc.runtime.store import open_store

    alice = SigningKey.generate("alice")
    trusted = {"alice": alice.public}
    now = int(time.time())
    created, expires = (now - 100, now - 10) if how.endswith("expired") else (now - 10, now + 3600)
    asked = PermissionRequest("fs.write", "files", "sha256:" + "0" * 64, "fs.write on files: path='/a'",
                              ("fs:write:/a",), "policy.bgp:3", (Requirement(1, ("alice",) if how == "named" else ()),),
                              created, expires)  # fmt: skip
    location = str(tmp_path / "kernel.db")
    store = open_store(location)
    stored, _ = stand_ask(store, asked, trusted, created)
    if how.startswith("approved"):
        signed = sign_answer(stored.id, "allow-once", "alice", alice, created + 1)
        assert store.add_answer(stored.id, "alice", "allow-once", encode_answer(signed))
    if how == "rejected":
        signed = sign_answer(stored.id, "reject", "alice", alice, now - 5)
        assert store.add_answer(stored.id, "alice", "reject", encode_answer(signed))
    elif how.endswith("cancelled"):
        assert store.cancel(stored.id, now - 5)
    return store, trusted, location


@pytest.mark.parametrize(
    "how", ["rejected", "cancelled", "expired", "approved, then cancelled", "approved, then expired", "named"]
)
def test_an_elicitation_accept_counts_only_for_a_live_request_anyone_may_answer(tmp_path: Any, how: str) -> None:
    from bgc.runtime.approvals import load_request, was_used
    from bgc.app.commands.mcp_proxy import StoreApprovals, StorePool

    store, trusted, location = ended_request(tmp_path, how)
    (request,) = [found for found, _, _ in store.requests(0)]
    approvals = StoreApprovals(StorePool(location), trusted)
    assert approvals.state(request) == ("pending" if how == "named" else how.split(", then ")[-1])
    # the person at the client (unsigned, perhaps the agent's own client) says yes
    assert approvals.elicited(request, True) is False
    assert not was_used(store, load_request(store, request)[0])


def test_the_proxys_own_elicitation_ids_cannot_be_guessed_by_a_server() -> None:
    """A server that sends the client a request with the id the proxy will use for its own
    elicitation gets the client's answer to *its* question counted as an approval (and its own
    answer swallowed): the proxy's ids must not be predictable, so fresh proxies never repeat one."""
    import io
    import json

    from bgc.adapters.mcp.proxy import McpProxy, ProxyOptions, ToolVerdict

    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "write", "arguments": {}}}
    verdict = ToolVerdict("ask", "needs approval", "sha256:" + "1" * 64, anyone=True)
    seen = set()
    for _ in range(3):
        out = io.BytesIO()
        proxy = McpProxy(["true"], lambda tool, arguments: verdict, ProxyOptions(server="files"),
                         client_in=io.BytesIO(), client_out=out, log=io.StringIO())  # fmt: skip
        proxy.mediator._elicit(call, verdict)
        sent = json.loads(out.getvalue())
        assert sent["method"] == "elicitation/create"
        seen.add(json.dumps(sent["id"]))
    assert len(seen) == 3
