"""The HTTP front of ``bgc mcp-proxy --listen``: MCP clients reach the proxy over Streamable HTTP
(https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http).

One endpoint (``/mcp``) on a loopback address, served by the standard library's threading HTTP
server: a loopback front for one user's clients needs no more. Every client session is a
:class:`~bgc.adapters.mcp.mediator.Mediator` of its own, with a server session of its own (a child
started for it, or a session with the remote server), so every decision is the stdio proxy's.

Who may speak, checked on every request before anything else, fail closed:

- **the address**: loopback only (no TLS here), and the ``Host`` header must name the address
  listened on (a DNS-rebinding page names its own host): otherwise 421;
- **the origin**: a request with an ``Origin`` header not among the allowed ones (none by
  default, ``--allow-origin``) is 403, as the specification requires;
- **the token**: a per-start secret (:func:`secrets.token_urlsafe`), written to a file only its
  owner can read, sent in the :data:`TOKEN_HEADER` header and compared in constant time;
  otherwise 401. Not ``Authorization``: that header is the client's for the server behind
  (OAuth), and passes through to a remote server untouched, held for the session in memory only.

The framing, bounded (:class:`FrontOptions`): a POST carries one JSON-RPC message of at most
``max_body_bytes``, with a ``Content-Length`` (411 without; 413 over the limit, not read),
``Content-Type: application/json`` (415) and an ``Accept`` of both JSON and event streams (406);
it is read as strictly as a stdio line (:func:`~bgc.adapters.jsonrpc.read_message`: a batch, a
duplicate key or bad JSON is 400 with the JSON-RPC error). An ``initialize`` starts a session
(at most ``max_sessions``; 503 beyond) whose id, unguessable and the front's own, comes back in
``Mcp-Session-Id``; every other message names it (400 without, 404 once it is gone or ended by
DELETE). ``MCP-Protocol-Version`` must be one bgc understands and the one negotiated (400); a
request of the stateless protocol (2026-07-28) is answered 400 with the versions bgc supports
(:data:`~bgc.adapters.mcp.mediator.HANDSHAKE_VERSIONS`), as that version's servers answer one they do
not support.

A request's answer is one JSON body when it is the first and only message for it, else an event
stream (:mod:`bgc.adapters.mcp.sse`) carrying what the server sends while it runs, then the
answer; a notification or an answer from the client is 202. A message from the server that
belongs to no request goes on the session's GET stream (kept, bounded, until one is open). Every
event has an id (``STREAM-SEQ``): a client whose stream broke resumes it with a GET carrying
``Last-Event-ID`` and gets what it missed, then the rest. Nothing waits forever: a request not
answered within ``request_seconds`` is answered with an error (and cancelled at the server), a
quiet stream carries a comment every ``keepalive_seconds`` (which finds a client that left),
an idle session ends after ``idle_seconds``.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bgc.adapters.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, Refused, id_key, read_message
from bgc.adapters.mcp.mediator import (
    BATCHES,
    HANDSHAKE_VERSIONS,
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION_META,
    Mediator,
    ToClient,
    ToServer,
)
from bgc.adapters.mcp.sse import KEEPALIVE, event_bytes, priming_bytes
from bgc.adapters.mcp.upstream import RemoteServer, Upstream
from bgc.core.values.jsonline import dumps

TOKEN_HEADER = "Bgc-Token"
"""The header that carries the front's per-start token."""
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
LAST_EVENT_HEADER = "Last-Event-ID"
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""The error a 2026-07-28 server answers a version it does not support with (its data lists the
versions it does)."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SINGLE_HEADERS = (
    "Host", "Origin", TOKEN_HEADER, "Content-Length", "Transfer-Encoding", "Content-Type", "Accept", SESSION_HEADER,
    VERSION_HEADER, LAST_EVENT_HEADER, "Authorization",
)  # fmt: skip
"""Headers a request may give once: readers disagree on which of two copies counts."""
MAX_STREAM_BYTES = 128 * 1024 * 1024
"""What one stream may hold that its client has not read yet; past it the stream is abandoned."""
MAX_BACKLOG_EVENTS = 1024
"""Messages kept for a session's GET stream while no client has it open (the oldest go first)."""
MAX_FINISHED_STREAMS = 32
"""Finished streams a session keeps for a client to resume (the oldest go first)."""


