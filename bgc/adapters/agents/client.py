"""The hook's way to a warm decision server (``bgc serve``), tried before anything heavy is imported.

A hook runs as a fresh process before every tool call, and most of its time is Python starting
and bgc importing itself. A decision server started once per project (``bgc serve``,
:mod:`bgc.app.server`) keeps that work warm; this module is the hook's side: it reads the hook
input, hands the call (the agent, the hook's options, the stdin bytes, the working directory, the
environment and its own import path) to the project's server, and writes back the server's answer byte for byte.
The server answers with the very function the hook would have run
(:func:`bgc.adapters.agents.hook.decide`), so an answer is the same whether it came from there or
from here.

Fail closed, and never slower to fail than the hook's own deadline: no server, a doorbell that is
not ours, a server that does not answer within half the deadline or is gone before it answers, a
reply that is not whole and well-formed, a server running other code — each one makes the hook
decide in its own process with the input already read (:class:`Fallback`), never allow.

How a request travels (:func:`exchange`), with named pipes and files only: the standard
library's ``socket`` alone would cost a served hook more than the rest of it (it imports
``enum``, ``selectors`` and ``collections``), so this module imports only ``os``, ``sys``,
``stat``, ``marshal`` and ``time`` (loaded with Python already), ``select``, and the agents' rows
(:data:`bgc.adapters.agents.AGENTS`). Everything lives in a directory only this user may enter
(:func:`private_dir`), named by the project directory's device and inode (:func:`doorbell_path`):

* the server's **doorbell**, a FIFO (``DEV-INO.bell``) the server keeps open for reading and
  writing: opening it to write fails at once when no server runs (nobody reads it), and it
  reports an error to a waiting hook as soon as the server is gone;
* per request, a **request file** (``DEV-INO.TOKEN.request``, created exclusively, mode 0600)
  holding the framed request, and a **reply FIFO** (``DEV-INO.TOKEN.reply``, mode 0600) the hook
  reads the framed reply from, to its end. ``TOKEN`` is the hook's pid and 64 random bits.

The hook creates both, writes one line naming the token to the doorbell (shorter than
``PIPE_BUF``: concurrent hooks' lines never interleave), waits for the reply, and removes both on
every way out. Who may send a request: only this user can create files in the directory, and the
server takes a request only from a regular file of this user's that nobody else may read or
write (in place of a socket's peer credentials); the hook uses a doorbell only when it is a FIFO
of this user's that nobody else may use.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import time

from bgc.adapters.agents import AGENTS

MAX_INPUT = 32 * 1024 * 1024
"""Bytes of hook input read at most (a Write of a large file carries its content)."""
DEFAULT_TIMEOUT = 20.0
"""Seconds; the hook blocks the call when no decision is made by then (``--timeout``)."""
SERVER_SHARE = 0.5
"""The part of the deadline a server may take before the hook gives up on it and decides itself."""
MAX_META = 4 * 1024 * 1024
"""Bytes of a request besides the hook input (argv, working directory, environment)."""
MAX_REPLY = 8 * 1024 * 1024
"""Bytes of a reply at most: an answer is one line of JSON and a reason."""
MAGIC = b"bgc-serve\x001\n"
"""Starts every request and reply: the protocol and its version."""
HEADER = len(MAGIC) + 8
"""The magic, then the payload's length (8 bytes, big-endian)."""
ANSWERED, REFUSED = b"A", b"R"
"""A reply's first byte: the server's answer follows, or the server will not answer this request."""
ACCEPTED_CODES = (0, 2)
"""The hook's exit codes: 0 with an answer, 2 blocked. Any other code from a server is not used."""
DOORBELL = ".bell"
"""How a server's doorbell FIFO is named: the project directory's device and inode, then this."""


def private_dir(*, create: bool = False) -> str | None:
    """The directory servers' doorbells and the hooks' requests live in, or ``None`` when it is
    missing (and not ``create``d) or anyone but this user could enter it, write to it or replace it."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    path = os.path.join(runtime, "bgc") if runtime.startswith("/") else f"/tmp/bgc-{os.getuid()}"
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return path if is_private(info, stat.S_IFDIR) else None


def is_private(info: os.stat_result, kind: int) -> bool:
    """True when ``info`` is of a file of type ``kind`` (``stat.S_IFIFO``, ...) that this user
    owns and nobody else may read, write or enter."""
    return stat.S_IFMT(info.st_mode) == kind and info.st_uid == os.getuid() and not info.st_mode & 0o077


def project_of(agent: str) -> str:
    """The project directory a hook of ``agent`` runs for, as its server is named: the agent's
    project variable (its :data:`~bgc.adapters.agents.AGENTS` row), else the working directory.
    Only the choice of server depends on it; the server decides with the request's own
    environment and working directory."""
    found = next((os.environ[name] for name in AGENTS[agent].project_env if os.environ.get(name)), None)
    return os.path.realpath(found or os.getcwd())


def doorbell_path(project: str, *, create: bool = False) -> str | None:
    """The doorbell of ``project``'s server (whether one runs or not), or ``None`` when there is
    no private directory or no project directory.

    The name is the directory's identity (device and inode): bounded in length, the same for
    every spelling of the path, and read with ``os``, which a hook has loaded already. Which
    server a hook reaches only decides who computes the answer, never what it is: the server
    decides with the request's own environment, working directory and options."""
    directory = private_dir(create=create)
    if directory is None:
        return None
    try:
        identity = os.stat(project)
    except OSError:
        return None
    return os.path.join(directory, f"{identity.st_dev:x}-{identity.st_ino:x}{DOORBELL}")


