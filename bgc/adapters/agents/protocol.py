"""What every agent's hook protocol shares: a tool call read from a hook input, and one adapter
per agent that says how to read it and how to answer.

An adapter (DESIGN §5) translates and never interprets policy: it turns the agent's hook input
into a :class:`ToolUse` (a call ``(tool, server, params)`` of :mod:`bgc.runtime.calls`, or a shell
command) and a decision back into the agent's own output. The hook
(:func:`bgc.adapters.agents.hook.decide`) does the rest, the same way for every agent, so a call means one thing
whichever agent makes it.

Everything an adapter cannot read exactly raises :class:`HookInputError`, and the hook blocks
the call (every agent here treats exit code 2 as a block, the reason on stderr).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bgc.core.policy.templates import LOCAL_SERVER
from bgc.core.values.limits import MAX_PATTERN_LENGTH

Effect = Literal["allow", "ask", "deny"]

REASON_PREFIX = "bgc: "

MCP_PREFIX = "mcp__"
"""``mcp__SERVER__TOOL``: how Claude Code and Codex name an MCP server's tool."""


class HookInputError(ValueError):
    """The hook input is not a tool call this adapter can translate (the call is blocked)."""


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call as an agent announced it, translated to bgc's terms."""

    event: str
    tool: str
    server: str
    params: Mapping[str, Any]
    cwd: str | None
    """The directory relative paths are read from (for a shell command: where it runs)."""
    tool_name: str
    """As the agent named it (``mcp__github__create_issue``), for messages."""
    session: str | None = None
    """The agent's ``session_id``: what a permission request and a ledger entry belong to."""
    shell: bool = False
    """A shell command string in ``params["command"]``, decided command by command
    (:meth:`bgc.runtime.calls.CallDecider.decide_shell`), rather than a declared tool."""
    asks_anyway: str | None = None
    """Why this call must not be allowed without the person however its atoms are decided (a
    command to run outside the agent's sandbox, which the agent asks about itself): an allow
    becomes an ask the agent puts to them; a deny stays a deny."""
    mode: str | None = None
    """The agent's ``permission_mode`` for the session (``plan``: the agent is planning, nothing
    that changes anything may run; :func:`bgc.adapters.agents.hook.planning`)."""


@dataclass(frozen=True, slots=True)
class Adapter:
    """One agent's hook protocol (its :data:`~bgc.adapters.agents.AGENTS` row says the rest)."""

    tool_use: Callable[[Any], ToolUse]
    """The call in a parsed hook input; :class:`HookInputError` says what is wrong with it."""
    answer: Callable[[str, Effect, str], dict[str, Any] | None]
    """The agent's output for ``(event, effect, reason)``; None: print nothing (exit 0)."""
    asking: tuple[str, ...] = ()
    """The events on which an ``ask`` reaches the person at the session (the agent's own dialog):
    elsewhere the call is refused with the reason, the request to approve it named."""
    confining: tuple[str, ...] = ()
    """The events whose answer may replace the call's input: there a shell command allowed only
    ``in sandbox`` is allowed rewritten to run under ``bgc sandbox``; on any other it is asked."""
    confined: Callable[[str, str, Mapping[str, Any]], dict[str, Any]] | None = None
    """The agent's output for ``(event, reason, tool_input)``: allow the call with ``tool_input``
    in place of the input the agent sent."""


@dataclass(frozen=True, slots=True)
class HookCall:
    """The fields of a hook input every agent here names the same way."""

    event: str
    """``hook_event_name``"""
    name: str
    """``tool_name``"""
    params: Mapping[str, Any]
    """``tool_input``"""
    cwd: str | None
    session: str | None
    """``session_id``"""
    mode: str | None = None
    """``permission_mode``"""

    def use(self, tool: str, server: str, params: Mapping[str, Any] | None = None, *, cwd: str | None = None,
            shell: bool = False, asks_anyway: str | None = None) -> ToolUse:  # fmt: skip
        """This call as ``tool`` on ``server`` (with other parameters, or run in another directory)."""
        return ToolUse(self.event, tool, server, self.params if params is None else params, cwd or self.cwd, self.name,
                       self.session, shell, asks_anyway, self.mode)  # fmt: skip


def read_call(data: Any, events: tuple[str, ...]) -> HookCall:
    """The fields every agent here names the same way (``hook_event_name``, ``tool_name``,
    ``tool_input``, ``cwd``, ``session_id``, ``permission_mode``), checked."""
    if not isinstance(data, Mapping):
        raise HookInputError("the hook input is not a JSON object")
    event = data.get("hook_event_name")
    if event not in events:
        raise HookInputError(f"hook event {event!r} is not one bgc decides ({', '.join(events)})")
    name = data.get("tool_name")
    if not isinstance(name, str) or not name:
        raise HookInputError("the hook input names no tool (tool_name)")
    params = data.get("tool_input", {})
    if not isinstance(params, Mapping):
        raise HookInputError("tool_input is not a JSON object")
    cwd = data.get("cwd")
    if cwd is not None and not (isinstance(cwd, str) and cwd.startswith("/")):
        raise HookInputError("cwd is not an absolute path")
    session = data.get("session_id")
    if session is not None and not isinstance(session, str):
        raise HookInputError("session_id is not text")
    mode = data.get("permission_mode")
    if mode is not None and not isinstance(mode, str):
        raise HookInputError("permission_mode is not text")
    return HookCall(event, name, params, cwd, session, mode)


