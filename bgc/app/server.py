"""A project's warm decision server (``bgc serve``, :mod:`bgc.app.commands.serve`), which the
agent's hook only talks to.

A hook is a fresh process before every tool call: Python starts, bgc imports itself, reads the
compiled policy from the cache, opens the store (SQLite creates and, at close, checkpoints and
syncs its write-ahead log) and decides — most of it the same work every time. The server does
that work once: the hook's client (:mod:`bgc.adapters.agents.client`, run before anything heavy is
imported) hands it the call (the agent, the hook's options, the stdin bytes, the working directory
and the environment), the server calls *the same function* the hook would have called in its own
process (:func:`bgc.adapters.agents.hook.decide`) with them — passing them, never adopting them:
the server's own environment, working directory and streams stay as they are — and the client
writes back its exit code, stdout and stderr byte for byte.

What it keeps warm, and how each is kept honest:

* **bgc's code**, imported. Every request first stamps bgc's files again (the cache's code key,
  :func:`bgc.core.cache.code_digest`, computed afresh); a change (an upgrade, an edited checkout) makes
  the server refuse the request and exit, and the hook decides in its own process with the new
  code. A request from another installation or Python is refused too.
* **Compiled policies**, in memory (:class:`bgc.runtime.session.WarmSources`): checked on every
  request against every file the policy was read from, exactly as an on-disk cache entry is; an
  edited policy is compiled again on the next call.
* **Open SQLite stores** (:class:`bgc.runtime.session.WarmSources`): no per-call open, schema check, WAL creation and
  close-time checkpoint. Checked on every request: a store file removed or replaced (another
  inode) is opened afresh, and a request that failed drops its connection. Nothing read from the
  store is kept: approvals, session modes and the ledger's tip are read in every decision, as the
  hook reads them.

Requests are served one at a time, in the main thread (the hook's deadline is a SIGALRM there);
others wait in the listen queue. Each request is bounded (:data:`bgc.adapters.agents.client.MAX_INPUT`
plus :data:`bgc.adapters.agents.client.MAX_META`) and must arrive within :data:`REQUEST_SECONDS`. The
server exits after ``--idle`` seconds without a request, on ``bgc serve --stop``, on SIGTERM or
SIGINT, or when bgc's code changes. A lock file beside the socket (``flock``) keeps a second
server from serving the same project.

Who may talk to it: the socket lives in a directory only this user may enter (0700, owner
checked), is itself 0600, and each connection's peer must run as this user (``SO_PEERCRED``).
Such a peer could run ``bgc hook`` itself with the same arguments and environment; the server
gives it nothing more.
"""

from __future__ import annotations

import marshal
import os
import time
from typing import Any

from bgc.adapters.agents import AGENTS, client
from bgc.adapters.agents.hook import Options, check_agent, decide
from bgc.errors import ExitCode, UsageError
from bgc.runtime.session import WarmSources, file_identity, stamp

REQUEST_SECONDS = 10.0
"""Seconds a client has to send its whole request once connected."""
CONTROL = ("status", "stop")
"""Requests for people (``--status``, ``--stop``), besides the hook's."""
OPTIONS = frozenset({"policy", "plan", "mode", "unknown", "timeout", "store", "asks"})
"""The hook options a request may carry (:meth:`bgc.adapters.agents.hook.Options.of`)."""


def control(project: str, kind: str) -> dict[str, Any] | None:
    """Ask the project's server for ``kind`` (:data:`CONTROL`): its answer, or None when no
    server answers."""
    path = client.socket_path(project)
    if path is None or not client.trusted_socket(path):
        return None
    deadline = time.monotonic() + REQUEST_SECONDS
    try:
        connection = client.connect(path, REQUEST_SECONDS)
        try:
            client.send(connection, client.frame(marshal.dumps(({"kind": kind, "code": client.identity()}, b""))), deadline)
            connection.shutdown(1)
            payload = client.read_frame(connection, client.MAX_REPLY, deadline)
        finally:
            connection.close()
        answer = marshal.loads(payload)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return answer if isinstance(answer, dict) and isinstance(answer.get("pid"), int) else None


def lock_path(socket_path: str) -> str:
    """The lock file beside a server's socket: held (``flock``) for as long as the server runs."""
    return socket_path[: -len(".sock")] + ".lock"


class CodeWatch:
    """Whether bgc's code is still the code this server imported: the cache's code key
    (:func:`bgc.core.cache.code_digest`: every file's stamp, and the list of files), checked in a
    fraction of its cost. Every request stats each file and each directory holding them (a file
    added, removed or renamed changes its directory's stamp); only when a stamp moved is the code
    key computed again, and only a different key is a change (a new ``__pycache__`` beside the
    sources moves a directory's stamp and nothing else). The stamps are taken before the key, so
    an edit racing the check shows on the next one."""

    def __init__(self) -> None:
        from bgc.core import cache

        files = cache.code_files()
        self.paths = (*files, *sorted({os.path.dirname(path) for path in files}))
        self.stamps = self._stamps()
        self.digest = cache.code_digest.__wrapped__()
        if self.digest is None:
            raise UsageError("bgc's own files cannot be stamped (a zipped install?): no server")

    def _stamps(self) -> tuple[tuple[int, ...] | None, ...]:
        return tuple(map(stamp, self.paths))

    def unchanged(self) -> bool:
        from bgc.core import cache

        now = self._stamps()
        if now == self.stamps:
            return True
        if cache.code_digest.__wrapped__() != self.digest:
            return False
        self.stamps = now
        return True


