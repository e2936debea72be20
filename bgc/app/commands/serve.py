"""``bgc serve``: start, stop or ask after a project's decision server (:mod:`bgc.app.server`).

The server keeps a project's hook decisions warm; ``bgc init AGENT`` starts it at the agent's
SessionStart (``--detach``) and stops it at SessionEnd (``--stop``) where the agent has one.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bgc.adapters.agents import client
from bgc.app.commands.init import bgc_program
from bgc.app.server import control, lock_path, serve
from bgc.errors import ExitCode, UsageError

DEFAULT_IDLE = 900.0
"""Seconds without a request before the server exits (15 minutes)."""
START_SECONDS = 10.0
"""Seconds ``--detach`` waits for the new server to listen."""


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


def _wait_gone(project: str) -> None:
    """Wait (at most :data:`START_SECONDS`) until the stopped server has let go of its lock, so
    that a server started right after (a session cleared: SessionEnd, then SessionStart) finds
    the project free."""
    import fcntl

    path = client.doorbell_path(project)
    if path is None:
        return
    try:
        lock = os.open(lock_path(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
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


def _status_text(found: dict[str, Any]) -> str:
    return (
        f"the decision server of {found['project']}: pid {found['pid']}, up {found['up']:.0f} s, "
        f"{found['served']} requests served ({found['untaken']} replies not taken), "
        f"exits after {found['idle']:g} s idle"
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
    # isolated as every command bgc init registers: no PYTHONPATH, user site or working directory
    # on its sys.path, where a module found would run as the server answering every hook of the project
    command = [*bgc_program(), "serve", "--dir", project, "--idle", repr(idle)]
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
