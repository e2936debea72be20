"""Every command explains itself like a CLI (no Python types), with the one exit-code table, and
completes in a real shell: the same under every typer the dependency range admits."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import pytest
import typer

from bgc.app.cli import app
from bgc.app.cli_base import Group
from bgc.errors import ExitCode, exit_code_rows
from tests.samples import bgc

COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
BIN = Path(sys.executable).parent
WIDE = {"COLUMNS": "200", "NO_COLOR": "1"}

PYTHON_TYPES = re.compile(
    r"(?<!\S)(?:<[a-z_]+(\[[^\]]*\])?>|<[^<>\s]*\|[^<>\s]*>|\{[a-z_]+\}|\{[A-Z][A-Z_.]*\})(?=\s|\.\.\.|$)"
    r"|\b(?:list|dict|tuple|Optional)\[|\bNoneType\b"
)
"""What typer prints when it shows Python instead of a CLI, as a word of its own: ``<bool>``,
``<list[str]>``, ``<claude-code|codex>``, ``{files}...``, ``{REQUEST}``, ``list[str]`` (prose may
say ``projects.<path>.mcpServers``)."""


def help_text(*args: str) -> str:
    result = bgc(*args, "--help", env=WIDE)
    assert result.exit_code == 0, result.output
    return result.stdout


def screens() -> dict[str, tuple[tuple[str, ...], Any, Any]]:
    """Every help screen (the top, each command, each group's commands): its words, the command and
    a context, reached as click reaches them (``get_command``), so each parameter is as shown."""
    root = typer.main.get_command(app)
    found = [((), root, root.make_context("bgc", [], resilient_parsing=True))]
    for words, group, ctx in found:
        for name in getattr(group, "commands", {}):
            command = group.get_command(ctx, name)
            found.append(((*words, name), command, command.make_context(name, [], parent=ctx, resilient_parsing=True)))
    return {" ".join(words) or "bgc": (words, command, ctx) for words, command, ctx in found}


SCREENS = screens()


def expected_usage_and_rows(words: tuple[str, ...], command: Any, ctx: Any) -> tuple[str, list[re.Pattern[str]]]:
    """The usage line and a pattern per parameter's row, as click shows them: an argument by its
    metavar and then its help, an option by its names, its metavar (none for a flag), its help."""
    params = [param for param in command.get_params(ctx) if not param.hidden]
    arguments = [param.metavar for param in params if param.param_type_name == "argument"]
    group = ["COMMAND [ARGS]..."] if hasattr(command, "commands") else []
    usage = " ".join(["Usage: bgc", *words, "[OPTIONS]", *arguments, *group])
    rows = []
    for param in params:
        first_word = re.escape((param.help or "").split()[0].strip("`*"))
        if param.param_type_name == "argument":
            rows.append(re.compile(rf"│[ *]+{re.escape(param.metavar)} +{first_word}"))
            continue
        long, short = [name for name in param.opts if name.startswith("--")], [name for name in param.opts if not name.startswith("--")]
        shown = " +".join(re.escape(",".join(names)) for names in (long, short) if names)  # typer's two columns
        value = f" +{re.escape(param.metavar)}" if param.metavar else ""
        rows.append(re.compile(rf"│[ *]+{shown}{value} +{first_word}"))
    return usage, rows


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


@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_every_help_reads_like_a_cli(screen: str) -> None:
    """The usage line names the arguments by their metavars, and each row shows an argument's
    metavar, an option's metavar (nothing for a flag) and then the help: no type, no braces,
    nothing one typer adds and another does not (this runs under whichever typer is installed;
    .ci/run runs it under the lowest the range admits too)."""
    words, command, ctx = SCREENS[screen]
    text = help_text(*words)
    usage, rows = expected_usage_and_rows(words, command, ctx)
    assert usage in text, (usage, text)
    for row in rows:
        assert row.search(text), (row.pattern, text)
    assert not PYTHON_TYPES.search(text), PYTHON_TYPES.search(text)
    assert "Exit" in text or hasattr(command, "commands")  # each documents its exit codes (a group's commands do)


def test_every_group_is_a_bgc_group() -> None:
    """A group made without ``cls=Group`` (:func:`bgc.app.cli_base.command_group` makes them with
    it) would hand its commands out as typer renders them."""
    plain = [screen for screen, (_, command, _) in SCREENS.items() if hasattr(command, "commands") and not isinstance(command, Group)]
    assert plain == []


def test_a_parameter_without_a_metavar_is_shown_by_its_name() -> None:
    """What bgc's commands never leave out, a new one may: an argument is then shown by its name
    (``[NAME]`` when optional, ``...`` when it repeats), an option taking a value by its name
    whatever its type (text, number, choice, list), a flag by nothing."""
    demo = typer.Typer(cls=Group, rich_markup_mode="markdown", add_completion=False)

    @demo.callback()
    def _root() -> None:
        """A group, as bgc is."""

    @demo.command()
    def run(
        target: Annotated[str, typer.Argument(help="Target.")],
        agent: Annotated[Literal["a", "b"], typer.Argument(help="Agent.")],
        paths: Annotated[Optional[list[str]], typer.Argument(help="Paths.")] = None,
        level: Annotated[Literal["low", "high"], typer.Option(help="Level.")] = "low",
        tag: Annotated[Optional[list[str]], typer.Option(help="Tags.")] = None,
        retries: Annotated[int, typer.Option(help="Retries.")] = 3,
        store: Annotated[str, typer.Option(metavar="DB", help="Store.")] = "x",
        dry_run: Annotated[bool, typer.Option("--dry-run", "-n", help="Dry.")] = False,
    ) -> None:
        """Run."""

    text = bgc("run", "--help", app=demo, env=WIDE).stdout
    assert re.search(r"Usage: \S+ run \[OPTIONS\] TARGET AGENT \[PATHS\]\.\.\.\s", text), text
    for row in ("TARGET +Target", "AGENT +Agent", r"\[PATHS\]\.\.\. +Paths", "--level +LEVEL +Level", "--tag +TAG +Tags",
                "--retries +RETRIES +Retries", "--store +DB +Store", "--dry-run +-n +Dry", "--help +Show"):  # fmt: skip
        assert re.search(rf"│[ *]+{row}", text), (row, text)
    assert not PYTHON_TYPES.search(text), PYTHON_TYPES.search(text)
    assert bgc("run", "t", "c", app=demo, env=WIDE).exit_code == 2  # shown by name, the choice still refuses


def test_the_type_check_catches_what_typer_0_27_printed() -> None:
    """The refusal above must be able to fail: these are lines typer 0.27 to 0.29 render."""
    for line in ("│ --check  <bool>  Write nothing", "Usage: bgc fmt [OPTIONS] {files}...", "atoms...  <list[str]>",
                 "Usage: bgc approve [OPTIONS] {REQUEST}", "Usage: bgc compile [OPTIONS] {ORDER...}...",
                 "│ *    AGENT      <claude-code|gemini-cli|codex>  The agent"):  # fmt: skip
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