def serve(project: str, idle: float) -> ExitCode:
    """Serve the project's hooks until idle, stopped, or bgc's code changes."""
    import fcntl
    import signal
    import socket

    path = client.socket_path(project, create=True)
    if path is None:
        raise UsageError("no private directory for the server's socket ($XDG_RUNTIME_DIR/bgc or /tmp/bgc-UID, mode 0700)")
    if getattr(socket, "SO_PEERCRED", None) is None:
        raise UsageError("this system cannot say who is at the other end of a Unix socket (SO_PEERCRED): no server")
    lock = os.open(lock_path(path), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        raise UsageError(f"a decision server already serves {project}") from None
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    code = CodeWatch()  # stamped before the imports: an edit racing them shows on the first call
    _warm_imports()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)  # a socket left by a server that died: the lock says none runs now
    except FileNotFoundError:
        pass
    mask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    listener.listen(64)
    bound = file_identity(path)

    def finish(signum: int, frame: object) -> None:
        raise _Stop  # unwinds whatever the request being served was doing (a decision catches only Exception)

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    warm = WarmSources()
    state = {"project": project, "pid": os.getpid(), "started": time.time(), "served": 0, "idle": idle}
    try:
        while True:
            listener.settimeout(idle)
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                return ExitCode.OK
            try:
                if not _handle(connection, warm, code, state):
                    return ExitCode.OK
            finally:
                connection.close()
    except _Stop:
        return ExitCode.OK
    finally:
        warm.close()
        listener.close()
        if file_identity(path) == bound:
            os.unlink(path)
        os.close(lock)


class _Stop(BaseException):
    """SIGTERM or SIGINT: stop now. A request being served gets no reply (its hook decides itself)."""


def _warm_imports() -> None:
    """Import, once, what deciding a hook call imports (the first request is then warm too)."""
    for agent in AGENTS.values():
        agent.adapter()
    from bgc.analysis import config  # noqa: F401
    from bgc.core.values import documents  # noqa: F401
    from bgc.runtime import approvals, shell, trees  # noqa: F401
    from bgc.runtime.store import sqlite  # noqa: F401


def _handle(connection: Any, warm: WarmSources, code: CodeWatch, state: dict[str, Any]) -> bool:
    """Serve one connection; False when the server is to stop (asked to, or its code changed)."""
    deadline = time.monotonic() + REQUEST_SECONDS
    try:
        if client.peer_uid(connection) != os.getuid():
            return True  # another user's process: nothing is said to it
        meta, data = _request(client.read_frame(connection, client.MAX_INPUT + 1 + client.MAX_META, deadline))
    except (OSError, ValueError):
        return True
    keep_going = True
    if meta["kind"] in CONTROL:
        answer = {**state, "up": time.time() - state["started"]}
        reply, keep_going = marshal.dumps(answer), meta["kind"] != "stop"
    elif meta.get("code") != client.identity():
        reply = client.REFUSED + b"another installation of bgc"
    elif not code.unchanged():
        reply, keep_going = client.REFUSED + b"bgc's code changed: this server stops", False
    else:
        reply = _answer_hook(meta, data, warm)
        state["served"] += 1
    try:
        client.send(connection, client.frame(reply), time.monotonic() + REQUEST_SECONDS)
    except OSError:
        pass  # the client gave up: it decides itself
    return keep_going


def _request(payload: bytes) -> tuple[dict[str, Any], bytes]:
    """A request's fields, each checked for its type; ``ValueError`` for anything else. The
    peer is this user's own process (checked before this is read)."""
    try:
        meta, data = marshal.loads(payload)
    except (EOFError, TypeError, ValueError) as error:
        raise ValueError(f"not a request: {error}") from None
    if not (isinstance(meta, dict) and isinstance(data, bytes) and meta.get("kind") in ("hook", *CONTROL)):
        raise ValueError("not a request")
    if meta["kind"] == "hook":
        shapes = {"agent": str, "arguments": list, "options": dict, "cwd": str, "env": dict}
        if not all(isinstance(meta.get(key), kind) for key, kind in shapes.items()) or not meta["cwd"].startswith("/"):
            raise ValueError("a hook request's fields are not what they should be")
        if not all(isinstance(item, str) for item in meta["arguments"]) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in (*meta["env"].items(), *meta["options"].items())
        ):
            raise ValueError("the arguments, options and environment must be text")
        if not meta["options"].keys() <= OPTIONS:
            raise ValueError("an option the hook does not take")
    return meta, data


def _answer_hook(meta: dict[str, Any], data: bytes, warm: WarmSources) -> bytes:
    """The hook's answer to the client's call (:func:`bgc.adapters.agents.hook.decide` with its
    environment and working directory), as a reply; a refusal for arguments the hook would
    refuse (the client's own process then says why)."""
    try:
        check_agent(meta["agent"], meta["arguments"])
        options = Options.of(**meta["options"])
    except UsageError:
        return client.REFUSED + b"not a hook call this server decides"
    try:
        code, stdout, stderr = decide(meta["agent"], options, data, meta["env"], meta["cwd"], sources=warm)
    except Exception as error:  # noqa: BLE001 - anything here is the client's to decide: it falls back
        return client.REFUSED + f"{type(error).__name__}: {error}".encode("utf-8", "replace")
    return client.encode_reply(code, stdout, stderr)
