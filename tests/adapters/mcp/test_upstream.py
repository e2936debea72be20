"""The remote server side, against a scripted server that misbehaves by class: every failure
answers the request it belongs to with an error, never a result, and nothing is resent."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bgc.adapters.mcp.mediator import ProxyOptions, Mediator, ToolVerdict
from bgc.adapters.mcp.upstream import RemoteServer

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
Script = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str = "application/json",
           headers: dict[str, str] | None = None) -> None:  # fmt: skip
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def result(message: dict[str, Any], value: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": value}).encode()


def initialized(handler: BaseHTTPRequestHandler, message: dict[str, Any], session: str = "s1", version: str = "2025-11-25") -> bool:
    """Answer initialize and the notification the way a good server does; True when it did."""
    if message.get("method") == "initialize":
        answer(handler, 200, result(message, {"protocolVersion": version, "capabilities": {}}), headers={"Mcp-Session-Id": session})
        return True
    if "id" not in message:
        answer(handler, 202, b"")
        return True
    return False


@pytest.fixture
def scripted() -> Iterator[Callable[[Script], tuple[str, list[dict[str, Any]]]]]:
    servers: list[ThreadingHTTPServer] = []

    def start(script: Script) -> tuple[str, list[dict[str, Any]]]:
        received: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                received.append(message)
                script(self, message)

            def do_GET(self) -> None:  # noqa: N802
                answer(self, 405, b"")

            def do_DELETE(self) -> None:  # noqa: N802
                answer(self, 200, b"")

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/mcp", received

    yield start
    for server in servers:
        server.shutdown()


def exchange(url: str, *messages: dict[str, Any], reconnect: float = 1.0) -> list[dict[str, Any]]:
    """Send the messages through a mediator to the remote server; what the client got, in order."""
    got: list[dict[str, Any]] = []
    done = threading.Event()
    remote = RemoteServer(url, lambda line: None, timeout_seconds=5, reconnect_seconds=reconnect)

    def to_client(message: dict[str, Any], related: Any) -> None:
        got.append(message)
        if message.get("id") == messages[-1].get("id"):
            done.set()

    mediator = Mediator(lambda tool, arguments: ToolVerdict("allow", "allowed"), ProxyOptions(server="files"),
                  to_server=remote.send, to_client=to_client, log=io.StringIO())  # fmt: skip
    remote.attach(mediator)
    for message in messages:
        mediator.from_client(message)
        if message is not messages[-1] and "id" in message:
            for _ in range(200):
                if not mediator.owes(message["id"]):
                    break
                threading.Event().wait(0.02)
    assert done.wait(20), got
    remote.end()
    return got


CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t", "arguments": {}}}


@pytest.mark.parametrize("session", ["has space", "x" * 2000, "tab\there", "ctl\x01", "\xe9t\xe9"])
def test_a_session_id_that_is_not_visible_ascii_refuses_the_session(scripted: Any, session: str) -> None:
    def script(handler: BaseHTTPRequestHandler, message: dict[str, Any]) -> None:
        answer(handler, 200, result(message, {"protocolVersion": "2025-11-25", "capabilities": {}}),
               headers={"Mcp-Session-Id": session})  # fmt: skip

    url, _ = scripted(script)
    got = exchange(url, INIT)
    assert "error" in got[-1] and "session id" in got[-1]["error"]["message"]


@pytest.mark.parametrize("misbehaviour", ["text/html", "no answer in the stream", "oversized event", "500", "202", "not json"])
def test_an_answer_bgc_cannot_read_is_an_error_never_a_result(scripted: Any, misbehaviour: str) -> None:
    def script(handler: BaseHTTPRequestHandler, message: dict[str, Any]) -> None:
        if initialized(handler, message):
            return
        if misbehaviour == "text/html":
            answer(handler, 200, b"<html>hi</html>", "text/html")
        elif misbehaviour == "no answer in the stream":
            answer(handler, 200, b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n", "text/event-stream")
        elif misbehaviour == "oversized event":
            answer(handler, 200, b"data: " + b"x" * (70 * 1024 * 1024) + b"\n\n", "text/event-stream")
        elif misbehaviour == "500":
            answer(handler, 500, b"oops", "text/plain")
        elif misbehaviour == "202":
            answer(handler, 202, b"")
        else:
            answer(handler, 200, b"{not json")

    url, received = scripted(script)
    got = exchange(url, INIT, CALL)
    assert got[-1]["id"] == 7 and "error" in got[-1] and "result" not in got[-1], got[-1]
    assert [message.get("method") for message in received].count("tools/call") == 1  # never resent


def test_a_server_that_forgets_the_session_gets_a_new_one_and_the_call_once(scripted: Any) -> None:
    sessions = iter(["s1", "s2"])

    def script(handler: BaseHTTPRequestHandler, message: dict[str, Any]) -> None:
        if message.get("method") == "initialize":
            initialized(handler, message, next(sessions))
        elif "id" not in message:
            answer(handler, 202, b"")
        elif handler.headers["Mcp-Session-Id"] == "s1":
            answer(handler, 404, b"")
        else:
            answer(handler, 200, result(message, {"content": [], "isError": False}))

    url, received = scripted(script)
    got = exchange(url, INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, CALL)
    assert got[-1] == {"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": False}}
    assert [message.get("method") for message in received].count("initialize") == 2


def test_a_new_session_on_another_protocol_version_is_refused(scripted: Any) -> None:
    sessions = iter([("s1", "2025-11-25"), ("s2", "2025-06-18")])

    def script(handler: BaseHTTPRequestHandler, message: dict[str, Any]) -> None:
        if message.get("method") == "initialize":
            initialized(handler, message, *next(sessions))
        elif "id" not in message:
            answer(handler, 202, b"")
        else:
            answer(handler, 404, b"")

    url, received = scripted(script)
    got = exchange(url, INIT, CALL)
    assert "error" in got[-1] and "protocol" in got[-1]["error"]["message"]
    assert [message.get("method") for message in received].count("tools/call") == 1


def test_a_server_that_cannot_be_reached_is_an_error_after_the_wait(scripted: Any) -> None:
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    got = exchange(f"http://127.0.0.1:{port}/mcp", INIT, reconnect=0.3)
    assert "error" in got[-1] and "cannot reach" in got[-1]["error"]["message"]