@dataclass(frozen=True, slots=True)
class FrontOptions:
    """Where the front listens and what it allows; see the module docstring."""

    host: str
    port: int
    token: str
    allowed_origins: frozenset[str] = frozenset()
    max_body_bytes: int = MAX_MESSAGE_BYTES
    max_sessions: int = 16
    max_connections: int = 64
    request_seconds: float = 600.0
    keepalive_seconds: float = 15.0
    idle_seconds: float = 3600.0
    read_seconds: float = 30.0
    """How long reading a request (its line, headers and body) may take."""
    replay_bytes: int = 4 * 1024 * 1024
    """Events a stream keeps, once delivered, for a client that resumes it."""


#: Makes a session's mediator: (what it sends to the server, what it sends to the client) → Mediator.
MakeMediator = Callable[[ToServer, ToClient], Mediator]


@dataclass(frozen=True, slots=True)
class Route:
    """One server behind the front, at a path of its own: how each of its client sessions gets a
    mediator (the server's name and policy) and a server session. A front with several routes
    is a gateway: one address and one token for every server, each decided by its own policy."""

    make_mediator: MakeMediator
    make_upstream: Callable[[], Upstream]


@dataclass
class Stream:
    """The events of one answer (or of a session's GET stream), numbered, kept until delivered
    and then as far as ``replay_bytes`` allows, for a client that resumes it."""

    number: int
    replay_bytes: int
    request: object = None
    events: list[tuple[int, bytes]] = field(default_factory=list)
    next_seq: int = 1
    delivered: int = 0
    done: bool = False
    reader: object = None
    condition: threading.Condition = field(default_factory=threading.Condition)

    def put(self, data: bytes, final: bool = False) -> None:
        with self.condition:
            if self.done:
                return
            pending = sum(len(event) for seq, event in self.events if seq > self.delivered)
            if pending + len(data) > MAX_STREAM_BYTES and self.request is not None:
                undelivered = next((at for at, (seq, _) in enumerate(self.events) if seq > self.delivered), len(self.events))
                del self.events[undelivered:]
                why = f"bgc dropped this request's stream: its client read none of {pending:,} bytes of it"
                data, final = dumps({"jsonrpc": "2.0", "id": self.request, "error": {"code": INTERNAL_ERROR, "message": why}})[:-1], True
            elif self.number == 0 and len(self.events) >= MAX_BACKLOG_EVENTS:
                del self.events[0]
            self.events.append((self.next_seq, data))
            self.next_seq += 1
            self.done = final
            self.condition.notify_all()

    def after(self, seq: int, timeout: float, reader: object) -> tuple[list[tuple[int, bytes]], bool]:
        """The events after ``seq`` (waiting up to ``timeout`` for one), and whether the stream is
        done; ``reader`` holds it: a later reader takes it over, and this one gets ``done``."""
        with self.condition:
            if self.reader is not reader:
                return [], True
            if not self.done and not any(number > seq for number, _ in self.events):
                self.condition.wait(timeout)
            if self.reader is not reader:
                return [], True
            return [(number, data) for number, data in self.events if number > seq], self.done

    def mark(self, seq: int) -> None:
        """Events up to ``seq`` reached the client; the oldest delivered ones beyond
        ``replay_bytes`` are forgotten."""
        with self.condition:
            self.delivered = max(self.delivered, seq)
            kept = sum(len(data) for number, data in self.events if number <= self.delivered)
            while self.events and self.events[0][0] <= self.delivered and kept > self.replay_bytes:
                kept -= len(self.events.pop(0)[1])

    def answered(self) -> bool:
        """Whether the stream ended with a result (not an error) as its last event."""
        with self.condition:
            return self.done and bool(self.events) and "result" in json.loads(self.events[-1][1])

    def take(self, reader: object) -> None:
        with self.condition:
            self.reader = reader
            self.condition.notify_all()

    def end(self) -> None:
        with self.condition:
            self.done = True
            self.condition.notify_all()


