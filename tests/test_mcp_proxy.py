"""`bgc mcp-proxy` end to end: the real MCP Python SDK on both sides.

The client is the SDK's ``ClientSession`` over its stdio transport; it starts ``bgc mcp-proxy``
exactly as an MCP client configuration would, and the proxy starts tests/mcp/server.py, a real
SDK server that records every call it receives. What the record holds is what got through.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio  # installed with mcp, the SDK the dev extra pins
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER = str(Path(__file__).parent / "mcp" / "server.py")

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
