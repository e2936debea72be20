"""Codex's hook protocol: its ``PreToolUse`` and ``PermissionRequest`` hook inputs as calls, a
decision as its output.

An adapter (DESIGN §5, :mod:`bgc.adapters.agents.protocol`). The formats are Codex's, as its hooks page
documents them (https://developers.openai.com/codex/hooks) and its hook engine reads them
(openai/codex, codex-rs/hooks: ``src/events/pre_tool_use.rs``, ``src/events/permission_request.rs``,
``src/engine/output_parser.rs``; PermissionRequest since openai/codex#17563):

* input on stdin, one JSON object: ``session_id``, ``turn_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name``, ``model``, ``permission_mode``, ``tool_name``, ``tool_input``,
  ``tool_use_id``. Tools: ``Bash`` (every shell and exec tool; ``tool_input.command`` is the
  command; newer versions send a shell tool by its own name, ``shell``, ``shell_command``,
  ``exec_command`` or ``local_shell``, with ``Bash`` as its matcher alias: codex-rs
  ``HookToolName::shell``), ``apply_patch`` (``tool_input.command`` is the patch) and MCP tools
  ``mcp__SERVER__TOOL`` (``tool_input`` is the tool's arguments);
* ``PreToolUse`` answers a deny as ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "permissionDecision": "deny", "permissionDecisionReason": "…"}}``. It has no ask: Codex
  reports ``permissionDecision: "ask"`` as an unsupported output and runs the call, and
  ``allow`` without ``updatedInput`` likewise. So an allow prints nothing (no objection: Codex's
  own approval policy still applies) and **an ask is answered deny**, the reason saying that a
  person's approval is needed (fail closed; a PermissionRequest hook can ask);
* ``PermissionRequest`` (Codex is about to ask for approval) answers ``{"hookSpecificOutput":
  {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow" | "deny", "message":
  "…"}}}``; an ask answers no decision, and Codex asks the user;
* exit code 2 with a reason on stderr blocks the call: the answer when anything fails. Any other
  exit code, or no answer within the hook's timeout, lets the call through, so bgc answers
  within its own deadline.

An ``apply_patch`` call is the files its patch names: every line that, trimmed, starts with
``*** Add File:``, ``*** Update File:``, ``*** Delete File:`` or ``*** Move to:`` (Codex's
markers, codex-rs/apply-patch/src/parser.rs, which also trims), each a path written (a context
line that looks like a header only adds a path, never hides one). Lines are split on ``\\n``
alone, as Codex splits them. A patch that names no file is refused.
"""

from __future__ import annotations

from typing import Any

from bgc.adapters.agents.claude_code import confined_answer, permission_request_answer
from bgc.adapters.agents.protocol import Adapter, Effect, HookInputError, ToolUse, prefixed, read_call, split_mcp_name
from bgc.core.policy.templates import LOCAL_SERVER

EVENTS = ("PreToolUse", "PermissionRequest")

SHELL_TOOLS = ("Bash", "shell", "shell_command", "exec_command", "local_shell")
"""The names Codex sends a shell tool's call under (each read as ``Bash`` is)."""
PATCH_TOOL = "apply_patch"
COMMAND_PARAMS = frozenset({"command", "description"})
"""What a Bash or apply_patch input may carry (``description``: the approval's justification)."""
PATCH_MARKERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
ASK_IN_PRE_TOOL_USE = "needs a person's approval, which Codex's PreToolUse hook cannot ask for: "


def tool_use(data: Any) -> ToolUse:
    """The call in a Codex hook input."""
    call = read_call(data, EVENTS)
    tool, server = split_mcp_name(call.name)
    if server == LOCAL_SERVER and (tool in SHELL_TOOLS or tool == PATCH_TOOL):
        extra = sorted(set(call.params) - COMMAND_PARAMS)
        if extra:  # e.g. a working directory bgc would not see: the command's paths would be misread
            raise HookInputError(f"{call.name}: parameter {extra[0]!r} is not one bgc reads or may ignore")
        if tool in SHELL_TOOLS:
            return call.use(tool, server, {"command": call.params.get("command")}, shell=True)
        return call.use(tool, server, {"files": patch_files(call.params.get("command"))})
    return call.use(tool, server)


def patch_files(patch: Any) -> list[str]:
    """Every path an ``apply_patch`` patch adds, updates, deletes or moves to."""
    if not isinstance(patch, str):
        raise HookInputError(f"{PATCH_TOOL}: tool_input.command is not the patch text")
    files = []
    for line in patch.split("\n"):
        text = line.strip()
        for marker in PATCH_MARKERS:
            if text.startswith(marker):
                files.append(text[len(marker) :])
    if not files:
        raise HookInputError(f"{PATCH_TOOL}: the patch names no file (*** Add/Update/Delete File: …)")
    return files


def answer(event: str, effect: Effect, reason: str) -> dict[str, Any] | None:
    """Codex's output for ``event`` carrying ``effect`` and ``reason`` (None: print nothing)."""
    if event == "PermissionRequest":
        return permission_request_answer(effect, prefixed(reason))
    if effect == "allow":
        return None
    if effect == "ask":
        reason = ASK_IN_PRE_TOOL_USE + reason
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": prefixed(reason),
        }
    }


ADAPTER = Adapter(tool_use, answer, ("PermissionRequest",), ("PreToolUse",), confined_answer)
