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

How requests arrive (the transport is :func:`bgc.adapters.agents.client.exchange`'s): a hook
writes its request to a file, creates a FIFO for the reply, and writes a line naming them to the
project's doorbell, a FIFO this server keeps open for reading and writing (so it never reads an
end, and a hook's ring never finds it closed while it runs). The server hands each request, in
the order they rang, to one of :data:`WORKERS` worker processes forked from it once its imports
are warm: each worker decides one request at a time in its main thread (the hook's deadline is a
SIGALRM there) and keeps its own compiled policies and open stores, so a slow decision holds one
worker while the calls of other hooks go to the others. A worker that outlives any deadline a
hook may set (:data:`BUSY_SECONDS`) is killed and replaced; its hook, finding its reply FIFO closed
without an answer, decides itself. For each request a worker opens the reply FIFO first (a hook that gave up has removed it: its call is not decided),
then reads the request, which is bounded (:data:`bgc.adapters.agents.client.MAX_INPUT` plus
:data:`bgc.adapters.agents.client.MAX_META`); a reply the hook does not take within
:data:`REPLY_SECONDS` is dropped. The server exits after ``--idle`` seconds without a request, on
``bgc serve --stop``, on SIGTERM or SIGINT, or when bgc's code changes; hooks waiting then see
the doorbell closed and decide themselves at once. A lock file beside the doorbell (``flock``)
keeps a second server from serving the same project.

Who may talk to it: the doorbell, the requests and the replies live in a directory only this user
may enter (0700, owner checked); a request is read only from a regular file this user owns that
nobody else may read or write, and a reply is written only to a FIFO of the same kind. Whoever
wrote such a request runs as this user, and could run ``bgc hook`` itself with the same arguments
and environment; the server gives it nothing more.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bgc.adapters.agents import AGENTS, client
from bgc.adapters.agents.hook import MAX_TIMEOUT, Options, check_agent, decide
from bgc.errors import ExitCode, UsageError
from bgc.core.cache import stamp
from bgc.runtime.isolation import imports_inside
from bgc.runtime.session import WarmSources, file_identity

REPLY_SECONDS = 10.0
"""Seconds a hook has to take its reply (when it is larger than the reply FIFO holds)."""
CONTROL_SECONDS = 10.0
"""Seconds ``--status`` and ``--stop`` wait for the server's answer."""
TOKEN_CHARACTERS = frozenset(b"0123456789abcdef-")
"""What a token rung at the doorbell is made of (a pid and random bits, in hex): never a ``/`` or
a ``.``, so a token names files in the private directory only."""
MAX_TOKEN = 40
"""Characters of a token at most."""
CONTROL = ("status", "stop")
"""Requests for people (``--status``, ``--stop``), besides the hook's."""
OPTIONS = frozenset({"policy", "plan", "mode", "unknown", "timeout", "store", "asks"})
"""The hook options a request may carry (:meth:`bgc.adapters.agents.hook.Options.of`)."""
WORKERS = 4
"""Requests decided at once, each by a worker process of its own."""
BUSY_SECONDS = MAX_TIMEOUT + REPLY_SECONDS
"""Seconds a worker may spend on one request: the longest deadline a hook may set, and the time
its reply may take. A worker busy for longer is stuck past its own deadline: it is killed."""
SERVED, FINISHED, UNTAKEN, STOP = 1, 2, 4, 8
"""What a worker reports, a byte of these flags: a hook's call was decided (before its reply is
written); the request is done, its reply not taken, the server to stop."""


def control(project: str, kind: str) -> dict[str, Any] | None:
    """Ask the project's server for ``kind`` (:data:`CONTROL`): its answer, or None when no
    server answers."""
    path = client.doorbell_path(project)
    if path is None:
        return None
    request = marshal.dumps(({"kind": kind, "code": client.identity()}, b""))
    payload = client.exchange(path, request, time.monotonic() + CONTROL_SECONDS)
    if payload is None:
        return None
    try:
        answer = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    return answer if isinstance(answer, dict) and isinstance(answer.get("pid"), int) else None


def lock_path(doorbell: str) -> str:
    """The lock file beside a server's doorbell: held (``flock``) for as long as the server runs."""
    return doorbell[: -len(client.DOORBELL)] + ".lock"


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
    import select
    import signal

    if not sys.platform.startswith("linux"):
        raise UsageError("the decision server runs on Linux only (how its hooks see it go away): no server")
    refusal = imports_inside(project)
    if refusal is not None:
        raise UsageError(f"no server: {refusal}")
    path = client.doorbell_path(project, create=True)
    if path is None:
        raise UsageError("no private directory for the server's doorbell ($XDG_RUNTIME_DIR/bgc or /tmp/bgc-UID, 0700)")
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
    _remove_abandoned(path)
    try:
        os.unlink(path)  # a doorbell left by a server that died: the lock says none runs now
    except FileNotFoundError:
        pass
    os.mkfifo(path, 0o600)
    bell = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)  # a writer of its own: never an end
    made = file_identity(path)

    def finish(signum: int, frame: object) -> None:
        raise _Stop  # unwinds whatever the request being served was doing (a decision catches only Exception)

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    state = {"project": project, "pid": os.getpid(), "started": time.time(), "served": 0, "untaken": 0, "idle": idle}
    workers: list[_Worker] = []
    waiting: deque[bytes] = deque()
    rung = b""
    last = time.monotonic()
    try:
        for _ in range(WORKERS):
            workers.append(_Worker.start(path, code, (bell, lock), workers))
        while True:
            busy = [worker for worker in workers if worker.since is not None]
            now = time.monotonic()
            wait = min((worker.since + BUSY_SECONDS for worker in busy), default=last + idle) - now  # type: ignore[operator]
            ready = select.select([bell, *(worker.results for worker in workers)], [], [], max(wait, 0))[0]
            if not ready and not busy and not waiting and time.monotonic() >= last + idle:
                return ExitCode.OK
            if bell in ready:
                try:
                    rung += os.read(bell, 1 << 16)
                except BlockingIOError:
                    pass
                *tokens, rung = rung.split(b"\n")
                rung = rung[-MAX_TOKEN - 1 :]  # what is kept of a longer line is still too long to be a token
                waiting.extend(token for token in tokens if _is_token(token))
                last = time.monotonic()
            for index, worker in enumerate(workers):
                if worker.results in ready or (worker.since is not None and time.monotonic() >= worker.since + BUSY_SECONDS):
                    report = worker.report()
                    if report is None:  # gone, or stuck and killed: its hook decides itself
                        state["untaken"] += worker.since is not None
                        worker.end()
                        workers[index] = _Worker.start(path, code, (bell, lock), [other for other in workers if other is not worker])
                        continue
                    state["served"] += bool(report & SERVED)  # a worker decides one call at a time: one at most
                    state["untaken"] += bool(report & UNTAKEN)
                    if report & STOP:
                        return ExitCode.OK
                    last = time.monotonic()
            for worker in workers:
                if waiting and worker.since is None and worker.give(waiting[0], state):
                    waiting.popleft()  # else it is gone: its pipe's end shows next turn, and it is replaced
    except _Stop:
        return ExitCode.OK
    finally:
        for worker in workers:
            worker.end()
        if file_identity(path) == made:
            os.unlink(path)
        os.close(bell)  # a hook still waiting sees the doorbell's error: it decides itself
        _remove_abandoned(path)
        os.close(lock)


