"""Every command explains itself and its exit codes; none shows a traceback for its help."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bgc.cli import app

runner = CliRunner()
COMMANDS = ["digest", "compile", "explain", "gate", "check", "test", "fmt", "match"]


def test_top_level_help_lists_every_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    assert "Usage: bgc " + command in result.stdout
    assert "Exit" in result.stdout  # each documents its exit codes


def test_unknown_command_and_option_are_usage_errors() -> None:
    assert runner.invoke(app, ["frobnicate"]).exit_code == 2
    assert runner.invoke(app, ["compile", "--bogus", "x.yaml"]).exit_code == 2
