"""The ``bgc`` console script: a fast path for ``bgc check``, typer for everything else.

A pre-commit hook runs ``bgc check`` on every commit, so its cold start is part of the product.
Importing typer costs more than the whole check of a cached policy (typer 0.2x pulls in click
and, while parsing arguments, pydantic: ~50 ms measured with ``python -X importtime``). So this
module, which imports nothing heavy, recognises the plain forms of ``check`` —
``bgc check [--format F] [--update] [--orders] [PATH...]`` — and runs them directly through
:func:`bgc.repository.run_command`, the same function the typer command calls. Anything else
(``--help``, other commands, unusual spellings) goes to :mod:`bgc.cli` unchanged.

This module also holds the one guard that keeps tracebacks from users, used by both paths.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

_FLAGS = ("--update", "--orders")


def fast_check_arguments(argv: Sequence[str]) -> tuple[list[str], str, dict[str, bool]] | None:
    """``(paths, format, flags)`` when ``argv`` is a plain ``check`` invocation, else ``None``;
    ``flags`` maps ``update`` and ``orders_only`` to whether they were given."""
    if not argv or argv[0] != "check":
        return None
    paths: list[str] = []
    output_format: str | None = None
    given: set[str] = set()
    rest = list(argv[1:])
    while rest:
        token = rest.pop(0)
        if token in _FLAGS and token not in given:
            given.add(token)
        elif token.startswith("--format=") and output_format is None:
            output_format = token.partition("=")[2]
        elif token == "--format" and rest and output_format is None:
            output_format = rest.pop(0)
        elif token.startswith("-"):
            return None  # help, a repeated or unknown option: typer explains it
        else:
            paths.append(token)
    return paths, output_format or "text", {"update": "--update" in given, "orders_only": "--orders" in given}


def guarded(run: Callable[[], object]) -> NoReturn:
    """Run ``run`` and exit with its code; never let a traceback reach the user."""
    from bgc.errors import BgcError, ExitCode

    try:
        result = run()
    except BgcError as error:  # a stage raised outside a command's own handling
        print(error.render(), file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        print("bgc: interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit:
        raise
    except BrokenPipeError:  # the reader went away (`bgc … | head`): nothing left to say to it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(ExitCode.FINDINGS)
    except OSError as error:  # writing the output failed (disk full, closed stream)
        print(f"bgc: cannot write output: {error.strerror or error}", file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    except Exception as error:  # noqa: BLE001 - the edge: never show a traceback
        if os.environ.get("BGC_DEBUG"):
            raise
        print(f"bgc: internal error: {type(error).__name__}: {error} (set BGC_DEBUG=1 for details)", file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    sys.exit(result if isinstance(result, int) else 0)


def _check(paths: list[str], output_format: str, flags: dict[str, bool]) -> int:
    from bgc.repository import run_command

    text, code = run_command(paths, output_format=output_format, **flags)
    sys.stdout.write(text)
    sys.stdout.flush()
    return code


def main() -> NoReturn:
    """Console-script entry point."""
    fast = fast_check_arguments(sys.argv[1:])
    if fast is None:
        from bgc.cli import main as typer_main

        typer_main()  # exits: guarded() always ends the process
    guarded(lambda: _check(*fast))
