"""The Agent Client Protocol (ACP, version 1) read as bgc's calls, and bgc's answers written back.

An adapter (DESIGN §5): it translates and never interprets policy. The formats are ACP v1's, as
its schema defines them (https://agentclientprotocol.com, schema v1; the ``agent-client-protocol``
package's ``acp.schema`` is generated from it):

* ``fs/read_text_file`` ``{sessionId, path, line?, limit?}`` and ``fs/write_text_file``
  ``{sessionId, path, content}``: the agent asks the editor to read or write a file (``path``
  absolute) — ``fs:read`` / ``fs:write`` of that path (:func:`file_request`);
* ``session/request_permission`` ``{sessionId, toolCall, options}``: the agent asks the person
  before a tool call. ``toolCall`` is a ``ToolCallUpdate`` (``toolCallId``, ``kind``, ``title``,
  ``rawInput``, ``locations`` …) and each option ``{optionId, name, kind}`` with ``kind`` one of
  ``allow_once``, ``allow_always``, ``reject_once``, ``reject_always``; the answer is
  ``{outcome: {outcome: "selected", optionId}}`` or ``{outcome: {outcome: "cancelled"}}``
  (:func:`permission_options`, :func:`selected`, :data:`CANCELLED`);
* ``terminal/create`` ``{sessionId, command, args?, env?, cwd?, outputByteLimit?}``: the editor
  runs a command for the agent (:func:`terminal_request`);
* ``initialize`` ``{protocolVersion, clientCapabilities}``: the capabilities the editor offers
  the agent (``fs.readTextFile``, ``fs.writeTextFile``, ``terminal``, and others)
  (:func:`mediated_capabilities`); ``session/new`` ``{cwd, mcpServers}`` (:func:`guarded_servers`).

A permission request is mapped to a call through the agent's own tool declarations where the
agent's ACP adapter carries its tool's input (:func:`agent_use`): the Claude Code adapter
(zed-industries/claude-code-acp) sends the Claude Code tool input as ``rawInput`` and names the
tool in the ``session/update`` that announced the call (``_meta.claudeCode.toolName``; its own
stand-ins ``mcp__acp__Read``, ``…Write``, ``…Edit``, ``…Bash`` take the built-in tools' input).
Otherwise (Gemini CLI's and other adapters, which send neither), the call is what its ``kind``
and ``locations`` say it touches (:func:`location_needs`), and a call that says nothing bgc can
decide is a tool no declaration covers.

Everything that is not exactly the shape above raises :class:`AcpInputError`: the request is
refused, never guessed at.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bgc.adapters.agents import AGENTS
from bgc.adapters.agents.protocol import HookInputError, ToolUse
from bgc.adapters.jsonrpc import MAX_ID_CHARS

PROTOCOL_VERSION = 1
"""The one ACP version bgc mediates."""

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = "allow_once", "allow_always", "reject_once", "reject_always"
OPTION_KINDS = frozenset({ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS})
CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
"""The answer to a permission request whose turn was cancelled."""

MAX_OPTIONS = 16
"""The most options one permission request may offer."""
MAX_LOCATIONS = 256
"""The most locations one tool call may name."""
MAX_ARGS = 4096
"""The most arguments a terminal command may have."""

READS = frozenset({"read", "search"})
"""Tool kinds whose locations are read (a search reads the directory it searches)."""
WRITES = frozenset({"edit", "delete", "move"})
"""Tool kinds whose locations are written (a move: where from and where to)."""

META = "_meta"
CLAUDE_CODE = "claude-code"
CLAUDE_CODE_ACP_PREFIX = "mcp__acp__"
"""How the Claude Code ACP adapter names its stand-ins for Claude Code's built-in tools (with the
built-in tools' input): ``mcp__acp__Read`` is ``Read``."""

INERT_ENV = frozenset({"CLAUDECODE", "TERM", "COLORTERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR"})
"""Environment variables a terminal may set that change nothing about what a command runs or
touches (the Claude Code adapter sets ``CLAUDECODE=1``). Any other (``PATH``, ``LD_PRELOAD``,
``BASH_ENV``, ``GIT_SSH_COMMAND``, ``PAGER``, …) may, so a command given one is at best asked."""


class AcpInputError(ValueError):
    """A message whose shape is not what ACP v1 says (the request is refused)."""


