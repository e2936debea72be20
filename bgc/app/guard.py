"""The one guard between bgc and its user: every command, on the fast path (:mod:`bgc.app.launch`)
or through typer (:mod:`bgc.app.cli`), runs under :func:`guarded`, so no traceback ever reaches the
user and every way out has its exit code from :class:`bgc.errors.ExitCode`.

A module of its own so that both entry points can use it without importing each other (the
fast path must never import typer, and the typer app has no business with the fast path).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn


def guarded(run: Callable[[], object]) -> NoReturn:
    """Run ``run`` and exit with its code; never let a traceback reach the user.

    stdout is flushed here, inside the guard: a reader that went away (``bgc … | head``) shows
    as a broken pipe at the last write or at this flush, and either way the process exits
    :attr:`~bgc.errors.ExitCode.CLOSED_PIPE`, quietly (no message, no "Exception ignored" at
    shutdown): not a finding, and never 0, since not every answer was delivered.
    """
    from bgc.app.commands.io import ReaderGone
    from bgc.errors import BgcError, ExitCode

    stdout_was = _identity(sys.stdout)
    try:
        try:
            result = run()
        except SystemExit as done:  # typer's path ends in sys.exit: flush before leaving too
            result = done.code
            if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click met the closed pipe first
                raise ReaderGone from None
            stdout_is = _identity(sys.stdout)
            if stdout_is != stdout_was and stdout_is == _devnull():  # rich met it first (help)
                raise ReaderGone from None
        sys.stdout.flush()
    except BgcError as error:  # a stage raised outside a command's own handling
        print(error.render(), file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        print("bgc: interrupted", file=sys.stderr)
        sys.exit(130)
    except (ReaderGone, BrokenPipeError):  # the reader went away: nothing left to say to it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(ExitCode.CLOSED_PIPE)
    except OSError as error:  # writing the output failed (disk full, closed stream)
        print(f"bgc: cannot write output: {error.strerror or error}", file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    except Exception as error:  # noqa: BLE001 - the edge: never show a traceback
        if os.environ.get("BGC_DEBUG"):
            raise
        print(f"bgc: internal error: {type(error).__name__}: {error} (set BGC_DEBUG=1 for details)", file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    sys.exit(result if isinstance(result, int) else 0 if result is None else ExitCode.BAD_INPUT)


def _identity(stream: object) -> tuple[int, int] | None:
    """What the file descriptor behind ``stream`` is (device and inode), or ``None`` for a
    stream without one.

    rich prints typer's help, and on a closed pipe its ``Console.on_broken_pipe`` points fd 1
    at /dev/null and raises ``SystemExit(1)`` (rich/console.py), which alone cannot be told
    from a finding. That swap can: :func:`guarded` compares fd 1 before and after the command,
    and only a reader gone makes fd 1 become /dev/null under a running command (bgc never
    moves its own stdout; a user's ``> /dev/null`` is /dev/null before as after).
    """
    try:
        status = os.fstat(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def _devnull() -> tuple[int, int]:
    status = os.stat(os.devnull)
    return status.st_dev, status.st_ino
