"""Reading files within a size bound, and writing them so that a failure never leaves one
half-written.

This module stays light (no third-party imports): ``bgc check`` on a warm cache reads every
policy file through :func:`read_bounded` to see whether its entry is still valid, and that path
must not pay for importing the document readers (cbor2, the canonical data model) it never uses.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from bgc.errors import InputError, Span

MAX_BYTES = 8 * 1024 * 1024
"""Larger inputs are refused before parsing: no work order or policy is megabytes long."""


def read_bounded(path: str, *, stream: BinaryIO | None = None, error: type[InputError] = InputError) -> bytes:
    """The bytes of the file at ``path`` (or of ``stream``, named ``path`` in messages), reading at
    most ``MAX_BYTES + 1`` of them, so ``/dev/zero`` or a runaway pipe named as an input is a
    "too large" error rather than a process that eats all memory.

    A missing file, a directory, an unreadable or an oversized one raises ``error`` (an
    :class:`InputError`, or a subclass a caller's callers catch) located at ``path``.
    """
    try:
        if stream is not None:
            data = stream.read(MAX_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise error("no such file", Span(path)) from None
    except IsADirectoryError:
        raise error("is a directory, expected a file", Span(path)) from None
    except OSError as failure:
        raise error(f"cannot read: {failure.strerror or failure}", Span(path)) from None
    if len(data) > MAX_BYTES:
        raise error(f"larger than {MAX_BYTES // (1024 * 1024)} MiB", Span(path))
    return data


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to a temporary file beside the target, then rename it into place.

    The rename is atomic on POSIX, so readers see the old content or the new, never a mix, and
    an error (disk full, interrupt) leaves the old file untouched. A symlink is written
    *through*: the file it points to gets the new content (and keeps its permissions) and the
    link stays a link; renaming over the link itself would replace it by a regular file and
    leave its target as it was. Anything that is not a regular file (``/dev/null``, ``/dev/stdout``,
    a FIFO) is written into as it is: renaming over a device would replace it by a file.
    """
    import stat
    import tempfile  # here: only a command that writes a file pays for it

    target = os.path.realpath(path)
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        special = False
    if special:
        with open(target, "wb") as stream:
            stream.write(data)
        return
    directory, name = os.path.split(target)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        try:
            os.chmod(temporary, os.stat(target).st_mode & 0o777)
        except FileNotFoundError:
            os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


STATE_DIRECTORY = ".bgc"
"""Where bgc keeps a project's state: the store (permission requests, the ledger) and private keys."""

STATE_IGNORE = "# bgc's state: the store, the ledger and private keys (never committed)\n*\n"
"""The ``.gitignore`` bgc writes into a state directory it makes: everything in it is ignored."""


def make_directories(path: str, mode: int = 0o777) -> None:
    """``os.makedirs(path, mode, exist_ok=True)``; a :data:`STATE_DIRECTORY` it creates on the way
    gets a ``.gitignore`` of ``*`` first thing (:func:`ignore_state`), so that a ``git add .`` in
    the project never commits a private key or the ledger."""
    parts = os.path.normpath(path).split(os.sep)
    states = [os.sep.join(parts[: index + 1]) for index, part in enumerate(parts) if part == STATE_DIRECTORY]
    created = [state for state in states if not os.path.lexists(state)]
    os.makedirs(path, mode=mode, exist_ok=True)
    for state in created:
        ignore_state(state)


def ignore_state(directory: str) -> bool:
    """Write ``directory/.gitignore`` (:data:`STATE_IGNORE`) unless a file of that name is there
    (one a person wrote is theirs); whether it was written."""
    try:
        handle = os.open(os.path.join(directory, ".gitignore"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(handle, "w", encoding="utf-8") as written:
        written.write(STATE_IGNORE)
    return True
