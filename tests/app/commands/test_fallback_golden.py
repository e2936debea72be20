"""Fallbacks as people see them (issue 29, item 1): golden files of every command that shows a
decision, on one policy that allows some commands and writes and asks about the rest
(``tests/golden/fallback/policy.bgp``) and the same intent written before fallbacks existed
(``old.bgp``, a catch-all ``ask``).

Run with BGC_UPDATE_GOLDEN=1 to rewrite ``tests/golden/fallback/*.txt`` after an intended
change, then review the diff like any other change to the product's face.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bgc.errors import ExitCode
from tests.samples import bgc

ROOT = Path(__file__).resolve().parents[3]
HERE = "tests/golden/fallback"
GOLDEN = ROOT / HERE
POLICY, OLD, ORDER, TESTS = (f"{HERE}/{name}" for name in ("policy.bgp", "old.bgp", "order.yaml", "policy.bgt.yaml"))
ATOMS = [
    "proc:exec:pytest/-x", "proc:exec:make", "proc:exec:sudo/ls", "proc:exec:git/push",
    "fs:write:/README.md", "fs:write:/src/a.py", "fs:write:/.git/HEAD",
]  # fmt: skip
COMMANDS = {
    "compile": (["compile", ORDER, "-p", POLICY], ExitCode.FINDINGS),
    "explain": (["explain", ORDER, "proc:exec:**", "-p", POLICY], ExitCode.FINDINGS),
    "explain-make": (["explain", ORDER, "proc:exec:make", "-p", POLICY], ExitCode.FINDINGS),
    "explain-locked": (["explain", ORDER, "proc:exec:**", "-p", POLICY, "--mode", "locked"], ExitCode.FINDINGS),
    "check": (["check", POLICY, TESTS], ExitCode.OK),
    "check-old": (["check", OLD], ExitCode.FINDINGS),
    "test": (["test", TESTS, "--coverage"], ExitCode.OK),
    "diff": (["diff", OLD, POLICY], ExitCode.FINDINGS),
}


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")


def golden(name: str, text: str) -> str:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_output_matches_its_golden_file(name: str) -> None:
    args, code = COMMANDS[name]
    result = bgc(*args)
    assert result.exit_code == code, result.output
    assert result.stdout == golden(name, result.stdout)


def test_gate_lines_match_their_golden_file(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert bgc("compile", ORDER, "-p", POLICY, "-f", "json", "-o", str(plan), "--fail-on", "never").exit_code == 0
    result = bgc("gate", str(plan), *ATOMS)
    assert result.exit_code == ExitCode.DENIED, result.output
    assert result.stdout == golden("gate", result.stdout)
    answers = dict(line.split("\t")[1::-1] for line in result.stdout.splitlines())
    assert answers["proc:exec:pytest/-x"] == "allow" and answers["proc:exec:make"] == "ask"


def test_the_fixture_is_formatted() -> None:
    assert bgc("fmt", "--check", POLICY, OLD).exit_code == ExitCode.OK
