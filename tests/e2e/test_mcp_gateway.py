"""`bgc mcp-proxy --gateway`: several servers behind one front, each at ``/mcp/NAME`` under its
own policy, with the real MCP SDK client over real HTTP on loopback: a remote upstream (the SDK's
Streamable HTTP server) and a stdio server started per session."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession

from tests.e2e.test_mcp_proxy_http import Upstream, text

STDIO_SERVER = str(Path(__file__).parents[1] / "mcp" / "server.py")
REMOTE_POLICY = 'tool read_file on remote needs fs:read:{path}\nallow fs:read:/src/**\n'
LOCAL_POLICY = 'tool write_file on local needs fs:write:{path} ignores content\nallow fs:write:/notes/**\n'


class Gateway:
    """The gateway in a process of its own: its URL per server and its token."""

    def __init__(self, tmp_path: Path, servers: dict[str, Any], local_record: Path) -> None:
        (tmp_path / "g.json").write_text(json.dumps({"servers": servers}))
        self.token_file = tmp_path / "gateway.token"
        args = [sys.executable, "-m", "bgc", "mcp-proxy", "--gateway", str(tmp_path / "g.json"), "--store",
                str(tmp_path / "k.db"), "--listen", "127.0.0.1:0", "--token-file", str(self.token_file)]  # fmt: skip
        env = {**__import__("os").environ, "BGC_TEST_MCP_RECORD": str(local_record)}  # the stdio server's record
        self.process = subprocess.Popen(args, cwd=tmp_path, stderr=subprocess.PIPE, text=True, env=env)
        assert self.process.stderr is not None
        self.urls = {}
        for _ in servers:
            line = self.process.stderr.readline()
            assert "listening on " in line, line
            url = line.split("listening on ", 1)[1].split(";")[0]
            self.urls[url.rsplit("/", 1)[1]] = url
        self.token = self.token_file.read_text().strip()

    def stop(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=60)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[Gateway, Upstream, Path]]:
    upstream = Upstream(tmp_path)
    (tmp_path / "remote.bgp").write_text(REMOTE_POLICY)
    (tmp_path / "local.bgp").write_text(LOCAL_POLICY)
    local_record = tmp_path / "local.jsonl"
    local_record.touch()
    servers = {
        "remote": {"url": upstream.url, "policy": "remote.bgp"},
        "local": {"command": sys.executable, "args": [STDIO_SERVER], "policy": "local.bgp", "closed": True},
    }
    started = Gateway(tmp_path, servers, local_record)
    yield started, upstream, local_record
    started.stop()
    upstream.stop()


def client(gateway: Gateway, name: str) -> Any:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Bgc-Token": gateway.token}
    return streamable_http_client(gateway.urls[name], http_client=create_mcp_http_client(headers=headers))


def test_each_server_behind_one_gateway_is_decided_by_its_own_policy(gateway: tuple[Gateway, Upstream, Path]) -> None:
    front, upstream, local_record = gateway
    assert set(front.urls) == {"remote", "local"}

    async def calls(name: str, tool: str, paths: list[str]) -> list[Any]:
        async with client(front, name) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [await session.call_tool(tool, {"path": path, "content": "x"} if tool == "write_file" else {"path": path})
                    for path in paths]  # fmt: skip

    async def main() -> tuple[list[Any], list[Any]]:
        remote = await calls("remote", "read_file", ["/src/a.py", "/etc/passwd"])
        local = await calls("local", "write_file", ["/notes/a", "/src/a.py"])
        return remote, local

    remote, local = anyio.run(main)
    assert [result.is_error for result in remote] == [False, True] and text(remote[0]) == "contents of /src/a.py"
    assert [result.is_error for result in local] == [False, True]
    assert upstream.received() == [{"tool": "read_file", "arguments": {"path": "/src/a.py"}}]
    written = [json.loads(line) for line in local_record.read_text().splitlines()]
    assert [entry["arguments"]["path"] for entry in written if entry.get("tool") == "write_file"] == ["/notes/a"]


def test_a_session_belongs_to_the_server_it_was_started_on(gateway: tuple[Gateway, Upstream, Path]) -> None:
    """A client of one server cannot reach another by sending its session id to the other's path."""
    front, upstream, _ = gateway
    port = int(front.urls["remote"].split(":")[2].split("/")[0])
    headers = {"Host": f"127.0.0.1:{port}", "Bgc-Token": front.token, "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("POST", "/mcp/remote", json.dumps(init), headers)
    answer = connection.getresponse()
    answer.read()
    session = answer.getheader("Mcp-Session-Id")
    assert answer.status == 200 and session
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write_file",
            "arguments": {"path": "/notes/a", "content": "x"}}}  # fmt: skip
    for path in ("/mcp/local", "/mcp/elsewhere", "/mcp"):
        connection.request("POST", path, json.dumps(call), {**headers, "Mcp-Session-Id": session})
        refused = connection.getresponse()
        refused.read()
        assert refused.status == 404, path
    assert upstream.received() == []


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"command": "true", "closd": True}, "not closd"),
        ({"command": "true", "url": "http://127.0.0.1:9/mcp"}, "one of them"),
        ({"args": ["x"]}, "one of them"),
        ({"command": "true", "redact": "yes"}, "true or false"),
    ],
)
def test_a_gateway_entry_bgc_cannot_read_starts_nothing(tmp_path: Path, entry: dict[str, Any], why: str) -> None:
    (tmp_path / "p.bgp").write_text(LOCAL_POLICY)
    (tmp_path / "g.json").write_text(json.dumps({"servers": {"local": {**entry, "policy": "p.bgp"}}}))
    done = subprocess.run([sys.executable, "-m", "bgc", "mcp-proxy", "--gateway", str(tmp_path / "g.json"),
                           "--store", "none", "--listen", "127.0.0.1:0", "--token-file", str(tmp_path / "t")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and why in done.stderr, done.stderr
    assert not (tmp_path / "t").exists()
