"""The few ways a command meets the outside world, shared by every command module.

Light on purpose: the hot commands import this on every run, so it imports nothing heavy at
module level.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from bgc.errors import BgcError, ExitCode, InputError, Span, UsageError

if TYPE_CHECKING:
    from bgc.core.plan import Plan
    from bgc.core.policy.ast import Policy


class ReaderGone(Exception):
    """stdout's reader went away (``bgc … | head``): the output stops, quietly.

    Not an :class:`OSError` on purpose: click's main loop turns an EPIPE into exit 1 (a finding)
    before the edge sees it; this passes through to :func:`bgc.app.guard.guarded`, which exits
    :attr:`ExitCode.CLOSED_PIPE`.
    """


def emit(data: bytes, output: str | None) -> None:
    """Write output to ``output`` atomically (nothing half-written on failure), or to stdout."""
    if output is None:
        try:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            raise ReaderGone from None
        return
    from bgc.core.values.files import write_atomic

    try:
        write_atomic(output, data)
    except OSError as error:
        raise InputError(f"cannot write the output: {error.strerror or error}", Span(output)) from None


def write_line(text: str) -> None:
    """One line of output in the terminal's encoding; a character it cannot show is written as a
    backslash escape rather than crashing the command halfway through its answers."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        sys.stdout.buffer.write((text + "\n").encode(encoding, "backslashreplace"))
    except BrokenPipeError:
        raise ReaderGone from None


def stdin_lines() -> Iterator[str]:
    """Lines of stdin for ``gate`` and ``match``: split at ``\\n`` only (a CRLF's CR dropped) and
    decoded as UTF-8 whatever the locale, one input line giving exactly one answer.

    stdin is read as bytes: a text stream would stop at the first line that is not UTF-8 (strict
    locales), read it as something else (Latin-1) or split it at a lone CR. Bytes that are not
    UTF-8 become lone surrogates, as Python decodes command-line arguments, so an atom is the same
    value whether given as an argument or a line; the gate denies it and ``match`` rejects it,
    showing the bytes escaped (``\\xff``).
    """
    for line in sys.stdin.buffer:
        yield line.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", "surrogateescape")


def store_at(location: str, *, create: bool = True) -> Any:
    """The store at ``location`` (:func:`bgc.runtime.store.open_store`); one that cannot be opened is an
    input error (exit 2) naming it, before anything is decided or written."""
    from bgc.runtime.store import StoreError, open_store

    try:
        return open_store(location, create=create)
    except StoreError as error:
        raise InputError(str(error), Span(location)) from None


def open_ledger(location: str | None) -> Any:
    """The store ``--ledger`` names (None: no ledger)."""
    return None if location is None else store_at(location)


def load_policy(policy: str | None, mode: str | None) -> tuple[Policy, str | None]:
    """The policy and mode from the flags, falling back to ``[tool.bgc]`` / ``bgc.toml``."""
    from bgc.core.policy.loader import cached_policy

    if policy is not None:
        return cached_policy(policy), mode
    from bgc.analysis.config import find_config  # only without -p: reading the configuration costs a cold compile

    config = find_config(".")
    if config is None or config.policy is None:
        raise UsageError(
            "no policy: pass -p POLICY, or name one as `policy` in [tool.bgc] of pyproject.toml or in bgc.toml"
        )
    loaded = cached_policy(os.path.relpath(config.policy))
    return loaded, mode if mode is not None else config.resolved_mode(loaded)


def plan_exit_code(plans: list[Plan], fail_on: str) -> ExitCode:
    """0 when nothing at or above the ``fail_on`` level happened, else 1 (findings)."""
    return ExitCode.FINDINGS if any(plan.fails(fail_on) for plan in plans) else ExitCode.OK


@dataclass(frozen=True, slots=True)
class Result:
    """What a command produced, for an argument adapter to deliver (:func:`deliver`): the exit
    code, the bytes for stdout, the files to write (path, content; each atomically, its
    directory made first when listed in ``directories``), the files to remove (stale
    recordings), and an error (or a notice) to show people on stderr while a machine format
    carries the output. A command computes all of it first, so a failure (exit 2) leaves nothing
    half-written and nothing half-printed."""

    code: ExitCode
    output: bytes = b""
    files: tuple[tuple[str, bytes], ...] = ()
    directories: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    error: BgcError | None = None
    notice: str = ""
    """Text for people on stderr, while stdout carries a document for machines (``-o -``)."""


def lines_result(code: ExitCode, lines: list[str]) -> Result:
    """A command's answer as lines of text on stdout."""
    return Result(code, "".join(line + "\n" for line in lines).encode())


def deliver(result: Result) -> ExitCode:
    """Carry out ``result``: make its directories, write its files (atomically, in order), remove
    what it removes, show its error on stderr, then print its output; return its exit code."""
    for directory in result.directories:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as error:
            raise InputError(f"cannot make the directory: {error.strerror or error}", Span(directory)) from None
    for path, data in result.files:
        emit(data, path)
    for path in result.removed:
        try:
            if os.path.lexists(path):
                os.unlink(path)
        except OSError as error:
            raise InputError(f"cannot remove: {error.strerror or error}", Span(path)) from None
    if result.error is not None:
        print(result.error.render(), file=sys.stderr)
    if result.notice:
        print(result.notice, end="", file=sys.stderr)
    if result.output:
        emit(result.output, None)
    return result.code


def machine_error(error: BgcError, output_format: str) -> Result:
    """A command that could not run, in a machine format: the error as that format carries one
    (a SARIF run whose invocation failed, a GitHub ``::error`` annotation, a JSON ``error``
    object), exit 2, and the error on stderr for people. Paths are shown from the repository
    root, like findings."""
    from bgc.analysis.config import git_root
    from bgc.app.render.machine import render_error

    output = render_error(error, output_format, root=git_root(".")).encode("utf-8")
    return Result(ExitCode.BAD_INPUT, output, error=error)
