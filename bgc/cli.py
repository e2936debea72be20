"""The ``bgc`` command line: a thin typer edge over the library.

Each command reads its inputs, calls one library stage, picks a renderer and returns an exit
code from :class:`bgc.errors.ExitCode`. Nothing here parses, compiles or decides: that lives
in the stage modules, so the same work is available as a library. Heavy imports happen inside
the commands, so ``bgc --help`` and the hot paths stay fast.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, NoReturn, Optional

import typer

from bgc import __version__
from bgc.errors import BgcError, ExitCode, UsageError

app = typer.Typer(
    name="bgc",
    help="BoundGraph policy compiler: turn what an agent asks for into what it is granted.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
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
    """BoundGraph policy compiler: turn what an agent asks for into what it is granted.

    Exit codes, the same for every command: 0 everything granted / check passed,
    1 findings, 2 bad input or usage.
    """


def fail(error: BgcError) -> NoReturn:
    """Render ``error`` once on stderr and exit 2: the one place bad input leaves the program."""
    typer.echo(error.render(), err=True)
    raise typer.Exit(ExitCode.BAD_INPUT)


@app.command()
def digest(
    files: Annotated[list[str], typer.Argument(help="Order files (.yaml/.yml/.json/.cbor); - reads stdin.")],
    output_format: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
    input_format: Annotated[
        Optional[str], typer.Option("--input-format", help="Format of stdin (yaml, json or cbor).")
    ] = None,
) -> None:
    """Print each work order's content id (sha256 of its canonical CBOR).

    The same order in YAML, JSON or CBOR has the same id; key order and whitespace never matter.
    """
    from bgc.documents import load_order

    if output_format not in ("text", "json"):
        fail(UsageError(f"unknown --format {output_format!r} (expected text or json)"))
    try:
        ids = [(str(load_order(path, input_format).id()), path) for path in files]
    except BgcError as error:
        fail(error)
    if output_format == "json":
        import json

        typer.echo(json.dumps([{"file": path, "id": order_id} for order_id, path in ids], indent=2, sort_keys=True))
    else:
        for order_id, path in ids:
            typer.echo(f"{order_id}  {path}")


def main() -> None:
    """Console-script entry point: runs the app and guarantees no traceback reaches a user."""
    try:
        app()
    except BgcError as error:  # a stage raised outside a command's own handling
        typer.echo(error.render(), err=True)
        sys.exit(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        typer.echo("bgc: interrupted", err=True)
        sys.exit(130)
    except Exception as error:  # noqa: BLE001 - the edge: never show a traceback
        if os.environ.get("BGC_DEBUG"):
            raise
        typer.echo(
            f"bgc: internal error: {type(error).__name__}: {error} (set BGC_DEBUG=1 for details)",
            err=True,
        )
        sys.exit(ExitCode.BAD_INPUT)


if __name__ == "__main__":  # pragma: no cover
    main()
