"""`bgc init claude-code`: the starter policy and the hook, merged into what is there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXISTING = """{
  "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(.env)"]},
  "env": {"A": "1"},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}],
    "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}]
  }
}
"""


def init(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bgc", "init", "claude-code", "--dir", str(project)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "BGC_CACHE_DIR": str(project.parent / "cache")},
    )


def test_merges_the_hook_keeping_everything_and_is_idempotent(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    settings.write_text(EXISTING)
    first = init(project)
    assert first.returncode == 0, first.stderr
    merged = json.loads(settings.read_text())
    before = json.loads(EXISTING)
    assert merged["permissions"] == before["permissions"] and merged["env"] == before["env"]
    assert merged["hooks"]["PostToolUse"] == before["hooks"]["PostToolUse"]
    pre = merged["hooks"]["PreToolUse"]
    assert pre[0] == before["hooks"]["PreToolUse"][0] and len(pre) == 2
    assert pre[1]["matcher"] == "*" and pre[1]["hooks"][0]["type"] == "command" and pre[1]["hooks"][0]["timeout"] == 30
    assert pre[1]["hooks"][0]["command"].endswith('hook claude-code -p "$CLAUDE_PROJECT_DIR/.claude/bgc/policy.bgp"')
    assert (project / ".claude" / "settings.json.bak").read_text() == EXISTING
    for name in ("policy.bgp", "base.bgp", "claude-code.bgp"):
        assert (project / ".claude" / "bgc" / name).is_file()
    written = settings.read_bytes()
    second = init(project)
    assert second.returncode == 0 and settings.read_bytes() == written
    assert "unchanged .claude/settings.json (the hook is already there)" in second.stdout
    assert second.stdout.count("unchanged .claude/bgc/") == 3


def test_a_fresh_project_and_an_edited_policy(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert init(project).returncode == 0
    assert not (project / ".claude" / "settings.json.bak").exists()  # nothing was there to keep
    policy = project / ".claude" / "bgc" / "policy.bgp"
    policy.write_text(policy.read_text() + "allow fs:write:/lib/** because \"mine\"\n")
    again = init(project)
    assert again.returncode == 0 and "kept .claude/bgc/policy.bgp" in again.stdout
    assert "mine" in policy.read_text()


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
    assert done.returncode == 2 and where in done.stderr, done.stderr
    assert settings.read_text() == text
    assert sorted(os.listdir(project / ".claude")) == ["settings.json"]  # no policy, no backup
