"""Shell commands a rule allows only ``in sandbox``, end to end: the hook `bgc init` registers,
run as each agent runs it (through a shell, the hook input as JSON on stdin), answers allow with
the command rewritten to run under ``bgc sandbox``; the rewritten command then runs for real
(through a shell, in the project, as the agent would run it) under bubblewrap, and does what the
policy grants and nothing more. Where the agent's answer cannot carry a rewritten command (a
``PermissionRequest``), the command is not allowed. The ledger records the confinement.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bgc.runtime.calls import CONFINED

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)")

TIMEOUT = 120
SECRET = "sk-test-do-not-read"

POLICY = """\
include "base.bgp"
include "{mapping}"

allow fs:read:/** because "reading the project"
allow fs:write:/src/** because "source"
allow proc:exec:python, python/** in sandbox because "python runs confined"
otherwise ask proc:exec:** because "a person decides the rest"
"""

SETTINGS = {
    "claude-code": (".claude/settings.local.json", "PreToolUse", "claude-code.bgp"),
    "gemini-cli": (".gemini/settings.json", "BeforeTool", "gemini-cli.bgp"),
    "codex": (".codex/hooks.json", "PreToolUse", "codex.bgp"),
}
SHELL_TOOL = {"claude-code": "Bash", "gemini-cli": "run_shell_command", "codex": "Bash"}
POLICY_DIR = {"claude-code": ".claude/bgc", "gemini-cli": ".gemini/bgc", "codex": ".codex/bgc"}


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    agent = request.param
    base = tmp_path_factory.mktemp(f"sandbox-hook-{agent}")
    root = base / "project"
    for name, text in {"src/app.py": "print('a')\n", "tests/test_app.py": "def test(): pass\n", ".env": f"TOKEN={SECRET}\n",
                       ".git/config": "[core]\n"}.items():  # fmt: skip
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    env = {**os.environ, "BGC_CACHE_DIR": str(base / "cache")}
    done = subprocess.run([sys.executable, "-m", "bgc", "init", agent], cwd=root, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    settings, event, mapping = SETTINGS[agent]
    (root / POLICY_DIR[agent] / "policy.bgp").write_text(POLICY.format(mapping=mapping))  # in place of the starter
    command = json.loads((root / settings).read_text())["hooks"][event][0]["hooks"][0]["command"]
    return {"agent": agent, "root": str(root.resolve()), "command": command, "event": event, "cache": str(base / "cache")}


def _hook(project: dict[str, str], command: str, event: str | None = None) -> dict[str, Any]:
    """The agent's answer (parsed stdout) for its shell tool running ``command``."""
    agent, root = project["agent"], project["root"]
    data: dict[str, Any] = {
        "session_id": "s", "transcript_path": "/dev/null", "cwd": root, "hook_event_name": event or project["event"],
        "tool_name": SHELL_TOOL[agent], "tool_input": {"command": command},
    }  # fmt: skip
    if agent == "gemini-cli":
        data["timestamp"] = "2026-12-02T09:00:00Z"
    else:
        data |= {"permission_mode": "default", "tool_use_id": "t"}
    env = {**os.environ, "CLAUDE_PROJECT_DIR": root, "GEMINI_PROJECT_DIR": root, "BGC_CACHE_DIR": project["cache"],
           "PATH": f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '/usr/bin:/bin')}"}  # Codex's hook: the bgc on PATH
    done = subprocess.run(["sh", "-c", project["command"]], input=json.dumps(data).encode(), env=env, cwd=root,
                          capture_output=True, timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def _confined(project: dict[str, str], command: str) -> tuple[str, str]:
    """The command the agent is told to run instead of ``command``, and the answer's reason."""
    answer = _hook(project, command)
    if project["agent"] == "gemini-cli":
        assert answer["decision"] == "allow", answer
        return answer["hookSpecificOutput"]["tool_input"]["command"], answer["reason"]
    output = answer["hookSpecificOutput"]
    assert output["permissionDecision"] == "allow", output
    return output["updatedInput"]["command"], output["permissionDecisionReason"]


def _run(project: dict[str, str], command: str) -> subprocess.CompletedProcess[str]:
    """``command`` run as the agent runs a shell command: through a shell, in the project, with the
    user's environment (a cloud credential among it)."""
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY": SECRET}
    return subprocess.run(["bash", "-c", command], cwd=project["root"], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)  # fmt: skip


def test_a_confined_command_runs_with_what_the_policy_grants(project: dict[str, str]) -> None:
    rewritten, reason = _confined(project, "python -c \"open('src/out.txt', 'w').write('made')\"")
    assert CONFINED in reason and " sandbox " in rewritten and "--root" in rewritten
    done = _run(project, rewritten)
    assert done.returncode == 0, done.stderr
    assert Path(project["root"], "src", "out.txt").read_text() == "made"


@pytest.mark.parametrize(
    "script",
    [
        "open('tests/new.py', 'w').write('x')",  # a write outside the grants
        "open('.git/config', 'a').write('[x]')",  # VCS internals
        "import os; os.makedirs('src/.git'); open('src/.git/config', 'w').write('x')",  # a new .git below a writable directory
    ],
)
def test_a_confined_command_cannot_write_past_the_grants(project: dict[str, str], script: str) -> None:
    rewritten, _ = _confined(project, f'python -c "{script}"')
    before = sorted(str(path) for path in Path(project["root"]).rglob("*") if ".bgc" not in path.parts)
    done = _run(project, rewritten)
    assert done.returncode != 0
    assert "bgc sandbox: the command exited" in done.stderr  # the failure names the sandbox, no prompt
    after = sorted(str(path) for path in Path(project["root"]).rglob("*") if ".bgc" not in path.parts)
    assert after == before and Path(project["root"], ".git", "config").read_text() == "[core]\n"


def test_a_confined_command_reads_no_secret(project: dict[str, str]) -> None:
    script = "import os, sys; print(os.environ.get('AWS_SECRET_ACCESS_KEY')); sys.stdout.write(open('.env').read())"
    rewritten, _ = _confined(project, f'python -c "{script}"')
    done = _run(project, rewritten)
    assert SECRET not in done.stdout + done.stderr
    assert done.stdout.startswith("None\n")


def test_only_the_command_as_written_runs(project: dict[str, str]) -> None:
    """The agent's words go to the confined shell as one argument: nothing in them runs outside."""
    marker = Path(project["root"], "src", "escaped")
    rewritten, _ = _confined(project, f"python -c 'print(1)' ; python -c \"open('{marker}', 'w')\" '$(touch /tmp/x)' \"'\"")
    done = _run(project, rewritten)
    assert done.returncode == 0, done.stderr
    assert marker.exists()  # src/ is granted: it ran, confined; the quoting survived as the agent wrote it


def test_a_command_partly_asked_is_not_confined_but_asked(project: dict[str, str]) -> None:
    answer = _hook(project, "python -c 'print(1)' && git push")
    text = json.dumps(answer)
    assert "sandbox" not in text.replace("in sandbox", "")  # no rewritten command
    effect = answer.get("decision") or answer.get("hookSpecificOutput", {}).get("permissionDecision")
    assert effect in ("ask", "deny")  # Codex's PreToolUse cannot ask: a deny that names the approval


def test_an_answer_that_cannot_carry_the_rewrite_does_not_allow(project: dict[str, str]) -> None:
    if project["agent"] == "gemini-cli":
        pytest.skip("Gemini CLI has no PermissionRequest event")
    answer = _hook(project, "python -c 'print(1)'", event="PermissionRequest")
    assert answer == {}  # no decision: the agent asks its person, as for any ask


def test_the_ledger_records_the_confinement(project: dict[str, str]) -> None:
    _confined(project, "python -c 'print(2)'")
    done = subprocess.run([sys.executable, "-m", "bgc", "log", "show", "--format", "json", "--decision", "allow"],
                          cwd=project["root"], capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    entries = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(entry["reason"].startswith(CONFINED) for entry in entries), entries
