"""The MCP stdio proxy: every ``tools/call`` decided before a server sees it.

An MCP client starts a server as a command and speaks JSON-RPC to it over the child's standard
streams, one message per line (https://modelcontextprotocol.io/specification/draft/basic/transports/stdio:
"Messages are delimited by newlines, and MUST NOT contain embedded newlines"). The proxy is that
command: it starts the real server as its own child and copies lines both ways, so the client
and the server speak to each other exactly as before, except for what the policy decides.

This module is the stdio transport: lines read bounded (:class:`bgc.core.values.jsonline.LineReader`,
a longer line consumed and refused without being held whole), written back compact and ASCII
only (:func:`bgc.core.values.jsonline.dumps`), and the server's life. Every decision is the
:class:`~bgc.adapters.mcp.mediator.Mediator`'s, which does not depend on the transport; the rules
are stated there.

When the server exits, requests still waiting for it get an error response; the proxy exits
with the server's status. When the client goes away, the server's input is closed, and a
server that does not exit within its grace (``ProxyOptions.shutdown_grace_seconds``) is
terminated, then killed. SIGTERM, SIGINT and SIGHUP are passed to the server's process group,
which is killed when it outlives its grace after one (:mod:`bgc.adapters.relay`, as every bgc
proxy does with its child).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Sequence
from typing import IO, Any

from bgc.adapters.mcp.mediator import (
    Approvals,
    Decide,
    DecideMessage,
    Mediator,
    Offered,
    Pins,
    ProxyOptions,
    Redact,
    ToolVerdict,
)
from bgc.adapters.mcp.upstream import ChildServer, Upstream
from bgc.adapters.relay import pass_signals
from bgc.core.values.jsonline import LineReader, TooLong, dumps, partial_reader

__all__ = ["Approvals", "McpProxy", "ProxyOptions", "ToolVerdict", "run_proxy"]


class McpProxy:
    """One client on this process's standard streams, one server (a child, or a remote server)."""

    def __init__(
        self,
        server: Sequence[str] | Upstream,
        decide: Decide,
        options: ProxyOptions,
        *,
        offered: Offered | None = None,
        approvals: Approvals | None = None,
        pins: Pins | None = None,
        decide_message: DecideMessage | None = None,
        redact: Redact | None = None,
        client_in: IO[bytes] | None = None,
        client_out: IO[bytes] | None = None,
        log: IO[str] | None = None,
    ) -> None:
        self.options = options
        self.client_in = client_in if client_in is not None else sys.stdin.buffer
        self.client_out = client_out if client_out is not None else sys.stdout.buffer
        self._out_lock = threading.Lock()
        self._client_gone = threading.Event()
        self.mediator = Mediator(
            decide, options, to_server=self._to_server, to_client=self._to_client, offered=offered,
            approvals=approvals, pins=pins, decide_message=decide_message, redact=redact, log=log,
        )  # fmt: skip
        self.upstream = (
            server if isinstance(server, Upstream) else ChildServer(server, options.shutdown_grace_seconds, self._say)
        )
        self.upstream.attach(self.mediator)

    def _say(self, message: str) -> None:
        self.mediator.say(message)

    def _to_client(self, message: dict[str, Any], _related: Any) -> None:
        data = dumps(message)
        with self._out_lock:
            try:
                self.client_out.write(data)
                self.client_out.flush()
            except (BrokenPipeError, OSError, ValueError):
                self._client_gone.set()

    def _to_server(self, message: dict[str, Any], context: Any) -> None:
        self.upstream.send(message, context)

    def _client_lines(self) -> Iterator[bytes | TooLong]:
        """Lines from the client, each at most ``max_message_bytes``; a longer one is consumed
        without being held (:class:`bgc.core.values.jsonline.LineReader`)."""
        return iter(LineReader(partial_reader(self.client_in), self.options.max_message_bytes))

    def _pump_client(self) -> None:
        try:
            for line in self._client_lines():
                self.mediator.from_client_line(line)
        except (BrokenPipeError, OSError, ValueError):
            self._say("the server stopped reading its input")
        finally:
            self.mediator.client_gone()  # nobody waits for the held calls any more
            self.upstream.end()

    def run(self) -> int:
        """Proxy until the server side ends; returns the exit status to exit with (a child's, or
        128 + N when a signal N ended it; 0 for a remote server once the client left)."""
        failed = self.upstream.open()
        if failed is not None:
            self._say(failed)
            return 127
        restore = pass_signals(self.upstream.stop)
        try:
            client = threading.Thread(target=self._pump_client, daemon=True, name="client")
            client.start()
            watcher = threading.Thread(target=self._stop_when_client_leaves, args=(client,), daemon=True)
            watcher.start()
            self.upstream.pump(self.mediator)
            status = self.upstream.status("closed its output")
        finally:
            restore()
            if isinstance(self.upstream, ChildServer):
                self.upstream.kill()
        self.mediator.fail_owed(f"the MCP server exited (status {status}) before answering")
        if isinstance(self.upstream, ChildServer) and not self._client_gone.is_set() and client.is_alive():
            self._say(f"the MCP server exited with status {status}")
        return status if status >= 0 else 128 - status

    def _stop_when_client_leaves(self, client: threading.Thread) -> None:
        client.join()
        self.upstream.status("did not exit after its input closed")


def run_proxy(
    server: Sequence[str] | Upstream,
    decide: Decide,
    options: ProxyOptions,
    *,
    offered: Offered | None = None,
    approvals: Approvals | None = None,
    pins: Pins | None = None,
    decide_message: DecideMessage | None = None,
    redact: Redact | None = None,
) -> int:
    """Run the proxy on this process's standard streams; the exit status is the server's."""
    if not isinstance(server, Upstream) and not server:
        raise ValueError("no server command")
    return McpProxy(
        server, decide, options, offered=offered, approvals=approvals, pins=pins, decide_message=decide_message,
        redact=redact,
    ).run()  # fmt: skip
