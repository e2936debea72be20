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
        try:
            # its own process group: a signal the relay passes on reaches whatever the child started
            child = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, process_group=0)
        except OSError as error:
            self._say(f"cannot start the {self.child_name} {self.command[0]!r}: {error.strerror or error}")
            return 127
        assert child.stdin is not None and child.stdout is not None
        self._child_started(child)
        restore = self._pass_signals(child)
        try:
            peer = threading.Thread(target=self._pump_peer, args=(child.stdin,), daemon=True, name="peer")
            peer.start()
            watcher = threading.Thread(target=self._stop_when_peer_leaves, args=(child, peer), daemon=True)
            watcher.start()
            self._pump_child(child.stdout)
            status = self._reap(child, "closed its output")
        finally:
            restore()
            if child.poll() is None:  # the relay itself failed: the child never outlives it
                signal_group(child, signal.SIGKILL)
                child.wait()
        self._child_exited(status, peer.is_alive())
        return status if status >= 0 else 128 - status

    def _pass_signals(self, child: subprocess.Popen[bytes]) -> Callable[[], None]:
        """Pass SIGTERM, SIGINT and SIGHUP on to the child's process group (the relay then exits
        with the child's status); a child still running :attr:`grace` seconds after one is
        killed. Signal handlers belong to the main thread: elsewhere, nothing to do."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def forward(number: int, _frame: object) -> None:
            signal_group(child, number)
            threading.Thread(target=self._kill_after_grace, args=(child,), daemon=True).start()

        previous = {number: signal.signal(number, forward) for number in FORWARDED_SIGNALS}

        def restore() -> None:
            for number, handler in previous.items():
                signal.signal(number, handler)

        return restore

    def _kill_after_grace(self, child: subprocess.Popen[bytes]) -> None:
        try:
            child.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:
            self._say(f"the {self.child_name} did not exit after the signal: killing it")
            signal_group(child, signal.SIGKILL)

    def _stop_when_peer_leaves(self, child: subprocess.Popen[bytes], peer: threading.Thread) -> None:
        peer.join()
        self._reap(child, "did not exit after its input closed")

    def _reap(self, child: subprocess.Popen[bytes], why: str) -> int:
        """The child's status: it gets its grace, then is terminated, then killed."""
        try:
            return child.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:
            self._say(f"the {self.child_name} {why}: terminating it")
        signal_group(child, signal.SIGTERM)
        try:
            return child.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:
            signal_group(child, signal.SIGKILL)
            return child.wait()


def signal_group(child: subprocess.Popen[bytes], number: int) -> None:
    """Send signal ``number`` to the child's process group (the child and what it started)."""
    try:
        os.killpg(child.pid, number)
    except OSError:  # already gone
        pass
