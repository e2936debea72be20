"""Every command explains itself and its exit codes; none shows a traceback for its help."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.samples import bgc

COMMANDS = ["digest", "compile", "explain", "gate", "check", "test", "fmt", "match"]


def test_top_level_help_lists_every_command() -> None:
    result = bgc("--help")
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help(command: str) -> None:
    result = bgc(command, "--help", env={"COLUMNS": "100"})
    assert result.exit_code == 0
    assert "Usage: bgc " + command in result.stdout
    assert "Exit" in result.stdout  # each documents its exit codes


def test_unknown_command_and_option_are_usage_errors() -> None:
    assert bgc("frobnicate").exit_code == 2
    assert bgc("compile", "--bogus", "x.yaml").exit_code == 2



def test_every_in_process_cli_test_goes_through_the_one_runner() -> None:
    """A test building its own runner could pass while the command printed a traceback."""
    here = Path(__file__).parent
    allowed = {"samples.py", Path(__file__).name}
    offenders = [
        path.name for path in sorted(here.rglob("*.py")) if path.name not in allowed and "CliRunner" in path.read_text()
    ]
    assert offenders == []