@dataclass(slots=True)
class _Worker:
    """A worker process and the pipes to it: requests' tokens one way (with the server's state,
    for a ``--status`` answer), a byte of flags per request back. ``since``: when the request it
    decides now was given to it (None when idle)."""

    pid: int
    tasks: int
    results: int
    since: float | None = None

    @classmethod
    def start(cls, doorbell: str, code: CodeWatch, inherited: tuple[int, ...], others: list[_Worker]) -> _Worker:
        """Fork a worker. The server holds no store or decision state of its own (only imports),
        so nothing open is shared: each worker opens its own."""
        to_worker, tasks = os.pipe()
        results, from_worker = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                for fd in (*inherited, tasks, results, *(fd for other in others for fd in (other.tasks, other.results))):
                    os.close(fd)
                _work(to_worker, from_worker, doorbell, code)
            finally:  # nothing of the server's (its doorbell, its lock) is the worker's to clean up
                os._exit(0)
        os.close(to_worker)
        os.close(from_worker)
        return cls(pid, tasks, results)

    def give(self, token: bytes, state: dict[str, Any]) -> bool:
        """Hand it the request ``token`` rang for; False when it is gone."""
        message = marshal.dumps((token, state))
        try:
            _write_all(self.tasks, len(message).to_bytes(4, "big") + message)
        except OSError:
            return False
        self.since = time.monotonic()
        return True

    def report(self) -> int | None:
        """The flags it reported since last asked, or None when it is gone or is stuck (then killed)."""
        if self.since is not None and time.monotonic() >= self.since + BUSY_SECONDS:
            return None
        try:
            reports = os.read(self.results, 64)
        except OSError:
            return None
        if not reports:
            return None
        flags = 0
        for report in reports:
            flags |= report
        if flags & FINISHED:
            self.since = None
        return flags

    def end(self) -> None:
        import signal

        for fd in (self.tasks, self.results):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


