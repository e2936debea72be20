"""The text a person reads when a call waits for them: the reason an agent shows in its
permission dialog (Claude Code's ``permissionDecisionReason``, Gemini CLI's ``reason`` and
``systemMessage``), or gives for a call it cannot ask about (Codex's ``PreToolUse``, and a call
only named approvers can release).

Read top down, as a person decides: **why** it waits (the asking rules' ``because``, or what bgc
could not read), **the call** in one line, **every part** that needs approval (each command of a
shell string, each atom, with its rule), and **the request** last, with how it may be answered.
Everything taken from the call is escaped (:func:`bgc.text.escape_field`): a newline or an escape
sequence in a command cannot forge a line of the dialog.
"""

from __future__ import annotations

from bgc.adapters.agents.protocol import ToolUse
from bgc.runtime.calls import CallDecision
from bgc.runtime.enforce import params_line
from bgc.text import escape_field

MAX_CALL_CHARS = 300
"""The call's line is cut here (``…``): the dialog shows it whole above."""
MAX_PARTS = 12
"""Parts listed by name; past it, how many more."""


def prompt(use: ToolUse, decision: CallDecision, request: str | None, answer: str | None) -> str:
    """The lines a person reads for ``use``, decided ``decision``: why, the call, the parts that
    need approval, and, when the call is bound to a permission request, ``answer`` (how it may be
    answered) and the request's id, last."""
    lines = [why(use, decision), f"{escape_field(use.tool_name, backslash=False)}: {_call(use)}"]
    parts = _parts(decision)
    if parts:
        lines.append("needs approval: " + "; ".join(parts))
    if request is not None:  # the id last: said once, in the command to run when there is one
        lines.append(answer if answer and request in answer else f"{answer}: request {request}" if answer else f"request {request}")
    return "\n".join(lines)


def why(use: ToolUse, decision: CallDecision) -> str:
    """Why the call waits for a person: the ``because`` of every rule that asks for a part of it,
    each once, after what bgc could not read or was told to put to a person; the rules themselves
    when none says why."""
    if not decision.declared:
        return escape_field(f"no declaration says what {use.tool_name} touches, so a person decides", backslash=False)
    reasons = [] if decision.understood else [decision.reason]
    rules = []
    for atom in decision.atoms:
        if atom.effect != "ask":
            continue
        for rule in atom.asked_by or ((atom.rule,) if atom.rule is not None else ()):
            if rule.reason and rule.reason not in reasons:
                reasons.append(rule.reason)
            if str(rule) not in rules:
                rules.append(str(rule))
    if not reasons:
        reasons = [f"a rule asks for it ({', '.join(rules)})" if rules else decision.reason]
    return escape_field("; ".join(reasons), backslash=False)


def _call(use: ToolUse) -> str:
    """The call in one line: a shell tool's command, or the parameters by name."""
    command = use.params.get("command") if use.shell else None
    text = command if isinstance(command, str) else params_line(use.params)
    line = escape_field(text, backslash=False)
    return line if len(line) <= MAX_CALL_CHARS else line[:MAX_CALL_CHARS] + "…"


def _parts(decision: CallDecision) -> list[str]:
    """Each part that awaits approval, once: the command it is part of, the atom, the rule."""
    parts: list[str] = []
    for atom in decision.atoms:
        if atom.effect != "ask":
            continue
        rules = ", ".join(map(str, atom.asked_by or ((atom.rule,) if atom.rule is not None else ())))
        how = f"ask {rules}" if rules else atom.reason
        named = escape_field(atom.atom, backslash=False)
        part = f"`{escape_field(atom.command, backslash=False)}` ({named}, {how})" if atom.command else f"{named} ({how})"
        if part not in parts:
            parts.append(part)
    if len(parts) > MAX_PARTS:
        return [*parts[:MAX_PARTS], f"and {len(parts) - MAX_PARTS} more"]
    return parts
