"""``bgc init mcp CONFIG -p POLICY``: run every stdio server an MCP client will start through
``bgc mcp-proxy``, or say which one it left unguarded.

The clients keep their servers in one of these places, each a map ``{NAME: {"command": …,
"args": […], "env": {…}, …}}``:

- ``mcpServers`` at the top of the file: Claude Desktop (``claude_desktop_config.json``), Claude
  Code (``.mcp.json``, and the user scope of ``~/.claude.json``), Cursor (``.cursor/mcp.json``),
  Gemini CLI (``.gemini/settings.json``), Windsurf, Copilot's portable ``.mcp.json``;
- ``projects.<path>.mcpServers`` in Claude Code's ``~/.claude.json`` (the local scope: servers
  one project starts);
- ``servers`` in VS Code's ``.vscode/mcp.json`` (``"type": "stdio"`` for a command);
- ``[mcp_servers.NAME]`` tables in Codex's ``config.toml``.

Each stdio server becomes ``bgc mcp-proxy -p POLICY --server NAME -- COMMAND ARGS…`` (its other
fields kept), so the server name in the policy's ``tool … on NAME`` declarations is the name the
client already uses. bgc starts through the launcher every registered command uses
(:mod:`bgc.app.commands.launcher`): this machine's interpreter by its path, or, with ``team``
(a file the team commits, such as ``.mcp.json``), the ``bgc`` on ``PATH`` and the policy named
relative to the project (the configuration's directory, or the one above a ``.cursor``,
``.vscode``, ``.gemini`` or ``.codex`` directory), where the client starts the server. A proxy
that cannot start (no such interpreter, no bgc on ``PATH``, no policy where it looks) exits with
its reason on stderr: the client shows the server as failed, and since the proxy's entry is the
only way to the real server, that server's tools are then unavailable, never reached unguarded.

A remote server that says it speaks Streamable HTTP (``"type": "http"`` or
``"streamable-http"`` with ``url``, or Gemini's ``httpUrl``) becomes ``bgc mcp-proxy -p POLICY
--server NAME --url URL``, a command the client starts like any other (no port, no token, no
process left running between sessions); its bearer token moves from ``headers.Authorization`` to
the entry's ``env`` (``--bearer-env``: a ``${VAR}`` the client expands stays a reference), and
bgc writes it nowhere else. A server already behind the proxy is left as it is (running the
command twice changes nothing). Whatever the client would start that the proxy cannot guard is
listed as unguarded and makes the exit status 1: a remote server over the old SSE transport or
whose entry does not say its transport (``url`` alone, ``serverUrl``), one that sends a header
other than a bearer token, an entry bgc cannot read as a command, Gemini's
``mcp.serverCommand``, and every server of a Codex file (bgc writes no TOML: the summary gives the
lines to write). The file is read strictly (a JSON error is located, nothing is written), the
original is kept as ``CONFIG.bgc-backup`` (never overwriting an earlier backup) and the new file
is written atomically.

Whether the person at the client's own dialog (MCP elicitation) may answer an ask is the
policy's to say (``trust elicitation``, docs/mcp.md), never the client configuration's.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bgc.app.commands import launcher
from bgc.errors import ExitCode, InputError, Span, UsageError

REMOTE_KEYS = ("url", "httpUrl", "serverUrl")
"""The fields by which a client names a server it reaches over the network, not a command."""
STREAMABLE_TYPES = ("http", "streamable-http", "streamableHttp")
"""The ``type`` values by which an entry says its ``url`` speaks Streamable HTTP."""
BEARER_VARIABLE = "BGC_MCP_BEARER"
"""The ``env`` variable a literal bearer token moves to (``--bearer-env`` reads it)."""


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What rewriting a configuration did, server by server (each named where it is written)."""

    data: Any
    proxied: tuple[str, ...]
    already: tuple[str, ...]
    unguarded: tuple[tuple[str, str], ...]
    """``(where, why)`` of every server the client starts that is not behind the proxy."""


def proxy_command(team: bool = False) -> list[str]:
    """How a client should start bgc: through the launcher (isolated, ``-I``: neither the user's
    ``PYTHON*`` variables nor the directory the client starts it in, often the project, can put
    code on its import path), this interpreter by its absolute path (clients such as Claude
    Desktop start servers with a minimal ``PATH``), or with ``team`` the ``bgc`` on ``PATH``."""
    from bgc.app.commands.init import interpreter

    return launcher.words(None if team else interpreter())


