"""The hook's way to a warm decision server (``bgc serve``), tried before anything heavy is imported.

A hook runs as a fresh process before every tool call, and most of its time is Python starting
and bgc importing itself. A decision server started once per project (``bgc serve``,
:mod:`bgc.app.server`) keeps that work warm; this module is the hook's side: it reads the hook
input, hands the call (the agent, the hook's options, the stdin bytes, the working directory and
the environment) to the project's server over a Unix socket, and writes back the server's answer
byte for byte. The server answers with the very function the hook would have run
(:func:`bgc.adapters.agents.hook.decide`), so an answer is the same whether it came from there or
from here.

Fail closed, and never slower to fail than the hook's own deadline: no server, a socket that is
not ours, a refused connection, a server that does not answer within half the deadline, a reply
that is not whole and well-formed, a server running other code — each one makes the hook decide
in its own process with the input already read (:class:`Fallback`), never allow. Imports only
the standard library's ``os``, ``sys``, ``stat``, ``marshal``, ``select``, ``time`` and
``socket``, and the agents' rows (:data:`bgc.adapters.agents.AGENTS`): ``json`` and ``typing``
would each cost more than the server's whole answer.

Where a server listens (:func:`socket_path`): a directory only this user may enter,
``$XDG_RUNTIME_DIR/bgc`` or else ``/tmp/bgc-UID`` (mode 0700, owned by this user, not a link), a
socket named by the project directory's device and inode (so its length is bounded). A socket is used
only when it is owned by this user with no access for others, and only when the process at the
other end runs as this user (``SO_PEERCRED``, Linux; elsewhere no server is used).
"""

from __future__ import annotations

import socket
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

def private_dir(*, create: bool = False) -> str | None:
    """The directory servers' sockets live in, or ``None`` when it is missing (and not
    ``create``d) or anyone but this user could enter it, write to it or replace it."""
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
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    return path if private else None


def project_of(agent: str) -> str:
    """The project directory a hook of ``agent`` runs for, as its server is named: the agent's
    project variable (its :data:`~bgc.adapters.agents.AGENTS` row), else the working directory.
    Only the choice of server depends on it; the server decides with the request's own
    environment and working directory."""
    found = next((os.environ[name] for name in AGENTS[agent].project_env if os.environ.get(name)), None)
    return os.path.realpath(found or os.getcwd())


def socket_path(project: str, *, create: bool = False) -> str | None:
    """Where the server of ``project`` listens, or ``None`` when there is no private directory,
    no project directory, or the path would be too long for a Unix socket.

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
    path = os.path.join(directory, f"{identity.st_dev:x}-{identity.st_ino:x}.sock")
    return path if len(path) < 108 else None


def trusted_socket(path: str) -> bool:
    """True when ``path`` is a socket of this user's that nobody else may use."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def peer_uid(connection: socket.socket) -> int | None:
    """The user the process at the other end of a Unix socket runs as (``SO_PEERCRED``:
    pid, uid, gid as native ints), or ``None`` where the system cannot say."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    raw = connection.getsockopt(socket.SOL_SOCKET, option, 12)
    return int.from_bytes(raw[4:8], sys.byteorder) if len(raw) == 12 else None


def connect(path: str, seconds: float) -> socket.socket:
    """A connection to the server at ``path``, whose peer was checked to be this user; raises
    ``OSError`` (a refused or timed-out connection, a peer of another user)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(max(seconds, 0.001))
        connection.connect(path)
        if peer_uid(connection) != os.getuid():
            raise PermissionError(f"the process behind {path} is not this user's")
    except BaseException:
        connection.close()
        raise
    return connection


def frame(payload: bytes) -> bytes:
    return MAGIC + len(payload).to_bytes(8, "big") + payload


def read_frame(connection: socket.socket, limit: int, deadline: float) -> bytes:
    """One whole frame's payload, then the end of the stream; ``ValueError`` when the frame is
    malformed, larger than ``limit`` or followed by more bytes, ``OSError`` on a timeout."""
    received = _read_exactly(connection, HEADER, deadline)
    if received[: len(MAGIC)] != MAGIC:
        raise ValueError("not a bgc serve frame")
    size = int.from_bytes(received[len(MAGIC) :], "big")
    if size > limit:
        raise ValueError(f"a frame of {size} bytes (at most {limit})")
    payload = _read_exactly(connection, size, deadline)
    return payload


def _read_exactly(connection: socket.socket, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        connection.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = connection.recv(min(left, 1 << 20))
        if not chunk:
            raise ValueError("the stream ended inside a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def send(connection: socket.socket, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    while view:
        connection.settimeout(max(deadline - time.monotonic(), 0.001))
        sent = connection.send(view[: 1 << 20])
        view = view[sent:]


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
        path = socket_path(project_of(agent))
        reply = _ask(path, request, data, started + seconds * SERVER_SHARE) if path and trusted_socket(path) else None
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
    meta = {**request, "cwd": os.getcwd(), "env": dict(os.environ), "code": identity()}
    try:
        connection = connect(path, deadline - time.monotonic())
    except (OSError, ValueError):
        return None
    try:
        send(connection, frame(marshal.dumps((meta, data))), deadline)
        connection.shutdown(1)  # SHUT_WR: the request is whole
        reply = read_frame(connection, MAX_REPLY, deadline)
        connection.settimeout(max(deadline - time.monotonic(), 0.001))
        if connection.recv(1):
            return None  # more than one frame: not a reply this client understands
    except (OSError, ValueError):
        return None
    finally:
        connection.close()
    return decode_reply(reply)


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