def mcp_server(server: Any, tool: Any, name: str) -> tuple[str, str]:
    """``(tool, server)`` of an MCP call, refused when either is not a name or the server is
    ``local``: that name is the agent's own built-in tools, which an MCP server must never be
    taken for (``mcp__local__Read`` is not Claude Code's Read)."""
    if not (isinstance(server, str) and server and isinstance(tool, str) and tool):
        raise HookInputError(f"{name!r}: the MCP server and tool must be non-empty names")
    if server == LOCAL_SERVER:
        raise HookInputError(f"{name!r}: an MCP server named {LOCAL_SERVER!r} would be read as the agent's built-in tools")
    return tool, server


def split_mcp_name(name: str) -> tuple[str, str]:
    """``(tool, server)``: ``mcp__SERVER__TOOL`` is TOOL on SERVER, anything else a built-in
    tool of server ``local`` (a malformed MCP name is refused, never read as a built-in)."""
    if not name.startswith(MCP_PREFIX):
        return name, LOCAL_SERVER
    server, sep, tool = name[len(MCP_PREFIX) :].partition("__")
    if not (server and sep and tool):
        raise HookInputError(f"{name!r} is not an MCP tool name mcp__SERVER__TOOL")
    return mcp_server(server, tool, name)


def with_default_path(params: Mapping[str, Any], key: str, cwd: str | None) -> Mapping[str, Any]:
    """A search tool's parameters with ``key`` set to ``cwd`` when the agent left it out (the
    agent then searches its working directory)."""
    if key in params or cwd is None:
        return params
    return {**params, key: cwd}


MAX_GLOB_ALTERNATIVES = 256
"""The most patterns one glob pattern's braces may stand for (a call past it is refused)."""


def with_glob_alternatives(params: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A glob tool's parameters with a pattern that holds braces replaced by the patterns they
    stand for (``**/*.{ts,tsx}``: ``**/*.ts`` and ``**/*.tsx``), each then decided: the agents'
    glob libraries expand braces before they match, so ``{/etc/*,x}`` is an absolute pattern
    and ``{.,x}{.,y}/*`` climbs with ``..``. A pattern longer than any pattern may be is left
    as it is, for the decision to refuse."""
    given = params.get(key)
    patterns = given if isinstance(given, list) else [given]
    alternatives = [alternative for pattern in patterns for alternative in _expanded(pattern)]
    if alternatives == patterns:
        return params
    if len(alternatives) > MAX_GLOB_ALTERNATIVES:
        raise HookInputError(f"the glob patterns stand for more than {MAX_GLOB_ALTERNATIVES} patterns")
    return {**params, key: alternatives}


def _expanded(pattern: Any) -> list[Any]:
    if not isinstance(pattern, str) or "{" not in pattern or len(pattern) > MAX_PATTERN_LENGTH:
        return [pattern]
    return glob_alternatives(pattern)


def glob_alternatives(pattern: str) -> list[str]:
    """The patterns ``pattern``'s braces stand for, as brace expansion (minimatch's, bash's)
    makes them: a ``{…}`` with a comma at its top level is one pattern per part, nested braces
    too; any other brace is a letter, and a backslash escapes the next character.
    :class:`HookInputError` past :data:`MAX_GLOB_ALTERNATIVES` patterns (or as many steps)."""
    pending, done, steps = [pattern], [], 0
    while pending:
        steps += 1
        if steps > 4 * MAX_GLOB_ALTERNATIVES or len(done) + len(pending) > MAX_GLOB_ALTERNATIVES:
            raise HookInputError(f"the glob pattern stands for more than {MAX_GLOB_ALTERNATIVES} patterns")
        current = pending.pop()
        group = _brace_group(current)
        if group is None:
            done.append(current)
            continue
        start, cuts, end = group
        parts = [current[left + 1 : right] for left, right in zip((start, *cuts), (*cuts, end))]
        pending.extend(current[:start] + part + current[end + 1 :] for part in reversed(parts))
    return done


def _brace_group(pattern: str) -> tuple[int, list[int], int] | None:
    """The leftmost balanced ``{…}`` of ``pattern`` with a comma at its top level: where it
    opens, its commas and where it closes (one pass); None when there is none."""
    found = None
    opened: list[tuple[int, list[int]]] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 1
        elif char == "{":
            opened.append((index, []))
        elif char == "," and opened:
            opened[-1][1].append(index)
        elif char == "}" and opened:
            start, commas = opened.pop()
            if commas and (found is None or start < found[0]):
                found = (start, commas, index)
        index += 1
    return found


def prefixed(reason: str) -> str:
    return REASON_PREFIX + reason