def _work(tasks: int, results: int, doorbell: str, code: CodeWatch) -> None:
    """A worker: decide the requests the server hands over, one at a time, until the server is
    gone (its pipe ends) or a request stops it."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the server, which ends its workers
    warm = WarmSources()
    try:
        while (head := _read_exactly(tasks, 4)) is not None:
            payload = _read_exactly(tasks, int.from_bytes(head, "big"))
            if payload is None:
                return
            token, state = marshal.loads(payload)
            untaken = state["untaken"]
            keep_going = _handle(token, doorbell, warm, code, state, lambda: _write_all(results, bytes([SERVED])))
            _write_all(results, bytes([FINISHED | UNTAKEN * (state["untaken"] > untaken) | STOP * (not keep_going)]))
    finally:
        warm.close()


def _read_exactly(fd: int, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _remove_abandoned(doorbell: str) -> None:
    """Remove the request files and reply FIFOs of this project's hooks whose process is gone (a
    hook killed before it removed them; a request may hold megabytes of a memory-backed directory)."""
    directory, stem = os.path.split(doorbell[: -len(client.DOORBELL)])
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        if len(parts) != 3 or parts[0] != stem or parts[2] not in ("request", "reply"):
            continue
        if _is_token(parts[1].encode()) and _hook_gone(parts[1]):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _hook_gone(token: str) -> bool:
    """Whether the hook that made ``token`` has ended: no process has its pid (a process of
    another user's, or a token that names no pid, counts as running)."""
    try:
        os.kill(int(token.split("-")[0], 16), 0)
    except ProcessLookupError:
        return True
    except (ValueError, OSError):
        return False
    return False


def _is_token(token: bytes) -> bool:
    return 0 < len(token) <= MAX_TOKEN and set(token) <= TOKEN_CHARACTERS


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


def _handle(token: bytes, doorbell: str, warm: WarmSources, code: CodeWatch, state: dict[str, Any],
            decided: Callable[[], None]) -> bool:  # fmt: skip
    """Serve the request ``token`` rang for; False when the server is to stop (asked to, or its
    code changed). ``decided()`` is called once a hook's call is decided, before its reply is
    written: a ``--status`` the hook's caller asks next counts it."""
    if not _is_token(token):
        return True
    request_path, reply_path = client.request_paths(doorbell, token.decode())
    try:
        reply_fd = os.open(reply_path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return True  # the hook gave up (its FIFO is gone, or nobody reads it: ENXIO): nothing to decide
    try:
        if not client.is_private(os.fstat(reply_fd), stat.S_IFIFO):
            return True  # nothing is said where someone else could read it
        try:
            meta, data = _request(_read_request(request_path))
        except (OSError, ValueError):
            meta = None
        keep_going = True
        if meta is None:
            reply = client.REFUSED + b"not a request"
        elif meta["kind"] in CONTROL:
            answer = {**state, "up": time.time() - state["started"]}
            reply, keep_going = marshal.dumps(answer), meta["kind"] != "stop"
        elif meta.get("code") != client.identity():
            reply = client.REFUSED + b"another installation of bgc"
        elif not code.unchanged():
            reply, keep_going = client.REFUSED + b"bgc's code changed: this server stops", False
        else:
            reply = _answer_hook(meta, data, warm)
            state["served"] += 1
            decided()
        try:
            taken = _write_reply(reply_fd, client.frame(reply), time.monotonic() + REPLY_SECONDS)
        except OSError:
            taken = False  # the hook gave up (EPIPE): it decides itself
        if not taken:
            state["untaken"] += 1
        return keep_going
    finally:
        os.close(reply_fd)


def _read_request(path: str) -> bytes:
    """The payload of the request file at ``path``, removed once opened; ``OSError`` or
    ``ValueError`` when it is not a regular file of this user's that nobody else may read or
    write, or is not one frame of a request's size at most."""
    limit = client.MAX_INPUT + 1 + client.MAX_META
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)  # a FIFO there does not block
    try:
        info = os.fstat(fd)
        if not client.is_private(info, stat.S_IFREG):
            raise PermissionError(f"{path} is not a private file of this user's")
        os.unlink(path)
        if info.st_size > client.HEADER + limit:
            raise ValueError(f"a request of {info.st_size} bytes")
        chunks, left = [], client.HEADER + limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    return client.unframe(b"".join(chunks), limit)


def _write_reply(fd: int, data: bytes, deadline: float) -> bool:
    """Write ``data`` to the reply FIFO ``fd`` (non-blocking): False when the hook did not take
    it all by ``deadline``; ``OSError`` when it went away."""
    import select

    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view[: 1 << 20]) :]
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                return False
    return True


