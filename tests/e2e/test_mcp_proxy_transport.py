"""The MCP proxy's transport rules, with a real child process behind it.

The child is tests/mcp/echo_server.py, which records every byte it receives: what it recorded is
what the proxy forwarded. The decision function here is a small table (the policy's decisions are
tested through the real CLI and the real MCP SDK in tests/e2e/test_mcp_proxy.py); these tests are
about what reaches the server, whatever the client sends.
"""

from __future__ import annotations

import io
import json
import os
import select
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.adapters.mcp.proxy import McpProxy, ProxyOptions, ToolVerdict

ECHO = str(Path(__file__).parents[1] / "mcp" / "echo_server.py")
SECRET = "/src/secrets/key"


def table(tool: str, arguments: Any) -> ToolVerdict:
    """Allow everything except a path under /src/secrets (deny) and the tool ask_me (ask)."""
    if tool == "boom":
        raise RuntimeError("the policy could not be read")
    path = arguments.get("path")
    if isinstance(path, str) and "secret" in path:
        return ToolVerdict("deny", "denied by p.bgp:3 (secrets)")
    if tool == "ask_me":
        return ToolVerdict("ask", "awaits 1 approval of [alice] (p.bgp:4)")
    return ToolVerdict("allow", "allowed by p.bgp:1")


class Session:
    """A proxy running in a thread: the test is its client, the echo server its child."""

    def __init__(
        self, record: Path, *, command: list[str] | None = None, grace: float = 5.0, decide: Any = table,
        wait: float = 0.0, approvals: Any = None,
    ) -> None:  # fmt: skip
        self.record = record
        os.environ["BGC_TEST_MCP_RECORD"] = str(record)
        client_read, self._to_proxy = os.pipe()
        self._from_proxy, client_write = os.pipe()
        self.log = io.StringIO()
        self.proxy = McpProxy(
            command or [sys.executable, ECHO],
            decide,
            ProxyOptions(server="files", shutdown_grace_seconds=grace, wait_seconds=wait, poll_seconds=0.05),
            approvals=approvals,
            client_in=os.fdopen(client_read, "rb"),
            client_out=os.fdopen(client_write, "wb"),
            log=self.log,
        )
        self.status: int | None = None
        self._buffer = b""
        self._seen = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.status = self.proxy.run()
        finally:
            self.proxy.client_out.close()

    def send(self, data: bytes) -> None:
        os.write(self._to_proxy, data)

    def receive(self, timeout: float = 60.0) -> bytes:
        """The next line the client receives (b"" when the proxy closed its output)."""
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._from_proxy], [], [], timeout)
            assert ready, "the proxy did not answer in time"
            chunk = os.read(self._from_proxy, 1 << 16)
            if not chunk:
                return b""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line + b"\n"

    def sync(self) -> list[bytes]:
        """Wait until everything sent so far reached the server; the lines it received since last time."""
        marker = f"sync-{self._seen}"
        self.send(json.dumps({"jsonrpc": "2.0", "id": marker, "method": "ping"}).encode() + b"\n")
        answers = []
        while True:
            line = self.receive()
            if json.loads(line).get("id") == marker:
                break
            answers.append(line)
        self.answers = answers
        lines = self.record.read_bytes().splitlines(keepends=True)
        new, self._seen = lines[self._seen : -1], len(lines)
        return new

    def close(self, timeout: float = 30.0) -> int | None:
        os.close(self._to_proxy)
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the proxy did not exit"
        return self.status


@pytest.fixture
def session(tmp_path: Path):  # type: ignore[no-untyped-def]
    opened = Session(tmp_path / "record")
    yield opened
    if opened.thread.is_alive():
        opened.close()


def canonical(line: bytes) -> bytes:
    """What the proxy forwards for a line it decided: the value, compact and ASCII only."""
    return json.dumps(json.loads(line), separators=(",", ":")).encode() + b"\n"


def call(request_id: object, tool: str, arguments: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return json.dumps(message).encode() + b"\n"


def test_an_allowed_call_reaches_the_server_as_the_value_decided_re_serialised(session: Session) -> None:
    line = b'{ "jsonrpc" : "2.0", "id" : 7 , "method":"tools/call","params":{"name":"read_file","arguments":{"path":"/src/\xc3\xa9.py"}}}\n'
    session.send(line)
    assert session.sync() == [canonical(line)]
    assert json.loads(session.answers[0])["result"]["echo"]["id"] == 7


@pytest.mark.parametrize(("tool", "arguments", "words"), [
    ("read_file", {"path": SECRET}, "denied by p.bgp:3"),
    ("ask_me", {"path": "/src/a"}, "needs approval: awaits 1 approval"),
    ("boom", {"path": "/src/a"}, "could not decide"),
])  # fmt: skip
def test_a_call_not_allowed_is_answered_by_the_proxy_as_a_tool_error(session: Session, tool: str, arguments: dict, words: str) -> None:
    session.send(call("r-1", tool, arguments))
    assert session.sync() == []
    (answer,) = session.answers
    message = json.loads(answer)
    assert message["id"] == "r-1"
    assert message["result"]["isError"] is True
    assert words in message["result"]["content"][0]["text"]


def test_a_call_sent_as_a_notification_is_forwarded_only_when_allowed(session: Session) -> None:
    allowed = b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/src/a"}}}\n'
    denied = b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/src/secrets/a"}}}\n'
    session.send(denied + allowed)
    assert session.sync() == [allowed]
    assert session.answers == []  # a notification gets no answer


def test_other_messages_pass_untouched_both_ways(session: Session) -> None:
    lines = [
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}\n',
        b'{"jsonrpc":"2.0","id":"s0","result":{"roots":[]}}\n',  # the client answering a server request
        b'{"jsonrpc":"2.0","method":"notify-me"}\n',
    ]
    session.send(b"".join(lines))
    assert session.sync() == lines
    assert session.answers == [
        b'{"jsonrpc":"2.0","id":"s1","method":"roots/list"}\n',
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}\n',
    ]


