"""``bgc serve``: a project's warm decision server, which the agent's hook only talks to.

A hook is a fresh process before every tool call: Python starts, bgc imports itself, reads the
compiled policy from the cache, opens the store (SQLite creates and, at close, checkpoints and
syncs its write-ahead log) and decides — most of it the same work every time. The server does
that work once: the hook (:mod:`bgc.adapters.agents.client`, run before anything heavy is imported) hands
it the whole invocation (argv, stdin bytes, working directory, environment), the server runs
*the same entry point* the hook would have run in its own process (:data:`bgc.app.launch.FAST_COMMANDS`
``hook``, under :func:`bgc.app.guard.guarded`), and the hook writes back its stdout, stderr and exit
code byte for byte.

What it keeps warm, and how each is kept honest:

* **bgc's code**, imported. Every request first stamps bgc's files again (the cache's code key,
  :func:`bgc.core.cache.code_digest`, computed afresh); a change (an upgrade, an edited checkout) makes
  the server refuse the request and exit, and the hook decides in its own process with the new
  code. A request from another installation or Python is refused too.
* **Compiled policies**, in memory (:func:`bgc.runtime.calls.compiled_policy` ``memo``): checked on every
  request against every file the policy was read from, exactly as an on-disk cache entry is; an
  edited policy is compiled again on the next call.
* **Open SQLite stores** (:class:`WarmState`): no per-call open, schema check, WAL creation and
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
import sys
import time
from typing import Any

from bgc.errors import ExitCode, UsageError
from bgc.adapters.agents import client

DEFAULT_IDLE = 900.0
"""Seconds without a request before the server exits (15 minutes)."""
REQUEST_SECONDS = 10.0
"""Seconds a client has to send its whole request once connected."""
START_SECONDS = 10.0
"""Seconds ``--detach`` waits for the new server to listen."""
MAX_POLICIES = 32
"""Compiled policies kept in memory at most (a project has one or two; a full memo starts over)."""
RACY_SECONDS = 2.0
"""A policy file changed this recently is checked by its contents, not its stamp (some file
systems keep times in whole seconds, most in ticks of milliseconds)."""
MAX_STORES = 4
"""Open stores kept at most (a project has one)."""
CONTROL = ("status", "stop")
"""Requests for people (``--status``, ``--stop``), besides the hook's."""


def run(
    directory: str = ".", *, idle: str | float = DEFAULT_IDLE, detach: bool = False, stop: bool = False,
    status: bool = False, quiet: bool = False,
) -> ExitCode:  # fmt: skip
    """Serve the project at ``directory`` (in the foreground, or ``detach``ed); or ask its server
    for its ``status``, or to ``stop``."""
    from bgc.app.commands import io

    if sum((detach, stop, status)) > 1:
        raise UsageError("give one of --detach, --stop and --status")
    if not os.path.isdir(directory):
        raise UsageError(f"{directory!r} is not a directory")
    project = os.path.realpath(directory)
    seconds = _idle_seconds(idle)
    if stop or status:
        found = control(project, "stop" if stop else "status")
        if found is None:
            if not quiet:
                io.write_line(f"no decision server serves {project}")
            return ExitCode.OK if stop else ExitCode.FINDINGS
        if stop:
            _wait_gone(project)
        if not quiet:
            io.write_line(f"stopped the decision server of {project} (pid {found['pid']})" if stop else _status_text(found))
        return ExitCode.OK
    if detach:
        return _detach(project, seconds, quiet)
    return serve(project, seconds)


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


