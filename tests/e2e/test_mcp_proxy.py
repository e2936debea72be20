"""`bgc mcp-proxy` end to end: the real MCP Python SDK on both sides.

The client is the SDK's ``ClientSession`` over its stdio transport; it starts ``bgc mcp-proxy``
exactly as an MCP client configuration would, and the proxy starts tests/mcp/server.py, a real
SDK server that records every call it receives. What the record holds is what got through.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio  # installed with mcp, the SDK the dev extra pins
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER = str(Path(__file__).parents[1] / "mcp" / "server.py")
ECHO = str(Path(__file__).parents[1] / "mcp" / "echo_server.py")

POLICY = """\
tool read_file on files needs fs:read:{path}
tool write_file on files needs fs:write:{path} ignores content
allow fs:read:/src/**
allow fs:write:/src/**
deny fs:write:/src/secrets/** because "keys live here"
ask fs:write:/src/release/** because "a person signs releases"
"""


def session_calls(
    tmp_path: Path, server: str, calls: list[tuple[str, dict[str, Any]]], *, filter_tools: bool = False
) -> tuple[list[str], list[Any], list[dict]]:
    """Run one client session through the proxy: the tools listed, each call's result, the record."""
    policy = tmp_path / "p.bgp"
    policy.write_text(POLICY)
    record = tmp_path / "record.jsonl"
    record.touch()
    args = [
        "-m",
        "bgc",
        "mcp-proxy",
        "-p",
        str(policy),
        "--server",
        server,
        *(["--filter-tools"] if filter_tools else []),
        "--",
        sys.executable,
        SERVER,
    ]
    params = StdioServerParameters(
        command=sys.executable, args=args, env={"BGC_TEST_MCP_RECORD": str(record)}, cwd=str(tmp_path)
    )

    async def main() -> tuple[list[str], list[Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = [tool.name for tool in (await client.list_tools()).tools]
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return listed, results

    listed, results = anyio.run(main)
    received = [json.loads(line) for line in record.read_text().splitlines()]
    return listed, results, received


def text(result: Any) -> str:
    return "".join(part.text for part in result.content)


def test_allowed_calls_get_the_servers_answer_and_nothing_else_reaches_it(tmp_path: Path) -> None:
    calls = [
        ("read_file", {"path": "/src/a.py"}),  # allowed
        ("write_file", {"path": "/src/b.py", "content": "x"}),  # allowed
        ("write_file", {"path": "/src/secrets/k", "content": "x"}),  # denied by the rule
        ("write_file", {"path": "/src/release/v1", "content": "x"}),  # needs a person
        ("write_file", {"path": "/src/../etc/passwd", "content": "x"}),  # walks out of /src
        ("write_file", {"path": "/src/ok", "content": "x", "mode": "0777"}),  # a parameter no declaration names
        ("read_file", {"path": {"nested": "/src/a.py"}}),  # a nested value where a path belongs
        ("read_file", {"path": ["/src/a.py", "/etc/passwd"]}),  # a list where a path belongs
        ("read_file", {}),  # no path at all
        ("run", {"command": "rm -rf /"}),  # a tool no declaration covers
        ("crash", {}),  # another
    ]
    listed, results, received = session_calls(tmp_path, "files", calls)
    assert listed == ["read_file", "write_file", "run", "crash"]  # not filtered by default
    assert [result.is_error for result in results] == [False, False] + [True] * 9
    assert text(results[0]) == "contents of /src/a.py"
    assert "p.bgp:5" in text(results[2]) and "keys live here" in text(results[2])
    assert "needs approval" in text(results[3]) and "p.bgp:6" in text(results[3])
    assert received == [
        {"tool": "read_file", "arguments": {"path": "/src/a.py"}},
        {"tool": "write_file", "arguments": {"path": "/src/b.py", "content": "x"}},
    ]


def test_the_server_is_part_of_a_calls_identity(tmp_path: Path) -> None:
    """The same tool behind a server the declarations do not name is covered by nothing."""
    listed, results, received = session_calls(
        tmp_path, "elsewhere", [("read_file", {"path": "/src/a.py"})], filter_tools=True
    )
    assert listed == []
    assert results[0].is_error and received == []


def test_filtered_tool_lists_offer_only_declared_tools(tmp_path: Path) -> None:
    listed, _, _ = session_calls(tmp_path, "files", [], filter_tools=True)
    assert listed == ["read_file", "write_file"]


@pytest.mark.parametrize("reply", ["accept", "decline"])
def test_an_elicitation_answer_approves_nothing_unless_the_policy_opts_in(tmp_path: Path, reply: str) -> None:
    """The person at the client answers unsigned: unless the policy says `trust elicitation` the
    proxy never asks them, so an ask any one person may answer waits for `bgc approve` like any
    other (tests/e2e/test_mcp_proxy_approvals.py has the policies that opt in)."""
    from mcp import types

    policy = tmp_path / "p.bgp"
    policy.write_text("tool write_file on files needs fs:write:{path} ignores content\nask fs:write:/src/**\n")
    record = tmp_path / "record.jsonl"
    record.touch()
    args = ["-m", "bgc", "mcp-proxy", "-p", str(policy), "--server", "files", "--store", str(tmp_path / "k.db"),
            "--", sys.executable, SERVER]  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=args, env={"BGC_TEST_MCP_RECORD": str(record)}, cwd=str(tmp_path))
    shown: list[str] = []

    async def answer(context: Any, request: Any) -> Any:
        shown.append(request.message)
        return types.ElicitResult(action=reply, content={"allow": True} if reply == "accept" else None)

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write, elicitation_callback=answer) as client:
            await client.initialize()
            return await client.call_tool("write_file", {"path": "/src/a", "content": "x"})

    result = anyio.run(main)
    assert result.is_error and "needs approval" in text(result)
    assert shown == [] and record.read_text() == ""


# ---- the wire: what a client writes, read as the SDK server reads it ------------------------------

INITIALIZE = {
    "jsonrpc": "2.0", "id": "init", "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "wire", "version": "1"}},
}  # fmt: skip
DENIED = {"jsonrpc": "2.0", "id": 666, "method": "tools/call",
          "params": {"name": "write_file", "arguments": {"path": "/src/secrets/k", "content": "x"}}}  # fmt: skip


class Wire:
    """`bgc mcp-proxy` in front of the real SDK server, started as a client starts it; the test
    writes the client's bytes itself."""

    def __init__(
        self, tmp_path: Path, *extra: str, command: list[str] | None = None, handshake: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        policy = tmp_path / "p.bgp"
        policy.write_text(POLICY)
        self.record = tmp_path / "record.jsonl"
        self.record.touch()
        self.pid_file = tmp_path / "server.pid"
        env = {**os.environ, **(env or {}), "BGC_TEST_MCP_RECORD": str(self.record), "BGC_TEST_MCP_PID": str(self.pid_file)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bgc", "mcp-proxy", "-p", str(policy), "--server", "files", "--store", "none",
             *extra, "--", *(command or [sys.executable, SERVER])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=env,
        )  # fmt: skip
        self._buffer = b""
        self._syncs = 0
        if handshake:
            self.send(INITIALIZE)
            assert self.answer("init")["result"]["protocolVersion"]
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Any) -> None:
        self.write(message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def line(self, timeout: float = 60.0) -> bytes:
        """The next line the client receives (b"" at the end)."""
        assert self.process.stdout is not None
        descriptor = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([descriptor], [], [], timeout)
            assert ready, "the proxy did not answer in time"
            chunk = os.read(descriptor, 1 << 16)
            if not chunk:
                return b""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        assert line.isascii(), line  # JSON any reader reads alike, in any locale
        return line + b"\n"

    def answer(self, request_id: object) -> dict[str, Any]:
        """The answer to ``request_id`` (every line before it kept in :attr:`seen`)."""
        self.seen: list[dict[str, Any]] = []
        while True:
            line = self.line()
            assert line, "the proxy closed its output"
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message
            self.seen.append(message)

    def sync(self) -> list[dict[str, Any]]:
        """Wait until everything sent so far went through the server; what the client got meanwhile."""
        self._syncs += 1
        marker = f"sync-{self._syncs}"
        self.send({"jsonrpc": "2.0", "id": marker, "method": "ping"})
        self.answer(marker)
        return self.seen

    def received(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def close(self) -> tuple[int, bytes]:
        """Close the client's side; the proxy's status and what it wrote on stderr."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        status = self.process.wait(timeout=60)
        return status, self.process.stderr.read()


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    opened = Wire(tmp_path_factory.mktemp("wire"), "--filter-tools")
    yield opened
    status, stderr = opened.close()
    assert status == 0 and b"Traceback" not in stderr, stderr.decode(errors="replace")


def _smuggled(shape: str, separator: str, ping_id: int) -> bytes:
    """One line bgc could read as a ``ping`` whose padding is the denied call, set apart by
    ``separator`` for a reader that ends lines there too."""
    call = json.dumps(DENIED)
    if shape == "list":
        text = f'{{"jsonrpc":"2.0","id":{ping_id},"method":"ping","params":{{"pad":[{separator}{call}{separator}]}}}}'
    elif shape == "member":
        text = f'{{"jsonrpc":"2.0","id":{ping_id},"method":"ping","params":{{"pad":{separator}{call}{separator}}}}}'
    else:  # the call as the whole line between two separators, after a complete ping
        text = f'{{"jsonrpc":"2.0","id":{ping_id},"method":"ping"}}{separator}{call}'
    return text.encode("utf-8") + b"\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(["list", "member", "whole"]),
    st.lists(st.sampled_from(["\r", " ", "\t", "\r\r", "\u2028", "\x85", "\x0c", "\x1e"]), min_size=1, max_size=3)
    .map("".join).filter(lambda separator: separator.strip(" \t")),
    st.integers(1000, 9999),
)
def test_a_denied_call_never_reaches_the_server_whatever_separates_it(wire: Wire, shape: str, separator: str, ping_id: int) -> None:
    """The SDK server reads its input with universal newlines: a bare CR ends a line there. A
    line that holds one is refused; whatever else the proxy forwards is the value it decided,
    re-serialised, so no separator the client wrote reaches the server."""
    wire.write(_smuggled(shape, separator, ping_id))
    wire.sync()
    assert all(call["arguments"].get("path") != "/src/secrets/k" for call in wire.received())
    for message in wire.seen:  # the ping is refused or answered as a ping: never the call's result
        assert message.get("id") in (ping_id, None) and "content" not in message.get("result", {})


ID_SPELLINGS = [
    b"1", b"-1", b"0", b"9007199254740991", b"-9007199254740991", b'"t"', b'""', b'"\\u0031"',  # valid ids
    b"1.0", b"1e0", b"-0", b"0.5", b"9007199254740993", b"18446744073709551615", b"1e400",  # numbers others read otherwise
    b"null", b"true", b"[1]", b'{"a":1}', b'"' + b"x" * 2000 + b'"',  # no id at all
]  # fmt: skip


@pytest.mark.parametrize("spelling", ID_SPELLINGS)
def test_filtered_tool_lists_hold_for_every_spelling_of_a_request_id(wire: Wire, spelling: bytes) -> None:
    line = b'{"jsonrpc":"2.0","method":"tools/list","id":' + spelling + b"}\n"
    wire.write(line + line)  # the same id twice: a second request while the first is outstanding
    for message in wire.sync():
        tools = message.get("result", {}).get("tools")
        assert tools is None or sorted(tool["name"] for tool in tools) == ["read_file", "write_file"], message


def test_a_batch_is_refused_with_each_requests_own_id(wire: Wire) -> None:
    batch = [DENIED, {**DENIED, "id": "b"}, {"jsonrpc": "2.0", "method": "notifications/x"}]
    wire.send(json.dumps(batch).encode() + b"\n")
    answers = wire.sync()
    assert sorted(str(answer["id"]) for answer in answers) == ["666", "b"]
    assert all(answer["error"]["code"] == -32600 for answer in answers)


def test_nesting_past_the_limit_is_refused_in_both_directions_and_the_session_goes_on(tmp_path: Path) -> None:
    echo = Wire(tmp_path, command=[sys.executable, ECHO], handshake=False)
    deep = {"jsonrpc": "2.0", "id": "deep", "method": "x", "params": {"v": json.loads("[" * 70 + "]" * 70)}}
    echo.send(deep)
    assert echo.answer(None)["error"]["code"] == -32700  # too deep to read: no id either
    shallow = {"jsonrpc": "2.0", "id": "echoed", "method": "x", "params": {"v": json.loads("[" * 62 + "]" * 62)}}
    echo.send(shallow)  # within the limit; the echo of it, nested in the server's answer, is not
    assert echo.answer("echoed")["error"]["code"] == -32603
    assert echo.sync() == []
    status, stderr = echo.close()
    assert status == 0 and b"Traceback" not in stderr


def test_under_the_stateless_protocol_every_result_the_proxy_writes_carries_its_result_type(tmp_path: Path) -> None:
    from mcp_types import CallToolResult

    modern = Wire(tmp_path, handshake=False)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    for request_id, path in (("allowed", "/src/a.py"), ("denied", "/src/secrets/k")):
        modern.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                     "params": {"_meta": meta, "name": "write_file", "arguments": {"path": path, "content": "x"}}})  # fmt: skip
        result = modern.answer(request_id)["result"]
        assert result["resultType"] == "complete" and result["isError"] is (request_id == "denied")
        CallToolResult.model_validate(result)
    assert modern.close()[0] == 0


@pytest.mark.parametrize(
    "locale", [{"LC_ALL": "C"}, {"LC_ALL": "C", "PYTHONIOENCODING": "latin-1"}, {"PYTHONIOENCODING": "ascii"}]
)
def test_every_answer_is_json_in_ascii_whatever_the_locale(tmp_path: Path, locale: dict[str, str]) -> None:
    wire = Wire(tmp_path, env=locale)
    for request_id, path in (("allowed", "/src/é\u2028ü.py"), ("denied", "/src/secrets/é\u2028\U0001f600")):
        wire.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": "write_file", "arguments": {"path": path, "content": "ç"}}})  # fmt: skip
        wire.answer(request_id)
    wire.send(b'{"jsonrpc":"2.0","id":"bad","method":"ping","params":{"p":"\xff"}}\n')
    wire.sync()
    status, stderr = wire.close()
    assert status == 0 and b"Traceback" not in stderr
    assert wire.received() == [{"tool": "write_file", "arguments": {"path": "/src/é\u2028ü.py", "content": "ç"}}]


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@pytest.mark.parametrize("server", ["sdk", "echo"])
def test_a_signal_to_the_proxy_reaches_the_server_and_the_proxy_exits_with_its_status(tmp_path: Path, number: int, server: str) -> None:
    """The echo server dies of each signal; the SDK server may take it as a request to stop
    and stop, or not stop at all, and is then killed: either way it does not outlive the proxy."""
    wire = Wire(tmp_path, command=[sys.executable, SERVER if server == "sdk" else ECHO], handshake=server == "sdk")
    if server == "echo":
        wire.send({"jsonrpc": "2.0", "id": 1, "method": "x"})
        wire.answer(1)
    started = int(wire.pid_file.read_text())
    wire.process.send_signal(number)
    status = wire.process.wait(timeout=60)
    assert status == 128 + number if server == "echo" else status in (0, 128 + number, 128 + signal.SIGKILL)
    with pytest.raises(ProcessLookupError):
        os.kill(started, 0)


def test_a_server_that_ignores_signals_is_killed_after_its_grace(tmp_path: Path) -> None:
    echo = Wire(tmp_path, command=[sys.executable, ECHO], handshake=False)
    echo.send({"jsonrpc": "2.0", "method": "deaf"})
    echo.send({"jsonrpc": "2.0", "id": 1, "method": "x"})
    echo.answer(1)
    echo.process.send_signal(signal.SIGTERM)
    assert echo.process.wait(timeout=60) == 128 + signal.SIGKILL


def test_the_proxy_exits_with_the_servers_status_while_the_client_is_still_connected(tmp_path: Path) -> None:
    echo = Wire(tmp_path, command=[sys.executable, ECHO], handshake=False)
    echo.send({"jsonrpc": "2.0", "id": 1, "method": "x"})
    echo.answer(1)
    echo.send({"jsonrpc": "2.0", "method": "exit"})
    assert echo.process.wait(timeout=60) == 4  # its input is still open: the proxy does not wait for it
    assert echo.process.stderr is not None
    stderr = echo.process.stderr.read()
    assert b"Fatal" not in stderr and b"Traceback" not in stderr, stderr.decode(errors="replace")


# ---- bgc init mcp ----------------------------------------------------------------------------


def test_init_mcp_puts_every_stdio_server_behind_the_proxy_and_the_result_runs(tmp_path: Path) -> None:
    from tests.samples import bgc

    policy = tmp_path / "p.bgp"
    policy.write_text(POLICY)
    config = tmp_path / ".mcp.json"
    original = {
        "mcpServers": {
            "files": {
                "command": sys.executable,
                "args": [SERVER],
                "env": {"BGC_TEST_MCP_RECORD": str(tmp_path / "rec")},
            },
            "remote": {"type": "sse", "url": "https://mcp.example.com/sse"},
            "streamable": {"type": "http", "url": "https://mcp.example.com/mcp"},
        },
        "kept": {"any": "field"},
    }
    config.write_text(json.dumps(original))
    first = bgc("init", "mcp", str(config), "-p", str(policy))
    assert first.exit_code == 1, first.output  # the remote server could not be put behind it
    assert "mcpServers.files now runs through bgc mcp-proxy" in first.output
    assert "mcpServers.remote is UNGUARDED: a remote server over the old SSE transport" in first.output
    assert "mcpServers.streamable now runs through bgc mcp-proxy" in first.output
    assert json.loads((tmp_path / ".mcp.json.bgc-backup").read_text()) == original
    rewritten = json.loads(config.read_text())
    assert (
        rewritten["kept"] == original["kept"] and rewritten["mcpServers"]["remote"] == original["mcpServers"]["remote"]
    )
    streamable = rewritten["mcpServers"]["streamable"]["args"]
    assert streamable[streamable.index("mcp-proxy") :] == ["mcp-proxy", "-p", str(policy), "--server", "streamable",
                                                           "--url", "https://mcp.example.com/mcp"]  # fmt: skip
    files = rewritten["mcpServers"]["files"]
    assert files["env"] == original["mcpServers"]["files"]["env"]
    proxy_args = files["args"][files["args"].index("mcp-proxy") :]
    assert proxy_args == ["mcp-proxy", "-p", str(policy), "--server", "files", "--", sys.executable, SERVER]

    again = bgc("init", "mcp", str(config), "-p", str(policy))
    assert "mcpServers.files already runs through bgc mcp-proxy" in again.output
    assert "mcpServers.streamable already runs through bgc mcp-proxy" in again.output
    assert json.loads(config.read_text()) == rewritten and not (tmp_path / ".mcp.json.bgc-backup.1").exists()

    # what the client will now start is the proxy: a denied call never reaches the server
    (tmp_path / "rec").touch()
    params = StdioServerParameters(command=files["command"], args=files["args"], env=files["env"], cwd=str(tmp_path))

    async def main() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return [
                await client.call_tool("write_file", {"path": "/src/secrets/k", "content": "x"}),
                await client.call_tool("read_file", {"path": "/src/a.py"}),
            ]

    denied, allowed = anyio.run(main)
    assert denied.is_error and not allowed.is_error
    assert [json.loads(line)["tool"] for line in (tmp_path / "rec").read_text().splitlines()] == ["read_file"]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # Python's json points at the brace after a trailing comma, 3.13's at the comma itself
        ('{"mcpServers": {"a": 1,}}', ":1:24:" if sys.version_info < (3, 13) else ":1:23:"),
        ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', ":1:"),
        ('{"mcp": {}}', "no `mcpServers`, `servers` or `projects.<path>.mcpServers` object"),
        ('{"projects": {"/p": {"mcpServers": []}}}', 'projects["/p"].mcpServers is not an object'),
        ('{"mcpServers": {"a": {"command": ["x"]}}}', "`command` must be a string"),
    ],
)
def test_init_mcp_refuses_a_file_it_cannot_read_and_writes_nothing(tmp_path: Path, text: str, where: str) -> None:
    from tests.samples import bgc

    policy = tmp_path / "p.bgp"
    policy.write_text(POLICY)
    config = tmp_path / "c.json"
    config.write_text(text)
    result = bgc("init", "mcp", str(config), "-p", str(policy))
    assert result.exit_code == 2 and where in result.output
    assert config.read_text() == text and set(tmp_path.iterdir()) == {policy, config}
