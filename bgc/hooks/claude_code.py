"""Claude Code's hook protocol: its hook input as a call, a decision as its hook output.

An adapter (DESIGN §5): it translates and never interprets policy. The formats are Claude
Code's, as its hooks reference documents them (https://code.claude.com/docs/en/hooks, sections
"PreToolUse" and "PermissionRequest", decision control):

* input on stdin, one JSON object: ``session_id``, ``transcript_path``, ``cwd``,
  ``permission_mode``, ``hook_event_name``, ``tool_name``, ``tool_input``, ``tool_use_id``;
* ``PreToolUse`` answers ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "permissionDecision": "allow" | "deny" | "ask", "permissionDecisionReason": "…"}}`` on stdout
  with exit 0 (the reason is shown to the user for ask, to Claude for deny);
* ``PermissionRequest`` (the permission dialog is about to be shown) answers
  ``{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior":
  "allow" | "deny", "message": "…"}}}``; an ask answers no decision (``{}``): the dialog is shown;
* exit code 2 blocks the call with stderr as the reason, whatever the event: the answer when
  the input cannot be read at all.

Tool names: Claude Code's built-in tools are tools of server ``local``; an MCP tool
``mcp__SERVER__TOOL`` is tool ``TOOL`` on server ``SERVER``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bgc.policy.templates import LOCAL_SERVER

Effect = Literal["allow", "ask", "deny"]

EVENTS = ("PreToolUse", "PermissionRequest")

SEARCH_TOOLS = ("Glob", "Grep", "LS")
"""Tools whose ``path`` may be left out: Claude Code then searches the working directory."""

SHELL_TOOL = "Bash"

REASON_PREFIX = "bgc: "


class HookInputError(ValueError):
    """The hook input is not a tool call this adapter can translate (the answer is deny)."""


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call as Claude Code announced it, translated to bgc's terms."""

    event: str
    tool: str
    server: str
    params: Mapping[str, Any]
    cwd: str | None
    tool_name: str
    """As Claude Code named it (``mcp__github__create_issue``), for messages."""
    session: str | None = None
    """Claude Code's ``session_id``: what a permission request and a ledger entry belong to."""


def tool_use(data: Any) -> ToolUse:
    """The call in a hook input; :class:`HookInputError` says what is wrong with it."""
    if not isinstance(data, Mapping):
        raise HookInputError("the hook input is not a JSON object")
    event = data.get("hook_event_name")
    if event not in EVENTS:
        raise HookInputError(f"hook event {event!r} is not one bgc decides ({', '.join(EVENTS)})")
    name = data.get("tool_name")
    if not isinstance(name, str) or not name:
        raise HookInputError("the hook input names no tool (tool_name)")
    params = data.get("tool_input", {})
    if not isinstance(params, Mapping):
        raise HookInputError("tool_input is not a JSON object")
    cwd = data.get("cwd")
    if cwd is not None and not (isinstance(cwd, str) and cwd.startswith("/")):
        raise HookInputError("cwd is not an absolute path")
    tool, server = split_tool_name(name)
    if server == LOCAL_SERVER and tool in SEARCH_TOOLS and "path" not in params and cwd is not None:
        params = {**params, "path": cwd}  # Claude Code's own default: the working directory
    session = data.get("session_id")
    if session is not None and not isinstance(session, str):
        raise HookInputError("session_id is not text")
    return ToolUse(event, tool, server, params, cwd, name, session)


def split_tool_name(name: str) -> tuple[str, str]:
    """``(tool, server)``: ``mcp__SERVER__TOOL`` is TOOL on SERVER, anything else a built-in
    tool of server ``local`` (a malformed MCP name is refused, never read as a built-in)."""
    if not name.startswith("mcp__"):
        return name, LOCAL_SERVER
    server, sep, tool = name[len("mcp__") :].partition("__")
    if not (server and sep and tool):
        raise HookInputError(f"{name!r} is not an MCP tool name mcp__SERVER__TOOL")
    return tool, server


def answer(event: str, effect: Effect, reason: str) -> dict[str, Any]:
    """Claude Code's hook output for ``event`` carrying ``effect`` and ``reason``."""
    reason = REASON_PREFIX + reason
    if event == "PermissionRequest":
        if effect == "ask":
            return {}  # no decision: Claude Code shows its permission dialog
        decision: dict[str, Any] = {"behavior": effect}
        if effect == "deny":
            decision["message"] = reason
        return {"hookSpecificOutput": {"hookEventName": event, "decision": decision}}
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": effect,
            "permissionDecisionReason": reason,
        }
    }
