"""``--color`` on ``bgc check`` and ``bgc test``: golden files of the coloured and the plain
report, through typer and through the fast path (``check``), and the environment honoured.

Run with BGC_UPDATE_GOLDEN=1 to rewrite ``tests/golden/color/*.txt`` after an intended change;
the escape character is written ``\\e`` there, so a review reads the styles.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bgc.errors import ExitCode
from tests.samples import bgc

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "color"
FIXTURE = "tests/golden/color/colors.bgp"
TESTS = "tests/golden/color/colors.bgt.yaml"
CLEAN = "policies/default.bgp"
COMMANDS = {
    "check": ["check", FIXTURE, TESTS],
    "check-clean": ["check", CLEAN],
    "test": ["test", TESTS, "--coverage"],
}
"""A report with an error, warnings, a failing and a passing test; a clean one (green)."""


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


def shown(text: str) -> str:
    return text.replace("\x1b", "\\e")


def golden(name: str, text: str) -> str:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        path.write_text(shown(text), encoding="utf-8")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("color", ["always", "never"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_report_matches_its_golden_file(name: str, color: str) -> None:
    result = bgc(*COMMANDS[name], "--color", color)
    assert result.exit_code == (ExitCode.OK if name == "check-clean" else ExitCode.FINDINGS), result.output
    assert shown(result.stdout) == golden(f"{name}-{color}", result.stdout)
    assert ("\x1b[" in result.stdout) is (color == "always")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_plain_is_the_coloured_report_without_its_styles(name: str) -> None:
    """Painting adds styles around escaped text and nothing else: stripped of its SGR codes the
    coloured report is the plain one, character for character."""
    import re

    coloured = bgc(*COMMANDS[name], "--color", "always").stdout
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == bgc(*COMMANDS[name], "--color", "never").stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_auto_follows_no_color_and_force_color(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    args = COMMANDS[name]
    never, always = bgc(*args, "--color", "never").stdout, bgc(*args, "--color", "always").stdout
    assert bgc(*args).stdout == never  # auto, and the in-process runner's stdout is no terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert bgc(*args).stdout == always
    monkeypatch.setenv("NO_COLOR", "1")  # NO_COLOR wins over FORCE_COLOR under auto
    assert bgc(*args).stdout == never
    assert bgc(*args, "--color", "always").stdout == always  # the flag wins over both


def test_machine_formats_are_never_coloured() -> None:
    for args in (["check", FIXTURE, "--format", "json"], ["test", TESTS, "--format", "junit"]):
        assert "\x1b[" not in bgc(*args, "--color", "always").stdout


@pytest.mark.parametrize("color", ["always", "never"])
@pytest.mark.e2e
def test_fast_path_check_prints_the_same_golden_report(color: str) -> None:
    """``bgc check --color`` is a plain form the fast path runs without typer."""
    probe = (
        "import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', *sys.argv[1:]]\n"
        "try:\n    main()\nfinally:\n"
        "    print('HEAVY', sorted(m for m in ('typer', 'click', 'rich') if m in sys.modules), file=sys.stderr)\n"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR")}
    done = subprocess.run(
        [sys.executable, "-c", probe, *COMMANDS["check"], "--color", color],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert "HEAVY []" in done.stderr, done.stderr
    assert done.returncode == ExitCode.FINDINGS
    assert shown(done.stdout) == golden(f"check-{color}", done.stdout)
