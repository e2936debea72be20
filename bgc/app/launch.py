"""The ``bgc`` console script: a fast path for the hot commands, typer for everything else.

``bgc gate`` runs before every tool call an agent makes, ``bgc check`` on every commit and
``bgc compile`` in every CI job, so their cold start is part of the product. Importing typer
costs more than the whole work of a cached check or a gate decision (typer pulls in click and,
while parsing arguments, pydantic). So this module, which imports nothing heavy, recognises the
plain forms of ``check``, ``gate`` and ``compile`` (:data:`FAST_COMMANDS`) and calls the same
:mod:`bgc.app.commands` functions the typer commands call. Anything else — ``--help``, an unknown
or repeated option, a value outside its choices, ``--`` — goes to :mod:`bgc.app.cli` unchanged, which
explains it.

Both paths run under the one guard that keeps tracebacks from users (:func:`bgc.app.guard.guarded`).
"""

from __future__ import annotations

import gc
import sys

TYPE_CHECKING = False  # typing is never imported on a served hook's path (it brings re): annotations only
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import NoReturn

class Option:
    """One option of a fast command: where its value goes (``dest``), and what it may be:
    ``choices`` (None: any value), ``repeatable``, ``flag`` (takes no value)."""

    __slots__ = ("choices", "dest", "flag", "repeatable")

    def __init__(self, dest: str, choices: tuple[str, ...] | None = None, repeatable: bool = False, flag: bool = False) -> None:
        self.dest, self.choices, self.repeatable, self.flag = dest, choices, repeatable, flag


class FastCommand:
    """A hot command's plain form: its ``options`` (``{name: Option}``) and ``aliases``, its
    ``min_positionals``, and ``run(positionals, options by dest) -> exit code``, which imports
    what it needs itself; ``reads_stdin``: may a positional be ``-``? (Slotted, as :class:`Option`.)"""

    __slots__ = ("aliases", "command_after", "min_positionals", "options", "reads_stdin", "run")

    def __init__(
        self, options: dict[str, Option], aliases: dict[str, str], min_positionals: int,
        run: Callable[[list[str], dict[str, object]], int], reads_stdin: bool = True, command_after: bool = False,
    ) -> None:  # fmt: skip
        self.options, self.aliases, self.min_positionals, self.run, self.reads_stdin = (
            options, aliases, min_positionals, run, reads_stdin
        )
        self.command_after = command_after
        """Everything after ``--`` is the command it runs, its positionals (``bgc sandbox -- CMD``)."""


def _check(positionals: list[str], options: dict[str, object]) -> int:
    from bgc.app.commands import check
    from bgc.app.commands.io import deliver

    return deliver(check.run(positionals, **options))  # type: ignore[arg-type]


def _gate(positionals: list[str], options: dict[str, object]) -> int:
    from bgc.app.commands import gate

    return gate.run(positionals[0], positionals[1:], **options)  # type: ignore[arg-type]


def _hook(positionals: list[str], options: dict[str, object]) -> int:
    from bgc.app.commands import hook

    return hook.run(*positionals, **options)  # type: ignore[arg-type]


def _sandbox(positionals: list[str], options: dict[str, object]) -> int:
    from bgc.app.commands import sandbox

    return sandbox.run(positionals, **options)  # type: ignore[arg-type]


def _compile(positionals: list[str], options: dict[str, object]) -> int:
    from bgc.app.commands import compile as compile_command
    from bgc.app.commands.io import deliver

    return deliver(compile_command.run(positionals, **options))  # type: ignore[arg-type]


_FORMAT_CHECK = ("text", "json", "sarif", "github")
_INPUT = Option("input_format", ("yaml", "json", "cbor"))
_COLOR = Option("color_choice", ("auto", "always", "never"))
_QUIET = Option("quiet", flag=True)