def _wait_gone(project: str) -> None:
    """Wait (at most :data:`START_SECONDS`) until the stopped server has let go of its lock, so
    that a server started right after (a session cleared: SessionEnd, then SessionStart) finds
    the project free."""
    import fcntl

    path = client.socket_path(project)
    if path is None:
        return
    try:
        lock = os.open(_lock_path(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            fcntl.flock(lock, fcntl.LOCK_UN)
            return
    finally:
        os.close(lock)


def _lock_path(socket_path: str) -> str:
    """The lock file beside a server's socket: held (``flock``) for as long as the server runs."""
    return socket_path[: -len(".sock")] + ".lock"


def _status_text(found: dict[str, Any]) -> str:
    return (
        f"the decision server of {found['project']}: pid {found['pid']}, up {found['up']:.0f} s, "
        f"{found['served']} requests served, exits after {found['idle']:g} s idle"
    )


def _idle_seconds(idle: str | float) -> float:
    try:
        seconds = float(idle)
    except ValueError:
        raise UsageError(f"--idle must be a number of seconds, not {idle!r}") from None
    if not 0 < seconds <= 7 * 24 * 3600:
        raise UsageError(f"--idle must be more than 0 and at most a week (604800 seconds), not {idle!r}")
    return seconds


def _detach(project: str, idle: float, quiet: bool) -> ExitCode:
    """Start the server in the background (its own session, no terminal, stdio on /dev/null) and
    return once it answers, or say why it did not start; the hook decides in its own process
    either way, so nothing depends on this succeeding."""
    import subprocess

    from bgc.app.commands import io

    running = control(project, "status")
    if running is not None:
        if not quiet:
            io.write_line(f"a decision server already serves {project} (pid {running['pid']})")
        return ExitCode.OK
    # -P: nothing prepended to sys.path (-m would put the working directory there, and a module
    # found in it would run as the server that answers every hook of the project)
    command = [sys.executable, "-P", "-m", "bgc", "serve", "--dir", project, "--idle", repr(idle)]
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
        start_new_session=True, close_fds=True,
    )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        running = control(project, "status")
        if running is not None:
            if not quiet:
                io.write_line(f"started the decision server of {project} (pid {running['pid']})")
            return ExitCode.OK
        if child.poll() is not None:
            break
        time.sleep(0.02)
    raise UsageError(f"the decision server of {project} did not start: run `bgc serve --dir {project}` to see why")


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
        return tuple(map(_stamp, self.paths))

    def unchanged(self) -> bool:
        from bgc.core import cache

        now = self._stamps()
        if now == self.stamps:
            return True
        if cache.code_digest.__wrapped__() != self.digest:
            return False
        self.stamps = now
        return True


def _stamp(path: str) -> tuple[int, ...] | None:
    """A file's stamp as the cache's code key takes it (size, modification and change times in
    nanoseconds, inode, device), or None when it is gone."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev


class WarmState:
    """The stores and compiled policies kept between requests (:class:`bgc.app.commands.hook.Warm`)."""

    def __init__(self, racy_seconds: float = RACY_SECONDS) -> None:
        self.racy_seconds = racy_seconds
        self.policies: dict[str, Any] = {}
        self.stamped: dict[tuple[str, str, str | None], tuple[tuple[str, ...], tuple[Any, ...] | None, Any]] = {}
        self.stores: dict[str, tuple[Any, tuple[int, int]]] = {}

    def compiled_policy(self, path: str, mode: str | None) -> Any:
        """:func:`bgc.runtime.calls.compiled_policy`, its answer kept while the stamp of every file the
        policy was read from is unchanged (a stat each, the cache's own witness of an edit,
        :func:`bgc.core.cache.code_digest`); when one moved, the files' contents decide, as they do
        for an entry of the on-disk cache. Stamps are taken before the contents are checked, so
        an edit racing the check moves a stamp and is seen on the next call; and stamps younger
        than ``racy_seconds`` (:data:`RACY_SECONDS`) are not trusted (a file system's clock ticks coarsely: a second
        edit of the same size within one tick would keep the stamp), as git treats a "racily
        clean" file."""
        from bgc.runtime.calls import compiled_policy

        key = (os.getcwd(), path, mode)
        files, stamps, compiled = self.stamped.get(key, ((path,), None, None))
        settled = time.time_ns() - int(self.racy_seconds * 1e9)
        before = tuple(map(_stamp, files))
        if compiled is not None and stamps == before and None not in before:
            return compiled
        if len(self.policies) >= MAX_POLICIES:
            self.policies.clear()
            self.stamped.clear()
        compiled = compiled_policy(path, mode, memo=self.policies)
        entry = next((entry for entry in self.policies.values() if entry[2] is compiled), None)
        if entry is not None:
            base = os.path.dirname(path)
            read = (path, *(os.path.join(base, name) for name, _ in entry[1]))
            trusted = read == files and all(stamp is not None and stamp[2] < settled for stamp in before)
            self.stamped[key] = (read, before if trusted else None, compiled)  # else: contents decide next time too
        return compiled

    def open_store(self, location: str) -> Any:
        """The open store at ``location`` when it is still the same file, else a new one (kept
        when it is a SQLite file that did not change while it was opened)."""
        from bgc.runtime.store import open_store

        if location.startswith(("postgresql://", "postgres://")):
            return open_store(location, durable=True)  # a network connection may have gone: one per request
        kept = self.stores.pop(location, None)
        if kept is not None:
            if _file_identity(location) == kept[1]:
                self.stores[location] = kept
                return kept[0]
            kept[0].close()
        before = _file_identity(location)
        store = open_store(location, durable=True)  # kept open, so never checkpointed by a close: every commit synced
        if before is not None and before == _file_identity(location):  # the file opened is the file stamped
            if len(self.stores) >= MAX_STORES:
                self.close()
            self.stores[location] = (store, before)
        return store

    def release_store(self, store: Any, failed: bool) -> None:
        """A store the hook is done with: kept, unless the request failed or it was not kept."""
        for location, (kept, _) in list(self.stores.items()):
            if kept is store:
                if failed:
                    del self.stores[location]
                    store.close()
                return
        store.close()

    def close(self) -> None:
        for store, _ in self.stores.values():
            store.close()
        self.stores.clear()


def _file_identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


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
    lock = os.open(_lock_path(path), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
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
    bound = _file_identity(path)

    def finish(signum: int, frame: object) -> None:
        raise _Stop  # not SystemExit: the guard around a hook run would take that for its exit code

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    warm = WarmState()
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
        if _file_identity(path) == bound:
            os.unlink(path)
        os.close(lock)


class _Stop(BaseException):
    """SIGTERM or SIGINT: stop now. A request being served gets no reply (its hook decides itself)."""


def _warm_imports() -> None:
    """Import, once, what deciding a hook call imports (the first request is then warm too)."""
    import importlib

    from bgc.app.commands.hook import ADAPTERS

    for module in (*ADAPTERS.values(), "bgc.runtime.calls", "bgc.runtime.enforce", "bgc.runtime.store.sqlite", "bgc.runtime.approvals", "bgc.runtime.shell",
                   "bgc.runtime.trees", "bgc.analysis.config", "bgc.core.values.documents", "bgc.app.guard", "bgc.app.launch"):  # fmt: skip
        importlib.import_module(module)


def _handle(connection: Any, warm: WarmState, code: CodeWatch, state: dict[str, Any]) -> bool:
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
        reply = _run_hook(meta, data, warm)
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
        text = (str, str)
        shapes = {"argv": list, "cwd": str, "env": dict, "stdout": tuple, "stderr": tuple}
        if not all(isinstance(meta.get(key), kind) for key, kind in shapes.items()):
            raise ValueError("a hook request's fields are not what they should be")
        if not all(isinstance(item, str) for item in meta["argv"]) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in meta["env"].items()
        ):
            raise ValueError("argv and the environment must be text")
        if not all(len(meta[stream]) == 2 and all(map(isinstance, meta[stream], text)) for stream in ("stdout", "stderr")):
            raise ValueError("the streams' encodings must be text")
    return meta, data


def _adopt_environment(environment: dict[str, str]) -> None:
    """Make ``os.environ`` exactly ``environment``, setting only what differs (a session's
    requests carry the same one, and each change is a ``putenv``). It stays until the next
    request: nothing the server does between requests reads it."""
    for name in [name for name in os.environ if name not in environment]:
        del os.environ[name]
    for name, value in environment.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _run_hook(meta: dict[str, Any], data: bytes, warm: WarmState) -> bytes:
    """Run the hook's own entry point as the client's process would have, with its argv, stdin,
    working directory and environment; its exit code, stdout and stderr as a reply."""
    import io

    from bgc.app.guard import guarded
    from bgc.app.launch import FAST_COMMANDS, fast_arguments  # the hook process's own entry (tests/test_layers.py ALLOWED)

    fast = fast_arguments(meta["argv"])
    if fast is None or fast[0] != "hook":
        return client.REFUSED + b"not a hook invocation"
    _, positionals, options = fast
    saved = sys.stdin, sys.stdout, sys.stderr, os.getcwd()
    stdout, stderr = io.BytesIO(), io.BytesIO()
    exit_code: object = None
    try:
        os.chdir(meta["cwd"])
        _adopt_environment(meta["env"])
        out = io.TextIOWrapper(stdout, encoding=meta["stdout"][0], errors=meta["stdout"][1])
        err = io.TextIOWrapper(stderr, encoding=meta["stderr"][0], errors=meta["stderr"][1])
        sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO(data)), out, err
        try:
            guarded(lambda: FAST_COMMANDS["hook"].run(positionals, {**options, "warm": warm}))
        except SystemExit as done:
            exit_code = done.code
        out.flush()
        err.flush()
        written = stdout.getvalue(), stderr.getvalue()
    except Exception as error:  # noqa: BLE001 - anything here is the client's to decide: it falls back
        return client.REFUSED + f"{type(error).__name__}: {error}".encode("utf-8", "replace")
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved[:3]
        os.chdir(saved[3])
    if not isinstance(exit_code, int) or not 0 <= exit_code < 256:
        return client.REFUSED + b"no exit code"
    return client.encode_reply(exit_code, *written)
