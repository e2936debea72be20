"""`bgc init` in a project, then the same project cloned to another path on a machine with
another Python: every command `bgc init` registered either works or blocks with a message (exit
2, `bgc: blocked: …` on stderr, nothing on stdout); none exits 127, none lets a call through.

Each command runs as its agent runs it: Claude Code through ``/bin/sh -c`` with
``CLAUDE_PROJECT_DIR``, Gemini CLI through ``bash -c`` after writing the shell-quoted project
over ``$GEMINI_PROJECT_DIR``, Codex through ``$SHELL -lc`` in the project, each with its event's
JSON on stdin. "Another machine" is what the clone finds there: no ``bgc`` on ``PATH``; a ``bgc``
whose Python has no bgc, or whose Python is gone; a ``bgc`` inside the project; and, for a
command that names an interpreter (Claude Code's ``settings.local.json``, were it committed),
that interpreter gone or another one without bgc.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bgc.adapters.agents import AGENTS
from bgc.app.commands import launcher

TIMEOUT = 120
BASE_PATH = "/usr/bin:/bin"
"""A ``PATH`` with the system's programs and no bgc."""

INPUTS = {
    "PreToolUse": {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "{P}/.env"}},
    "BeforeTool": {"hook_event_name": "BeforeTool", "tool_name": "read_file", "tool_input": {"file_path": "{P}/.env"}},
    "SessionStart": {"hook_event_name": "SessionStart", "source": "startup"},
    "SessionEnd": {"hook_event_name": "SessionEnd", "reason": "exit"},
}
"""Each event's hook input (the tool calls read the project's ``.env``, which the starter denies)."""


