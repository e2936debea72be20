"""An agent that runs `bgc mode set` through its shell tool is refused, whatever the policy
allows it to run, and the attempt is in the ledger as a refused mode switch: the hook run as
Claude Code runs it (through `sh -c`, JSON on stdin)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.samples import bgc

ROOT = Path(__file__).resolve().parents[2]
POLICY = """\
include "claude-code.bgp"
allow proc:exec:bgc/**, python3/-m/bgc/**, python/-m/bgc/**, "∕usr∕local∕bin∕bgc/**" because "the agent may run bgc"
mode release {
    allow fs:write:/dist/**
}
"""


@pytest.fixture
def project(tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "proj"
    root.mkdir()
    for name in ("claude-code.bgp", "agents.bgp"):
        (root / name).write_bytes((ROOT / "policies" / name).read_bytes())
    (root / "policy.bgp").write_text(POLICY)
    return {"root": str(root), "policy": str(root / "policy.bgp"), "store": str(root / ".bgc" / "kernel.db"),
            "cache": str(tmp_path / "cache")}  # fmt: skip


def run_bash(project: dict[str, str], command: str) -> tuple[str, str]:
    data = {"session_id": "sess-1", "transcript_path": "/dev/null", "cwd": project["root"], "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": "toolu_1"}  # fmt: skip
    hook = shlex.join([sys.executable, "-I", "-m", "bgc", "hook", "claude-code", "-p", project["policy"]])  # as init registers it
    env = {"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": project["root"], "BGC_CACHE_DIR": project["cache"]}
    done = subprocess.run(["sh", "-c", hook], input=json.dumps(data).encode(), capture_output=True, env=env,
                          cwd=project["root"], timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    return output["permissionDecision"], output["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("command", "mode"),
    [
        ("bgc mode set sess-1 release --key alice", "release"),
        ("bgc mode set --key alice sess-1 release", "release"),
        ("python3 -m bgc mode set sess-1 release", "release"),
        ("/usr/local/bin/bgc mode set sess-1 release", "release"),
        ("bgc mode show sess-1 && bgc mode set sess-1 release", "release"),
        ("bgc mode set", "?"),
    ],
)
def test_an_agent_running_mode_set_is_refused_and_recorded(project: dict[str, str], command: str, mode: str) -> None:
    assert run_bash(project, "bgc mode show sess-1")[0] == "allow"  # the policy lets the agent run bgc
    effect, reason = run_bash(project, command)
    assert effect == "deny" and "never the agent's" in reason
    shown = bgc("log", "show", "--store", project["store"], "--format", "json", "--kind", "mode")
    entries: list[dict[str, Any]] = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(entry["decision"], entry["session"], entry["reason"].rsplit(": ", 1)[1]) for entry in entries] == [
        ("refused", "sess-1", mode)
    ]
