"""Claude Code's hook protocol: its hook input as a call, a decision as its hook output.

An adapter (DESIGN §5, :mod:`bgc.adapters.agents.protocol`): it translates and never interprets policy.
The formats are Claude Code's, as its hooks reference documents them
(https://code.claude.com/docs/en/hooks, sections "PreToolUse" and "PermissionRequest", decision
control):

* input on stdin, one JSON object: ``session_id``, ``transcript_path``, ``cwd``,
  ``permission_mode``, ``hook_event_name``, ``tool_name``, ``tool_input``, ``tool_use_id``;
  ``CLAUDE_PROJECT_DIR`` in the environment is the project;
* ``PreToolUse`` answers ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "permissionDecision": "allow" | "deny" | "ask", "permissionDecisionReason": "…"}}`` on stdout
  with exit 0 (the reason is shown to the user for ask, to Claude for deny);
* ``PermissionRequest`` (the permission dialog is about to be shown) answers
  ``{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior":
  "allow" | "deny", "message": "…"}}}``; an ask answers no decision (``{}``): the dialog is shown;
* exit code 2 blocks the call with stderr as the reason, whatever the event: the answer when
  the input cannot be read at all.

Tool names: Claude Code's built-in tools are tools of server ``local``; an MCP tool
``mcp__SERVER__TOOL`` is tool ``TOOL`` on server ``SERVER``. ``Bash`` is a shell command.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bgc.adapters.agents.protocol import (
    Adapter,
    Effect,
    HookInputError,
    ToolUse,
    prefixed,
    read_call,
    split_mcp_name,
    with_default_path,
    with_glob_alternatives,
)
from bgc.core.policy.templates import LOCAL_SERVER

EVENTS = ("PreToolUse", "PermissionRequest")

SEARCH_TOOLS = ("Glob", "Grep", "LS")
"""Tools whose ``path`` may be left out: Claude Code then searches the working directory."""

GLOB_TOOL = "Glob"
SHELL_TOOL = "Bash"
SHELL_PARAMS = frozenset({"command", "description", "timeout", "run_in_background"})
"""What a Bash call may carry besides its command: none of it changes what the command touches."""
SANDBOX_OFF = "dangerouslyDisableSandbox"
"""Runs the command outside Claude Code's sandbox, which Claude Code asks the user for: an allow
from bgc would skip that question, so with ``true`` the command is decided as ever and an allow
becomes an ask (:attr:`~bgc.adapters.agents.protocol.ToolUse.asks_anyway`); anything but a boolean blocks."""


def tool_use(data: Any) -> ToolUse:
    """The call in a hook input; :class:`~bgc.adapters.agents.protocol.HookInputError` says what is wrong."""
    call = read_call(data, EVENTS)
    tool, server = split_mcp_name(call.name)
    params = call.params
    if server == LOCAL_SERVER and tool in SEARCH_TOOLS:
        params = with_default_path(params, "path", call.cwd)  # Claude Code's own default
    if server == LOCAL_SERVER and tool == GLOB_TOOL:
        params = with_glob_alternatives(params, "pattern")
    shell = server == LOCAL_SERVER and tool == SHELL_TOOL
    asks_anyway = None
    if shell:
        extra = sorted(name for name in params if name not in SHELL_PARAMS and not (name == SANDBOX_OFF and type(params[name]) is bool))
        if extra:  # a working directory, a sandbox flag that is not a boolean: never left unchecked
            raise HookInputError(f"{SHELL_TOOL}: parameter {extra[0]!r} is not one bgc reads or may ignore")
        if params.get(SANDBOX_OFF) is True:
            asks_anyway = "runs outside Claude Code's sandbox (dangerouslyDisableSandbox)"
    return call.use(tool, server, params, shell=shell, asks_anyway=asks_anyway)


def answer(event: str, effect: Effect, reason: str) -> dict[str, Any]:
    """Claude Code's hook output for ``event`` carrying ``effect`` and ``reason``."""
    reason = prefixed(reason)
    if event == "PermissionRequest":
        return permission_request_answer(effect, reason)
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": effect,
            "permissionDecisionReason": reason,
        }
    }


def permission_request_answer(effect: Effect, reason: str) -> dict[str, Any]:
    """A ``PermissionRequest`` answer (Claude Code's shape, which Codex adopted): allow or deny
    the request; an ask gives no decision, so the agent shows its own prompt."""
    if effect == "ask":
        return {}
    decision: dict[str, Any] = {"behavior": effect}
    if effect == "deny":
        decision["message"] = reason
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def confined_answer(event: str, reason: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """``PreToolUse``'s allow with the call's input replaced by ``tool_input`` (``updatedInput``,
    the whole input: Claude Code, and Codex, run the tool with it instead of the model's)."""
    return {
        "hookSpecificOutput": {
            "hookEventName": event,
            "permissionDecision": "allow",
            "permissionDecisionReason": prefixed(reason),
            "updatedInput": dict(tool_input),
        }
    }


ADAPTER = Adapter(tool_use, answer, ("PreToolUse", "PermissionRequest"), ("PreToolUse",), confined_answer)
