"""What every typer adapter of ``bgc`` shares: the app, the one way a command's result or error
leaves the program (:func:`run`, :func:`fail`), and the options several commands take.

The adapters themselves live in :mod:`bgc.app.cli` (the compile-time commands and the agents'
edges), :mod:`bgc.app.cli_kernel` (keys, tokens, authorize, preflight) and :mod:`bgc.app.cli_ledger`
(people's answers, modes and the ledger); each registers its commands on :data:`app`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Annotated, Any, Literal, NoReturn, Optional

import typer
import typer.core

from bgc import __version__
from bgc.app.commands.io import Result, deliver
from bgc.errors import BgcError, ExitCode, exit_code_rows


def _exit_code_epilog() -> str:
    """The exit-code table for ``bgc --help``, generated from :class:`ExitCode` (never typed twice)."""
    rows = "\n\n".join(f"* **{code}** {meaning}" for code, meaning in exit_code_rows())
    return f"**Exit codes**, the same for every command:\n\n{rows}"


def _show_as_click(param: Any) -> None:
    """Show ``param`` in ``--help`` as click does, whatever typer is installed: an option taking a
    value with its metavar (``--store STORE``, its name when it declares none), a flag with nothing;
    an argument as its metavar alone (``NAME``, ``[NAME]`` when optional, ``...`` when it repeats),
    in the usage line and the arguments panel, with no type beside it.

    Typer renders these through methods that changed with each minor version, so each answer is
    set on the parameter itself, which Python consults before its class: 0.27 and later wrap an
    argument in braces in the usage line (``{REQUEST}``, ``{ORDER...}...``); 0.29 prints Python
    types (``<str>``, ``<list[str]>``, ``<bool>`` for a flag) from ``display_type_rich``; 0.26 to
    0.28 print the name of the argument's click type (``TEXT``; from 0.27 ``<str>``). A version
    that asks none of these only loses the adjustment: parsing never reads them. Idempotent: a
    command's parameters are shown many times."""
    if param.param_type_name == "option":
        if param.metavar is None:
            param.metavar = "" if param.is_flag or param.count else param.name.upper()
        return
    if "get_usage_pieces" in vars(param):
        return
    if param.metavar is None:
        param.metavar = param.name.upper() if param.required else f"[{param.name.upper()}]"
        param.metavar += "..." if param.nargs != 1 else ""
    elif not param.required and not param.metavar.startswith("["):
        param.metavar = f"[{param.metavar}]"  # `[OLD NEW]`: an optional argument's brackets, as typer 0.26 adds
    shown = param.metavar
    param.get_usage_pieces = lambda ctx: [shown]  # each keeps the name of typer's argument: called by keyword
    param.display_type_rich = lambda ctx: ""
    kind = getattr(param, "type", None)  # typer 0.26-0.28; 0.29 describes values without click types
    if kind is not None:
        param.type = copy.copy(kind)  # click's types are shared: STRING is every text argument's
        param.type.name = ""
        param.type.get_metavar = lambda param, ctx=None: ""


class Group(typer.core.TyperGroup):
    """Every ``bgc`` command group (``cls=`` of each :class:`typer.Typer` here): its parameters and
    those of every command it hands out are shown as click shows them (:func:`_show_as_click`), so
    ``--help`` reads the same under every typer the dependency range admits. Typer builds the
    parameters from the adapters' signatures and adds the completion options after building the
    group, so they are adjusted where click reads them: ``get_params`` and ``get_command``."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            _show_as_click(param)
        return params

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and not isinstance(command, Group):  # a group shows its own
            for param in [*command.params, command.get_help_option(ctx)]:  # click keeps the one --help it makes
                if param is not None:
                    _show_as_click(param)
        return command


app = typer.Typer(
    name="bgc",
    cls=Group,
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
    group = typer.Typer(
        cls=Group, help=summary, no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]}
    )
    app.add_typer(group, name=name)
    return group
