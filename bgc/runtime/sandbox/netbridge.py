"""The sandbox's end of its proxy: a loopback port inside the sandbox, relayed to the proxy's socket.

``python -I -m bgc.runtime.sandbox.netbridge SOCKET PORT -- COMMAND ARGS…`` listens on
``127.0.0.1:PORT`` in the sandbox's own network namespace (whose loopback device bubblewrap's
``--unshare-net`` brings up), then runs the command with the proxy variables pointing there
(:func:`proxy_environment`) and relays every connection made to the port, byte for byte, to the
Unix socket ``SOCKET`` of :mod:`bgc.runtime.sandbox.netproxy`, which runs outside and decides.
Listening starts before the command does, so its first connection finds the port open; the
bridge exits with the command's status (128 + N when a signal N ended it).

It decides nothing and imports nothing of bgc's: the proxy holds the plan, and a confined
command's start-up should not pay for loading it twice.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

BRIDGE_PORT = 3128
"""The port a sandbox's bridge listens on (a fresh network namespace has every port free)."""
MAX_CONNECTIONS = 64
"""Connections relayed at once; the proxy serves as many."""
USAGE = "usage: python -I -m bgc.runtime.sandbox.netbridge SOCKET PORT -- COMMAND [ARG...]"


def proxy_environment(port: int) -> dict[str, str]:
    """The variables that send a program's HTTP and HTTPS through the bridge on ``port``: both
    spellings, since programs read one or the other (curl ignores ``HTTP_PROXY``), and no
    exceptions (``NO_PROXY`` empty: inside the sandbox nothing else answers, not even loopback)."""
    url = f"http://127.0.0.1:{port}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    return {**{name: url for name in names}, **{name.lower(): url for name in names}, "NO_PROXY": "", "no_proxy": ""}


def bridge_command(socket_path: str, port: int = BRIDGE_PORT) -> list[str]:
    """The argv that runs a command behind the bridge: append the command's own argv to it.
    ``-I``: the interpreter reads no ``PYTHON*`` variable, user site or current directory that the
    sandboxed side could have planted."""
    return [sys.executable, "-I", "-m", "bgc.runtime.sandbox.netbridge", socket_path, str(port), "--"]


def _pipe(source: socket.socket, target: socket.socket) -> None:
    """Bytes from ``source`` to ``target`` until ``source`` ends; then ``target``'s write side ends."""
    with contextlib.suppress(OSError):  # either end went away: this direction is over
        while chunk := source.recv(65536):
            target.sendall(chunk)
        target.shutdown(socket.SHUT_WR)


class _Bridge:
    """The accepting side: each connection to the port relayed by two threads, one a direction."""

    def __init__(self, listener: socket.socket, socket_path: str) -> None:
        self.listener, self.socket_path = listener, socket_path
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def serve(self) -> None:
        while True:
            client, _ = self.listener.accept()
            if not self.slots.acquire(blocking=False):
                client.close()
                continue
            threading.Thread(target=self.relay, args=(client,), daemon=True).start()

    def relay(self, client: socket.socket) -> None:
        """One connection, relayed to the proxy until the proxy's side ends (it closes once it
        has answered; the client's end of writing is passed on as it comes)."""
        proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            proxy.connect(self.socket_path)
            threading.Thread(target=_pipe, args=(client, proxy), daemon=True).start()
            _pipe(proxy, client)
        except OSError:
            pass  # the proxy is gone: the client's connection ends
        finally:
            proxy.close()
            client.close()
            self.slots.release()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--" or not argv[1].isdigit() or not 0 < int(argv[1]) < 65536:
        print(USAGE, file=sys.stderr)
        return 2
    socket_path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(MAX_CONNECTIONS)
    except OSError as error:
        print(f"netbridge: cannot listen on 127.0.0.1:{port}: {error.strerror}", file=sys.stderr)
        return 125
    threading.Thread(target=_Bridge(listener, socket_path).serve, daemon=True).start()
    try:
        process = subprocess.Popen(command, env={**os.environ, **proxy_environment(port)})
    except OSError as error:
        print(f"netbridge: cannot run {command[0]}: {error.strerror}", file=sys.stderr)
        return 126 if isinstance(error, PermissionError) else 127
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda number, _frame: process.send_signal(number))
    # the terminal sends SIGINT and SIGQUIT to the command too (one process group): the bridge
    # outlives them by the command's choice, never ends first
    for number in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, lambda _number, _frame: None)
    status = process.wait()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
