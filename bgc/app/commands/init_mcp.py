"""``bgc init mcp CONFIG -p POLICY``: run every stdio server of an MCP client's configuration
through ``bgc mcp-proxy``.

Claude Desktop (``claude_desktop_config.json``), Claude Code (``.mcp.json``) and Cursor keep
servers under ``mcpServers``: ``{"NAME": {"command": …, "args": […], "env": {…}}}``. Each stdio
server becomes ``bgc mcp-proxy -p POLICY --server NAME -- COMMAND ARGS…`` (its ``env`` and other
fields kept), so the server name in the policy's ``tool … on NAME`` declarations is the name the
client already uses. A server already behind the proxy is left as it is (running the command
twice changes nothing); a remote server (``url``) cannot be proxied over stdio and is listed, not
touched, and makes the exit status 1. The file is read strictly (a JSON error is located, nothing
is written), the original is kept as ``CONFIG.bgc-backup`` (never overwriting an earlier backup)
and the new file is written atomically.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

from dataclasses import dataclass
from bgc.errors import ExitCode, InputError, Span


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What rewriting a configuration did, server by server."""

    data: dict[str, Any]
    proxied: tuple[str, ...]
    already: tuple[str, ...]
    remote: tuple[str, ...]


def proxy_command() -> list[str]:
    """How a client should start bgc: the absolute console script (clients such as Claude Desktop
    start servers with a minimal PATH), else this interpreter with ``-P -m bgc`` (``-P``: the
    directory the client starts it in, often the project, is not searched for a ``bgc``)."""
    script = shutil.which("bgc")  # found through a relative PATH entry (`.`): a file of the project's, not taken
    return [script] if script and os.path.isabs(script) else [sys.executable, "-P", "-m", "bgc"]


def is_proxied(server: dict[str, Any]) -> bool:
    """Whether the server already starts as ``bgc mcp-proxy …`` (the script, or ``python -m bgc``)."""
    command, args = server.get("command"), server.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    if os.path.basename(command) == "bgc":
        return args[:1] == ["mcp-proxy"]
    if args[:1] == ["-P"]:
        args = args[1:]
    return os.path.basename(command).startswith("python") and args[:3] == ["-m", "bgc", "mcp-proxy"]


def rewrite(data: Any, policy: str, bgc: list[str], where: str) -> Rewrite:
    """The configuration with each stdio server behind the proxy; refuses shapes it cannot read."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise InputError("no `mcpServers` object: this is not an MCP client configuration", Span(where))
    new, proxied, already, remote = {}, [], [], []
    for name, server in servers.items():
        if not isinstance(server, dict):
            raise InputError(f"mcpServers.{name} is not an object", Span(where))
        if "url" in server or server.get("type") not in (None, "stdio"):
            remote.append(name)
            new[name] = server
            continue
        command, args = server.get("command"), server.get("args", [])
        if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise InputError(f"mcpServers.{name}: `command` must be a string and `args` a list of strings", Span(where))
        if is_proxied(server):
            already.append(name)
            new[name] = server
            continue
        wrapped = [*bgc[1:], "mcp-proxy", "-p", policy, "--server", name, "--", command, *args]
        new[name] = {**server, "command": bgc[0], "args": wrapped}
        proxied.append(name)
    return Rewrite({**data, "mcpServers": new}, tuple(proxied), tuple(already), tuple(remote))


def run(config: str, policy: str) -> tuple[ExitCode, str]:
    """Rewrite ``config`` in place (backup kept); the summary to print."""
    from bgc.core.values.documents import read_document
    from bgc.core.values.files import write_atomic

    if not os.path.isfile(policy):
        raise InputError("no such policy file", Span(policy))
    document = read_document(config, "json")
    result = rewrite(document.data, os.path.abspath(policy), proxy_command(), config)
    lines = [f"{config}: {name} now runs through bgc mcp-proxy" for name in result.proxied]
    lines += [f"{config}: {name} already runs through bgc mcp-proxy" for name in result.already]
    lines += [f"{config}: {name} is a remote server (url): not proxied, stdio only" for name in result.remote]
    if result.proxied:
        with open(config, "rb") as original:
            write_atomic(free_backup_name(config), original.read())
        write_atomic(config, (json.dumps(result.data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    # a server left unguarded is a finding: the user asked for every server behind the policy
    return (ExitCode.FINDINGS if result.remote else ExitCode.OK), "\n".join(lines)


def free_backup_name(config: str) -> str:
    """``CONFIG.bgc-backup``, or the first free ``.bgc-backup.N``: an earlier backup (the file
    before bgc ever touched it) is never overwritten."""
    candidate, number = config + ".bgc-backup", 0
    while os.path.lexists(candidate):
        number += 1
        candidate = f"{config}.bgc-backup.{number}"
    return candidate
