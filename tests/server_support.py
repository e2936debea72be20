"""Run the hook tables with and without a project's decision server (`bgc serve`), and the hook's
command in the test's own process (:func:`run_in_process`).

:func:`serving` gives a test process its own private runtime directory (``XDG_RUNTIME_DIR``,
which every hook subprocess inherits, so no other test's or person's server is ever reached)
and, for ``"server"``, starts `bgc serve` for the project there, as `bgc init claude-code`'s
SessionStart hook does, and stops it afterwards. A table run with a server also checks that the
server served the calls, so a client that silently fell back could not pass for a server's answer.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

SERVING = ["in-process", "server"]
START_SECONDS = 120  # a loaded machine imports slowly


def status(project: str) -> dict[str, Any] | None:
    from bgc.app.server import control

    return control(project, "status")


class Server:
    """A `bgc serve` process for one project, in the foreground of a subprocess."""

    def __init__(self, project: str, env: dict[str, str]) -> None:
        self.project = project
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bgc", "serve", "--dir", project, "--idle", "600"], env=env, cwd="/",
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + START_SECONDS
        while status(project) is None:
            assert self.process.poll() is None, self.process.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        from bgc.app.server import control

        if self.process.poll() is None:
            control(self.project, "stop")
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stderr.close()  # type: ignore[union-attr]


def served(server: Server | None) -> int:
    """How many hook calls ``server`` answered so far (0 for no server)."""
    if server is None:
        return 0
    found = status(server.project)
    assert found is not None, "the server is gone"
    return int(found["served"])


@contextmanager
def private_runtime() -> Iterator[str]:
    """A fresh ``XDG_RUNTIME_DIR`` for this process and its children, where the servers' doorbells
    and the hooks' requests live."""
    runtime = tempfile.mkdtemp(prefix="bgc-rt-", dir="/tmp")
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("XDG_RUNTIME_DIR", runtime)
            yield runtime
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@contextmanager
def server_for(mode: str, project: str, cache: str) -> Iterator[Server | None]:
    """No server (``"in-process"``) or a running one (``"server"``) for ``project``, in the
    current private runtime directory."""
    server = Server(project, {**os.environ, "BGC_CACHE_DIR": cache}) if mode == "server" else None
    try:
        yield server
    finally:
        if server is not None:
            server.stop()


@contextmanager
def serving(mode: str, project: str, cache: str) -> Iterator[Server | None]:
    """:func:`server_for` in a private runtime directory of its own."""
    with private_runtime(), server_for(mode, project, cache) as server:
        yield server


def run_in_process(command: str, data: bytes, environ: dict[str, str], cwd: str) -> subprocess.CompletedProcess[bytes]:
    """Run a hook ``command`` as bgc's `init` writes it (this installation's interpreter running
    bgc's entry with ``-I -c``, its ``bgc`` console script, or ``python -m bgc``, and its arguments; ``$VARIABLES`` expanded as the agent's shell
    would) through the entry point both call, :func:`bgc.app.launch.main`, in this process, with a
    process's own streams: ``data`` on file descriptor 0 (where the hook's client reads it), file
    descriptors 1 and 2 (where the client writes a server's answer, and ``sys.stdout`` and
    ``sys.stderr`` on them) kept; ``environ`` added to the environment, in ``cwd``. The exit code,
    stdout and stderr as :func:`subprocess.run` gives them.

    Why the hook tables (and the approval flows, and the garbage a server might send) run this
    way when the hook decides alone: a process per call cost them most of their time (Python and
    bgc starting, 75 times a table), while what decides a call is this entry point, the same
    code path from the client's fallback on. The process itself — the shell, the interpreter
    starting — stays tested with every served call (the same command, a process per call) and
    by the tests that run the hook alone as a subprocess (reasons, unreadable input, failures,
    the deadline, plans, a stopped or killed server).
    """
    from bgc.app.launch import main

    from bgc.app.commands import launcher
    from bgc.app.commands.init import HOOK_ENTRY

    words = [string.Template(word).safe_substitute({**os.environ, **environ}) for word in shlex.split(command)]
    started = launcher.parse(words)  # as init writes it: this interpreter, or the bgc on PATH (this one, tests/conftest.py)
    if started is not None:
        assert started[0] in (None, sys.executable), f"not this installation's bgc: {command}"
        arguments = started[1]
    else:
        starts = ([sys.executable, "-I", "-c", HOOK_ENTRY], [os.path.join(os.path.dirname(sys.executable), "bgc")],
                  [sys.executable, "-m", "bgc"], [sys.executable, "-I", "-m", "bgc"])  # as an earlier init wrote it  # fmt: skip
        start = next((start for start in starts if words[: len(start)] == start), None)
        assert start is not None, f"not this installation's bgc: {command}"
        arguments = words[len(start) :]
    with contextlib.ExitStack() as stack:
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        streams = [stack.enter_context(tempfile.TemporaryFile()) for _ in range(3)]
        for name, value in environ.items():
            patch.setenv(name, value)
        patch.chdir(cwd)
        patch.setattr(sys, "argv", ["bgc", *arguments])
        for name in ("stdin", "stdout", "stderr"):  # the hook's client replaces stdin: each is put back after
            patch.setattr(sys, name, getattr(sys, name))
        streams[0].write(data)
        streams[0].seek(0)
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(fd) for fd in (0, 1, 2)]
        for fd, stream in enumerate(streams):
            os.dup2(stream.fileno(), fd)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - closed by the finally below
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        try:
            main()
        except SystemExit as done:
            code = done.code
        else:
            raise AssertionError("bgc's entry point returned instead of exiting")
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
            for fd, kept in enumerate(saved):
                os.dup2(kept, fd)
                os.close(kept)
        written = []
        for stream in streams[1:]:
            stream.seek(0)
            written.append(stream.read())
    assert isinstance(code, int), code
    return subprocess.CompletedProcess(["bgc", *arguments], int(code), *written)