def _script(path: Path, first_lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(first_lines + "import sys\nsys.exit('a bgc script is never run itself')\n")
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A project `bgc init` set up for every agent here (Claude Code both ways), cloned to another
    path, and the ``PATH``s and interpreters another machine may have."""
    base = tmp_path_factory.mktemp("elsewhere")
    project = base / "here" / "project"
    (project / "src").mkdir(parents=True)
    (project / ".env").write_text("TOKEN=x\n")
    env = {**os.environ, "BGC_CACHE_DIR": str(base / "cache"), "PATH": f"{os.path.dirname(sys.executable)}:{BASE_PATH}"}
    own = project / ".claude" / "settings.local.json"
    for agent, team in (("claude-code", False), ("claude-code", True), ("gemini-cli", False), ("codex", False)):
        mine = own.read_bytes() if own.exists() else None
        done = subprocess.run([sys.executable, "-m", "bgc", "init", agent, *(["--team"] if team else [])], cwd=project,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
        assert done.returncode == 0, done.stderr
        if mine is not None:  # --team took this machine's hooks out of it; a developer's file as it was (committed by mistake)
            own.write_bytes(mine)
    clone = base / "there" / "clone of project"  # another path, a space in it
    clone.parent.mkdir()
    shutil.copytree(project, clone, symlinks=True)
    without_bgc = base / "venv-without-bgc"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(without_bgc)], check=True, timeout=TIMEOUT)
    other_python = str(without_bgc / "bin" / "python")
    bins = {
        "no bgc on PATH": None,
        "a bgc whose Python has no bgc": _script(base / "bin-other" / "bgc", f"#!{other_python}\n"),
        "a bgc whose Python is gone": _script(base / "bin-gone" / "bgc", "#!/gone/bin/python3\n"),
        "a bgc pip wrote for a long path, its Python gone": _script(
            base / "bin-long" / "bgc", "#!/bin/sh\n'''exec' '/gone/a long path/python3' \"$0\" \"$@\"\n' '''\n"
        ),
        "a bgc in the project": _script(  # a space in its path: the form pip writes then
            clone / ".venv" / "bin" / "bgc", f"#!/bin/sh\n'''exec' '{clone}/.venv/bin/python' \"$0\" \"$@\"\n' '''\n"
        ),
        "a bgc from something else": _script(base / "bin-binary" / "bgc", "\x7fELF\n"),
    }
    (clone / ".venv" / "bin" / "python").symlink_to(sys.executable)  # a real one, where the agent writes
    paths = {name: BASE_PATH if script is None else f"{script.parent}:{BASE_PATH}" for name, script in bins.items()}
    runtime = base / "run"
    runtime.mkdir(mode=0o700)
    home = base / "home"  # Codex runs hooks in a login shell: the system's profile sets PATH, then this one
    home.mkdir()
    (home / ".profile").write_text('PATH=$ELSEWHERE_PATH; export PATH\n')
    yield {"clone": clone, "paths": paths, "other_python": other_python, "cache": str(base / "cache"), "runtime": str(runtime),
           "home": str(home)}  # fmt: skip


def _registered(clone: Path) -> list[tuple[str, str, str, str]]:
    """``(agent, settings file, event, command)`` of every command `bgc init` registered."""
    found = []
    for agent in AGENTS.values():
        setup = agent.setup
        for name in (setup.settings, setup.local):
            path = clone / setup.directory / name if name else None
            if path is None or not path.exists():
                continue
            for event, entries in json.loads(path.read_text())["hooks"].items():
                for entry in entries:
                    found += [(agent.name, name, event, hook["command"]) for hook in entry["hooks"]]
    return found


def _run_as_the_agent(agent: str, event: str, command: str, clone: Path, env: dict[str, str], home: str) -> subprocess.CompletedProcess[bytes]:
    hook_input = json.loads(json.dumps(INPUTS[event]).replace("{P}", str(clone)))
    data = json.dumps({"session_id": "s", "cwd": str(clone), **hook_input}).encode()
    if agent == "claude-code":
        argv, env = ["/bin/sh", "-c", command], {**env, "CLAUDE_PROJECT_DIR": str(clone)}
    elif agent == "gemini-cli":
        command = command.replace("$GEMINI_PROJECT_DIR", shlex.quote(str(clone)))
        argv, env = ["bash", "-c", command], {**env, "GEMINI_PROJECT_DIR": str(clone)}
    else:
        argv, env = ["/bin/sh", "-lc", command], {**env, "SHELL": "/bin/sh", "HOME": home, "ELSEWHERE_PATH": env["PATH"]}
    return subprocess.run(argv, input=data, env=env, cwd=clone, capture_output=True, timeout=TIMEOUT)


def _blocked(done: subprocess.CompletedProcess[bytes], why: str) -> None:
    assert done.returncode == 2 and not done.stdout, (why, done)
    assert b"bgc: blocked: " in done.stderr, (why, done.stderr)


def test_every_command_is_one_of_the_two_forms(elsewhere: dict[str, Any]) -> None:
    """Nothing of this machine in the team's files; this machine's interpreter only in the file of
    one's own: the registered commands are the launchers, and every event `bgc init` registers is
    there."""
    registered = _registered(elsewhere["clone"])
    assert len(registered) == 3 + 3 + 3 + 2  # Claude Code's own and the team's, Gemini CLI's, Codex's
    for agent, name, event, command in registered:
        parsed = launcher.parse(shlex.split(command))
        assert parsed is not None, command
        program = parsed[0]
        assert program == (sys.executable if name == AGENTS[agent].setup.local else None), (agent, name, event)
        if program is None:
            assert sys.executable not in command and str(elsewhere["clone"]) not in command


WHY = {
    "no bgc on PATH": b"there is no bgc on PATH",
    "a bgc whose Python has no bgc": b"-I ended with exit 1, not an answer bgc gives",
    "a bgc whose Python is gone": b"there is no Python at /gone/bin/python3",
    "a bgc pip wrote for a long path, its Python gone": b"there is no Python at /gone/a long path/python3",
    "a bgc in the project": b"inside the project, where the agent may change it",
    "a bgc from something else": b"cannot tell which Python runs",
}
"""What the launcher says, by situation."""


@pytest.mark.parametrize("situation", sorted(WHY))
def test_the_teams_commands_block_where_bgc_cannot_start(elsewhere: dict[str, Any], situation: str) -> None:
    clone = elsewhere["clone"]
    env = {**os.environ, "PATH": elsewhere["paths"][situation], "BGC_CACHE_DIR": elsewhere["cache"],
           "XDG_RUNTIME_DIR": elsewhere["runtime"]}  # fmt: skip
    for agent, name, event, command in _registered(clone):
        if name == AGENTS[agent].setup.settings:
            done = _run_as_the_agent(agent, event, command, clone, env, elsewhere["home"])
            _blocked(done, f"{situation}: {agent} {event}")
            assert WHY[situation] in done.stderr, (situation, agent, event, done.stderr)


def test_the_teams_commands_work_with_bgc_on_path(elsewhere: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine where the agent's ``PATH`` has bgc (here, this installation's script), every
    command of the team's settings runs: a tool call reading ``.env`` is denied by the policy (an
    answer, exit 0), the lifecycle commands start and stop the clone's decision server."""
    from tests.server_support import status

    clone = elsewhere["clone"]
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{BASE_PATH}", "BGC_CACHE_DIR": elsewhere["cache"],
           "XDG_RUNTIME_DIR": elsewhere["runtime"]}  # fmt: skip
    try:
        for agent, name, event, command in _registered(clone):
            if name != AGENTS[agent].setup.settings:
                continue
            done = _run_as_the_agent(agent, event, command, clone, env, elsewhere["home"])
            assert done.returncode == 0, (agent, event, done.stderr)
            if event in ("PreToolUse", "BeforeTool"):
                answer = json.loads(done.stdout)
                decision = answer.get("decision") or answer["hookSpecificOutput"]["permissionDecision"]
                assert decision == "deny", (agent, answer)
    finally:  # Codex has no SessionEnd: its server would wait out its idle time
        monkeypatch.setenv("XDG_RUNTIME_DIR", elsewhere["runtime"])
        if status(str(clone.resolve())) is not None:
            subprocess.run([sys.executable, "-m", "bgc", "serve", "--stop", "--dir", str(clone)], env=env, timeout=TIMEOUT)


