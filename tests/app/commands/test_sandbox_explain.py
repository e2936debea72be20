"""``bgc sandbox --explain``: the mapping as people read it (a golden file), and the command's
refusals that need no sandbox to show.

Run with BGC_UPDATE_GOLDEN=1 to rewrite the golden file after an intended change.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from bgc.app.commands.sandbox import plans_for
from bgc.app.render.sandbox import explain_text
from bgc.runtime.sandbox import mapping
from tests.samples import bgc

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "sandbox" / "explain.txt"
POLICY = """\
deny fs:*:/**/.env, /**/*.pem because "secrets"
deny fs:*:/.git, /.git/** because "VCS internals"
allow fs:read:/**
allow fs:write:/src/**, /tests/**
allow env:read:EDITOR, GITHUB_TOKEN
"""
NETWORK = "allow net:connect:https://pypi.org/**, http://127.0.0.1:8080/api/** because \"packages and the test API\"\n"


def test_explain_golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    for directory in ("src/.git", "tests", "docs", ".git"):
        (project / directory).mkdir(parents=True)
    for name in (".env", "src/server.pem", "src/app.py", ".git/config", "docs/.env"):
        (project / name).write_text("x")
    (project / "src" / "generated.py").write_text("x")
    (project / "policy.bgp").write_text(POLICY + NETWORK)
    monkeypatch.chdir(project)
    plans = plans_for(None, "policy.bgp", None)
    environ = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "AWS_SECRET_ACCESS_KEY": "x", "GITHUB_TOKEN": "t", "EDITOR": "vi"}
    confinement, _ = mapping.build(plans, str(project), environ=environ)  # type: ignore[arg-type]
    fixed = [
        m
        for m in confinement.mounts
        if m.kind in ("proc", "dev", "tmpfs", "dir") or mapping.inside(m.path, str(project))
    ]
    text = explain_text(dataclasses.replace(confinement, mounts=tuple(fixed))).replace(str(project), "/work/project")
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_explain_lists_the_toolchain_and_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "policy.bgp").write_text(POLICY)
    monkeypatch.chdir(tmp_path)
    result = bgc("sandbox", "-p", "policy.bgp", "--explain")
    assert result.exit_code == 0, result.output
    assert "read-only                  /usr  (the toolchain)" in result.stdout
    assert "network: none" in result.stdout


def test_no_command_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "policy.bgp").write_text(POLICY)
    monkeypatch.chdir(tmp_path)
    result = bgc("sandbox", "-p", "policy.bgp")
    assert result.exit_code == 2
    assert "no command" in result.output


def test_a_network_grant_shows_the_proxy_and_no_resolver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The proxy outside resolves names: the sandbox sees no resolver configuration to use."""
    (tmp_path / "policy.bgp").write_text(POLICY + NETWORK)
    monkeypatch.chdir(tmp_path)
    result = bgc("sandbox", "-p", "policy.bgp", "--explain")
    assert result.exit_code == 0, result.output
    assert "network: only through the proxy (127.0.0.1:3128" in result.stdout
    assert "/etc/resolv.conf" not in result.stdout and "/etc/hosts" not in result.stdout