def request_paths(doorbell: str, token: str) -> tuple[str, str]:
    """The request file and the reply FIFO of the request ``token`` rung at ``doorbell``."""
    base = f"{doorbell[: -len(DOORBELL)]}.{token}"
    return f"{base}.request", f"{base}.reply"


def frame(payload: bytes) -> bytes:
    return MAGIC + len(payload).to_bytes(8, "big") + payload


def unframe(data: bytes, limit: int) -> bytes:
    """The payload of ``data``, one whole frame and nothing after it; ``ValueError`` when it is
    malformed, truncated, followed by more bytes, or its payload is larger than ``limit``."""
    if data[: len(MAGIC)] != MAGIC or len(data) < HEADER:
        raise ValueError("not a bgc serve frame")
    size = int.from_bytes(data[len(MAGIC) : HEADER], "big")
    if size > limit:
        raise ValueError(f"a frame of {size} bytes (at most {limit})")
    if len(data) != HEADER + size:
        raise ValueError(f"a frame of {size} bytes in {len(data) - HEADER}")
    return data[HEADER:]


def exchange(doorbell: str, payload: bytes, deadline: float) -> bytes | None:
    """Hand ``payload`` to the server at ``doorbell`` and return its reply's payload, or ``None``
    when no server of this user's rings there, or it did not answer a whole frame (at most
    :data:`MAX_REPLY` bytes) by ``deadline`` (``time.monotonic()``), or it went away first."""
    try:
        bell = os.open(doorbell, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # no doorbell, or nobody reads it (ENXIO): no server
    token = f"{os.getpid():x}-{os.urandom(8).hex()}"
    request, reply = request_paths(doorbell, token)
    created: list[str] = []
    reader = -1
    try:
        if not is_private(os.fstat(bell), stat.S_IFIFO):
            return None
        os.mkfifo(reply, 0o600)
        created.append(reply)
        # open before the ring: the server finds a reader (nobody reading is a hook that gave up)
        reader = os.open(reply, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        written = os.open(request, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        created.append(request)
        try:
            _write_all(written, frame(payload))
        finally:
            os.close(written)
        os.write(bell, f"{token}\n".encode())  # shorter than PIPE_BUF: written whole or not at all
        return _await_reply(reader, bell, deadline)
    except (OSError, ValueError):
        return None
    finally:
        os.close(bell)
        if reader >= 0:
            os.close(reader)
        for path in created:
            try:
                os.unlink(path)
            except OSError:
                pass  # the server removed the request already


def _await_reply(reader: int, bell: int, deadline: float) -> bytes:
    """The reply's payload, read from ``reader`` to its end; ``OSError`` or ``ValueError`` when
    the deadline passes, the server is gone before it wrote a whole frame (the ``bell``, which
    only the server reads, reports an error then), or the frame is not whole."""
    import select

    poller = select.poll()
    poller.register(reader, select.POLLIN)
    poller.register(bell, 0)  # only its error: nobody reads the doorbell any more
    chunks: list[bytes] = []
    total = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise TimeoutError("the server did not answer in time")
        chunk = os.read(reader, 1 << 20)  # the server gone with a writer still open: EAGAIN, an OSError
        if not chunk:
            return unframe(b"".join(chunks), MAX_REPLY)
        total += len(chunk)
        if total > HEADER + MAX_REPLY:
            raise ValueError(f"a reply of more than {HEADER + MAX_REPLY} bytes")
        chunks.append(chunk)


def identity() -> tuple[str, str]:
    """The code a request comes from (bgc's package directory, the Python version): a server
    running other code refuses the request."""
    import bgc

    return os.path.dirname(os.path.abspath(bgc.__file__)), sys.version


def encode_reply(code: int, stdout: bytes, stderr: bytes) -> bytes:
    """An answer: the hook's exit code, stdout and stderr, as the hook process would end."""
    return ANSWERED + bytes([code]) + len(stdout).to_bytes(4, "big") + stdout + stderr


def decode_reply(payload: bytes) -> tuple[int, bytes, bytes] | None:
    """``(code, stdout, stderr)`` of a well-formed answer a hook could have given, else ``None``
    (a refusal, garbage, or an answer no hook gives: then the hook decides itself)."""
    if len(payload) < 6 or payload[:1] != ANSWERED:
        return None
    code, size = payload[1], int.from_bytes(payload[2:6], "big")
    if code not in ACCEPTED_CODES or 6 + size > len(payload):
        return None
    stdout, stderr = payload[6 : 6 + size], payload[6 + size :]
    if code == 0 and (stderr or not (stdout == b"" or (stdout.startswith(b"{") and stdout.endswith(b"}\n")))):
        return None  # an answer is one JSON object and a newline, or nothing at all
    if code == 2 and (stdout or not stderr):
        return None  # a blocked call says why, and answers nothing
    return code, stdout, stderr


class Fallback:
    """No server answered: the hook decides in this process, with what was read of stdin (a plain
    class: a dataclass would import :mod:`dataclasses` on every served hook)."""

    __slots__ = ("complete", "data", "started")

    def __init__(self, data: bytes, complete: bool, started: float) -> None:
        self.data = data
        """The hook input read so far."""
        self.complete = complete
        """Whether stdin ended (or :data:`MAX_INPUT` was passed) with it."""
        self.started = started
        """``time.monotonic()`` when the hook started: the deadline counts from here."""

    def read(self) -> bytes:
        """The hook input: the bytes already read, then whatever stdin still holds, up to
        ``MAX_INPUT + 1`` bytes in all (a caller's deadline bounds the wait)."""
        chunks, total = [self.data], len(self.data)
        while not self.complete and total <= MAX_INPUT:
            chunk = os.read(0, min(1 << 20, MAX_INPUT + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)


def ask_server(agent: str, arguments: list[str], options: dict[str, object]) -> int | Fallback:
    """The server's exit code after its answer was written to stdout and stderr, or
    :class:`Fallback` when there is no server or anything went wrong on the way to it.
    ``arguments`` and ``options``: the hook's other positionals and its options as the command
    line gave them (the server checks them as the hook does)."""
    started = time.monotonic()
    timeout = options.get("timeout")
    try:
        seconds = float(timeout) if timeout is not None else DEFAULT_TIMEOUT  # type: ignore[arg-type]
    except ValueError:
        seconds = 0.0  # the hook itself explains the bad --timeout
    data, complete = _read_stdin(started + seconds * SERVER_SHARE)
    fallback = Fallback(data, complete, started)
    if not complete or not 0 < seconds <= 600 or agent not in AGENTS:
        return fallback
    request = {"kind": "hook", "agent": agent, "arguments": arguments, "options": options}
    try:
        path = doorbell_path(project_of(agent))
        reply = _ask(path, request, data, started + seconds * SERVER_SHARE) if path else None
    except Exception:  # noqa: BLE001 - this runs before the guard: anything unforeseen is the hook's to decide
        reply = None
    if reply is None:
        return fallback
    code, stdout, stderr = reply
    try:
        _write_all(1, stdout)
        _write_all(2, stderr)
    except OSError:
        from bgc.errors import ExitCode  # only on these rare paths: its import costs more than an answer

        # the answer was not delivered, a reader gone (a broken pipe) too: a block, the one exit
        # code every agent takes as one (141, the guard's for a reader gone, lets the call through)
        return ExitCode.BAD_INPUT
    return code


def _ask(path: str, request: dict[str, object], data: bytes, deadline: float) -> tuple[int, bytes, bytes] | None:
    # the deadline (time.monotonic(), one clock for every process here): the server stops deciding
    # a call whose hook has stopped waiting for it
    # its import path: the server refuses to decide for a hook whose own process takes code from the project
    meta = {**request, "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path, "code": identity(), "deadline": deadline}
    reply = exchange(path, marshal.dumps((meta, data)), deadline)
    return None if reply is None else decode_reply(reply)


def _read_stdin(deadline: float) -> tuple[bytes, bool]:
    """Up to ``MAX_INPUT + 1`` bytes of stdin, and whether it ended before ``deadline``."""
    import select

    chunks: list[bytes] = []
    total = 0
    while total <= MAX_INPUT:
        try:
            ready, _, _ = select.select([0], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                return b"".join(chunks), False
            chunk = os.read(0, min(1 << 20, MAX_INPUT + 1 - total))
        except (OSError, ValueError):
            return b"".join(chunks), False
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks), True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
