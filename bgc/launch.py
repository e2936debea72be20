"""The ``bgc`` console script: a fast path for the hot commands, typer for everything else.

``bgc gate`` runs before every tool call an agent makes, ``bgc check`` on every commit and
``bgc compile`` in every CI job, so their cold start is part of the product. Importing typer
costs more than the whole work of a cached check or a gate decision (typer pulls in click and,
while parsing arguments, pydantic). So this module, which imports nothing heavy, recognises the
plain forms of ``check``, ``gate`` and ``compile`` (:data:`FAST_COMMANDS`) and calls the same
:mod:`bgc.commands` functions the typer commands call. Anything else — ``--help``, an unknown
or repeated option, a value outside its choices, ``--`` — goes to :mod:`bgc.cli` unchanged, which
explains it.

This module also holds the one guard that keeps tracebacks from users, used by both paths.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple, NoReturn


class Option(NamedTuple):
    """One option of a fast command: where its value goes, and what it may be."""

    dest: str
    choices: tuple[str, ...] | None = None  # None: any value
    repeatable: bool = False
    flag: bool = False  # takes no value


class FastCommand(NamedTuple):
    options: dict[str, Option]
    aliases: dict[str, str]
    min_positionals: int
    reads_stdin: bool = True  # may a positional be `-`?


_FORMAT_CHECK = ("text", "json", "sarif", "github")
_INPUT = Option("input_format", ("yaml", "json", "cbor"))

FAST_COMMANDS: dict[str, FastCommand] = {
    "check": FastCommand(
        {"--format": Option("output_format", _FORMAT_CHECK), "--update": Option("update", flag=True),
         "--orders": Option("orders_only", flag=True)},
        {}, 0, reads_stdin=False,
    ),
    "gate": FastCommand(
        {"--root": Option("root"), "--format": Option("output_format", ("text", "json")), "--input-format": _INPUT,
         "--policy": Option("policy"), "--expect-plan": Option("expect_plan", repeatable=True),
         "--call": Option("call", flag=True)},
        {"-p": "--policy"}, 1,
    ),
    "compile": FastCommand(
        {"--policy": Option("policy"), "--mode": Option("mode"),
         "--format": Option("output_format", ("text", "json", "yaml", "cbor", "sarif", "github")),
         "--output": Option("output"), "--fail-on": Option("fail_on", ("denied", "ask", "narrowed", "never")),
         "--input-format": _INPUT},
        {"-p": "--policy", "-m": "--mode", "-f": "--format", "-o": "--output"}, 1,
    ),
}  # fmt: skip
"""The hot commands and the options their plain forms may use (the typer commands have the rest)."""


def fast_arguments(argv: Sequence[str]) -> tuple[str, list[str], dict[str, object]] | None:
    """``(command, positionals, options)`` when ``argv`` is a plain form of a hot command, else
    ``None`` (typer then parses it, and explains whatever is wrong)."""
    if not argv or argv[0] not in FAST_COMMANDS:
        return None
    spec = FAST_COMMANDS[argv[0]]
    positionals: list[str] = []
    values: dict[str, object] = {}
    rest = list(argv[1:])
    while rest:
        token = rest.pop(0)
        if token == "-" and not spec.reads_stdin:
            return None
        if token == "-" or not token.startswith("-"):
            positionals.append(token)
            continue
        name, eq, inline = token.partition("=")
        name = spec.aliases.get(name, name)
        option = spec.options.get(name)
        if option is None or (option.flag and eq):
            return None  # --help, --, an unknown option or a flag given a value
        if option.flag:
            value: object = True
        elif eq:
            value = inline
        elif rest:
            value = rest.pop(0)
        else:
            return None
        if option.choices is not None and value not in option.choices:
            return None
        if option.repeatable:
            values.setdefault(option.dest, []).append(value)  # type: ignore[union-attr]
        elif option.dest in values:
            return None
        else:
            values[option.dest] = value
    if len(positionals) < spec.min_positionals:
        return None
    return argv[0], positionals, values


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


def _run_fast(command: str, positionals: list[str], options: dict[str, object]) -> int:
    if command == "check":
        from bgc.repository import run_command

        flags = {"update": bool(options.pop("update", False)), "orders_only": bool(options.pop("orders_only", False))}
        text, code = run_command(positionals, output_format=str(options.get("output_format", "text")), **flags)
        sys.stdout.write(text)
        sys.stdout.flush()
        return code
    if command == "gate":
        from bgc.commands import gate

        return gate.run(positionals[0], positionals[1:], **options)  # type: ignore[arg-type]
    from bgc.commands import compile as compile_command

    return compile_command.run(positionals, **options)  # type: ignore[arg-type]


def main() -> NoReturn:
    """Console-script entry point."""
    fast = fast_arguments(sys.argv[1:])
    if fast is None:
        from bgc.cli import main as typer_main

        typer_main()  # exits: guarded() always ends the process
    guarded(lambda: _run_fast(*fast))