def is_proxied(server: dict[str, Any], proxy: str = "mcp-proxy") -> bool:
    """Whether the server (or agent) already starts as ``bgc PROXY …`` (through a launcher, the
    script, or ``python -m bgc`` with or without an isolation flag)."""
    command, args = server.get("command"), server.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        return False
    started = launcher.parse([command, *args])
    if started is not None:
        return started[1][:1] == [proxy]
    if os.path.basename(command) == "bgc":
        return args[:1] == [proxy]
    if args[:1] in (["-I"], ["-P"]):
        args = args[1:]
    return os.path.basename(command).startswith("python") and args[:3] == ["-m", "bgc", proxy]


def server_tables(data: Any, where: str) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every map of servers in a client's configuration, with its path in the document."""
    if not isinstance(data, dict):
        raise InputError("not an MCP client configuration: the file is not a JSON object", Span(where))
    found = False
    for key in ("mcpServers", "servers"):
        if key in data:
            found = True
            yield (key,), _table(data[key], key, where)
    projects = data.get("projects")
    if isinstance(projects, dict):
        for project, settings in projects.items():
            if isinstance(settings, dict) and "mcpServers" in settings:
                found = True
                yield (
                    ("projects", project, "mcpServers"),
                    _table(settings["mcpServers"], f"projects[{json.dumps(project)}].mcpServers", where),
                )
    if not found:
        raise InputError(
            "no `mcpServers`, `servers` or `projects.<path>.mcpServers` object: not an MCP client configuration",
            Span(where),
        )


