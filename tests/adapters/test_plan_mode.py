"""An agent that is planning (``permission_mode: "plan"`` in the hook input) may look, not change:
what a call writes is denied, anything else that may change something is asked of the person at
the session, what only reads is decided by the policy alone, and a deny stays a deny
(:func:`bgc.adapters.agents.hook.planning`). By class against a brute-force reading of that
rule, then through the hook as each agent calls it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.adapters.agents.hook import READING, Options, decide, planning
from bgc.runtime.calls import AtomDecision, CallDecision

RESOURCES = [("fs", "read"), ("fs", "write"), ("host", "read"), ("host", "write"), ("proc", "exec"), ("proc", "read"),
             ("proc", "kill"), ("net", "connect"), ("search", "glob"), ("search", "web"), ("mcp", "call"),
             ("agent", "plan"), ("agent", "spawn"), ("pkg", "install")]  # fmt: skip
ATOMS = st.lists(st.tuples(st.sampled_from(RESOURCES), st.sampled_from(["allow", "ask", "deny"])), max_size=5)


def _decision(atoms: list[tuple[tuple[str, str], str]]) -> CallDecision:
    decided = tuple(AtomDecision(f"{resource}:{action}:x", effect, "by a rule") for (resource, action), effect in atoms)
    effects = {atom.effect for atom in decided}
    effect = "deny" if "deny" in effects else "ask" if "ask" in effects else "allow"
    return CallDecision("Tool", "local", effect, "as decided", decided)  # type: ignore[arg-type]


def _expected(atoms: list[tuple[tuple[str, str], str]]) -> str:
    """The rule, read plainly: the strongest of each atom's effect in plan mode."""
    effects = []
    for (resource, action), effect in atoms:
        if effect == "deny" or resource == "agent" or (resource, action) in READING:
            effects.append(effect)
        else:
            effects.append("deny" if action == "write" else "ask")
    return "deny" if "deny" in effects else "ask" if "ask" in effects else "allow"


@settings(max_examples=300)
@given(ATOMS)
def test_planning_by_class(atoms: list[tuple[tuple[str, str], str]]) -> None:
    before = _decision(atoms)
    after = planning(before)
    assert after.effect == _expected(atoms)
    if before.effect == "deny" or after.effect == before.effect == "allow":
        assert after == before  # nothing to change: the same decision
    for old, new in zip(before.atoms, after.atoms) if before.effect != "deny" else ():
        resource, action, _ = old.atom.split(":", 2)
        if old.effect == "deny" or resource == "agent" or (resource, action) in READING:
            assert new == old  # decided by the policy alone
        else:
            assert new.rule is None and "plan mode" in new.reason  # named: bgc's plan-mode rule
    if after.effect == "ask" and after != before:
        assert not after.understood  # only the person at the session answers it, never a stored approval


POLICY = """\
tool Read needs fs:read:{file_path}
tool Write needs fs:write:{file_path} ignores content
tool EnterPlanMode needs agent:plan:enter
allow fs:read:/**
allow fs:write:/src/**
allow proc:exec:ls, ls/**
allow agent:*:*
"""


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_hook_honours_plan_mode(agent: str, tmp_path: Path) -> None:
    """The same calls, allowed in the default mode; in plan mode the write is denied, the command
    asked (Codex's PreToolUse, which cannot ask, denies it), the read and the plan tool allowed."""
    project = tmp_path / "p"
    (project / "src").mkdir(parents=True)
    (project / "policy.bgp").write_text(POLICY)
    calls = {"Read": {"file_path": "src/a.py"}, "Write": {"file_path": "src/a.py", "content": "x"},
             "Bash": {"command": "ls -la"}, "EnterPlanMode": {}}  # fmt: skip
    asked_means = "ask" if agent == "claude-code" else "deny"
    expected = {"default": dict.fromkeys(calls, "allow"),
                "plan": {"Read": "allow", "Write": "deny", "Bash": asked_means, "EnterPlanMode": "allow"}}  # fmt: skip
    for mode, answers in expected.items():
        for tool, params in calls.items():
            data = {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": str(project), "tool_name": tool,
                    "tool_input": params, "permission_mode": mode}  # fmt: skip
            code, out, err = decide(agent, Options.of(policy=str(project / "policy.bgp"), store="none"),
                                    json.dumps(data).encode(), {"CLAUDE_PROJECT_DIR": str(project)}, str(project))  # fmt: skip
            assert code == 0, err
            output = json.loads(out)["hookSpecificOutput"] if out else {"permissionDecision": "allow"}
            assert output["permissionDecision"] == answers[tool], (mode, tool, output)
            if mode == "plan" and answers[tool] != "allow":
                assert 'plan mode (permission_mode "plan")' in output["permissionDecisionReason"]


def test_a_permission_mode_that_is_not_text_blocks(tmp_path: Path) -> None:
    data = {"hook_event_name": "PreToolUse", "cwd": str(tmp_path), "tool_name": "Read", "tool_input": {"file_path": "a"},
            "permission_mode": ["plan"]}  # fmt: skip
    code, out, err = decide("claude-code", Options.of(policy=str(tmp_path / "p.bgp"), store="none"),
                            json.dumps(data).encode(), {"CLAUDE_PROJECT_DIR": str(tmp_path)}, str(tmp_path))  # fmt: skip
    assert code == 2 and not out and b"permission_mode is not text" in err


@pytest.mark.parametrize("name", ["Bash", "shell", "shell_command", "exec_command", "local_shell"])
def test_codex_sends_a_shell_tool_by_any_of_its_names(name: str, tmp_path: Path) -> None:
    """Codex sends a shell tool's call under its own name (Bash is the matcher alias): each is read
    as a shell command, and a parameter bgc does not read still blocks it."""
    (tmp_path / "policy.bgp").write_text(POLICY)
    options = Options.of(policy=str(tmp_path / "policy.bgp"), store="none")
    for command, answer in (("ls -la", None), ("rm -rf src", "deny")):
        data = {"hook_event_name": "PreToolUse", "cwd": str(tmp_path), "tool_name": name, "tool_input": {"command": command}}
        code, out, err = decide("codex", options, json.dumps(data).encode(), {}, str(tmp_path))
        assert code == 0, err
        assert (json.loads(out)["hookSpecificOutput"]["permissionDecision"] if out else None) == answer
    data = {"hook_event_name": "PreToolUse", "cwd": str(tmp_path), "tool_name": name, "tool_input": {"command": "ls", "workdir": "/"}}
    code, _, err = decide("codex", options, json.dumps(data).encode(), {}, str(tmp_path))
    assert code == 2 and b"'workdir' is not one bgc reads" in err
