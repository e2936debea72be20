"""Issue 29's bar, held: an ordinary day of agent work (tests/e2e/benign_day.yaml: 154 calls
of Claude Code, Gemini CLI and Codex) with the starter policy `bgc init AGENT` writes asks or
denies at most a tenth of the calls, exactly the ones the corpus expects, for the reasons it
gives; every other call runs without a prompt (a shell command that runs code, confined).

Each call is decided by the hook as the agent's registered command runs it
(:func:`bgc.adapters.agents.hook.decide`, the function behind ``bgc hook`` and the decision
server), with the agent's own hook input, in a project holding the corpus's files.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from bgc.adapters.agents import AGENTS
from bgc.adapters.agents.hook import Options, decide
from tests.samples import bgc

CORPUS = yaml.safe_load((Path(__file__).parent / "benign_day.yaml").read_text(encoding="utf-8"))
EVENT = {"claude-code": "PreToolUse", "gemini-cli": "BeforeTool", "codex": "PreToolUse"}


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One project per agent, each with the corpus's files and `bgc init AGENT`'s set-up."""
    made = {}
    for agent in EVENT:
        root = tmp_path_factory.mktemp(agent).resolve()
        for name, text in CORPUS["project"].items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        (root / ".git").mkdir()
        (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        done = bgc("init", agent, "--dir", str(root))
        assert done.exit_code == 0, done.output
        made[agent] = root
    return made


def hook_input(agent: str, root: Path, call: dict[str, Any], n: int) -> bytes:
    tool_input = json.loads(json.dumps(call["input"]).replace("{root}", str(root)))
    data = {
        "session_id": "benign-day", "transcript_path": str(root / "transcript.jsonl"), "cwd": str(root),
        "hook_event_name": EVENT[agent], "tool_name": call["tool"], "tool_input": tool_input,
    }  # fmt: skip
    if agent == "gemini-cli":
        data["timestamp"] = "2026-12-02T09:00:00Z"
    else:
        data |= {"permission_mode": "default", "tool_use_id": f"toolu_{n:04d}"}
    if agent == "codex":
        data |= {"turn_id": "turn-1", "model": "gpt-5-codex"}
    return json.dumps(data).encode()


def effect_of(agent: str, answer: tuple[int, bytes, bytes]) -> tuple[str, str, str | None]:
    """The effect the agent acts on, the reason it shows, and the command it runs instead of the
    model's (None: the call as it was): Codex's PreToolUse cannot ask, so bgc answers an ask there
    as a deny saying a person's approval is needed."""
    code, out, err = answer
    assert code == 0, err.decode()
    if not out:
        return "allow", "", None
    data = json.loads(out)
    if agent == "gemini-cli":
        return data["decision"], data["reason"], data.get("hookSpecificOutput", {}).get("tool_input", {}).get("command")
    output = data["hookSpecificOutput"]
    effect, reason = output["permissionDecision"], output["permissionDecisionReason"]
    if agent == "codex" and effect == "deny" and "approval" in reason:
        return "ask", reason, None
    return effect, reason, output.get("updatedInput", {}).get("command")


RUNS_CODE = ("pytest", "python", "make", "ruff", "mypy", "cd tests && pytest")
"""How the commands of the corpus that run the project's code (tests, builds, linters,
interpreters) begin: each runs confined, and no other command is rewritten."""


def test_an_ordinary_day_asks_at_most_a_tenth_and_only_where_the_corpus_says_why(projects: dict[str, Path]) -> None:
    calls = CORPUS["calls"]
    assert len(calls) >= 150 and {call["agent"] for call in calls} == set(EVENT)
    outcomes = []
    for n, call in enumerate(calls):
        agent, root = call["agent"], projects[call["agent"]]
        policy = str(root / AGENTS[agent].setup.directory / "bgc" / "policy.bgp")
        env = {name: str(root) for name in AGENTS[agent].project_env} | {"HOME": str(root.parent / "home")}
        answer = decide(agent, Options.of(policy=policy), hook_input(agent, root, call, n), env, str(root))
        outcomes.append((call, *effect_of(agent, answer)))
    wrong = [
        f"{call['agent']} {call['tool']} {json.dumps(call['input'])[:90]}: {effect} (expected {call.get('expect', 'allow')}) {reason}"
        for call, effect, reason, _ in outcomes
        if effect != call.get("expect", "allow")
    ]
    assert not wrong, "\n".join(wrong)
    for call, effect, _, rewritten in outcomes:
        command = call["input"].get("command", "") if call["tool"] in ("Bash", "run_shell_command") else ""
        runs_code = effect == "allow" and command.startswith(RUNS_CODE)
        confined = rewritten is not None and " sandbox " in rewritten and rewritten.endswith(shlex.quote(command))
        assert runs_code == confined, (call, rewritten)
    assert sum(rewritten is not None for *_, rewritten in outcomes) >= 30
    prompted = [call for call, effect, *_ in outcomes if effect != "allow"]
    assert len(prompted) * 10 <= len(calls), f"{len(prompted)} of {len(calls)} calls asked or were denied"
    assert all(call.get("why") for call in prompted)