def test_a_message_over_the_limit_is_refused_and_the_session_goes_on(session: Session) -> None:
    huge = call(1, "read_file", {"path": "/src/a", "pad": "x" * (10 * 1024 * 1024)})
    sender = threading.Thread(target=session.send, args=(huge,))  # the pipe fills before the proxy answers
    sender.start()
    first = json.loads(session.receive())
    sender.join()
    assert first["error"]["code"] == -32600 and first["id"] == 1  # its own id, found as the line streamed past
    assert session.sync() == []
    session.send(call(2, "read_file", {"path": "/src/a"}))
    assert len(session.sync()) == 1


# ---- unreadable lines, generated by class ------------------------------------------------------

SECRET_CALL = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": SECRET}}}
SAFE_CALL = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "/src/ok"}}}


def _duplicate_at(path: tuple[str, ...], secret_last: bool) -> bytes:
    """The safe call with the key at ``path`` written twice, once with the secret call's value:
    whichever copy a server keeps (first or last), one of the two orders hands it the secret."""
    dumps = json.dumps

    def encode(safe: dict[str, Any], secret: dict[str, Any], depth: int) -> str:
        key, parts = path[depth], []
        for name, value in safe.items():
            if name != key:
                parts.append(f"{dumps(name)}:{dumps(value)}")
            elif depth == len(path) - 1:
                pair = [f"{dumps(name)}:{dumps(value)}", f"{dumps(name)}:{dumps(secret[name])}"]
                parts.extend(pair if secret_last else pair[::-1])
            else:
                parts.append(f"{dumps(name)}:{encode(value, secret[name], depth + 1)}")
        return "{" + ",".join(parts) + "}"

    return encode(SAFE_CALL, SECRET_CALL, 0).encode() + b"\n"


UNREADABLE = st.one_of(
    # a duplicate key at any depth of the call, in either order
    st.builds(
        _duplicate_at,
        st.sampled_from([("params",), ("params", "arguments"), ("params", "arguments", "path")]),
        st.booleans(),
    ),
    # a batch holding the call
    st.just(json.dumps([SECRET_CALL]).encode() + b"\n"),
    # not JSON: truncated anywhere, a NaN, invalid UTF-8 inside the path
    st.integers(1, len(json.dumps(SECRET_CALL)) - 1).map(lambda n: json.dumps(SECRET_CALL).encode()[:n] + b"\n"),
    st.just(json.dumps(SECRET_CALL).replace('"id": 9', '"id": NaN').encode() + b"\n"),
    st.binary(min_size=1, max_size=3).filter(lambda b: not _utf8(b)).map(
        lambda junk: json.dumps(SECRET_CALL).encode().replace(b"/src/secrets", b"/src/" + junk + b"secrets") + b"\n"
    ),
)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\n" not in data


@pytest.fixture(scope="module")
def shared_session(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    opened = Session(tmp_path_factory.mktemp("mcp") / "record")
    yield opened
    opened.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(UNREADABLE)
def test_a_line_bgc_cannot_read_strictly_never_reaches_the_server(shared_session: Session, line: bytes) -> None:
    shared_session.send(line)
    assert shared_session.sync() == []
    for answer in shared_session.answers:  # a request among them gets an error, never a result
        assert "error" in json.loads(answer)


# ---- the server and the client going away -------------------------------------------------------


def test_a_server_that_dies_mid_call_answers_the_call_with_an_error_and_the_proxy_exits_with_its_status(session: Session) -> None:
    session.send(call("c", "crash", {}))
    answer = json.loads(session.receive())
    assert answer["id"] == "c" and answer["error"]["code"] == -32603
    assert session.receive() == b""
    assert session.close() == 3


def test_the_client_leaving_ends_the_session_with_the_servers_status(session: Session) -> None:
    session.send(call(1, "read_file", {"path": "/src/a"}))
    session.receive()
    assert session.close() == 0


def test_a_server_that_ignores_its_closed_input_is_terminated(tmp_path: Path) -> None:
    hung = Session(tmp_path / "record", grace=0.5)
    hung.send(b'{"jsonrpc":"2.0","method":"hang"}\n')
    assert hung.close() == 128 + 15
    assert "terminating it" in hung.log.getvalue()


def test_a_server_that_cannot_start_is_a_clear_message_and_status_127(tmp_path: Path) -> None:
    missing = Session(tmp_path / "record", command=[str(tmp_path / "no-such-server")])
    assert missing.close() == 127
    assert "cannot start the server" in missing.log.getvalue()


def test_a_tool_the_policy_cannot_decide_is_left_out_of_a_filtered_list() -> None:
    """Deciding whether to offer a tool may fail; the tool is then not offered, and the answer
    (and the session) goes on."""

    def offered(name: str) -> bool:
        if name == "weird":
            raise RuntimeError("cannot decide")
        return True

    log = io.StringIO()
    proxy = McpProxy(["true"], table, ProxyOptions(server="files", filter_tools=True), offered=offered, log=log)
    message = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a"}, {"name": "weird"}, {"name": 5}, "b"]}}
    assert proxy.mediator._filter_tool_list(message)["result"]["tools"] == [{"name": "a"}]
    assert "left 'weird' out" in log.getvalue()