@pytest.mark.parametrize("interpreter", ["gone", "another Python, without bgc"])
def test_a_machines_own_commands_block_on_another_machine(elsewhere: dict[str, Any], interpreter: str) -> None:
    """A ``settings.local.json`` that travelled with the project (it should not: it is one
    machine's) names an interpreter the other machine does not have, or has without bgc: each of
    its commands blocks there, naming the fix, whatever ``PATH`` holds."""
    clone = elsewhere["clone"]
    other = "/gone/bin/python3" if interpreter == "gone" else elsewhere["other_python"]
    env = {**os.environ, "PATH": BASE_PATH, "BGC_CACHE_DIR": elsewhere["cache"], "XDG_RUNTIME_DIR": elsewhere["runtime"]}
    mine = [entry for entry in _registered(clone) if entry[1] == AGENTS[entry[0]].setup.local]
    assert mine
    for agent, _, event, command in mine:
        done = _run_as_the_agent(agent, event, command.replace(shlex.quote(sys.executable), shlex.quote(other)), clone, env,
                                 elsewhere["home"])
        _blocked(done, f"{interpreter}: {agent} {event}")
        assert b"register the bgc you use with bgc init" in done.stderr and b"exit 127" not in done.stderr


@pytest.mark.parametrize("team", [False, True])
def test_the_mcp_proxy_starts_or_blocks(tmp_path: Path, team: bool) -> None:
    """`bgc init mcp` puts a server behind the proxy through the same launchers: in a clone where
    bgc cannot start, the client's command exits 2 with the reason (the client shows the server as
    failed: its tools are unavailable, never reached unguarded); where it can, the proxy runs."""
    project = tmp_path / "project"
    (project / ".claude" / "bgc").mkdir(parents=True)
    shutil.copy(Path(__file__).parents[2] / "policies" / "default.bgp", project / ".claude" / "bgc" / "policy.bgp")
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"files": {"command": "cat", "args": []}}}))
    done = subprocess.run([sys.executable, "-m", "bgc", "init", "mcp", ".mcp.json", "-p", ".claude/bgc/policy.bgp",
                           *(["--team"] if team else [])], cwd=project, capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["files"]
    argv = [server["command"], *server["args"]]
    assert launcher.parse(argv) is not None and (str(project) not in json.dumps(server)) == team
    clone = tmp_path / "clone"
    shutil.copytree(project, clone)
    if not team:  # the interpreter it names, gone on that machine
        argv = [word.replace(sys.executable, "/gone/bin/python3") for word in argv]
    blocked = subprocess.run(argv, cwd=clone, env={**os.environ, "PATH": BASE_PATH}, stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=TIMEOUT)  # fmt: skip
    _blocked(blocked, "mcp")
    if team:  # with bgc on PATH it starts, finds the policy in the project, and ends with its input
        works = subprocess.run(argv, cwd=clone, env={**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{BASE_PATH}"},
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)  # fmt: skip
        assert works.returncode in (0, 2) and b"bgc: blocked" not in works.stderr, works
