"""A child behind a stdio relay: what every bgc proxy that stands between a peer and a child it
starts (``bgc mcp-proxy`` before an MCP server, ``bgc acp-proxy`` before an ACP agent) does with
the child, whatever the protocol.

The peer speaks to bgc on this process's standard streams; bgc starts the child as a command and
relays lines both ways with two pumps, one per direction, which each proxy writes for its own
protocol. Stated once here, for every proxy alike:

- The child runs in a **process group of its own**, so a signal bgc passes on reaches whatever
  the child started too.
- **SIGTERM, SIGINT and SIGHUP** are passed to that group; a child still running
  :attr:`Relay.grace` seconds after one is killed.
- When the **peer goes away** (the peer pump returns), the child's input is closed; a child that
  does not exit within its grace is terminated, then killed.
- When the **child exits** (its output closes), the relay returns its status: the child's exit
  code, or 128 + N when a signal N ended it; the child is never left running after the relay.
- A child that **cannot be started** is status 127, with the reason on the log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO

#: The signals a relay passes to its child (a peer or a terminal stopping the relay).
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: How long a child may take to exit after its input is closed (or a signal) before it is stopped.
SHUTDOWN_GRACE_SECONDS = 5.0


class Child:
    """A child started in a process group of its own, and its end: what :class:`Relay` and any
    other transport that starts a child (``bgc mcp-proxy``'s :class:`~bgc.adapters.mcp.upstream.ChildServer`)
    share."""

    def __init__(self, command: Sequence[str], grace: float, say: Callable[[str], None], name: str = "child") -> None:
        self.command = list(command)
        self.grace = grace
        self.say = say
        self.name = name
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> str | None:
        """Start the child; the reason when it cannot be started."""
        try:
            # its own process group: a signal the relay passes on reaches whatever the child started
            self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, process_group=0)
        except OSError as error:
            return f"cannot start the {self.name} {self.command[0]!r}: {error.strerror or error}"
        return None

    @property
    def stdin(self) -> IO[bytes]:
        assert self.process is not None and self.process.stdin is not None
        return self.process.stdin

    @property
    def stdout(self) -> IO[bytes]:
        assert self.process is not None and self.process.stdout is not None
        return self.process.stdout

    def forward(self, number: int) -> None:
        """Pass signal ``number`` to the child's group; kill it when it outlives its grace."""
        self.signal(number)
        threading.Thread(target=self._kill_after_grace, daemon=True).start()

    def _kill_after_grace(self) -> None:
        assert self.process is not None
        try:
            self.process.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:
            self.say(f"the {self.name} did not exit after the signal: killing it")
            self.signal(signal.SIGKILL)

    def reap(self, why: str) -> int:
        """The child's status: it gets its grace, then is terminated, then killed."""
        process = self.process
        assert process is not None
        try:
            return process.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:
            self.say(f"the {self.name} {why}: terminating it")
        self.signal(signal.SIGTERM)
        try:
            return process.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            return process.wait()

    def kill(self) -> None:
        """The relay itself failed: the child never outlives it."""
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGKILL)
            self.process.wait()

    def signal(self, number: int) -> None:
        """Send signal ``number`` to the child's process group (the child and what it started)."""
        assert self.process is not None
        try:
            os.killpg(self.process.pid, number)
        except OSError:  # already gone
            pass


def pass_signals(forward: Callable[[int], None]) -> Callable[[], None]:
    """Pass SIGTERM, SIGINT and SIGHUP to ``forward`` until the returned function restores the
    handlers. Signal handlers belong to the main thread: elsewhere, nothing to do."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {number: signal.signal(number, lambda number, _frame: forward(number)) for number in FORWARDED_SIGNALS}

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)

    return restore


class Relay:
    """The child's life behind a relay; a proxy subclasses it with its two pumps
    (:meth:`_pump_peer`, :meth:`_pump_child`) and what it owes the peer once the child is gone
    (:meth:`_child_exited`)."""

    prefix = "bgc"
    """How the relay's lines on the log begin (``bgc mcp-proxy``)."""
    child_name = "child"
    """What the log calls the child (``server``, ``agent``)."""

    def __init__(self, command: Sequence[str], grace: float, log: IO[str] | None) -> None:
        self.command = list(command)
        self.grace = grace
        self.log = log if log is not None else sys.stderr

    def _say(self, message: str) -> None:
        try:
            print(f"{self.prefix}: {message}", file=self.log, flush=True)
        except (OSError, ValueError):
            pass

    # ---- what a proxy writes ------------------------------------------------------------------

    def _pump_peer(self, child_in: IO[bytes]) -> None:
        """Relay the peer's lines to the child until the peer goes away; then close ``child_in``."""
        raise NotImplementedError

    def _pump_child(self, child_out: IO[bytes]) -> None:
        """Relay the child's lines to the peer until the child's output closes."""
        raise NotImplementedError

    def _child_started(self, child: subprocess.Popen[bytes]) -> None:
        """The child runs; neither pump has started yet."""

    def _child_exited(self, status: int, peer_alive: bool) -> None:
        """The child exited with ``status`` (negative: a signal); answer what it still owed."""

    # ---- the whole ----------------------------------------------------------------------------

    def run(self) -> int:
        """Relay until the child exits; returns the exit status to exit with (the child's, or
        128 + N when a signal N ended it)."""
        child = Child(self.command, self.grace, self._say, self.child_name)
        failed = child.start()
        if failed is not None:
            self._say(failed)
            return 127
        assert child.process is not None
        self._child_started(child.process)
        restore = pass_signals(child.forward)
        try:
            peer = threading.Thread(target=self._pump_peer, args=(child.stdin,), daemon=True, name="peer")
            peer.start()
            watcher = threading.Thread(target=self._stop_when_peer_leaves, args=(child, peer), daemon=True)
            watcher.start()
            self._pump_child(child.stdout)
            status = child.reap("closed its output")
        finally:
            restore()
            child.kill()
        self._child_exited(status, peer.is_alive())
        return status if status >= 0 else 128 - status

    @staticmethod
    def _stop_when_peer_leaves(child: Child, peer: threading.Thread) -> None:
        peer.join()
        child.reap("did not exit after its input closed")
