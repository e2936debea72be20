"""One row per agent (:data:`bgc.adapters.agents.AGENTS`): the command line's choices, ``bgc init``,
the hook and the hook's client all derive from it, so an agent added as a row (here one made up,
speaking Claude Code's protocol under another name and project variable) is set up, decided and
served without touching any of them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import typer

from bgc.adapters.agents import AGENTS, Agent, Setup
from tests.samples import bgc

NEW = Agent("new-agent", AGENTS["claude-code"].adapter, ("NEW_AGENT_PROJECT",), "claude-code.bgp",
            Setup(".new-agent", "hooks.json", "BeforeCall", 45, '"$NEW_AGENT_PROJECT"', (("Begin", "--detach"),)))  # fmt: skip


@pytest.fixture()
def new_agent(monkeypatch: pytest.MonkeyPatch) -> Agent:
    monkeypatch.setitem(AGENTS, NEW.name, NEW)
    return NEW


def test_the_command_lines_agents_are_the_rows() -> None:
    from bgc.app.cli import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    from bgc.app.commands.init_acp import EDITORS

    assert set(commands["init"].commands) == {*AGENTS, "mcp", *EDITORS}
    hook_agent = next(param for param in commands["hook"].params if param.name == "agent")
    offered = hook_agent.shell_complete(typer.Context(commands["hook"]), "")  # the choices, as every typer lists them
    assert [item.value for item in offered] == list(AGENTS)
    for name, agent in AGENTS.items():
        shown = bgc("init", name, "--help", env={"COLUMNS": "300", "NO_COLOR": "1"}).stdout
        written = agent.setup.local or agent.setup.settings  # one's own settings by default, where the agent has them
        assert f"{agent.setup.directory}/{written} ({agent.setup.event})" in shown and f"{agent.setup.directory}/{agent.setup.settings}" in shown
    assert bgc("hook", "no-such-agent").exit_code == 2


def test_init_writes_what_a_new_row_says(new_agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bgc.app.commands import init

    monkeypatch.chdir(tmp_path)
    assert init.run(new_agent.name, directory=str(tmp_path)) == 0
    settings = json.loads((tmp_path / ".new-agent" / "hooks.json").read_text())
    (hook,) = settings["hooks"]["BeforeCall"][0]["hooks"]
    assert hook["timeout"] == 45
    assert hook["command"].endswith(' hook new-agent -p "$NEW_AGENT_PROJECT/.new-agent/bgc/policy.bgp"')
    assert settings["hooks"]["Begin"][0]["hooks"][0]["command"].endswith(' serve --detach --quiet --dir "$NEW_AGENT_PROJECT"')
    assert (tmp_path / ".new-agent" / "bgc" / "claude-code.bgp").is_file()
    assert 'include "claude-code.bgp"' in (tmp_path / ".new-agent" / "bgc" / "policy.bgp").read_text()


def test_the_hook_and_its_client_read_a_new_rows_project(new_agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bgc.adapters.agents import client
    from bgc.adapters.agents.hook import Options, check_agent, decide
    from bgc.app.commands import init

    project = tmp_path / "p"
    (project / "src").mkdir(parents=True)
    assert init.run(new_agent.name, directory=str(project)) == 0
    check_agent(new_agent.name)
    monkeypatch.setenv("NEW_AGENT_PROJECT", str(project))
    assert client.project_of(new_agent.name) == os.path.realpath(project)
    call = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": f"{project}/src/a.py"}})
    options = Options.of(policy=f"{project}/.new-agent/bgc/policy.bgp", store="none")
    code, out, _ = decide(new_agent.name, options, call.encode(), {"NEW_AGENT_PROJECT": str(project)}, "/")
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
    code, _, err = decide(new_agent.name, options, call.encode(), {"CLAUDE_PROJECT_DIR": str(project)}, "/")
    assert code == 2 and b"no project directory (NEW_AGENT_PROJECT or cwd)" in err  # its own variable, not another agent's
