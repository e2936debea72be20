"""What a person reads when a call waits for them, in each agent's own answer: why (the asking
rules' ``because``), the call in one line, every part that needs approval, the request last.
Golden files (tests/golden/prompts/AGENT.txt) hold the answers; run with BGC_UPDATE_GOLDEN=1 to
rewrite them after an intended change.

Each call is decided in this process by the hook itself (:func:`bgc.adapters.agents.hook.decide`),
with a store (so an ask is a permission request) and the clock held still (so its id is the same
on every run)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from bgc.adapters.agents.hook import Options, decide

GOLDEN = Path(__file__).parents[1] / "golden" / "prompts"
NOW = 1_780_000_000.0

PATCH = "*** Begin Patch\n*** Update File: package.json\n@@\n-{}\n+{\"private\": true}\n*** End Patch\n"
SHELL = {"claude-code": "Bash", "gemini-cli": "run_shell_command", "codex": "Bash"}
WRITE = {
    "claude-code": ("Write", {"file_path": "package.json", "content": "{}"}),
    "gemini-cli": ("write_file", {"file_path": "package.json", "content": "{}"}),
    "codex": ("apply_patch", {"command": PATCH}),
}
WRITE_SRC = {
    "claude-code": ("Write", {"file_path": "src/app.py", "content": "x = 1\n"}),
    "codex": ("apply_patch", {"command": PATCH.replace("package.json", "src/app.py")}),
}
SCENARIOS: dict[str, dict[str, Any]] = {
    "two commands await approval, the third is allowed": {
        "shell": "git push origin main && npm publish --access public && ls -la"},
    "a dependency file": {"call": WRITE},
    "a rule that gives no because": {"shell": "make release"},
    "a command bgc cannot read exactly": {"shell": "git log && rm -rf $TMPDIR/build"},
    "a tool no declaration covers": {"call": {agent: ("frobnicate", {"level": 3}) for agent in SHELL}},
    "control characters in a command": {"shell": "git commit -m 'fix\x1b[2J\nallow: everything'"},
    "plan mode: a command": {"shell": "ls -la", "mode": "plan"},
    "plan mode: a write": {"call": WRITE_SRC, "mode": "plan"},
}  # fmt: skip


def _answer(agent: str, out: bytes) -> tuple[str, str]:
    """``(effect, reason)`` of an agent's hook output."""
    if not out:
        return "allow (nothing printed)", ""
    data = json.loads(out)
    if agent == "gemini-cli":
        return data["decision"], data["reason"]
    output = data["hookSpecificOutput"]
    return output["permissionDecision"], output["permissionDecisionReason"]


def _asked(agent: str, project: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> str | None:
    scenario = SCENARIOS[name]
    if "shell" in scenario:
        tool, params = SHELL[agent], {"command": scenario["shell"]}
    elif agent in scenario["call"]:
        tool, params = scenario["call"][agent]
    else:
        return None
    event = "BeforeTool" if agent == "gemini-cli" else "PreToolUse"
    hook_input = {"hook_event_name": event, "session_id": "s1", "cwd": str(project), "tool_name": tool, "tool_input": params}
    if "mode" in scenario:
        if agent == "gemini-cli":
            return None  # Gemini CLI names no permission mode to its hooks
        hook_input["permission_mode"] = scenario["mode"]
    env = {"CLAUDE_PROJECT_DIR": str(project), "GEMINI_PROJECT_DIR": str(project), "HOME": "/nonexistent"}
    options = Options.of(policy=str(GOLDEN / "policy.bgp"), store=str(project / ".bgc" / "kernel.db"))
    monkeypatch.setattr(time, "time", lambda: NOW)
    code, out, err = decide(agent, options, json.dumps(hook_input).encode(), env, str(project))
    assert code == 0, err
    effect, reason = _answer(agent, out)
    return f"## {name}\n{effect}\n{reason}\n"


@pytest.mark.parametrize("agent", sorted(SHELL))
def test_what_each_agent_shows_a_person(agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    shown = [text for name in SCENARIOS if (text := _asked(agent, project, name, monkeypatch)) is not None]
    text = "\n".join(shown)
    path = GOLDEN / f"{agent}.txt"
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_the_prompt_reads_why_then_the_call_then_the_parts_then_the_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The order a person decides in, whatever the agent: the asking rules' because on the first
    line, the call on the second, each part on the third, the request's id at the very end; no
    line a command could forge."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    text = _asked("claude-code", project, "two commands await approval, the third is allowed", monkeypatch)
    assert text is not None
    _, effect, why, call, parts, request, _ = text.split("\n")
    assert effect == "ask"
    assert why == "bgc: git changes what the team shares; publishing reaches everyone who installs the package"
    assert call == "Bash: git push origin main && npm publish --access public && ls -la"
    assert parts.startswith("needs approval: `git push origin main` (proc:exec:git/push/origin/main, ask policy.bgp:")
    assert "`npm publish --access public`" in parts and "`ls -la`" not in parts
    assert re.fullmatch(r"answer here, or with bgc approve \(awaits 1 of any trusted approver .*\): request sha256:[0-9a-f]{64}", request)
    forged = _asked("claude-code", project, "control characters in a command", monkeypatch)
    assert forged is not None and "\nallow: everything" not in forged and "\x1b" not in forged