# ---- permission requests ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PermissionOptions:
    """What an agent offered the person: the option bgc answers an allow with (``allow_once``),
    the one it answers a refusal with (``reject_once``, else ``reject_always``, which only ever
    narrows), and the options the editor may show (every one but ``allow_always``)."""

    allow: str | None
    reject: str | None
    shown: tuple[dict[str, Any], ...]

    def kind_of(self, option_id: str) -> str | None:
        """The kind of a shown option (None: not one the editor was shown)."""
        return next((option["kind"] for option in self.shown if option["optionId"] == option_id), None)


def permission_options(value: Any) -> PermissionOptions:
    """The options of a permission request, checked (:class:`AcpInputError`)."""
    if not isinstance(value, list) or not 0 < len(value) <= MAX_OPTIONS:
        raise AcpInputError(f"options must be a list of 1 to {MAX_OPTIONS} permission options")
    seen: set[str] = set()
    options = []
    for option in value:
        if not isinstance(option, dict):
            raise AcpInputError("a permission option is an object")
        option_id, name, kind = option.get("optionId"), option.get("name"), option.get("kind")
        if not (isinstance(option_id, str) and 0 < len(option_id) <= MAX_ID_CHARS) or option_id in seen:
            raise AcpInputError("each permission option needs an optionId of its own (a non-empty string)")
        if not isinstance(name, str) or kind not in OPTION_KINDS:
            raise AcpInputError(f"permission option {option_id!r}: a name and a kind ({', '.join(sorted(OPTION_KINDS))})")
        seen.add(option_id)
        options.append({"optionId": option_id, "name": name, "kind": kind})
    first = {kind: next((o["optionId"] for o in options if o["kind"] == kind), None) for kind in OPTION_KINDS}
    shown = tuple(option for option in options if option["kind"] != ALLOW_ALWAYS)
    return PermissionOptions(first[ALLOW_ONCE], first[REJECT_ONCE] or first[REJECT_ALWAYS], shown)


def selected(option_id: str) -> dict[str, Any]:
    """The answer that picks ``option_id``."""
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def editor_choice(result: Any, options: PermissionOptions) -> tuple[str, str | None] | None:
    """What the person picked in the editor: ``("cancelled", None)``, or the kind and id of an
    option they were shown; None for an answer bgc cannot read or an option it never showed
    (refused, never guessed)."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if not isinstance(outcome, dict):
        return None
    if outcome.get("outcome") == "cancelled":
        return "cancelled", None
    option_id = outcome.get("optionId")
    if outcome.get("outcome") != "selected" or not isinstance(option_id, str):
        return None
    kind = options.kind_of(option_id)
    return None if kind is None else (kind, option_id)


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """What a permission request says of its tool call."""

    tool_call_id: str
    kind: str | None
    title: str | None
    raw_input: Any
    locations: tuple[str, ...]
    name: str | None
    """The agent's own name for the tool, when the request carries it (``_meta.claudeCode.toolName``)."""


def tool_call(value: Any) -> ToolCallInfo:
    """A ``ToolCallUpdate`` as far as bgc reads it, checked."""
    if not isinstance(value, dict):
        raise AcpInputError("toolCall is not an object")
    call_id = value.get("toolCallId")
    if not (isinstance(call_id, str) and 0 < len(call_id) <= MAX_ID_CHARS):
        raise AcpInputError("toolCall.toolCallId is not a non-empty string")
    kind, title = value.get("kind"), value.get("title")
    if kind is not None and not isinstance(kind, str):
        raise AcpInputError("toolCall.kind is not a string")
    if title is not None and not isinstance(title, str):
        raise AcpInputError("toolCall.title is not a string")
    return ToolCallInfo(call_id, kind, title, value.get("rawInput"), locations(value.get("locations")), tool_name(value))


