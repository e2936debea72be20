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
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER = str(Path(__file__).parents[1] / "mcp" / "server.py")

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
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
        },
        "kept": {"any": "field"},
    }
    config.write_text(json.dumps(original))
    first = bgc("init", "mcp", str(config), "-p", str(policy))
    assert first.exit_code == 1, first.output  # the remote server could not be put behind it
    assert "files now runs through bgc mcp-proxy" in first.output and "remote is a remote server" in first.output
    assert json.loads((tmp_path / ".mcp.json.bgc-backup").read_text()) == original
    rewritten = json.loads(config.read_text())
    assert (
        rewritten["kept"] == original["kept"] and rewritten["mcpServers"]["remote"] == original["mcpServers"]["remote"]
    )
    files = rewritten["mcpServers"]["files"]
    assert files["env"] == original["mcpServers"]["files"]["env"]
    proxy_args = files["args"][files["args"].index("mcp-proxy") :]
    assert proxy_args == ["mcp-proxy", "-p", str(policy), "--server", "files", "--", sys.executable, SERVER]

    again = bgc("init", "mcp", str(config), "-p", str(policy))
    assert "files already runs through bgc mcp-proxy" in again.output
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
        ('{"servers": {}}', "no `mcpServers` object"),
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
