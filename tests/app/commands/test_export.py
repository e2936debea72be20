"""``bgc export``: each target's document for the starter and default policies (golden files,
with what the export narrowed), and the command's files, exit codes and refusals.

Run with BGC_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from bgc.app.commands.export import _report
from bgc.app.commands.sandbox import plans_for
from bgc.runtime.sandbox import exports, mapping, prove
from bgc.runtime.sandbox.mapping import Mount
from tests.samples import bgc

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "export"
POLICIES = {"starter": ROOT / "policies" / "claude-code-starter.bgp", "default": ROOT / "policies" / "default.bgp"}
TREE = ("src/app.py", "src/.env", "tests/test_app.py", "docs/index.md", ".env", ".git/config", ".bgc/kernel.db",
        "Makefile", "package.json", "migrations/0001.py")  # fmt: skip
SHOWN = "/work/project"


def make_project(root: Path) -> str:
    for name in TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    return os.path.realpath(root)


@pytest.mark.parametrize("target", sorted(exports.TARGETS))
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_export_golden(tmp_path: Path, policy: str, target: str) -> None:
    """The document and the report for a fixed project; the host's toolchain is fixed to /usr so
    the file is the same on every machine."""
    project = make_project(tmp_path / "project")
    plans = plans_for(None, str(POLICIES[policy]), None)
    confinement, entries = mapping.build(plans, project, environ={})  # type: ignore[arg-type]
    inside = tuple(m for m in confinement.mounts if mapping.inside(m.path, project) or m.kind in ("proc", "dev", "tmpfs", "dir"))
    confinement = dataclasses.replace(confinement, mounts=(Mount("ro", "/usr", "the toolchain"), *inside))
    prove.prove(confinement, plans, entries)  # type: ignore[arg-type]
    done = exports.export(target, confinement, plans, entries)  # type: ignore[arg-type]
    text = (done.text + "\n# what the export narrowed or cannot refuse\n" + "\n".join(_report(done)) + "\n").replace(project, SHOWN)
    golden = GOLDEN / f"{policy}-{target}.txt"
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


POLICY = """\
deny fs:*:/**/.env because "secrets"
allow fs:read:/**
allow fs:write:/src/**
allow net:connect:https://pypi.org/**
"""


def test_writes_the_targets_file_and_lists_what_it_narrowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_project(tmp_path)
    (tmp_path / "policy.bgp").write_text(POLICY)
    monkeypatch.chdir(tmp_path)
    result = bgc("export", "--target", "sandbox-runtime", "-p", "policy.bgp")
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / ".bgc" / "srt-settings.json").read_text())
    assert written["network"]["allowedDomains"] == ["pypi.org:443"]
    assert result.stdout.startswith(f"wrote {os.path.realpath(tmp_path)}/.bgc/srt-settings.json")
    result = bgc("export", "--target", "codex", "-p", "policy.bgp")
    assert result.exit_code == 1  # narrower than the plan: read-only, no network
    assert "narrowed: write " in result.stdout and (tmp_path / ".codex" / "config.toml").read_text().startswith("# Written by")


def test_stdout_carries_the_document_and_stderr_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_project(tmp_path)
    (tmp_path / "policy.bgp").write_text(POLICY)
    monkeypatch.chdir(tmp_path)
    result = bgc("export", "-t", "seatbelt", "-p", "policy.bgp", "-o", "-")
    assert result.exit_code == 1, result.output  # no network in a profile
    assert result.stdout.startswith("; Written by `bgc export --target seatbelt`")
    assert "note: untested on a real Mac" in result.stderr
    assert not (tmp_path / ".bgc" / "seatbelt.sb").exists()


def test_claude_code_settings_keep_everything_but_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_project(tmp_path)
    (tmp_path / "policy.bgp").write_text(POLICY)
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    before = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "bgc hook"}]}]}, "sandbox": {"enabled": False}}
    settings.write_text(json.dumps(before))
    monkeypatch.chdir(tmp_path)
    result = bgc("export", "-t", "claude-code", "-p", "policy.bgp")
    assert result.exit_code == 1, result.output  # the working directory: /src's grant dropped
    after = json.loads(settings.read_text())
    assert after["hooks"] == before["hooks"] and after["sandbox"]["enabled"] is True
    assert json.loads((tmp_path / ".claude" / "settings.json.bak").read_text()) == before


def test_refusals_name_the_file_and_write_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_project(tmp_path)
    (tmp_path / "policy.bgp").write_text("allow fs:read:/**\nallow fs:write:/src/[\n")
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("[1, 2]")
    monkeypatch.chdir(tmp_path)
    result = bgc("export", "-t", "sandbox-runtime", "-p", "policy.bgp")
    assert result.exit_code == 2
    assert "policy.bgp:2:" in result.output and "Traceback" not in result.output
    (tmp_path / "policy.bgp").write_text(POLICY)
    result = bgc("export", "-t", "claude-code", "-p", "policy.bgp")
    assert result.exit_code == 2 and ".claude/settings.json:1:1" in result.output
    assert settings.read_text() == "[1, 2]" and not (tmp_path / ".claude" / "settings.json.bak").exists()
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model = "mine"\n')
    result = bgc("export", "-t", "codex", "-p", "policy.bgp")
    assert result.exit_code == 2 and "bgc did not write" in result.output
    assert (tmp_path / ".codex" / "config.toml").read_text() == 'model = "mine"\n'
    result = bgc("export", "-t", "nope", "-p", "policy.bgp")
    assert result.exit_code == 2
    result = bgc("export", "-t", "codex", "-p", "policy.bgp", "--runtime", str(tmp_path / "src"))
    assert result.exit_code == 2 and "outside the project" in result.output