def locations(value: Any) -> tuple[str, ...]:
    """The paths of a tool call's ``locations`` (``[{path, line?}]``)."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_LOCATIONS:
        raise AcpInputError(f"toolCall.locations is not a list of at most {MAX_LOCATIONS} locations")
    paths = []
    for location in value:
        path = location.get("path") if isinstance(location, dict) else None
        if not isinstance(path, str):
            raise AcpInputError("a tool call location has no path")
        paths.append(path)
    return tuple(paths)


def tool_name(update: Any) -> str | None:
    """The agent's name for a tool call in a ``tool_call`` update or a permission request's
    ``toolCall`` (the Claude Code adapter's ``_meta.claudeCode.toolName``); None when it has none."""
    meta = update.get(META) if isinstance(update, dict) else None
    claude = meta.get("claudeCode") if isinstance(meta, dict) else None
    name = claude.get("toolName") if isinstance(claude, dict) else None
    return name if isinstance(name, str) and name else None


def location_needs(kind: str | None, paths: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """What a tool call of ``kind`` touches at its locations: ``fs:read`` for a read or a
    search, ``fs:write`` for an edit, a delete or a move; nothing for any other kind (a command,
    a fetch: its locations do not say what it does)."""
    action = "read" if kind in READS else "write" if kind in WRITES else None
    return [] if action is None else [("fs", action, path) for path in paths]


def agent_use(agent: str | None, call: ToolCallInfo, name: str | None, cwd: str, session: str) -> ToolUse | None:
    """The tool call as the agent's hook would see it, read by the agent's own adapter
    (:data:`bgc.adapters.agents.AGENTS`), when the agent's ACP adapter carries its tool's input:
    the Claude Code adapter's ``rawInput`` and tool ``name`` (from the request, else from the
    update that announced the call). None when there is no such mapping (another agent, or no
    name); :class:`AcpInputError` when the input cannot be read as the tool's."""
    name = call.name or name
    if agent != CLAUDE_CODE or name is None:
        return None
    if name.startswith(CLAUDE_CODE_ACP_PREFIX):
        name = name[len(CLAUDE_CODE_ACP_PREFIX) :]
    row = AGENTS[agent]
    hook_input = {"hook_event_name": row.setup.event, "tool_name": name, "tool_input": call.raw_input, "cwd": cwd,
                  "session_id": session}  # fmt: skip
    try:
        return row.adapter().tool_use(hook_input)
    except HookInputError as error:
        raise AcpInputError(str(error)) from None


# ---- files and terminals ------------------------------------------------------------------------

FILE_FIELDS = {"fs/read_text_file": ("read", {"sessionId", "path", "line", "limit"}),
               "fs/write_text_file": ("write", {"sessionId", "path", "content"})}  # fmt: skip
TERMINAL_FIELDS = frozenset({"sessionId", "command", "args", "env", "cwd", "outputByteLimit"})


def session_of(params: Any) -> str:
    """The ``sessionId`` of a request's params."""
    session = params.get("sessionId") if isinstance(params, dict) else None
    if not (isinstance(session, str) and 0 < len(session) <= MAX_ID_CHARS):
        raise AcpInputError("params.sessionId is not a non-empty string")
    return session


def _known_fields(params: dict[str, Any], fields: frozenset[str] | set[str], method: str) -> dict[str, Any]:
    """``params`` without ``_meta`` (bgc forwards what it decided, and no extension of it), or
    :class:`AcpInputError` for a field ACP v1 does not define (it could carry a path or a
    command no decision looked at)."""
    unknown = sorted(set(params) - fields - {META})
    if unknown:
        raise AcpInputError(f"{method}: field {unknown[0]!r} is not one bgc reads")
    return {name: value for name, value in params.items() if name != META}


def file_request(method: str, params: Any) -> tuple[str, str, dict[str, Any]]:
    """An ``fs/…`` request as ``(action, path, params to forward)``."""
    action, fields = FILE_FIELDS[method]
    if not isinstance(params, dict):
        raise AcpInputError(f"{method}: params is not an object")
    forwarded = _known_fields(params, fields, method)
    path = params.get("path")
    if not (isinstance(path, str) and path.startswith("/")):
        raise AcpInputError(f"{method}: path is not an absolute path")
    if action == "write" and not isinstance(params.get("content"), str):
        raise AcpInputError(f"{method}: content is not text")
    return action, path, forwarded


@dataclass(frozen=True, slots=True)
class TerminalCommand:
    """What a ``terminal/create`` runs: each way an editor may read it as a shell command line
    (``command`` alone is a command line; with ``args``, the argument list joined as its words,
    and also joined as the plain text an editor that hands it to a shell would run), where
    (``cwd``, None: the editor's choice, the session's directory), and the environment
    variables it sets that may change what runs (not :data:`INERT_ENV`)."""

    readings: tuple[str, ...]
    cwd: str | None
    env: tuple[str, ...]


def terminal_request(params: Any) -> tuple[TerminalCommand, dict[str, Any]]:
    """A ``terminal/create`` request as the command it runs, and the params to forward."""
    if not isinstance(params, dict):
        raise AcpInputError("terminal/create: params is not an object")
    forwarded = _known_fields(params, TERMINAL_FIELDS, "terminal/create")
    command, args, cwd = params.get("command"), params.get("args") or [], params.get("cwd")
    if not (isinstance(command, str) and command):
        raise AcpInputError("terminal/create: command is not a non-empty string")
    if not isinstance(args, list) or len(args) > MAX_ARGS or not all(isinstance(arg, str) for arg in args):
        raise AcpInputError(f"terminal/create: args is not a list of at most {MAX_ARGS} strings")
    if cwd is not None and not (isinstance(cwd, str) and cwd.startswith("/")):
        raise AcpInputError("terminal/create: cwd is not an absolute path")
    limit = params.get("outputByteLimit")
    if limit is not None and not (type(limit) is int and limit >= 0):
        raise AcpInputError("terminal/create: outputByteLimit is not a whole number")
    readings = (command,) if not args else tuple(dict.fromkeys((shlex.join([command, *args]), " ".join([command, *args]))))
    return TerminalCommand(readings, cwd, _environment(params.get("env"))), forwarded


def _environment(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise AcpInputError("terminal/create: env is not a list")
    names = []
    for variable in value:
        name = variable.get("name") if isinstance(variable, dict) else None
        if not (isinstance(name, str) and name and isinstance(variable.get("value"), str)):
            raise AcpInputError("terminal/create: an env entry is not {name, value} of text")
        if name not in INERT_ENV:
            names.append(name)
    return tuple(sorted(set(names)))


# ---- initialize and sessions --------------------------------------------------------------------


def protocol_version(params: Any) -> None:
    """:class:`AcpInputError` unless an ``initialize`` request offers version 1 or later (the
    version is negotiated down to 1: the only one bgc mediates)."""
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    if type(version) is not int or version < PROTOCOL_VERSION:
        raise AcpInputError(f"initialize: bgc mediates ACP protocol version {PROTOCOL_VERSION} only, not {version!r}")


def mediated_capabilities(capabilities: Any) -> dict[str, Any]:
    """The editor's capabilities as the agent is told them: only what bgc mediates (reading and
    writing text files, terminals), each as the editor offered it. Every other capability
    (elicitation, login terminals, extensions under ``_meta``) would let the agent ask the
    editor for something bgc does not decide, so the agent is never told of it."""
    if not isinstance(capabilities, dict):
        return {}
    found: dict[str, Any] = {}
    files = capabilities.get("fs")
    if isinstance(files, dict):
        found["fs"] = {name: files[name] is True for name in ("readTextFile", "writeTextFile") if name in files}
    if capabilities.get("terminal") is True:
        found["terminal"] = True
    return found


def guarded_servers(servers: Any, wrap: Callable[[str, str, list[str]], tuple[str, list[str]]]) -> tuple[list[Any], list[str]]:
    """A session's MCP servers with each stdio server started through ``wrap`` (``bgc
    mcp-proxy``: ``(name, command, args)`` → ``(command, args)``), and the names of the servers
    left out: one reached over the network (``type`` http, sse, acp), which no proxy of bgc's
    stands before."""
    if not isinstance(servers, list):
        raise AcpInputError("mcpServers is not a list")
    kept: list[Any] = []
    dropped: list[str] = []
    for server in servers:
        if not isinstance(server, dict) or not isinstance(server.get("name"), str):
            raise AcpInputError("an MCP server is not an object with a name")
        if "type" in server:
            dropped.append(server["name"])
            continue
        command, args = server.get("command"), server.get("args", [])
        if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise AcpInputError(f"MCP server {server['name']!r}: command is not a string and args a list of strings")
        command, args = wrap(server["name"], command, args)
        kept.append({**server, "command": command, "args": args})
    return kept, dropped


def session_update(params: Any) -> tuple[str, Mapping[str, Any]]:
    """A ``session/update`` notification's session and update."""
    session = session_of(params)
    update = params.get("update")
    if not isinstance(update, dict) or not isinstance(update.get("sessionUpdate"), str):
        raise AcpInputError("session/update: update is not an object with a sessionUpdate")
    return session, update