class FrontSession:
    """One client session: its mediator and server, and where each message for the client goes."""

    def __init__(self, front: HttpFront, path: str, upstream: Upstream) -> None:
        self.front = front
        self.path = path
        """The route the session was started on: a request on another path never reaches it."""
        self.id = secrets.token_urlsafe(32)
        self.upstream = upstream
        self.lock = threading.Lock()
        self.waiting: dict[str, Stream] = {}  # request id key → its answer's stream
        self.numbered: dict[int, Stream] = {}  # stream number → stream, for resuming
        self.progress: dict[str, str] = {}  # progress token key → request id key
        self.tokens: dict[str, str] = {}  # request id key → its progress token key
        self.failures: dict[str, tuple[int, dict[str, str]]] = {}
        self.numbers = iter(range(1, 1 << 62))
        self.listen = Stream(0, front.options.replay_bytes)
        self.numbered[0] = self.listen
        self.closed = threading.Event()
        self.used = time.monotonic()
        self.mediator = front.routes[path].make_mediator(self._to_server, self.to_client)
        upstream.attach(self.mediator)
        if isinstance(upstream, RemoteServer):
            upstream.on_http_failure = self._http_failure

    def _to_server(self, message: dict[str, Any], context: Any) -> None:
        self.upstream.send(message, context)

    def open_stream(self, request: object) -> Stream | None:
        """A stream for the answer to ``request``; None when a request with its id still waits."""
        key = id_key(request)
        with self.lock:
            if key in self.waiting:
                return None
            stream = Stream(next(self.numbers), self.front.options.replay_bytes, request)
            self.waiting[key] = stream
            self.numbered[stream.number] = stream
            finished = [number for number, kept in self.numbered.items() if kept.done and number]
            for number in finished[: max(0, len(finished) - MAX_FINISHED_STREAMS)]:
                del self.numbered[number]
            return stream

    def note_progress(self, message: Mapping[str, Any]) -> None:
        """A request's progress token: the server's progress notifications for it go on its stream."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if isinstance(token, (str, int)) and not isinstance(token, bool):
            with self.lock:
                self.progress[id_key(token)] = id_key(message["id"])
                self.tokens[id_key(message["id"])] = id_key(token)

    def to_client(self, message: dict[str, Any], related: Any) -> None:
        """Route a message for the client: an answer to its request's stream, a message sent
        while a request runs to that request's stream, anything else to the GET stream."""
        data = dumps(message)[:-1]
        with self.lock:
            if "method" not in message and "id" in message:
                stream = self.waiting.pop(_key(message["id"]), None)
                self.progress.pop(self.tokens.pop(_key(message["id"]), ""), None)
                if stream is None:
                    self.front.say(f"dropped an answer to {message['id']!r}: no request waits for it")
                    return
                stream.put(data, final=True)
                return
            stream = self.waiting.get(_key(related)) if related is not None else None
            if stream is None and message.get("method") == "notifications/progress":
                params = message.get("params")
                token = params.get("progressToken") if isinstance(params, dict) else None
                request = self.progress.get(_key(token))
                stream = self.waiting.get(request) if request is not None else None
            (stream or self.listen).put(data)

    def _http_failure(self, request: object, status: int, headers: Mapping[str, str]) -> None:
        with self.lock:
            self.failures[id_key(request)] = (status, dict(headers))

    def abandon(self, request: object, why: str) -> None:
        """A request the client no longer waits for: answered with an error, cancelled at the server."""
        self.mediator.server_failed(request, why)
        try:
            self.mediator.from_client(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request, "reason": why}}
            )
        except (OSError, ValueError):
            pass

    def close(self, why: str) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        self.front.forget(self)
        self.mediator.client_gone()
        self.mediator.fail_owed(why)
        with self.lock:
            streams = list(self.numbered.values())
        for stream in streams:
            stream.end()
        threading.Thread(target=self._end_upstream, daemon=True, name="session end").start()

    def _end_upstream(self) -> None:
        self.upstream.end()
        self.upstream.status("did not exit after its session ended")


