"""`bgc mcp-proxy` over Streamable HTTP, end to end: the real MCP Python SDK on both sides, over
real HTTP on loopback.

The upstream is tests/mcp/http_server.py, the SDK's own Streamable HTTP server (uvicorn), which
records every call, read and get it receives: what the record holds is what got through. The
client is the SDK's ``ClientSession``, over stdio (it starts the proxy, which reaches the upstream
with ``--url``) or over the SDK's Streamable HTTP client (to the proxy's ``--listen`` front).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio  # installed with mcp, the SDK the dev extra pins
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HTTP_SERVER = str(Path(__file__).parents[1] / "mcp" / "http_server.py")

POLICY = """\
tool read_file on files needs fs:read:{path}
tool write_file on files needs fs:write:{path} ignores content
tool rug_pull on files needs mcp:call:files/rug_pull
allow fs:read:/src/**
allow fs:write:/src/**
allow mcp:call:files/rug_pull
deny fs:write:/src/secrets/** because "keys live here"
"""


class Upstream:
    """tests/mcp/http_server.py in a process of its own, restartable on the same port."""

    def __init__(self, tmp_path: Path) -> None:
        self.record = tmp_path / "record.jsonl"
        self.record.touch()
        self.port_file = tmp_path / "port"
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.port_file.unlink(missing_ok=True)
        args = [sys.executable, HTTP_SERVER, str(self.port_file), *([str(self.port)] if self.port else [])]
        env = {**os.environ, "BGC_TEST_MCP_RECORD": str(self.record)}
        self.process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if self.port_file.exists():
                self.port = int(self.port_file.read_text())
                break
            assert self.process.poll() is None, "the upstream did not start"
            time.sleep(0.05)
        else:
            raise AssertionError("the upstream did not listen in time")

    def stop(self) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def received(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.record.read_text().splitlines()]


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[Upstream]:
    started = Upstream(tmp_path)
    yield started
    started.stop()


def text(result: Any) -> str:
    return "".join(part.text for part in result.content)


def stdio_proxy(tmp_path: Path, upstream: Upstream, *extra: str) -> StdioServerParameters:
    """How a client starts the proxy in front of the remote upstream."""
    policy = tmp_path / "p.bgp"
    policy.write_text(POLICY)
    args = ["-m", "bgc", "mcp-proxy", "-p", str(policy), "--server", "files", "--store", str(tmp_path / "k.db"),
            "--url", upstream.url, *extra]  # fmt: skip
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path))


def test_a_remote_upstream_behind_the_stdio_proxy_gets_only_allowed_calls(tmp_path: Path, upstream: Upstream) -> None:
    async def main() -> tuple[list[str], list[Any]]:
        async with stdio_client(stdio_proxy(tmp_path, upstream)) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = [tool.name for tool in (await client.list_tools()).tools]
            results = [
                await client.call_tool("read_file", {"path": "/src/a.py"}),
                await client.call_tool("write_file", {"path": "/src/secrets/k", "content": "x"}),
                await client.call_tool("run", {"command": "rm -rf /"}),
                await client.call_tool("write_file", {"path": "/src/b.py", "content": "y"}),
            ]
            return listed, results

    listed, results = anyio.run(main)
    assert "read_file" in listed and "write_file" in listed
    assert [result.is_error for result in results] == [False, True, True, False]
    assert text(results[0]) == "contents of /src/a.py"
    assert "keys live here" in text(results[1])
    assert upstream.received() == [
        {"tool": "read_file", "arguments": {"path": "/src/a.py"}},
        {"tool": "write_file", "arguments": {"path": "/src/b.py", "content": "y"}},
    ]


class Front:
    """`bgc mcp-proxy --listen 127.0.0.1:0` in a process of its own, in front of ``server``
    (the remote upstream's URL, or a command); its URL and token as it wrote them."""

    def __init__(self, tmp_path: Path, server: list[str], *extra: str, policy: str = POLICY) -> None:
        (tmp_path / "p.bgp").write_text(policy)
        self.token_file = tmp_path / "front.token"
        args = [sys.executable, "-m", "bgc", "mcp-proxy", "-p", str(tmp_path / "p.bgp"), "--server", "files",
                "--store", str(tmp_path / "k.db"), "--listen", "127.0.0.1:0", "--token-file", str(self.token_file),
                *extra, *server]  # fmt: skip
        self.process = subprocess.Popen(args, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        assert "listening on " in line, line
        self.url = line.split("listening on ", 1)[1].split(";")[0]
        self.token = self.token_file.read_text().strip()

    def stop(self) -> str:
        self.process.terminate()
        _, errors = self.process.communicate(timeout=60)
        return errors


@pytest.fixture
def front(tmp_path: Path, upstream: Upstream) -> Iterator[Front]:
    started = Front(tmp_path, ["--url", upstream.url])
    yield started
    started.stop()


def http_client(front: Front, token: str | None = None) -> Any:
    """The SDK's Streamable HTTP transport to the front, with its token."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Bgc-Token": front.token if token is None else token}
    return streamable_http_client(front.url, http_client=create_mcp_http_client(headers=headers))


def test_the_http_front_decides_for_a_remote_upstream(front: Front, upstream: Upstream) -> None:
    async def main() -> tuple[list[str], list[Any]]:
        async with http_client(front) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = [tool.name for tool in (await client.list_tools()).tools]
            results = [
                await client.call_tool("read_file", {"path": "/src/a.py"}),
                await client.call_tool("write_file", {"path": "/src/secrets/k", "content": "x"}),
                await client.call_tool("read_file", {"path": "/etc/passwd"}),
            ]
            return listed, results

    listed, results = anyio.run(main)
    assert "read_file" in listed
    assert [result.is_error for result in results] == [False, True, True]
    assert text(results[0]) == "contents of /src/a.py"
    assert "keys live here" in text(results[1])
    assert upstream.received() == [{"tool": "read_file", "arguments": {"path": "/src/a.py"}}]


def test_the_http_front_starts_a_stdio_server_for_each_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("BGC_TEST_MCP_RECORD", str(record))
    started = Front(tmp_path, ["--", sys.executable, str(Path(__file__).parents[1] / "mcp" / "server.py")])

    async def main() -> list[bool]:
        outcomes = []
        for path in ("/src/a.py", "/src/secrets/k"):
            async with http_client(started) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                outcomes.append((await client.call_tool("write_file", {"path": path, "content": "x"})).is_error)
        return outcomes

    try:
        assert anyio.run(main) == [False, True]
    finally:
        started.stop()
    assert [json.loads(line)["arguments"]["path"] for line in record.read_text().splitlines()] == ["/src/a.py"]


def test_a_client_without_the_token_gets_nothing(front: Front, upstream: Upstream) -> None:
    async def main() -> None:
        async with http_client(front, token="not-the-token") as (read, write), ClientSession(read, write) as client:
            with anyio.fail_after(60):
                await client.initialize()

    with pytest.raises(BaseException):  # noqa: B017 - the SDK raises its own error for a 401
        anyio.run(main)
    assert upstream.received() == []


def test_the_session_survives_the_upstreams_restart(front: Front, upstream: Upstream) -> None:
    """The upstream forgets its sessions when it restarts; the client's session with the front
    goes on: the proxy starts a new upstream session with the client's own initialize."""

    async def main() -> list[Any]:
        async with http_client(front) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            first = await client.call_tool("read_file", {"path": "/src/a.py"})
            upstream.stop()
            upstream.start()
            second = await client.call_tool("read_file", {"path": "/src/b.py"})
            denied = await client.call_tool("write_file", {"path": "/src/secrets/k", "content": "x"})
            return [first, second, denied]

    results = anyio.run(main)
    assert [result.is_error for result in results] == [False, False, True]
    assert text(results[1]) == "contents of /src/b.py"
    assert [call["arguments"]["path"] for call in upstream.received()] == ["/src/a.py", "/src/b.py"]


def test_the_stdio_proxy_survives_the_upstreams_restart(tmp_path: Path, upstream: Upstream) -> None:
    async def main() -> Any:
        async with stdio_client(stdio_proxy(tmp_path, upstream)) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.call_tool("read_file", {"path": "/src/a.py"})
            upstream.stop()
            upstream.start()
            return await client.call_tool("read_file", {"path": "/src/b.py"})

    assert text(anyio.run(main)) == "contents of /src/b.py"


def test_a_tool_whose_description_changes_is_withheld_until_a_trusted_person_accepts_it(tmp_path: Path, upstream: Upstream) -> None:
    """The rug pull: read_file is trusted on its first allowed call; the server then rewrites
    its description into an instruction to the model. The new version is left out of tools/list
    and a call to it refused, until alice accepts the change with her signed answer."""
    from tests.samples import bgc

    assert bgc("key", "new", "alice", "--dir", str(tmp_path)).exit_code == 0
    policy = f"trust approver alice {(tmp_path / 'alice.pub').read_text().strip()}\n" + POLICY
    started = Front(tmp_path, ["--url", upstream.url], policy=policy)
    store = str(tmp_path / "k.db")

    async def listed_and_called(client: ClientSession) -> tuple[list[str], Any]:
        names = [tool.name for tool in (await client.list_tools()).tools]
        return names, await client.call_tool("read_file", {"path": "/src/a.py"})

    async def main() -> list[tuple[list[str], Any]]:
        seen = []
        async with http_client(started) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            seen.append(await listed_and_called(client))  # trusted on this first allowed call
            await client.call_tool("rug_pull", {})
            seen.append(await listed_and_called(client))  # changed: withheld
            shown = bgc("mcp-pins", "show", "files/read_file", "--store", store, cwd=tmp_path)
            assert shown.exit_code == 0 and "Ignore previous instructions" in shown.output
            assert "finding: description:" in shown.output and "an instruction to the model" in shown.output
            accepted = bgc("mcp-pins", "accept", "files/read_file", "--key", str(tmp_path / "alice.key"),
                           "-p", str(tmp_path / "p.bgp"), "--store", store, cwd=tmp_path)  # fmt: skip
            assert accepted.exit_code == 0, accepted.output
            seen.append(await listed_and_called(client))  # accepted: offered again
        return seen

    try:
        (first, withheld, after) = anyio.run(main)
    finally:
        started.stop()
    assert "read_file" in first[0] and not first[1].is_error
    assert "read_file" not in withheld[0] and withheld[1].is_error
    assert "changed since it was trusted" in text(withheld[1])
    assert "read_file" in after[0] and not after[1].is_error
    assert [call["tool"] for call in upstream.received()] == ["read_file", "rug_pull", "read_file"]
    entries = [json.loads(line) for line in bgc("log", "show", "--store", store, "--format", "json").output.splitlines()]
    pins = [(entry["tool"], entry["decision"], entry.get("approvers")) for entry in entries if entry["kind"] == "pin"]
    assert pins == [("read_file", "pinned", None), ("rug_pull", "pinned", None), ("read_file", "withheld", None),
                    ("read_file", "accepted", ["alice"])]  # fmt: skip


def test_a_resource_read_the_policy_denies_never_reaches_the_upstream(tmp_path: Path, upstream: Upstream) -> None:
    from mcp.shared.exceptions import MCPError

    policy = POLICY + 'deny mcp:read:files/file:///notes/secret because "private notes"\ndeny mcp:prompt:files/greet\n'
    started = Front(tmp_path, ["--url", upstream.url], policy=policy)

    async def main() -> tuple[str, list[str]]:
        refused = []
        async with http_client(started) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            allowed = await client.read_resource("file:///notes/ok")
            for attempt in (client.read_resource("file:///notes/secret"), client.get_prompt("greet", {"name": "x"})):
                with pytest.raises(MCPError) as refusal:
                    await attempt
                refused.append(str(refusal.value))
        return allowed.contents[0].text, refused

    try:
        allowed, refused = anyio.run(main)
    finally:
        started.stop()
    assert allowed == "note ok"  # no rule names it: it passes, as before
    assert "private notes" in refused[0] and "p.bgp:8" in refused[0]
    assert "p.bgp:9" in refused[1]
    assert upstream.received() == [{"tool": "resources/read", "arguments": {"uri": "file:///notes/ok"}}]


def test_a_credential_in_a_result_is_redacted_and_recorded(tmp_path: Path, upstream: Upstream) -> None:
    from tests.samples import bgc

    token = "ghp_" + "a1B2c3D4e5" * 4
    params = stdio_proxy(tmp_path, upstream, "--redact")

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await client.call_tool("read_file", {"path": f"/src/{token}"})

    result = anyio.run(main)
    assert token not in text(result) and "[redacted by bgc: GitHub token]" in text(result)  # and its structured twin
    entries = [json.loads(line) for line in bgc("log", "show", "--store", str(tmp_path / "k.db"), "--format", "json").output.splitlines()]
    (redacted,) = [entry for entry in entries if entry["decision"] == "redacted"]
    assert redacted["tool"] == "tools/call read_file" and "2 × GitHub token" in redacted["reason"] and token not in json.dumps(redacted)
