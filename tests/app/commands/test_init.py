"""`bgc init AGENT`: the starter policy and the hook, merged into what is there, for each agent."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.samples import bgc

# agent -> (directory, settings file `bgc init` writes by default, event, hook command's ending, timeout in the agent's unit)
AGENTS = {
    "claude-code": (".claude", "settings.local.json", "PreToolUse", 'hook claude-code -p "$CLAUDE_PROJECT_DIR/.claude/bgc/policy.bgp"', 30),
    "gemini-cli": (".gemini", "settings.json", "BeforeTool", "hook gemini-cli -p $GEMINI_PROJECT_DIR/.gemini/bgc/policy.bgp", 30000),
    "codex": (".codex", "hooks.json", "PreToolUse", "hook codex -p .codex/bgc/policy.bgp", 30),
}
TEAM = {"claude-code": "settings.json", "gemini-cli": "settings.json", "codex": "hooks.json"}
"""The settings file a team commits, where `bgc init --team` writes (and the only one Gemini CLI and Codex have)."""
MAPPINGS = {"claude-code": "claude-code.bgp", "gemini-cli": "gemini-cli.bgp", "codex": "codex.bgp"}


def existing(event: str) -> str:
    return json.dumps({
        "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(.env)"]},
        "env": {"A": "1"},
        "hooks": {
            event: [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}],
            "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}],
        },
    }, indent=2) + "\n"


def init(project: Path, agent: str = "claude-code", *, team: bool = False):  # type: ignore[no-untyped-def]
    """``bgc init AGENT --dir PROJECT [--team]`` in-process (the one runner: no traceback)."""
    return bgc("init", agent, "--dir", str(project), *(["--team"] if team else []), env={"BGC_CACHE_DIR": str(project.parent / "cache")})


def launched(command: str) -> tuple[str | None, list[str]]:
    """``(interpreter, bgc's arguments)`` of a registered command (None: the bgc on PATH)."""
    from bgc.app.commands import launcher

    parsed = launcher.parse(shlex.split(command))
    assert parsed is not None, command
    return parsed


def machine(arguments: str) -> str:
    """Today's command starting this installation's bgc with ``arguments``."""
    from bgc.app.commands import launcher

    return launcher.command(sys.executable, "", arguments)


def shared(arguments: str, project: str = '"$CLAUDE_PROJECT_DIR"') -> str:
    """Today's command starting the bgc on PATH with ``arguments``."""
    from bgc.app.commands import launcher

    return launcher.command(None, project, arguments)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_merges_the_hook_keeping_everything_and_is_idempotent(tmp_path: Path, agent: str) -> None:
    directory, name, event, ending, timeout = AGENTS[agent]
    project = tmp_path / "p"
    (project / directory).mkdir(parents=True)
    settings = project / directory / name
    text = existing(event)
    settings.write_text(text)
    first = init(project, agent)
    assert first.exit_code == 0, first.stderr
    merged = json.loads(settings.read_text())
    before = json.loads(text)
    assert merged["permissions"] == before["permissions"] and merged["env"] == before["env"]
    assert merged["hooks"]["PostToolUse"] == before["hooks"]["PostToolUse"]
    hooks = merged["hooks"][event]
    assert hooks[0] == before["hooks"][event][0] and len(hooks) == 2
    assert hooks[1]["matcher"] == "*" and hooks[1]["hooks"][0]["type"] == "command" and hooks[1]["hooks"][0]["timeout"] == timeout
    assert hooks[1]["hooks"][0]["command"].endswith(f" {ending}")
    assert launched(hooks[1]["hooks"][0]["command"])[0] == (sys.executable if name != TEAM[agent] else None)
    assert (project / directory / f"{name}.bak").read_text() == text
    files = ("policy.bgp", "base.bgp", MAPPINGS[agent], "agents.bgp")
    assert sorted(os.listdir(project / directory / "bgc")) == sorted(files)
    assert f'include "{MAPPINGS[agent]}"' in (project / directory / "bgc" / "policy.bgp").read_text()
    written = settings.read_bytes()
    second = init(project, agent)
    assert second.exit_code == 0 and settings.read_bytes() == written
    assert f"unchanged {directory}/{name} (the hooks are already there)" in second.stdout  # bgc serve's too
    assert second.stdout.count(f"unchanged {directory}/bgc/") == 4


def test_a_fresh_project_and_an_edited_policy(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert init(project).exit_code == 0
    assert not (project / ".claude" / "settings.local.json.bak").exists()  # nothing was there to keep
    assert not (project / ".claude" / "settings.json").exists()  # nothing in the team's file
    policy = project / ".claude" / "bgc" / "policy.bgp"
    policy.write_text(policy.read_text() + "allow fs:write:/lib/** because \"mine\"\n")
    again = init(project)
    assert again.exit_code == 0 and "kept .claude/bgc/policy.bgp" in again.stdout
    assert "mine" in policy.read_text()


def test_agents_side_by_side(tmp_path: Path) -> None:
    """One project set up for all three agents: each gets its own directory, nothing collides."""
    project = tmp_path / "p"
    project.mkdir()
    for agent in AGENTS:
        done = init(project, agent)
        assert done.exit_code == 0, done.stderr
    for agent, (directory, name, event, _, _) in AGENTS.items():
        assert [launched(h["hooks"][0]["command"])[1][1] for h in json.loads((project / directory / name).read_text())["hooks"][event]] == [agent]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"hooks": {"PreToolUse": [}\n', "settings.json:1:27"),
        ('{\n  "a": 1,\n  "a": 2\n}\n', "settings.json:3:3"),
        ("[1, 2]\n", "settings.json:1:1"),
        ('{"hooks": []}\n', "settings.json:1:11"),
        ('{"hooks": {"PreToolUse": {"matcher": "*"}}}\n', "settings.json:1:26"),
    ],
    ids=["syntax", "duplicate-key", "not-an-object", "hooks-not-object", "pretooluse-not-list"],
)
def test_refuses_settings_it_cannot_merge_and_writes_nothing(tmp_path: Path, text: str, where: str) -> None:
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    settings.write_text(text)
    done = init(project)
    assert done.exit_code == 2 and where in done.stderr, done.stderr
    assert settings.read_text() == text
    assert sorted(os.listdir(project / ".claude")) == ["settings.json"]  # no policy, no backup


def test_refuses_gemini_settings_whose_before_tool_is_not_a_list(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".gemini").mkdir(parents=True)
    settings = project / ".gemini" / "settings.json"
    settings.write_text('{"hooks": {"BeforeTool": {"matcher": "*"}}}\n')
    done = init(project, "gemini-cli")
    assert done.exit_code == 2 and "settings.json:1:26" in done.stderr, done.stderr
    assert sorted(os.listdir(project / ".gemini")) == ["settings.json"]


@pytest.mark.parametrize(
    ("agent", "settings", "project", "events"),
    [("claude-code", ".claude/settings.local.json", '"$CLAUDE_PROJECT_DIR"', ("SessionStart", "SessionEnd")),
     ("gemini-cli", ".gemini/settings.json", "$GEMINI_PROJECT_DIR", ("SessionStart", "SessionEnd")),
     ("codex", ".codex/hooks.json", ".", ("SessionStart",))],
)  # fmt: skip
def test_session_hooks_start_and_stop_the_decision_server(
    tmp_path: Path, agent: str, settings: str, project: str, events: tuple[str, ...]
) -> None:
    """SessionStart starts `bgc serve` in the background, quietly (a SessionStart hook's stdout
    becomes the session's context, or must be JSON), SessionEnd stops it where the agent has
    one (Codex has none: its server exits when idle); both name the project as the hook does."""
    root = tmp_path / "p"
    root.mkdir()
    assert init(root, agent).exit_code == 0
    hooks = json.loads((root / settings).read_text())["hooks"]
    where = project
    assert [event for event in ("SessionStart", "SessionEnd") if event in hooks] == list(events)
    for event, option in zip(events, ("--detach", "--stop")):
        assert "matcher" not in hooks[event][0]  # every source: startup, resume, clear, compact
        command = hooks[event][0]["hooks"][0]["command"]
        assert command.endswith(f" serve {option} --quiet --dir {where}"), command


def test_the_starter_declares_a_case_insensitive_file_system_where_the_project_has_one(tmp_path: Path) -> None:
    """On a case-insensitive file system (macOS, Windows) `/.ENV` opens `/.env`: the starter
    `bgc init` writes there declares it, so the secrets rule stops `.ENV` too."""
    from bgc.runtime.calls import policy_decider
    from bgc.adapters.agents import AGENTS as ROWS
    from bgc.app.commands.init import _starter, case_insensitive

    (tmp_path / "probe").write_text("x")
    assert case_insensitive(str(tmp_path)) == (tmp_path / "PROBE").exists()  # this machine's answer, either way
    assert list(tmp_path.iterdir()) == [tmp_path / "probe"]  # the probe left nothing behind
    folded = tmp_path / "folded"
    folded.mkdir()
    for name in ("base.bgp", "claude-code.bgp", "agents.bgp"):
        (folded / name).write_text((Path(__file__).parents[3] / "policies" / name).read_text())
    for insensitive, env_upper in ((True, "deny"), (False, "allow")):
        (folded / "policy.bgp").write_bytes(_starter(ROWS["claude-code"], insensitive))
        gate = policy_decider(str(folded / "policy.bgp")).gate
        assert gate.decide("fs:read:/.ENV").effect == env_upper
        assert gate.decide("fs:read:/.env").effect == "deny"
        assert gate.decide("fs:read:/SRC/A.py").effect == "allow"  # an allow never folds
        assert gate.decide("fs:write:/.GIT/config").effect == ("deny" if insensitive else "allow")  # a deny does


@pytest.mark.e2e
def test_bgcs_state_is_never_committed(tmp_path: Path) -> None:
    """The hook's store and ledger and `bgc key new`'s private keys live in the project's `.bgc/`:
    whatever makes that directory gives it a `.gitignore` of `*`, so `git add .` leaves it out
    (checked by real git), and a `.gitignore` someone wrote there is theirs."""
    import subprocess

    project = tmp_path / "p"
    project.mkdir()
    assert init(project).exit_code == 0
    assert (project / ".bgc" / ".gitignore").read_text().endswith("\n*\n")
    again = init(project)
    assert "unchanged .bgc/.gitignore" in again.stdout
    # the key directory made by `bgc key new` in a project bgc init never saw
    other = tmp_path / "q"
    other.mkdir()
    subprocess.run([sys.executable, "-m", "bgc", "key", "new", "alice"], cwd=other, check=True, capture_output=True, timeout=60)
    assert (other / ".bgc" / "keys" / "alice.key").exists()
    (other / "src.py").write_text("x = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=other, check=True, timeout=60)
    subprocess.run([*git, "add", "."], cwd=other, check=True, timeout=60)
    staged = subprocess.run([*git, "diff", "--cached", "--name-only"], cwd=other, check=True, capture_output=True, text=True, timeout=60)
    assert staged.stdout.split() == ["src.py"], staged.stdout
    # one a person wrote is kept
    (other / ".bgc" / ".gitignore").write_text("keys/\n")
    kept = init(other)
    assert "kept .bgc/.gitignore (yours)" in kept.stdout and (other / ".bgc" / ".gitignore").read_text() == "keys/\n"


def test_every_state_directory_made_on_the_way_gets_its_gitignore(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`bgc.core.values.files.make_directories` on generated paths (`.bgc` at any depth, once or twice, next to
    look-alike names, some directories there before): each `.bgc` it creates holds the
    `.gitignore`, one there before is left as it was, and no other directory gets one."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from bgc.core.values.files import STATE_IGNORE, make_directories

    segments = st.lists(st.sampled_from([".bgc", "a", "b", ".bgcx", "x.bgc", "keys"]), min_size=1, max_size=5)

    @settings(max_examples=150, deadline=None)
    @given(segments, st.integers(0, 5))
    def check(parts: list[str], existing: int) -> None:
        root = tmp_path_factory.mktemp("state")
        if existing:
            (root.joinpath(*parts[:existing])).mkdir(parents=True, exist_ok=True)
        prefixes = [root.joinpath(*parts[: i + 1]) for i in range(len(parts))]
        before = {prefix for prefix in prefixes if prefix.exists()}
        make_directories(str(root.joinpath(*parts)))
        for prefix in prefixes:
            ignore = prefix / ".gitignore"
            if prefix.name == ".bgc" and prefix not in before:
                assert ignore.read_text() == STATE_IGNORE, prefix
            else:
                assert not ignore.exists(), prefix

    check()


PLANTED = (
    "import os, sys\n"
    "open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'PLANTED-RAN'), 'w').close()\n"
    'print(\'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}\')\n'
    "sys.exit(0)\n"
)
"""A module an agent could write into the project: if the hook imported it, it would answer allow."""


@pytest.mark.parametrize("planted", ["bgc/__init__.py", "bgc/app/launch.py", "select.py", "json.py", "sqlite3.py"])
@pytest.mark.e2e
def test_the_hook_never_imports_a_module_from_the_project(tmp_path: Path, planted: str) -> None:
    """The hook runs in the project (its working directory), where the agent writes: the
    command `bgc init` writes keeps that directory off ``sys.path`` (``-P``), so a ``bgc``
    package or a module an agent planted there is never what runs (it would answer allow)."""
    import subprocess

    project = tmp_path / "p"
    project.mkdir()
    assert init(project).exit_code == 0
    (project / ".env").write_text("TOKEN=x\n")
    (project / planted).parent.mkdir(parents=True, exist_ok=True)
    (project / planted).write_text(PLANTED)
    command = json.loads((project / ".claude" / "settings.local.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    call = {"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": str(project), "tool_input": {"file_path": f"{project}/.env"}}
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), "BGC_CACHE_DIR": str(tmp_path / "cache"), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    done = subprocess.run(["sh", "-c", command], input=json.dumps(call).encode(), cwd=project, env=env, capture_output=True, timeout=120)
    assert not (project / "PLANTED-RAN").exists(), done
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", done


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.e2e
def test_no_module_the_hook_imports_can_come_from_the_project(tmp_path: Path, agent: str) -> None:
    """The whole class, not the modules planted above: the interpreter the hook command starts,
    started the same way in the project, has no directory on ``sys.path`` that is the project or
    below it (``-c`` alone would put the working directory first), whatever bgc imports later."""
    import subprocess

    project = tmp_path / "p"
    project.mkdir()
    assert init(project, agent).exit_code == 0
    directory, name, event, _, _ = AGENTS[agent]
    command = json.loads((project / directory / name).read_text())["hooks"][event][0]["hooks"][0]["command"]
    program = [launched(command)[0] or sys.executable, "-I"]  # the bgc on PATH: this one, the tests run it
    # the entries the import system reads as directories (an editable install's path-hook key is not one)
    read = ("import json, sys, pkgutil, importlib.machinery as m, zipimport as z; print(json.dumps([e for e in sys.path "
            "if isinstance(pkgutil.get_importer(e), (m.FileFinder, z.zipimporter, type(None)))]))")  # fmt: skip
    probe = subprocess.run([*program, "-c", read], cwd=project, capture_output=True, text=True, timeout=60)
    paths = [(project / entry).resolve() for entry in json.loads(probe.stdout)]  # "" is the working directory
    assert not [path for path in paths if path == project.resolve() or project.resolve() in path.parents], paths


def test_a_hook_an_earlier_init_wrote_is_brought_up_to_date(tmp_path: Path) -> None:
    """A hook written through the ``bgc`` script (or ``python -m bgc``) by an earlier `bgc init`
    into the team's settings named one machine's bgc: by default it moves out of them into the
    settings of one's own, as today's command (other hooks stay where they were); with --team it
    is replaced in place by today's command that works everywhere, not run twice beside it. A hook
    of anyone else's, and one with other arguments, is kept."""
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    arguments = 'hook claude-code -p "$CLAUDE_PROJECT_DIR/.claude/bgc/policy.bgp"'
    olds = [f"'/opt/old env/bin/bgc' {arguments}", f"/usr/bin/python3 -m bgc {arguments}", machine(arguments).replace(sys.executable, "/elsewhere/python3")]
    kept = ["./check.sh", "/x/bgc hook claude-code -p other.bgp", f"/x/notbgc {arguments}"]
    settings, local = project / ".claude" / "settings.json", project / ".claude" / "settings.local.json"
    for old in olds:
        for team in (False, True):
            local.unlink(missing_ok=True)
            settings.write_text(json.dumps({"hooks": {"PreToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 30}]} for command in (*kept, old)
            ]}}))  # fmt: skip
            done = init(project, team=team)
            commands = [hook["command"] for entry in json.loads(settings.read_text())["hooks"]["PreToolUse"] for hook in entry["hooks"]]
            if team:
                assert done.exit_code == 0 and "updated the PreToolUse hook in .claude/settings.json" in done.stdout, done.stdout
                assert commands == [*kept, shared(arguments)] and not local.exists()
            else:
                assert done.exit_code == 0 and "removed the PreToolUse hook from .claude/settings.json" in done.stdout, done.stdout
                assert commands == kept
                mine = [hook["command"] for entry in json.loads(local.read_text())["hooks"]["PreToolUse"] for hook in entry["hooks"]]
                assert mine == [machine(arguments)]


def test_the_teams_hooks_and_ones_own_are_never_both_bgcs(tmp_path: Path) -> None:
    """One bgc hook per call: where the team's settings run the bgc on PATH, `bgc init` adds none
    of one's own (and takes out one an earlier run added there); `bgc init --team` takes bgc's
    hooks out of the settings of one's own, leaving everything else in them."""
    project = tmp_path / "p"
    project.mkdir()
    local, settings = project / ".claude" / "settings.local.json", project / ".claude" / "settings.json"
    assert init(project).exit_code == 0
    data = json.loads(local.read_text())
    data["hooks"]["PreToolUse"].insert(0, {"matcher": "Bash", "hooks": [{"type": "command", "command": "./mine.sh"}]})
    data["permissions"] = {"allow": ["Bash(ls)"]}
    local.write_text(json.dumps(data))
    team = init(project, team=True)
    assert team.exit_code == 0, team.stderr
    assert "removed the PreToolUse, SessionStart and SessionEnd hooks from .claude/settings.local.json" in team.stdout
    left = json.loads(local.read_text())
    assert left == {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./mine.sh"}]}],
                              "SessionStart": [], "SessionEnd": []}, "permissions": {"allow": ["Bash(ls)"]}}  # fmt: skip
    assert [launched(entry["hooks"][0]["command"])[0] for entry in json.loads(settings.read_text())["hooks"]["PreToolUse"]] == [None]
    again = init(project)
    assert "kept the team's PreToolUse, SessionStart and SessionEnd hooks in .claude/settings.json" in again.stdout
    assert json.loads(local.read_text()) == left


@pytest.mark.parametrize("agent", ["gemini-cli", "codex"])
def test_an_agent_without_settings_of_ones_own_gets_the_hooks_every_machine_runs(tmp_path: Path, agent: str) -> None:
    """Gemini CLI and Codex read hooks only from the settings a team commits (and the user's, for
    every project): `bgc init` writes its hooks there, starting the bgc on PATH, with or without
    --team, and says what they find here."""
    directory, name, event, ending, _ = AGENTS[agent]
    for team in (False, True):
        project = tmp_path / f"p-{team}"
        project.mkdir()
        done = init(project, agent, team=team)
        assert done.exit_code == 0, done.stderr
        command = json.loads((project / directory / name).read_text())["hooks"][event][0]["hooks"][0]["command"]
        assert launched(command) == (None, shlex.split(ending)) and sys.executable not in command
        assert "the hooks find bgc" in done.stdout or "warning: on this machine the hooks block every call" in done.stdout


def _started_server_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The argv ``bgc serve --detach`` starts its server with (caught, not run)."""
    import subprocess

    from bgc.app.commands import serve
    from bgc.errors import UsageError

    started: list[list[str]] = []

    class Caught:
        def __init__(self, command: list[str], **_: object) -> None:
            started.append(command)

        def poll(self) -> int:
            return 1

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    with pytest.MonkeyPatch.context() as patch, pytest.raises(UsageError):
        patch.setattr(subprocess, "Popen", Caught)
        serve._detach(str(tmp_path), 60.0, quiet=True)
    return started[0]


def _mcp_proxy_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The argv `bgc init mcp` writes for the proxy."""
    from bgc.app.commands import init_mcp

    return init_mcp.proxy_command()


@pytest.mark.parametrize("started", [_started_server_command, _mcp_proxy_command])
@pytest.mark.e2e
def test_a_bgc_started_by_module_never_imports_from_its_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: object
) -> None:
    """The decision server ``bgc serve --detach`` starts (it answers every hook of the project)
    and the MCP proxy `bgc init mcp` writes both run ``python -m bgc``, which puts the working
    directory first on ``sys.path`` unless ``-I`` (or ``-P``) says not to: a ``bgc`` package there
    (the project, where an MCP client starts its servers and the agent writes) would run."""
    import subprocess

    command = started(tmp_path, monkeypatch)  # type: ignore[operator]
    program = command[:4] if command[:2] == ["/bin/sh", "-c"] else command[: command.index("bgc") + 1]  # the launcher, or python -I -m bgc
    where = tmp_path / "planted"
    (where / "bgc").mkdir(parents=True)
    for name in ("__init__.py", "__main__.py"):
        (where / "bgc" / name).write_text(PLANTED)
    done = subprocess.run([*program, "--version"], cwd=where, capture_output=True, timeout=120)
    assert not (where / "PLANTED-RAN").exists() and done.returncode == 0, (command, done)


def test_an_mcp_server_behind_the_module_proxy_is_not_wrapped_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bgc init mcp` run again over its own ``python -I -m bgc mcp-proxy`` server leaves it."""
    from bgc.app.commands import init_mcp

    bgc_command = _mcp_proxy_command(tmp_path, monkeypatch)
    once = init_mcp.rewrite({"mcpServers": {"files": {"command": "npx", "args": ["fs"]}}}, "/p.bgp", bgc_command, "x")
    twice = init_mcp.rewrite(once.data, "/p.bgp", bgc_command, "x")
    assert once.proxied == ("mcpServers.files",) and twice.already == ("mcpServers.files",) and twice.data == once.data


def _pre_tool_use_commands(project: Path) -> list[str]:
    """The PreToolUse commands of the team's settings (where the tests below run `bgc init --team`)."""
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    return [hook["command"] for entry in settings["hooks"]["PreToolUse"] for hook in entry["hooks"]]


def _with_pre_tool_use(project: Path, commands: list[str]) -> None:
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 30}]} for command in commands
    ]}}))  # fmt: skip


ARGUMENTS = 'hook claude-code -p "$CLAUDE_PROJECT_DIR/.claude/bgc/policy.bgp"'


BEFORE_LAYERS = f"/usr/bin/python3 -P -c 'from bgc.launch import console; console()' {ARGUMENTS}"
"""The hook as ``bgc init`` wrote it before the package took its layers (``bgc.launch``)."""
OTHER_INTERPRETER = f"'/opt/old env/bin/python3' -P -c 'from bgc.app.launch import console; console()' {ARGUMENTS}"
"""Today's form, written by another installation's interpreter."""


@pytest.mark.parametrize("olds", [
    [f"'/opt/old env/bin/bgc' {ARGUMENTS}", f"/usr/bin/python3 -m bgc {ARGUMENTS}"],
    [f"/usr/bin/python3 -P -m bgc {ARGUMENTS}", f"/gone/bin/bgc {ARGUMENTS}", f"/usr/bin/python3 -m bgc {ARGUMENTS}"],
    [BEFORE_LAYERS, f"/usr/bin/python3 -m bgc {ARGUMENTS}"],
    [OTHER_INTERPRETER, BEFORE_LAYERS],
])  # fmt: skip
def test_earlier_hooks_become_one_hook_in_the_first_ones_place(tmp_path: Path, olds: list[str]) -> None:
    """Several hooks of earlier inits (two installations', the ``-P -m`` form, the ``-P -c`` form
    of another interpreter or of the launcher before the package took its layers): the first is
    brought up to date, the rest left as they were, so today's command runs once; and again, it
    is unchanged."""
    project = tmp_path / "p"
    _with_pre_tool_use(project, ["./first.sh", *olds, "./last.sh"])
    assert "updated the PreToolUse hook" in init(project, team=True).stdout
    commands = _pre_tool_use_commands(project)
    assert commands == ["./first.sh", shared(ARGUMENTS), *olds[1:], "./last.sh"]
    assert "unchanged .claude/settings.json" in init(project, team=True).stdout and _pre_tool_use_commands(project) == commands


def test_a_wrapper_of_the_users_named_bgc_is_kept(tmp_path: Path) -> None:
    """A program of the user's named ``bgc`` with bgc's arguments (a wrapper that sets up what
    bgc runs with) is not rewritten to this installation's interpreter: it is kept, and today's
    hook added beside it, as for any other hook; a pip script of bgc's at that path is bgc's."""
    wrapper = tmp_path / "bin" / "bgc"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\nexport BGC_CACHE_DIR=/srv/bgc\nexec /opt/bgc/bin/bgc "$@"\n')
    wrapper.chmod(0o755)
    project = tmp_path / "p"
    theirs = f"{wrapper} {ARGUMENTS}"
    _with_pre_tool_use(project, [theirs])
    assert "added the PreToolUse" in init(project, team=True).stdout
    commands = _pre_tool_use_commands(project)
    assert commands == [theirs, shared(ARGUMENTS)]
    for script in ("from bgc.app.launch import console", "from bgc.launch import console"):  # today's pip script, and before the layers
        wrapper.write_text(f"#!/opt/bgc/bin/python3\nimport re\nimport sys\n{script}\n")
        _with_pre_tool_use(project, [theirs])
        assert "updated the PreToolUse hook" in init(project, team=True).stdout and _pre_tool_use_commands(project) == [shared(ARGUMENTS)]


def test_a_bgc_found_through_a_relative_path_entry_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``.`` on ``PATH`` and no script beside the interpreter, ``which bgc`` is the project's
    own ``./bgc`` (a file the agent may write): the hooks and the MCP proxy command start bgc by
    its interpreter instead (they named ``./bgc``, or its absolute path in the project)."""
    from bgc.app.commands import init as init_command
    from bgc.app.commands import init_mcp

    project = tmp_path / "p"
    project.mkdir()
    (project / "bgc").write_text("#!/bin/sh\necho allow\n")
    (project / "bgc").chmod(0o755)
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", ".")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bare" / "python3"))  # no bgc script beside it
    here = init_command.interpreter()
    written = [init_command.hook_command("claude-code", here), init_command.serve_command("claude-code", "--detach", here),
               shlex.join(init_mcp.proxy_command())]  # fmt: skip
    for command in written:
        assert launched(command)[0] == sys.executable, command


def _settings_cases() -> Any:
    """PreToolUse entries (one to three hooks each) drawn from others' hooks (a script, bgc with
    other arguments, a wrapper of the user's named ``bgc``), bgc's earlier forms (a script no
    longer there, ``python -m bgc``, ``python -P -m bgc``) and today's command."""
    from hypothesis import strategies as st

    pool = ["./check.sh", "/x/bgc hook claude-code -p other.bgp", "WRAPPER", f"/gone/bin/bgc {ARGUMENTS}",
            f"/usr/bin/python3 -m bgc {ARGUMENTS}", f"/usr/bin/python3 -P -m bgc {ARGUMENTS}", BEFORE_LAYERS,
            f"/usr/bin/python3 -c 'from bgc.launch import console; console()' {ARGUMENTS}", "TODAY"]  # fmt: skip
    return st.lists(st.lists(st.sampled_from(pool), min_size=1, max_size=3), max_size=4)


EARLIER = ("/gone/bin/bgc ", "/usr/bin/python3 -m bgc ", "/usr/bin/python3 -P -m bgc ", BEFORE_LAYERS)
"""bgc's earlier forms in the pool (without ``-P``, ``-c`` was never one of them: the user's own)."""


def test_the_upgrade_by_class_of_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Whatever mix of hooks is there: others' hooks (a wrapper named ``bgc`` among them) stay as
    they were, in order; today's command is there once more than before only if it was missing
    (in the first earlier form's place if there is one, else at the end); a second run changes
    nothing."""
    from hypothesis import given, settings

    today = shared(ARGUMENTS)

    @settings(max_examples=40, deadline=None)
    @given(_settings_cases())
    def check(entries: list[list[str]]) -> None:
        base = tmp_path_factory.mktemp("upgrade")
        wrapper = base / "bin" / "bgc"
        wrapper.parent.mkdir()
        wrapper.write_text('#!/bin/sh\nexec /opt/bgc/bin/bgc "$@"\n')
        named = {"WRAPPER": f"{wrapper} {ARGUMENTS}", "TODAY": today}
        entries = [[named.get(command, command) for command in entry] for entry in entries]
        project = base / "p"
        (project / ".claude").mkdir(parents=True)
        (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": command} for command in entry]} for entry in entries
        ]}}))  # fmt: skip
        before = [command for entry in entries for command in entry]
        assert init(project, team=True).exit_code == 0
        after = _pre_tool_use_commands(project)
        wanted = list(before)
        if today not in before:
            first = next((index for index, command in enumerate(before) if command.startswith(EARLIER)), None)
            if first is None:
                wanted.append(today)
            else:
                wanted[first] = today
        assert after == wanted, (before, after)
        written = (project / ".claude" / "settings.json").read_bytes()
        assert init(project, team=True).exit_code == 0 and (project / ".claude" / "settings.json").read_bytes() == written

    check()