class HttpFront:
    """The front: sessions by id, the HTTP server, and its life; see the module docstring."""

    def __init__(
        self, options: FrontOptions, routes: Mapping[str, Route], say: Callable[[str], None],
    ) -> None:  # fmt: skip
        if not routes or not all(path.startswith("/") for path in routes):
            raise ValueError("a front serves at least one route, each at a path starting with /")
        self.options = options
        self.routes = dict(routes)
        self.say = say
        self.sessions: dict[str, FrontSession] = {}
        self.lock = threading.Lock()
        self.server = _Server((options.host.strip("[]"), options.port), _Handler, self)
        self.port = self.server.server_address[1]
        self.hosts = _hosts(options.host, self.port)

    def url(self, path: str) -> str:
        """The URL clients reach the route at ``path`` by."""
        host = self.options.host if ":" not in self.options.host.strip("[]") else f"[{self.options.host.strip('[]')}]"
        return f"http://{host}:{self.port}{path}"

    def serve(self) -> None:
        threading.Thread(target=self._expire, daemon=True, name="expire sessions").start()
        try:
            self.server.serve_forever(poll_interval=0.5)
        finally:
            self.server.server_close()
            with self.lock:
                sessions = list(self.sessions.values())
            for session in sessions:
                session.close("the proxy stopped")

    def stop(self) -> None:
        """Stop serving (from another thread than :meth:`serve`'s, e.g. a signal handler's)."""
        threading.Thread(target=self.server.shutdown, daemon=True).start()

    def start_session(self, path: str) -> FrontSession | str:
        with self.lock:
            if len(self.sessions) >= self.options.max_sessions:
                return f"{self.options.max_sessions} sessions are open already"
        upstream = self.routes[path].make_upstream()
        failed = upstream.open()
        if failed is not None:
            return failed
        session = FrontSession(self, path, upstream)
        with self.lock:
            self.sessions[session.id] = session
        threading.Thread(target=self._pump, args=(session,), daemon=True, name="session server").start()
        return session

    def _pump(self, session: FrontSession) -> None:
        try:
            session.upstream.pump(session.mediator)
        finally:
            session.close("the MCP server ended the session")

    def session(self, session_id: str) -> FrontSession | None:
        with self.lock:
            found = self.sessions.get(session_id)
        if found is not None:
            found.used = time.monotonic()
        return found

    def forget(self, session: FrontSession) -> None:
        with self.lock:
            if self.sessions.get(session.id) is session:
                del self.sessions[session.id]

    def _expire(self) -> None:
        while True:
            time.sleep(min(60.0, self.options.idle_seconds))
            now = time.monotonic()
            with self.lock:
                idle = [session for session in self.sessions.values() if now - session.used > self.options.idle_seconds]
            for session in idle:
                session.close(f"the session was idle for {self.options.idle_seconds:g} s")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], handler: type, front: HttpFront) -> None:
        import socket

        self.front = front
        self.slots = threading.BoundedSemaphore(front.options.max_connections)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """At most ``max_connections`` connections are served at once; one more is closed."""
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class _Answered(Exception):
    """The request was answered (an error status, or a stream); nothing more to do."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """Headers and body go out as they are written: with Nagle's algorithm, a body written after
    its headers waits for the client's delayed acknowledgement of them."""
    server: _Server
    route = ""
    """The path of the request being handled (a key of :attr:`HttpFront.routes` once admitted)."""
    consumed = False
    """Whether the request's body was read: an answer given before it was closes the connection,
    so that no byte of an unread body is read as the next request."""

    def parse_request(self) -> bool:
        self.consumed = False
        return super().parse_request()

    def setup(self) -> None:
        self.timeout = self.server.front.options.read_seconds
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the proxy says what it refuses, on stderr, itself."""

    @property
    def front(self) -> HttpFront:
        return self.server.front

    # ---- answers ---------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None, *, close: bool = False) -> None:
        if not self.consumed and (self.headers.get("Content-Length", "0") != "0" or "Transfer-Encoding" in self.headers):
            close = True
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _refuse(self, status: int, why: str, request_id: object = None, *, code: int = INVALID_REQUEST,
                data: Any = None, headers: Mapping[str, str] | None = None, close: bool = False) -> None:  # fmt: skip
        """Answer with an HTTP error status and a JSON-RPC error (the specification's "MAY")."""
        self.front.say(f"refused a {self.command} ({status}): {why}")
        error: dict[str, Any] = {"code": code, "message": why}
        if data is not None:
            error["data"] = data
        self._send(status, dumps({"jsonrpc": "2.0", "id": request_id, "error": error}), headers, close=close)
        raise _Answered

    # ---- who may speak ---------------------------------------------------------------------------

    def _admit(self) -> None:
        """Who may speak (see the module docstring), before anything else is read."""
        options = self.front.options
        for name in SINGLE_HEADERS:
            if len(self.headers.get_all(name, ())) > 1:
                self._refuse(400, f"the {name} header is given more than once", close=True)
        if self.headers.get("Host", "").lower() not in self.front.hosts:
            self._refuse(421, "the Host header does not name the address the proxy listens on")
        origin = self.headers.get("Origin")
        if origin is not None and origin not in options.allowed_origins:
            self._refuse(403, f"origin {origin[:200]!r} is not allowed (--allow-origin)")
        given = self.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(given.encode("latin-1", "replace"), options.token.encode("ascii")):
            self._refuse(401, f"the {TOKEN_HEADER} header does not carry this proxy's token")
        self.route = self.path.split("?", 1)[0]
        if self.route not in self.front.routes:
            self._refuse(404, f"no MCP endpoint at {self.path[:200]!r}")

    def _session(self, session_id: str | None) -> FrontSession:
        if session_id is None:
            self._refuse(400, f"no {SESSION_HEADER}: send initialize first")
        found = self.front.session(session_id)  # type: ignore[arg-type]
        if found is None or found.closed.is_set() or found.path != self.route:
            self._refuse(404, "no such session (it ended, or the proxy restarted): initialize again")
        assert found is not None
        return found

    def _version(self, session: FrontSession | None, request_id: object) -> None:
        version = self.headers.get(VERSION_HEADER)
        if version is None:
            return
        negotiated = session.mediator.version if session is not None else None
        if version not in HANDSHAKE_VERSIONS or (negotiated is not None and version != negotiated):
            self._refuse(
                400, f"protocol version {version[:64]!r} is not the one negotiated, or one bgc supports",
                request_id, code=UNSUPPORTED_PROTOCOL_VERSION,
                data={"supported": list(HANDSHAKE_VERSIONS), "requested": version[:64]},
            )  # fmt: skip

    # ---- methods -----------------------------------------------------------------------------------

    def do_POST(self) -> None:  # noqa: N802 - the base class's naming
        try:
            self._admit()
            self._post()
        except _Answered:
            pass

    def do_GET(self) -> None:  # noqa: N802
        try:
            self._admit()
            self._get()
        except _Answered:
            pass

    def do_DELETE(self) -> None:  # noqa: N802
        try:
            self._admit()
            session = self._session(self.headers.get(SESSION_HEADER))
            session.close("the client ended the session")
            self._send(200)
        except _Answered:
            pass

    def _not_allowed(self) -> None:
        try:
            self._refuse(405, f"{self.command} is not an MCP method here", headers={"Allow": "GET, POST, DELETE"})
        except _Answered:
            pass

    do_PUT = do_PATCH = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

    def _post(self) -> None:
        options = self.front.options
        if not _media(self.headers.get("Content-Type", ""), ("application/json",)):
            self._refuse(415, "a POST carries application/json")
        accepted = _accepted(self.headers.get("Accept", ""))
        if not {"application/json", "text/event-stream"} <= accepted:
            self._refuse(406, "a POST must accept both application/json and text/event-stream")
        if self.headers.get("Transfer-Encoding") is not None:
            self._refuse(411, "a POST's body has a Content-Length (no transfer coding)", close=True)
        length = self.headers.get("Content-Length", "")
        if not (length.isascii() and length.isdigit()):
            self._refuse(411, "a POST's body has a Content-Length", close=True)
        if len(length) > 12 or int(length) > options.max_body_bytes:
            self._refuse(413, f"a message is at most {options.max_body_bytes} bytes", close=True)
        body = self.rfile.read(int(length))
        self.consumed = True
        if len(body) != int(length):
            self._refuse(400, "the body ended before its Content-Length", close=True)
        try:
            message = read_message(body, BATCHES)
        except Refused as refusal:
            ids = [request_id for request_id in refusal.request_ids if request_id is not None]
            self._refuse(400, refusal.message, ids[0] if len(ids) == 1 else None, code=refusal.code)
        request_id = message.get("id")
        is_request = "method" in message and "id" in message
        context = {"authorization": self.headers["Authorization"]} if "Authorization" in self.headers else None
        if message.get("method") == "initialize" and is_request:
            self._initialize(message, context)
            return
        if _stateless(message, self.headers.get(VERSION_HEADER)) and SESSION_HEADER not in self.headers:
            self._version(None, request_id)
            self._refuse(400, "bgc does not speak the stateless protocol over HTTP", request_id,
                         code=UNSUPPORTED_PROTOCOL_VERSION,
                         data={"supported": list(HANDSHAKE_VERSIONS), "requested": "2026-07-28"})  # fmt: skip
        session = self._session(self.headers.get(SESSION_HEADER))
        self._version(session, request_id)
        if not is_request:
            self._deliver(session, message, context)
            self._send(202)
            return
        stream = session.open_stream(request_id)
        if stream is None:
            self._refuse(400, f"request id {request_id!r} is already in use", None)
        assert stream is not None
        session.note_progress(message)
        self._deliver(session, message, context)
        self._answer(session, stream)

    def _deliver(self, session: FrontSession, message: dict[str, Any], context: Any) -> None:
        try:
            session.mediator.from_client(message, context)
        except (OSError, ValueError) as error:
            session.close(f"the MCP server stopped reading ({error})")
            self._refuse(502, "the MCP server is gone", message.get("id"), code=INTERNAL_ERROR)

    def _initialize(self, message: dict[str, Any], context: Any) -> None:
        if SESSION_HEADER in self.headers:
            self._refuse(400, f"initialize starts a session: send it without {SESSION_HEADER}", message["id"])
        self._version(None, message["id"])
        started = self.front.start_session(self.route)
        if isinstance(started, str):
            self._refuse(503, f"no session: {started}", message["id"], code=INTERNAL_ERROR, headers={"Retry-After": "5"})
        assert isinstance(started, FrontSession)
        stream = started.open_stream(message["id"])
        assert stream is not None
        self._deliver(started, message, context)
        self._answer(started, stream, initialize=True)

    def _answer(self, session: FrontSession, stream: Stream, *, initialize: bool = False) -> None:
        """The answer to a request: one JSON body when it is the only message for it, else an
        event stream (kept for resuming if the client goes away before it ends)."""
        options = self.front.options
        reader = object()
        stream.take(reader)
        deadline = time.monotonic() + options.request_seconds
        events, done = stream.after(0, options.keepalive_seconds, reader)
        if done and len(events) == 1:
            data = events[0][1]
            ok = initialize and "result" in json.loads(data)
            headers = {SESSION_HEADER: session.id} if ok else {}
            with session.lock:
                failure = session.failures.pop(id_key(stream.request), None)
            status = 200
            if failure is not None:
                status = failure[0]
                headers.update(failure[1])
            if initialize and not ok:
                session.close("its initialize failed")
            self._send(status, data, headers)
            stream.mark(events[0][0])
            return
        headers = {SESSION_HEADER: session.id} if initialize else {}
        self._open_events(headers)
        try:
            self._stream_events(session, stream, reader, events, done, deadline)
        except OSError:
            self.front.say("a client left its stream before it ended: kept for it to resume")
        with session.lock:
            session.failures.pop(id_key(stream.request), None)  # a status of its own is for a JSON answer only
        if initialize and not stream.answered():
            session.close("its initialize failed")

    def _open_events(self, headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache, no-transform")
        self.send_header("X-Accel-Buffering", "no")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        self.wfile.flush()

    def _stream_events(
        self, session: FrontSession, stream: Stream, reader: object, events: list[tuple[int, bytes]], done: bool,
        deadline: float | None,
    ) -> None:  # fmt: skip
        """Write events (each with its id) until the stream is done or taken over; a comment
        when it is quiet; an answering stream past ``deadline`` is answered with an error."""
        options = self.front.options
        while True:
            for seq, data in events:
                self.wfile.write(event_bytes(data, f"{stream.number}-{seq}") if data else priming_bytes(f"{stream.number}-{seq}"))
            self.wfile.flush()
            if events:
                stream.mark(events[-1][0])
            if done:
                return
            if not events:
                self.wfile.write(KEEPALIVE)
                self.wfile.flush()
            if deadline is not None and time.monotonic() > deadline and stream.request is not None:
                session.abandon(stream.request, f"no answer within {options.request_seconds:g} s")
                deadline = None
            last = events[-1][0] if events else _last(stream)
            events, done = stream.after(last, options.keepalive_seconds, reader)

    def _get(self) -> None:
        if "text/event-stream" not in _accepted(self.headers.get("Accept", "")):
            self._refuse(406, "a GET must accept text/event-stream")
        session = self._session(self.headers.get(SESSION_HEADER))
        self._version(session, None)
        last = self.headers.get(LAST_EVENT_HEADER)
        if last is None:
            stream = session.listen
            with stream.condition:
                seq = stream.delivered
        else:
            found = _resumable(session, last)
            if found is None:
                self._refuse(400, f"{LAST_EVENT_HEADER} {last[:100]!r} names no stream this session can resume")
            assert found is not None
            stream, seq = found
        reader = object()
        stream.take(reader)
        self._open_events({})
        try:
            if last is None:
                self.wfile.write(priming_bytes(f"0-{seq}"))
            events, done = stream.after(seq, 0, reader)
            self._stream_events(session, stream, reader, events, done, None)
        except OSError:
            pass


def _last(stream: Stream) -> int:
    with stream.condition:
        return stream.next_seq - 1


def _resumable(session: FrontSession, last: str) -> tuple[Stream, int] | None:
    number, _, seq = last.partition("-")
    if not (number.isdigit() and seq.isdigit() and len(last) <= 40):
        return None
    with session.lock:
        stream = session.numbered.get(int(number))
    return None if stream is None else (stream, int(seq))


def _key(request_id: object) -> str:
    try:
        return id_key(request_id)
    except ValueError:
        return ""


def _stateless(message: Mapping[str, Any], version: str | None) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return version == "2026-07-28" or (isinstance(meta, dict) and PROTOCOL_VERSION_META in meta)


def _media(value: str, allowed: tuple[str, ...]) -> bool:
    """A Content-Type of one of ``allowed`` (any UTF-8 charset parameter)."""
    kind, _, parameters = value.partition(";")
    if kind.strip().lower() not in allowed:
        return False
    for parameter in filter(None, (part.strip() for part in parameters.split(";"))):
        name, _, setting = parameter.partition("=")
        if name.strip().lower() != "charset" or setting.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


def _accepted(value: str) -> set[str]:
    """The media types an Accept header accepts (wildcards read as the types they cover)."""
    found = set()
    for part in value.split(",")[:32]:
        kind = part.split(";")[0].strip().lower()
        if kind in ("*/*", "application/*"):
            found.add("application/json")
        if kind in ("*/*", "text/*"):
            found.add("text/event-stream")
        found.add(kind)
    return found


def _hosts(host: str, port: int) -> frozenset[str]:
    """The Host header values that name the address listened on."""
    bare = host.strip("[]")
    names = {f"[{bare}]" if ":" in bare else bare}
    if bare in ("127.0.0.1", "localhost", "::1"):
        names |= set(LOOPBACK_NAMES)
    return frozenset(f"{name}:{port}" for name in names)

