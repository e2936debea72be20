"""What every typer adapter of ``bgc`` shares: the app, the one way a command's result or error
leaves the program (:func:`run`, :func:`fail`), and the options several commands take.

The adapters themselves live in :mod:`bgc.app.cli` (the compile-time commands and the agents'
edges), :mod:`bgc.app.cli_kernel` (keys, tokens, authorize, preflight) and :mod:`bgc.app.cli_ledger`
(people's answers, modes and the ledger); each registers its commands on :data:`app`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, NoReturn, Optional

import typer

from bgc import __version__
from bgc.app.commands.io import Result, deliver
from bgc.errors import BgcError, ExitCode, exit_code_rows


def _exit_code_epilog() -> str:
    """The exit-code table for ``bgc --help``, generated from :class:`ExitCode` (never typed twice)."""
    rows = "\n\n".join(f"* **{code}** {meaning}" for code, meaning in exit_code_rows())
    return f"**Exit codes**, the same for every command:\n\n{rows}"


app = typer.Typer(
    name="bgc",
    help="BoundGraph policy compiler: turn what an agent asks for into what it is granted.\n\n"
    "Shell completion: `bgc --install-completion` (bash, zsh, fish, PowerShell); "
    "`bgc --show-completion` prints the script instead.",
    epilog=_exit_code_epilog(),
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bgc {__version__}")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit."),
    ] = None,
) -> None:
    """BoundGraph policy compiler: turn what an agent asks for into what it is granted."""


def fail(error: BgcError) -> NoReturn:
    """Render ``error`` once on stderr and exit 2: the one place bad input leaves the program."""
    typer.echo(error.render(), err=True)
    raise typer.Exit(ExitCode.BAD_INPUT)


def run(produce: Callable[[], Result | ExitCode]) -> NoReturn:
    """Call a command and deliver what it produced (:func:`bgc.app.commands.io.deliver`); a
    :class:`BgcError` is rendered once (exit 2). Every adapter below ends here."""
    try:
        produced = produce()
        code = produced if isinstance(produced, ExitCode) else deliver(produced)
    except BgcError as error:
        fail(error)
    raise typer.Exit(code)


InputFormatOption = Annotated[
    Optional[Literal["yaml", "json", "cbor"]],
    typer.Option(
        "--input-format",
        metavar="FORMAT",
        help="Format of a document read from - (stdin): yaml, json or cbor (default: sniffed from its first bytes).",
    ),
]
ColorOption = Annotated[
    Literal["auto", "always", "never"],
    typer.Option(
        "--color",
        metavar="WHEN",
        help="Colour the output: auto (a terminal, unless NO_COLOR is set or FORCE_COLOR asks), always or never.",
    ),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on stdout; the exit code answers.")]


PolicyOption = Annotated[
    Optional[str],
    typer.Option("--policy", "-p", metavar="FILE", help="Policy file (.bgp); defaults to the configured one."),
]


def command_group(name: str, summary: str) -> typer.Typer:
    """A command with subcommands (`bgc order new`, `bgc init claude-code`): bare, it shows its help."""
    group = typer.Typer(help=summary, no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})
    app.add_typer(group, name=name)
    return group
