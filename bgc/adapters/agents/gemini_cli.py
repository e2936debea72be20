"""Gemini CLI's hook protocol: its ``BeforeTool`` hook input as a call, a decision as its output.

An adapter (DESIGN §5, :mod:`bgc.adapters.agents.protocol`). The formats are Gemini CLI's, as its hooks
reference documents them (https://geminicli.com/docs/hooks/reference, "Tool hooks",
"BeforeTool"; https://geminicli.com/docs/hooks, "Exit codes", "Environment variables"):

* input on stdin, one JSON object: ``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name`` (``BeforeTool``), ``timestamp``, ``tool_name``, ``tool_input`` and, for an
  MCP tool, ``mcp_context`` (``server_name``, ``tool_name``: the server as configured and the
  tool as the server names it); ``GEMINI_PROJECT_DIR`` in the environment is the project;
* the answer is ``{"decision": "allow" | "deny" | "ask", "reason": "…"}`` on stdout with exit 0:
  ``deny`` blocks the tool and sends the reason to the agent; ``ask`` makes Gemini CLI ask the
  user whatever its own policy says (``systemMessage`` is shown with the question; since
  Gemini CLI 0.36.0, google-gemini/gemini-cli#21146: ``isAskDecision`` in
  packages/core/src/hooks/types.ts and ``evaluateBeforeToolHook`` in
  packages/core/src/scheduler/hook-utils.ts); ``allow`` raises no objection and Gemini CLI's
  own policy still applies (a hook cannot approve what Gemini CLI would ask about);
* exit code 2 blocks the tool with stderr as the reason: the answer when anything fails. Any
  other non-zero exit, invalid JSON on stdout, or a hook timeout lets the call through, so bgc
  answers within its own deadline and prints nothing but the one JSON object.

Tool names: built-in tools (``read_file``, ``run_shell_command``, …) are tools of server
``local``. An MCP tool is named ``mcp_SERVER_TOOL``, which cannot be split when the server's
name holds ``_``; the call is therefore read from ``mcp_context`` (tool ``tool_name`` on server
``server_name``), and an ``mcp_`` name without it is refused. ``run_shell_command`` is a shell
command, run in ``dir_path`` when given (relative to the project).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from bgc.adapters.agents.protocol import (
    Adapter,
    Effect,
    HookInputError,
    ToolUse,
    mcp_server,
    prefixed,
    read_call,
    with_default_path,
    with_glob_alternatives,
)
from bgc.core.policy.templates import LOCAL_SERVER

EVENTS = ("BeforeTool",)

SHELL_TOOL = "run_shell_command"
SHELL_PARAMS = frozenset({"command", "description", "dir_path", "is_background"})
"""What a shell call may carry; anything else (``additional_permissions``, a sandbox
escalation) is refused rather than left unchecked."""

GLOB_TOOL = "glob"
SEARCH_TOOLS = ("glob", "grep_search", "search_file_content")
"""Tools whose ``dir_path`` may be left out: Gemini CLI then searches the project."""

MCP_NAME_PREFIX = "mcp_"


def tool_use(data: Any) -> ToolUse:
    """The call in a ``BeforeTool`` hook input."""
    call = read_call(data, EVENTS)
    name = call.name
    context = data.get("mcp_context")
    if context is not None:
        if not isinstance(context, Mapping) or not name.startswith(MCP_NAME_PREFIX):
            raise HookInputError(f"{name!r}: mcp_context must be an object, on an mcp_ tool")
        return call.use(*mcp_server(context.get("server_name"), context.get("tool_name"), name))
    if name.startswith(MCP_NAME_PREFIX):
        raise HookInputError(f"{name!r} names an MCP tool but the hook input has no mcp_context to say which server")
    if name == SHELL_TOOL:
        return call.use(name, LOCAL_SERVER, cwd=_shell_dir(call.params, call.cwd), shell=True)
    if name in SEARCH_TOOLS:
        params = with_default_path(call.params, "dir_path", call.cwd)
        return call.use(name, LOCAL_SERVER, with_glob_alternatives(params, "pattern") if name == GLOB_TOOL else params)
    return call.use(name, LOCAL_SERVER)


def _shell_dir(params: Mapping[str, Any], cwd: str | None) -> str | None:
    extra = sorted(set(params) - SHELL_PARAMS)
    if extra:
        raise HookInputError(f"{SHELL_TOOL}: parameter {extra[0]!r} is not one bgc reads or may ignore")
    directory = params.get("dir_path")
    if directory is None:
        return cwd
    if not isinstance(directory, str) or not directory or "\0" in directory:
        raise HookInputError(f"{SHELL_TOOL}: dir_path is not a path")
    if cwd is None and not directory.startswith("/"):
        raise HookInputError(f"{SHELL_TOOL}: a relative dir_path needs the hook input's cwd")
    return posixpath.normpath(posixpath.join(cwd or "/", directory))


def answer(event: str, effect: Effect, reason: str) -> dict[str, Any]:
    """Gemini CLI's ``BeforeTool`` output carrying ``effect`` and ``reason``."""
    reason = prefixed(reason)
    if effect == "ask":
        return {"decision": "ask", "reason": reason, "systemMessage": reason}
    return {"decision": effect, "reason": reason}


def confined_answer(event: str, reason: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """``BeforeTool``'s allow with the call's input replaced: Gemini CLI merges
    ``hookSpecificOutput.tool_input`` over the model's arguments (given whole here)."""
    return {"decision": "allow", "reason": prefixed(reason), "hookSpecificOutput": {"hookEventName": event, "tool_input": dict(tool_input)}}


ADAPTER = Adapter(tool_use, answer, ("BeforeTool",), ("BeforeTool",), confined_answer)