FAST_COMMANDS: dict[str, FastCommand] = {
    "check": FastCommand(
        {"--format": Option("output_format", _FORMAT_CHECK), "--update": Option("update", flag=True),
         "--orders": Option("orders_only", flag=True), "--baseline": Option("baseline"), "--color": _COLOR,
         "--quiet": _QUIET, "--select": Option("select", repeatable=True), "--ignore": Option("ignore", repeatable=True)},
        {"-q": "--quiet"}, 0, _check, reads_stdin=False,
    ),
    "gate": FastCommand(
        {"--root": Option("root"), "--format": Option("output_format", ("text", "json")), "--input-format": _INPUT,
         "--policy": Option("policy"), "--expect-plan": Option("expect_plan", repeatable=True), "--color": _COLOR,
         "--quiet": _QUIET, "--call": Option("call", flag=True), "--ledger": Option("ledger")},
        {"-p": "--policy", "-q": "--quiet"}, 1, _gate,
    ),
    "compile": FastCommand(
        {"--policy": Option("policy"), "--mode": Option("mode"),
         "--format": Option("output_format", ("text", "json", "yaml", "cbor", "sarif", "github")),
         "--output": Option("output"), "--fail-on": Option("fail_on", ("denied", "ask", "narrowed", "never")),
         "--input-format": _INPUT, "--color": _COLOR, "--quiet": _QUIET, "--ledger": Option("ledger")},
        {"-p": "--policy", "-m": "--mode", "-f": "--format", "-o": "--output", "-q": "--quiet"}, 1, _compile,
    ),
    "hook": FastCommand(
        {"--policy": Option("policy"), "--plan": Option("plan"), "--mode": Option("mode"),
         "--unknown": Option("unknown", ("ask", "deny")), "--timeout": Option("timeout"), "--store": Option("store"),
         "--asks": Option("asks", ("agent", "bgc"))},
        {"-p": "--policy", "-m": "--mode"}, 1, _hook, reads_stdin=False,
    ),
    # what an agent's hook rewrites a command allowed `in sandbox` to (bgc/adapters/agents/hook.py)
    "sandbox": FastCommand(
        {"--policy": Option("policy"), "--plan": Option("plan"), "--mode": Option("mode"), "--root": Option("root")},
        {"-p": "--policy", "-m": "--mode"}, 1, _sandbox, reads_stdin=False, command_after=True,
    ),
}  # fmt: skip
"""The hot commands and the options their plain forms may use (the typer commands have the rest).
A new hot command joins with one entry here (and a test that it starts without typer)."""


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
        if token == "--" and spec.command_after:
            positionals, rest = rest, []
            break
        if token == "-" and not spec.reads_stdin:
            return None
        if token == "-" or not token.startswith("-"):
            if spec.command_after:
                return None  # a word before `--` (typer explains it)
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




def main(leave: Callable[[object], NoReturn] = sys.exit) -> NoReturn:
    """Console-script entry point: a hot command's plain form on the fast path, anything else
    through typer. A fast command ends by calling ``leave`` with its exit code (:func:`console`
    passes :func:`leave_now`; the default, ``sys.exit``, suits a caller that goes on)."""
    # A bgc process builds large trees of acyclic objects (policies, plans, automata) and makes
    # almost no cyclic garbage, while each generation-2 pass walks a heap that grows with the
    # policy. Rarer collections keep that cost flat; the cyclic garbage left waiting is at most a
    # few thousand objects.
    gc.set_threshold(10_000, 10, 10)
    fast = fast_arguments(sys.argv[1:])
    if fast is None:
        from bgc.app.cli import main as typer_main

        typer_main()  # exits: guarded() always ends the process
    command, positionals, options = fast
    if command == "hook":
        # first, before anything heavy is imported: the project's decision server, if one runs
        from bgc.adapters.agents.client import Fallback, ask_server

        served = ask_server(positionals[0], positionals[1:], options)
        if not isinstance(served, Fallback):
            leave(served)
        options = {**options, "received": served}
    from bgc.app.guard import guarded

    try:
        guarded(lambda: FAST_COMMANDS[command].run(positionals, options))
    except SystemExit as done:
        leave(done.code)


def leave_now(code: object) -> NoReturn:
    """Exit with ``code`` at once, without the interpreter's teardown (freeing every module,
    class and object one by one: a sizeable part of a cold ``bgc gate``, for nothing the user
    sees).

    Only for a finished fast command, whose answer is written and whose files and stores were
    closed by the command itself; it registers no exit handlers and starts no threads. The
    streams are flushed first; a stream that cannot be flushed, or a code that is not a number,
    leaves the ordinary way, which reports it.
    """
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - the ordinary exit reports what went wrong with the stream
        sys.exit(code)
    if not isinstance(code, int):
        sys.exit(code)
    os._exit(int(code))


def console() -> NoReturn:
    """The ``bgc`` console script and ``python -m bgc``: :func:`main`, a fast command's process
    ending with :func:`leave_now`."""
    main(leave_now)
