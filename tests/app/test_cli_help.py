"""Every command explains itself like a CLI (no Python types), with the one exit-code table, and
completes in a real shell."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from bgc.app.cli import app
from bgc.errors import ExitCode, exit_code_rows
from tests.samples import bgc

COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
GROUPS = {name for name, command in typer.main.get_command(app).commands.items() if hasattr(command, "commands")}  # type: ignore[attr-defined]
BIN = Path(sys.executable).parent

PYTHON_TYPES = re.compile(r"<[a-z_]+(\[[^\]]*\])?>|\{[a-z_]+\}|\b(?:list|dict|tuple|Optional)\[|\bNoneType\b")
"""What typer prints when it shows Python instead of a CLI: ``<bool>``, ``<list[str]>``,
``{files}...``, ``list[str]``."""


def help_text(*args: str) -> str:
    result = bgc(*args, "--help", env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_command_list_is_what_the_readme_documents() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert {"check", "compile", "digest", "explain", "fmt", "gate", "match", "test", "order"} <= set(COMMANDS)
    for command in COMMANDS:
        assert f"| `bgc {command}" in readme, f"README's command table lacks {command}"


def test_top_level_help_lists_every_command_and_the_exit_codes() -> None:
    text = help_text()
    for command in COMMANDS:
        assert command in text
    flat = " ".join(text.split())
    for code, meaning in exit_code_rows():
        words = " ".join(meaning.replace("`", "").split())
        assert f"{code} {words}" in flat, code


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_reads_like_a_cli(command: str) -> None:
    text = help_text(command)
    assert "Usage: bgc " + command in text
    assert "Exit" in text or command in GROUPS  # each documents its exit codes (a group's subcommands do)
    assert not PYTHON_TYPES.search(text), PYTHON_TYPES.search(text)




@pytest.mark.parametrize("command", [("order", "new"), ("init", "claude-code"), ("init", "gemini-cli"), ("init", "codex"), ("import", "claude-code")])
def test_subcommand_help_reads_like_a_cli(command: tuple[str, str]) -> None:
    text = help_text(*command)
    assert f"Usage: bgc {' '.join(command)}" in text and "Exit" in text
    assert not PYTHON_TYPES.search(text), PYTHON_TYPES.search(text)


def test_the_type_check_catches_what_typer_0_27_printed() -> None:
    """The refusal above must be able to fail: these are lines typer 0.27+ renders."""
    for line in ("│ --check  <bool>  Write nothing", "Usage: bgc fmt [OPTIONS] {files}...", "atoms...  <list[str]>"):
        assert PYTHON_TYPES.search(line), line


def test_unknown_command_and_option_are_usage_errors() -> None:
    assert bgc("frobnicate").exit_code == 2
    assert bgc("compile", "--bogus", "x.yaml").exit_code == 2
    assert bgc("compile", "--color", "sometimes", "x.yaml").exit_code == 2


def test_exit_codes_are_distinct_and_documented_once() -> None:
    codes = [int(code) for code in ExitCode]
    assert len(set(codes)) == len(codes) and all(code.meaning for code in ExitCode)
    assert ExitCode.ASK not in (ExitCode.OK, ExitCode.FINDINGS, ExitCode.BAD_INPUT)
    assert ExitCode.DENIED not in (ExitCode.OK, ExitCode.FINDINGS, ExitCode.BAD_INPUT, ExitCode.ASK)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.e2e
def test_completion_works_in_bash() -> None:
    """The script ``--show-completion`` prints, sourced in a real bash, completes commands and options."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    script = subprocess.run(["bgc", "--show-completion", "bash"], capture_output=True, text=True, env=env, timeout=60)
    assert script.returncode == 0 and "complete" in script.stdout
    probe = (
        script.stdout
        + '\nCOMP_WORDS=(bgc com); COMP_CWORD=1; _bgc_completion bgc; echo "${COMPREPLY[@]}"'
        + '\nCOMP_WORDS=(bgc fmt --ch); COMP_CWORD=2; _bgc_completion bgc; echo "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "--norc", "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.splitlines() == ["compile", "--check"], done.stderr


def test_every_in_process_cli_test_goes_through_the_one_runner() -> None:
    """A test building its own runner could pass while the command printed a traceback."""
    here = Path(__file__).parents[1]
    allowed = {"samples.py", Path(__file__).name}
    offenders = [
        path.name for path in sorted(here.rglob("*.py")) if path.name not in allowed and "CliRunner" in path.read_text()
    ]
    assert offenders == []
