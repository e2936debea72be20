"""`bgc approvals serve --webhook`: a request that starts waiting is announced, once, in JSON or
Slack's incoming-webhook shape, under the rules asked for, and never with the call's parameters."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bgc.app.approvals_notify import Notice, Notifier
from bgc.runtime.store import open_store
from tests.e2e.approvals_support import People, ask, people, serving
from tests.samples import bgc

SECRET = "ghp_" + "s3cr3t" * 6


@pytest.fixture
def receiver() -> Iterator[tuple[str, queue.Queue[dict[str, Any]]]]:
    """A webhook's receiving end on loopback, and what it received."""
    received: queue.Queue[dict[str, Any]] = queue.Queue()

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.put(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook/T000/B000/XXXX", received
    finally:
        server.shutdown()


@pytest.fixture
def crowd(tmp_path: Path) -> People:
    return people(tmp_path)


def test_a_new_request_is_announced_once_without_its_parameters(
    tmp_path: Path, crowd: People, receiver: tuple[str, queue.Queue[dict[str, Any]]]
) -> None:
    url, received = receiver
    store = str(tmp_path / "k.db")
    before = ask(store, crowd, "/src/release/v0")
    with serving(store, crowd, "alice", "--webhook", url, "--webhook-format", "slack") as served:
        cookie = served.cookie()
        assert before in served.http("GET", "/", headers={"Cookie": cookie})[2]  # the page has looked once
        request = ask(store, crowd, "/src/release/v1", content=SECRET)
        message = received.get(timeout=60)
        assert set(message) == {"text"}  # Slack's incoming webhook reads "text"
        assert request in message["text"] and "write_file on files" in message["text"]
        assert "p.bgp:7 (a person signs releases)" in message["text"] and "2 of [alice, bob, carol]" in message["text"]
        assert SECRET not in message["text"] and "/src/release/v1" not in message["text"]
        later = ask(store, crowd, "/src/release/v2")
        assert later in received.get(timeout=60)["text"]
    assert received.empty()  # the one waiting at the start, and each new one once, not again


def test_json_messages_and_only_the_rules_asked_for(
    tmp_path: Path, crowd: People, receiver: tuple[str, queue.Queue[dict[str, Any]]]
) -> None:
    url, received = receiver
    store = str(tmp_path / "k.db")
    open_store(store).close()
    with serving(store, crowd, "alice", "--webhook", url, "--rule", "p.bgp:7") as served:
        served.http("GET", "/")
        request = ask(store, crowd, "/src/release/v1")
        message = received.get(timeout=60)
    assert message["event"] == "permission-request" and message["request"] == request
    assert message["rule"] == "p.bgp:7" and message["because"] == "a person signs releases"
    assert message["tool"] == "write_file" and message["server"] == "files" and message["session"] == "s1"


def test_a_webhook_that_is_not_http_is_refused_without_showing_its_path(tmp_path: Path, crowd: People) -> None:
    store = str(tmp_path / "k.db")
    open_store(store).close()
    result = bgc("approvals", "serve", "--key", str(crowd.key("alice")), "--store", store, "-p", str(crowd.policy),
                 "--webhook", "file:///secret/path")  # fmt: skip
    assert result.exit_code == 2 and "/secret/path" not in result.output


def test_rules_choose_what_is_announced() -> None:
    found = Notice("sha256:" + "0" * 64, "t", "s", "a.bgp:3, b.bgp:9", None, "1 of any trusted approver", 0, None)
    assert Notifier(webhooks=("http://h/",)).wanted(found)
    assert Notifier(webhooks=("http://h/",), rules=("b.bgp:9",)).wanted(found)
    assert not Notifier(webhooks=("http://h/",), rules=("a.bgp:9", "b.bgp:3")).wanted(found)
