"""Shell commands decided by what they touch, through `bgc hook claude-code` run as Claude Code
runs it (the command `bgc init` wrote, through `sh -c`, the hook input as JSON on stdin).

The project's policy is this test's own: reads allowed, writes to source and tests allowed, the
build directory asked, the release directory denied, base.bgp's secrets and VCS rules, and no
rule about any command's argv. So a command of the catalogue is decided by the files it touches,
and every other command is denied (no rule allows it). Every answer is written by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TIMEOUT = 120

POLICY = """\
include "base.bgp"
include "claude-code.bgp"

allow fs:read:/** because "reading the project"
allow fs:write:/src/**, /tests/** because "source and tests"
ask fs:write:/build, /build/** because "build output needs a look"
deny fs:write:/dist, /dist/** because "release artefacts are built by CI"
"""

# (command, answer, a text the reason must hold)
CASES: list[tuple[str, str, str]] = [
    ("cat src/app.py", "allow", "fs:read:/src/app.py: granted by policy.bgp:4"),
    ("head -n 5 src/app.py | wc -l", "allow", "fs:read:/src/app.py"),
    ("cat .env", "deny", "fs:read:/.env: denied by base.bgp"),
    ("cat src/app.py .e''nv", "deny", "fs:read:/.env"),
    ("sed -n 1,3p .env", "deny", "fs:read:/.env"),
    ("grep -rn TOKEN .", "deny", "/.env"),  # the tree holds .env (and .git)
    ("grep -rn a src", "allow", "fs:read:/src/**"),
    ("ls -la && git status && git log --oneline -3", "allow", "fs:read:/"),
    ("find . -name '*.py'", "allow", "fs:read:/"),
    ("find . -delete", "deny", "fs:write:/"),  # not read-only: it writes the whole tree
    ("rm -rf build", "ask", "`rm -rf build` (fs:write:/build, ask policy.bgp:6)"),
    ("rm -rf dist", "deny", "release artefacts are built by CI"),
    ("rm -rf src/old", "allow", "fs:write:/src/old"),
    ("mkdir -p src/new && touch src/new/x.py", "allow", "fs:write:/src/new/x.py"),
    ("cp src/app.py tests/app_copy.py", "allow", "fs:write:/tests/app_copy.py"),
    ("mv src/app.py README.md", "deny", "proc:exec:mv"),  # no rule allows writing /README.md: the argv's answer
    ("cat src/app.py > /tmp/outside", "deny", "host:write:/tmp/outside"),
    ("python -c 'print(1)'", "deny", "proc:exec:python"),  # not in the catalogue: its argv, which no rule allows
    ("cat src/app.py | sh", "deny", "proc:exec:sh"),
    ("echo done", "allow", "touches no file"),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("catalogue-hook")
    root = base / "project"
    for name, text in {"src/app.py": "print('a')\n", ".env": "TOKEN=x\n", "build/out.o": "o\n", "dist/app.whl": "w\n",
                       "tests/test_app.py": "def test(): pass\n"}.items():  # fmt: skip
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / ".git").mkdir()
    env = {**os.environ, "BGC_CACHE_DIR": str(base / "cache")}
    done = subprocess.run([sys.executable, "-m", "bgc", "init", "claude-code"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (root / ".claude" / "bgc" / "policy.bgp").write_text(POLICY)  # this test's policy in place of the starter
    settings = json.loads((root / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    return {"root": str(root.resolve()), "command": command, "cache": str(base / "cache")}


def _hook(project: dict[str, str], command: str) -> tuple[str, str]:
    hook_input: dict[str, Any] = {
        "session_id": "s", "transcript_path": "/dev/null", "cwd": project["root"], "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "t",
    }  # fmt: skip
    env = {**os.environ, "CLAUDE_PROJECT_DIR": project["root"], "BGC_CACHE_DIR": project["cache"]}
    done = subprocess.run(["sh", "-c", project["command"] + " --store none"], input=json.dumps(hook_input).encode(),
                          env=env, cwd=project["root"], capture_output=True, timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    return output["permissionDecision"], output["permissionDecisionReason"]


@pytest.mark.parametrize(("command", "answer", "reason"), CASES, ids=[case[0] for case in CASES])
def test_a_command_is_decided_by_what_it_touches(project: dict[str, str], command: str, answer: str, reason: str) -> None:
    got, why = _hook(project, command)
    assert (got, reason in why) == (answer, True), why
    assert Path(project["root"], "src", "app.py").exists()  # the hook decides; it runs nothing