def _request(payload: bytes) -> tuple[dict[str, Any], bytes]:
    """A request's fields, each checked for its type; ``ValueError`` for anything else. It was
    written by this user's own process (its file's owner and mode were checked before this is read)."""
    try:
        meta, data = marshal.loads(payload)
    except (EOFError, TypeError, ValueError) as error:
        raise ValueError(f"not a request: {error}") from None
    if not (isinstance(meta, dict) and isinstance(data, bytes) and meta.get("kind") in ("hook", *CONTROL)):
        raise ValueError("not a request")
    if meta["kind"] == "hook":
        shapes = {"agent": str, "arguments": list, "options": dict, "cwd": str, "env": dict, "path": list, "deadline": float}
        if not all(isinstance(meta.get(key), kind) for key, kind in shapes.items()) or not meta["cwd"].startswith("/"):
            raise ValueError("a hook request's fields are not what they should be")
        if not all(isinstance(item, str) for item in (*meta["arguments"], *meta["path"])) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in (*meta["env"].items(), *meta["options"].items())
        ):
            raise ValueError("the arguments, import path, options and environment must be text")
        if not meta["options"].keys() <= OPTIONS:
            raise ValueError("an option the hook does not take")
    return meta, data


def _answer_hook(meta: dict[str, Any], data: bytes, warm: WarmSources) -> bytes:
    """The hook's answer to the client's call (:func:`bgc.adapters.agents.hook.decide` with its
    environment and working directory), as a reply; a refusal for arguments the hook would
    refuse (the client's own process then says why). The decision must come before the hook's
    own deadline for the server: past it the hook has stopped waiting and decides the call
    itself, so the server stops too (a slow call cannot hold up the calls queued behind it) and
    refuses rather than answer a block nobody asked for."""
    try:
        check_agent(meta["agent"], meta["arguments"])
        options = Options.of(**meta["options"])
    except UsageError:
        return client.REFUSED + b"not a hook call this server decides"
    left = meta["deadline"] - time.monotonic()
    if not 0 < left <= options.timeout:  # the hook stopped waiting, or a deadline no hook sets
        return client.REFUSED + b"the hook's share of its deadline is over"
    try:
        code, stdout, stderr = decide(meta["agent"], replace(options, timeout=left), data, meta["env"], meta["cwd"],
                                      sources=warm, imports=meta["path"])  # fmt: skip
    except Exception as error:  # noqa: BLE001 - anything here is the client's to decide: it falls back
        return client.REFUSED + f"{type(error).__name__}: {error}".encode("utf-8", "replace")
    if time.monotonic() >= meta["deadline"]:  # nobody reads it: the hook decides the call itself
        return client.REFUSED + b"the hook's share of its deadline is over"
    return client.encode_reply(code, stdout, stderr)