def _table(value: Any, name: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{name} is not an object", Span(where))
    return value


def _remote(server: dict[str, Any]) -> bool:
    return any(key in server for key in REMOTE_KEYS) or server.get("type") not in (None, "stdio")


def _guarded(named: str, name: str, server: Any, policy: str, bgc: list[str], where: str) -> Any:
    """The server entry behind the proxy; None when it already is; a string saying why it
    cannot be (a remote server). An entry that is not a command bgc can read is refused."""
    if not isinstance(server, dict):
        raise InputError(f"{named} is not an object", Span(where))
    if _remote(server):
        return _remote_guarded(named, name, server, policy, bgc, where)
    command, args = server.get("command"), server.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise InputError(f"{named}: `command` must be a string and `args` a list of strings", Span(where))
    if is_proxied(server):
        return None
    wrapped = [*bgc[1:], "mcp-proxy", "-p", policy, "--server", name, "--", command, *args]
    return {**server, "command": bgc[0], "args": wrapped}


def _remote_guarded(named: str, name: str, server: dict[str, Any], policy: str, bgc: list[str], where: str) -> Any:
    """A remote server behind the proxy (``--url``), or why it cannot be."""
    kind = server.get("type")
    url = server.get("httpUrl") if "httpUrl" in server else server.get("url") if kind in STREAMABLE_TYPES else None
    if url is None:
        if kind == "sse":
            return "a remote server over the old SSE transport: not proxied (bgc speaks Streamable HTTP)"
        return 'a remote server whose entry does not say its transport: write "type": "http" if it speaks Streamable HTTP'
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise InputError(f"{named}: its URL is not an http:// or https:// URL", Span(where))
    headers = server.get("headers", {})
    if not isinstance(headers, dict):
        raise InputError(f"{named}: `headers` must be an object", Span(where))
    env = dict(server.get("env") or {})
    options: list[str] = []
    for header, value in headers.items():
        bearer = re.fullmatch(r"Bearer\s+(\S+)", value) if isinstance(value, str) else None
        if header.lower() != "authorization" or bearer is None:
            return f"it sends the header {header!r}, which bgc does not pass on (only a bearer token): not proxied"
        reference = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", bearer.group(1))
        # the client passes the token in the entry's env: a ${VAR} it expands stays a reference
        env[reference.group(1) if reference else BEARER_VARIABLE] = bearer.group(1)
        options += ["--bearer-env", reference.group(1) if reference else BEARER_VARIABLE]
    kept = {key: value for key, value in server.items() if key not in ("url", "httpUrl", "type", "headers", "env")}
    args = [*bgc[1:], "mcp-proxy", "-p", policy, "--server", name, *options, "--url", url]
    return {**kept, **({"type": "stdio"} if "type" in server else {}), "command": bgc[0], "args": args,
            **({"env": env} if env else {})}  # fmt: skip


def _sorted(
    entries: Iterator[tuple[str, str, Any, dict[str, Any] | None]], policy: str, bgc: list[str], where: str
) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Each ``(where written, name, entry, its table)`` put behind the proxy in its table, or, with
    no table to write (TOML), listed with the lines to write: ``(proxied, already, unguarded)``."""
    proxied: list[str] = []
    already: list[str] = []
    unguarded: list[tuple[str, str]] = []
    for named, name, server, table in entries:
        guarded = _guarded(named, name, server, policy, bgc, where)
        if guarded is None:
            already.append(named)
        elif isinstance(guarded, str):
            unguarded.append((named, guarded))
        elif table is None:
            lines = f"command = {json.dumps(guarded['command'])}\n    args = {json.dumps(guarded['args'])}"
            unguarded.append((named, f"not behind the proxy; in [{named}] write:\n    {lines}"))
        else:
            table[name] = guarded
            proxied.append(named)
    return proxied, already, unguarded


def rewrite(data: Any, policy: str, bgc: list[str], where: str) -> Rewrite:
    """The configuration with each stdio server behind the proxy; refuses shapes it cannot read."""
    new = json.loads(json.dumps(data))  # a copy to edit: the original stays what was read

    def entries() -> Iterator[tuple[str, str, Any, dict[str, Any] | None]]:
        for path, servers in list(server_tables(new, where)):
            label = ".".join(path) if path[0] != "projects" else f"projects[{json.dumps(path[1])}].mcpServers"
            for name, server in list(servers.items()):
                yield f"{label}.{name}", name, server, servers

    proxied, already, unguarded = _sorted(entries(), policy, bgc, where)
    gemini = new.get("mcp")
    if isinstance(gemini, dict) and "serverCommand" in gemini:
        unguarded.append(("mcp.serverCommand", "a command Gemini CLI starts as a server: not proxied, remove it"))
    return Rewrite(new, tuple(proxied), tuple(already), tuple(unguarded))


def codex(data: Any, policy: str, bgc: list[str], where: str) -> Rewrite:
    """Codex's ``config.toml``: its servers as they stand, each stdio server not behind the proxy
    unguarded with the TOML that would put it there (bgc writes no TOML)."""
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise InputError("mcp_servers is not a table", Span(where))
    entries = ((f"mcp_servers.{name}", name, server, None) for name, server in servers.items())
    _, already, unguarded = _sorted(entries, policy, bgc, where)
    return Rewrite(data, (), tuple(already), tuple(unguarded))


CLIENT_DIRECTORIES = (".cursor", ".vscode", ".gemini", ".codex")
"""Directories of a project a client keeps its configuration in: the project is the one above."""


def policy_word(config: str, policy: str, team: bool) -> str:
    """The policy as the proxy's ``-p`` names it: its absolute path, or with ``team`` its path
    relative to the project of ``config`` (:data:`CLIENT_DIRECTORIES`), which it must lie in."""
    if not team:
        return os.path.abspath(policy)
    project = os.path.dirname(os.path.abspath(config))
    if os.path.basename(project) in CLIENT_DIRECTORIES:
        project = os.path.dirname(project)
    relative = os.path.relpath(os.path.abspath(policy), project)
    if relative == ".." or relative.startswith("../"):
        raise UsageError(f"--team: the policy {policy!r} is not inside the project {project!r}, where the client starts the proxy")
    return relative


def run(config: str, policy: str, *, team: bool = False) -> tuple[ExitCode, str]:
    """Rewrite ``config`` in place (backup kept); the summary to print."""
    from bgc.core.values.documents import read_document
    from bgc.core.values.files import write_atomic

    if not os.path.isfile(policy):
        raise InputError("no such policy file", Span(policy))
    named = policy_word(config, policy, team)
    if config.endswith(".toml"):
        result = codex(_read_toml(config), named, proxy_command(team), config)
    else:
        document = read_document(config, "json")
        result = rewrite(document.data, named, proxy_command(team), config)
    lines = [f"{config}: {name} now runs through bgc mcp-proxy" for name in result.proxied]
    lines += [f"{config}: {name} already runs through bgc mcp-proxy" for name in result.already]
    lines += [f"{config}: {name} is UNGUARDED: {why}" for name, why in result.unguarded]
    if result.proxied:
        with open(config, "rb") as original:
            write_atomic(free_backup_name(config), original.read())
        write_atomic(config, (json.dumps(result.data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    # a server left unguarded is a finding: the user asked for every server behind the policy
    return (ExitCode.FINDINGS if result.unguarded else ExitCode.OK), "\n".join(lines)


def _read_toml(path: str) -> Any:
    import tomllib

    from bgc.core.values.documents import decode_utf8, read_bytes

    try:
        return tomllib.loads(decode_utf8(read_bytes(path), path))
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"invalid TOML: {error}", Span(path)) from None


def free_backup_name(config: str) -> str:
    """``CONFIG.bgc-backup``, or the first free ``.bgc-backup.N``: an earlier backup (the file
    before bgc ever touched it) is never overwritten."""
    candidate, number = config + ".bgc-backup", 0
    while os.path.lexists(candidate):
        number += 1
        candidate = f"{config}.bgc-backup.{number}"
    return candidate
