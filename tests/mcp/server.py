"""A small real MCP server (the official Python SDK) with file and shell tools.

It records every tool call it receives, one JSON line each, in the file named by
``BGC_TEST_MCP_RECORD``: tests assert on that record that a denied call never reached it. With
``BGC_TEST_MCP_PID`` it writes its process id there when it starts.
"""

from __future__ import annotations

import json
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("bgc-test-server")


def record(tool: str, arguments: dict) -> None:
    with open(os.environ["BGC_TEST_MCP_RECORD"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"tool": tool, "arguments": arguments}, sort_keys=True) + "\n")


@server.tool()
def read_file(path: str) -> str:
    """Read a file below the server's root."""
    record("read_file", {"path": path})
    return f"contents of {path}"


@server.tool()
def write_file(path: str, content: str) -> str:
    """Write a file below the server's root."""
    record("write_file", {"path": path, "content": content})
    return f"wrote {len(content)} characters to {path}"


@server.tool()
def run(command: str) -> str:
    """Run a shell command."""
    record("run", {"command": command})
    return f"ran {command}"


@server.tool()
def crash() -> str:
    """Exit in the middle of a call, as a crashing server does."""
    record("crash", {})
    sys.stdout.flush()
    os._exit(3)


if __name__ == "__main__":
    if "BGC_TEST_MCP_PID" in os.environ:  # where a test finds the server, to see it is gone
        with open(os.environ["BGC_TEST_MCP_PID"], "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
    server.run("stdio")
