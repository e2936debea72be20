"""The server side of ``bgc mcp-proxy``: a local server started as a child (stdio), or a remote
one reached over Streamable HTTP.

Either is an :class:`Upstream`: the mediator's decided messages go to :meth:`Upstream.send`, and
:meth:`Upstream.pump` hands the server's messages to the mediator until the server side ends.

**A child** (:class:`ChildServer`) speaks JSON lines on its standard streams, in a process group
of its own: signals reach whatever it started, and it never outlives the proxy.

**A remote server** (:class:`RemoteServer`) speaks Streamable HTTP
(https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http), as
an MCP client does:

- every message is a POST of the decided value, re-serialised (compact ASCII JSON), with
  ``Accept: application/json, text/event-stream``; a request's answer comes back as one JSON
  body or as server-sent events (:mod:`bgc.adapters.mcp.sse`), every event read as strictly as a
  line from a child, bounded (:data:`~bgc.adapters.mcp.mediator.MAX_SERVER_MESSAGE_BYTES`), and
  passed to the mediator with the request it belongs to;
- the server's session id (``Mcp-Session-Id``, visible ASCII only, else the session is refused)
  and the protocol version it chose (``MCP-Protocol-Version``) go on every later request; the
  client never sees the server's session id (an HTTP front gives the client one of its own);
- a stream that breaks before its answer, after an event with an id, is resumed with a GET
  carrying ``Last-Event-ID``; a GET stream carries the server's own messages, reopened when it
  ends (after the server's ``retry`` delay), until the server answers 405;
- **the server restarting** is survived: while it cannot be reached, a message waits up to
  ``reconnect_seconds`` for it to come back; a 404 for the session (the server forgot it) starts
  a new session with the client's own ``initialize`` parameters, which must negotiate the same
  protocol version, and the message is sent once more. A request whose connection broke after it
  was sent is never sent again (it may have run): its client gets an error saying so;
- ``Authorization`` passes through: the client's header (an HTTP front's pass-through context)
  or the proxy's own (``--bearer-env``, read from the environment); it is held in memory for the
  session and written nowhere;
- everything is bounded in time (``timeout_seconds`` for each network operation) and size; a
  failure answers the request it belongs to with an error, never a result.

The session ends with a DELETE (the specification's courtesy), at most a few seconds long.
"""

from __future__ import annotations

import http.client
import itertools
import secrets
import select
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bgc.adapters.jsonrpc import id_key
from bgc.adapters.mcp.mediator import HANDSHAKE_VERSIONS, MAX_SERVER_MESSAGE_BYTES
from bgc.adapters.mcp.sse import Oversized, SseReader
from bgc.adapters.relay import Child
from bgc.core.values.jsonline import LineReader, TooLong, Unreadable, dumps, parse, partial_reader

if TYPE_CHECKING:
    from bgc.adapters.mcp.mediator import Mediator

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
LAST_EVENT_HEADER = "Last-Event-ID"
MAX_SESSION_ID_CHARS = 1024
"""The longest session id a server may give (it is sent back on every request)."""
DEFAULT_TIMEOUT_SECONDS = 300.0
"""How long one network operation (connect, send, a read) may take before its request fails."""
DEFAULT_RECONNECT_SECONDS = 30.0
"""How long a message waits for a server that cannot be reached (one restarting) to come back."""
DELETE_SECONDS = 5.0
GET_READ_SECONDS = 600.0
"""A quiet GET stream is reopened after this long (a server that keeps it open sends comments)."""
MAX_IDLE_CONNECTIONS = 8


class Upstream:
    """A server session: where the mediator's decided messages go and its own come from."""

    def open(self) -> str | None:
        """Start (a child) or get ready (a remote server); the reason when it cannot."""
        raise NotImplementedError

    def attach(self, mediator: Mediator) -> None:
        """The mediator the server's messages go to, known before any message is sent."""

    def send(self, message: dict[str, Any], context: Any) -> None:
        """Pass one decided message on; OSError or ValueError when the server is gone for good."""
        raise NotImplementedError

    def pump(self, mediator: Mediator) -> None:
        """Hand the server's messages to ``mediator`` until the server side ends."""
        raise NotImplementedError

    def end(self) -> None:
        """The client is gone: the session ends (a child's input is closed)."""
        raise NotImplementedError

    def status(self, why: str) -> int:
        """The exit status the proxy exits with once :meth:`pump` returned (a child is reaped:
        ``why`` says what it failed to do when it has to be terminated)."""
        raise NotImplementedError

    def stop(self, number: int) -> None:
        """The proxy got signal ``number``: pass it on (a child's group), or end the session."""
        raise NotImplementedError


class ChildServer(Upstream):
    """A server the proxy starts as its child (:class:`bgc.adapters.relay.Child`: its own process
    group, its grace) and speaks JSON lines with."""

    def __init__(self, command: Sequence[str], grace_seconds: float, say: Callable[[str], None]) -> None:
        self.child = Child(command, grace_seconds, say, "server")
        self._lock = threading.Lock()

    def open(self) -> str | None:
        return self.child.start()

    def send(self, message: dict[str, Any], context: Any) -> None:
        """Write the decided value as one line: no byte of the client's line reaches the server."""
        data = dumps(message)
        with self._lock:
            self.child.stdin.write(data)
            self.child.stdin.flush()

    def pump(self, mediator: Mediator) -> None:
        for line in LineReader(partial_reader(self.child.stdout), MAX_SERVER_MESSAGE_BYTES):
            mediator.from_server_line(line)

    def end(self) -> None:
        try:
            self.child.stdin.close()
        except OSError:
            pass

    def status(self, why: str) -> int:
        return self.child.reap(why)

    def stop(self, number: int) -> None:
        self.child.forward(number)

    def kill(self) -> None:
        """The proxy itself failed: the server never outlives it."""
        self.child.kill()


class Unreachable(Exception):
    """The server could not be reached, or could not start a new session, in time."""


class Broken(Exception):
    """The connection broke after a request was sent: it may have run, and is not sent again."""


class RemoteServer(Upstream):
    """A server reached over Streamable HTTP; see the module docstring for the rules."""

    def __init__(
        self, url: str, say: Callable[[str], None], *, authorization: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, reconnect_seconds: float = DEFAULT_RECONNECT_SECONDS,
        max_message_bytes: int = MAX_SERVER_MESSAGE_BYTES,
    ) -> None:  # fmt: skip
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http:// or https:// URL: {url}")
        if parts.username is not None or parts.password is not None:
            raise ValueError("a URL with a user name or password in it: give a token with --bearer-env instead")
        self.url = url
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.say = say
        self.authorization = authorization
        self.timeout_seconds = timeout_seconds
        self.reconnect_seconds = reconnect_seconds
        self.max_message_bytes = max_message_bytes
        self.on_http_failure: Callable[[object, int, Mapping[str, str]], None] | None = None
        """Told of a request the server refused with an HTTP status of its own (401, 403): an
        HTTP front answers its client with the same status, so the client's own authorization
        flow can run."""
        self._mediator: Mediator | None = None
        self._lock = threading.Lock()
        self._session_lock = threading.Lock()
        self._idle: list[http.client.HTTPConnection] = []
        self._session_id: str | None = None
        self._version: str | None = None
        self._initialize: dict[str, Any] | None = None
        self._pass_through: dict[str, str] = {}
        self._ended = threading.Event()
        self._listening = False
        self._own_ids = itertools.count(1)
        self._salt = secrets.token_hex(8)
        self._tls = ssl.create_default_context() if self.https else None

    # ---- the Upstream interface ------------------------------------------------------------------

    def open(self) -> str | None:
        return None  # the first message connects: a server not up yet is waited for then

    def attach(self, mediator: Mediator) -> None:
        self._mediator = mediator

    def send(self, message: dict[str, Any], context: Any) -> None:
        if isinstance(context, Mapping):
            with self._lock:
                self._pass_through = dict(context)
        if message.get("method") == "initialize" and "id" in message:
            self._initialize = message
        if "method" in message and "id" in message:
            threading.Thread(target=self._exchange, args=(message,), daemon=True, name="upstream request").start()
            return
        self._notify(message)

    def pump(self, mediator: Mediator) -> None:
        self._mediator = mediator
        self._ended.wait()

    def end(self) -> None:
        if self._ended.is_set():
            return
        self._ended.set()
        if self._session_id is not None:
            try:
                self._request("DELETE", None, timeout=DELETE_SECONDS, retry=False).close()
            except (Unreachable, OSError, http.client.HTTPException):
                pass
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def status(self, why: str) -> int:
        return 0

    def stop(self, number: int) -> None:
        self.end()

    # ---- exchanges -------------------------------------------------------------------------------

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept}
        with self._lock:
            authorization = self._pass_through.get("authorization", self.authorization)
            if self._session_id is not None:
                headers[SESSION_HEADER] = self._session_id
            if self._version is not None:
                headers[VERSION_HEADER] = self._version
        if authorization is not None:
            headers["Authorization"] = authorization
        return headers

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        """An idle connection still open, or a new one (not connected yet)."""
        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                sock = connection.sock
                if sock is not None and not select.select([sock], [], [], 0)[0]:  # readable: closed by the server
                    sock.settimeout(timeout)
                    return connection
                connection.close()
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self._tls)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _keep(self, connection: http.client.HTTPConnection) -> None:
        """Keep a connection whose response was read whole, for the next request."""
        with self._lock:
            if len(self._idle) < MAX_IDLE_CONNECTIONS and not self._ended.is_set():
                self._idle.append(connection)
                return
        connection.close()

    def _request(
        self, method: str, body: bytes | None, *, accept: str = "application/json, text/event-stream",
        extra: Mapping[str, str] | None = None, timeout: float | None = None, retry: bool = True,
    ) -> _Response:  # fmt: skip
        """Send one HTTP request; a server that cannot be reached is waited for (``retry``) up to
        ``reconnect_seconds``. Raises :class:`Unreachable`, or :class:`Broken` once the request
        was sent and its answer could not be read."""
        timeout = self.timeout_seconds if timeout is None else timeout
        deadline = time.monotonic() + (self.reconnect_seconds if retry else 0)
        delay = 0.1
        while True:
            connection = self._connection(timeout)
            headers = {**self._headers(accept), **(extra or {})}
            if body is not None:
                headers["Content-Type"] = "application/json"
            try:
                if connection.sock is None:
                    connection.connect()
            except OSError as error:
                connection.close()
                if time.monotonic() + delay > deadline or self._ended.is_set():
                    raise Unreachable(f"cannot reach {self.url}: {error.strerror or error}") from None
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            try:
                connection.request(method, self.path, body=body, headers=headers)
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                raise Broken(f"the connection to {self.url} broke ({type(error).__name__}: {error})") from None
            return _Response(connection, response, self._keep)

    def _exchange(self, message: dict[str, Any]) -> None:
        """One request: POSTed, its answer (and what comes with it) handed to the mediator."""
        mediator = self._mediator
        assert mediator is not None
        request_id = message["id"]
        try:
            self._post_request(message, mediator)
        except (Unreachable, Broken) as error:
            mediator.server_failed(request_id, str(error))
        except Exception as error:  # noqa: BLE001 - a request bgc fails on is answered with an error
            mediator.server_failed(request_id, f"bgc could not exchange this request ({type(error).__name__}: {error})")

    def _post_request(self, message: dict[str, Any], mediator: Mediator) -> None:
        initialize = message.get("method") == "initialize"
        request_id = message["id"]
        body = dumps(message)
        session = self._session_id
        response = self._request("POST", body)
        if response.status == 404 and session is not None and not initialize:
            response.close()
            self._new_session(session)
            response = self._request("POST", body)
        with response:
            if initialize and response.status == 200:
                found = response.header(SESSION_HEADER)
                if found is not None and not _visible(found):
                    raise Broken("the server gave a session id that is not visible ASCII: the session is refused")
                with self._lock:
                    self._session_id = found
            self._answer(response, request_id, mediator, initialize)

    def _answer(self, response: _Response, request_id: object, mediator: Mediator, initialize: bool = False) -> None:
        """What the server answered a request, to the mediator: JSON, events, or an error."""
        kind = response.content_type()
        if response.status in (401, 403):
            challenge = {name: value for name, value in response.headers() if name.lower() == "www-authenticate"}
            if self.on_http_failure is not None:
                self.on_http_failure(request_id, response.status, challenge)
            raise Broken(f"the server refused the request's authorization (HTTP {response.status})")
        if response.status == 200 and kind == "application/json":
            body = response.body(self.max_message_bytes)
            if initialize and not isinstance(body, TooLong):
                self._note_version(body)
            mediator.from_server_line(body, request_id)
        elif response.status == 200 and kind == "text/event-stream":
            self._events(response, request_id, mediator, initialize)
        elif response.status >= 400 and kind == "application/json":
            error = _rpc_error(response.body(self.max_message_bytes), request_id)
            if error is None:
                raise Broken(f"the server answered HTTP {response.status} without an error for the request")
            mediator.from_server(error, request_id)
        else:
            raise Broken(f"the server answered HTTP {response.status} ({kind or 'no content type'})")
        if mediator.owes(request_id):
            raise Broken(f"the server answered HTTP {response.status} without a JSON-RPC answer to the request")

    def _events(self, response: _Response, request_id: object, mediator: Mediator, initialize: bool) -> None:
        """A request's answer as events; a stream that breaks after an event with an id is resumed."""
        reader = SseReader(response.read1, self.max_message_bytes)
        try:
            self._deliver(reader, request_id, mediator, initialize)
        except (OSError, http.client.HTTPException) as error:
            broke = f"{type(error).__name__}: {error}"
        else:
            if not mediator.owes(request_id):
                return
            broke = "the stream ended before the answer"
        if reader.last_id is None:
            raise Broken(f"the server's stream broke before it answered, with nothing to resume ({broke})")
        self._resume(reader.last_id, request_id, mediator, initialize)

    def _deliver(self, reader: SseReader, related: object, mediator: Mediator, initialize: bool = False) -> None:
        """Every event of ``reader`` to the mediator, until the request ``related`` is answered."""
        for event in reader:
            if isinstance(event, Oversized):
                mediator.from_server_line(TooLong(b"", event.length, None), related)
            elif event.event == "message" and event.data:
                if initialize:
                    self._note_version(event.data)
                mediator.from_server_line(event.data, related)
            if related is not None and not mediator.owes(related):
                return

    def _resume(self, last_id: str, request_id: object, mediator: Mediator, initialize: bool) -> None:
        """Take up a broken stream again where it stopped (``Last-Event-ID``), once."""
        response = self._request("GET", None, accept="text/event-stream", extra={LAST_EVENT_HEADER: last_id})
        with response:
            if response.status != 200 or response.content_type() != "text/event-stream":
                raise Broken(f"the server's stream broke before it answered, and resuming it got HTTP {response.status}")
            self._deliver(SseReader(response.read1, self.max_message_bytes), request_id, mediator, initialize)
        if mediator.owes(request_id):
            raise Broken("the server's resumed stream ended before it answered")

    def _note_version(self, data: bytes) -> None:
        """The protocol version the server chose in its answer to ``initialize`` (sent on every
        later request); one bgc does not know is not kept (the mediator refuses the answer)."""
        try:
            value = parse(data)
        except Unreadable:
            return
        result = value.get("result") if isinstance(value, dict) else None
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version in HANDSHAKE_VERSIONS:
            with self._lock:
                self._version = version

    def _notify(self, message: dict[str, Any]) -> None:
        """A notification or an answer: POSTed, and accepted (202) or said to be refused."""
        session = self._session_id
        try:
            response = self._request("POST", dumps(message))
            if response.status == 404 and session is not None:
                response.close()
                self._new_session(session)
                response = self._request("POST", dumps(message))
            with response:
                response.body(self.max_message_bytes)
                if response.status not in (200, 202):
                    self.say(f"the server refused a {message.get('method', 'response')} (HTTP {response.status})")
        except (Unreachable, Broken) as error:
            self.say(f"could not pass a {message.get('method', 'response')} on: {error}")
            return
        if message.get("method") == "notifications/initialized":
            self._listen()

    def _new_session(self, expired: str) -> None:
        """The server forgot session ``expired`` (it restarted): start a new one with the
        client's own ``initialize``, which must negotiate the same protocol version."""
        with self._session_lock:
            if self._session_id != expired:
                return  # another request started it already
            if self._initialize is None:
                raise Unreachable("the server forgot the session, and bgc has no initialize to start another")
            own = {**self._initialize, "id": f"bgc-{self._salt}-{next(self._own_ids)}"}
            with self._lock:
                self._session_id = None
            response = self._request("POST", dumps(own))
            with response:
                found = response.header(SESSION_HEADER)
                answer = _Collect(own["id"])
                if response.status == 200 and response.content_type() == "application/json":
                    answer.from_server_line(response.body(self.max_message_bytes), own["id"])
                elif response.status == 200 and response.content_type() == "text/event-stream":
                    self._deliver(SseReader(response.read1, self.max_message_bytes), own["id"], answer)  # type: ignore[arg-type]
            version = answer.version()
            if version is None or version != self._version or (found is not None and not _visible(found)):
                raise Unreachable(f"the restarted server did not start a new session on protocol {self._version}")
            with self._lock:
                self._session_id = found
            with self._request("POST", dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})) as done:
                done.body(self.max_message_bytes)
            self.say(f"the server at {self.url} forgot the session (it restarted): a new one was started")

    def _listen(self) -> None:
        """Open the server's own stream (its requests and notifications) once."""
        with self._lock:
            if self._listening or self._session_id is None:
                return
            self._listening = True
        threading.Thread(target=self._stream, daemon=True, name="upstream stream").start()

    def _stream(self) -> None:
        """The GET stream: reopened when it ends, until the server says it has none (405) or
        the session ends; a session the server forgot is started again."""
        last_id: str | None = None
        session = self._session_id
        delay = 1.0
        while not self._ended.is_set():
            mediator = self._mediator
            assert mediator is not None
            extra = {LAST_EVENT_HEADER: last_id} if last_id is not None and session == self._session_id else {}
            session = self._session_id
            try:
                with self._request("GET", None, accept="text/event-stream", extra=extra, timeout=GET_READ_SECONDS) as response:
                    if response.status == 405:
                        return
                    if response.status == 404 and session is not None:
                        self._new_session(session)
                        continue
                    if response.status == 200 and response.content_type() == "text/event-stream":
                        reader = SseReader(response.read1, self.max_message_bytes)
                        try:
                            self._deliver(reader, None, mediator)
                        finally:
                            last_id = reader.last_id or last_id
                            delay = (reader.retry / 1000) if reader.retry is not None else 1.0
            except (Unreachable, Broken, OSError, http.client.HTTPException) as error:
                self.say(f"the server's stream is closed, reopening it: {error}")
                delay = min(max(delay, 1.0) * 2, 10.0)
            self._ended.wait(delay)


class _Response:
    """One HTTP response and the connection it came on (kept for reuse when read whole)."""

    def __init__(
        self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse,
        keep: Callable[[http.client.HTTPConnection], None],
    ) -> None:  # fmt: skip
        self.connection = connection
        self.response = response
        self.status = response.status
        self._keep = keep

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def header(self, name: str) -> str | None:
        return self.response.getheader(name)

    def headers(self) -> list[tuple[str, str]]:
        return self.response.getheaders()

    def content_type(self) -> str:
        return (self.response.getheader("Content-Type") or "").split(";")[0].strip().lower()

    def read1(self, size: int) -> bytes:
        return self.response.read1(size)

    def body(self, limit: int) -> bytes | TooLong:
        """The whole body, or :class:`TooLong` (read no further) when it is over ``limit``."""
        data = self.response.read(limit + 1)
        if len(data) > limit:
            return TooLong(data[:256], len(data), None)
        return data

    def close(self) -> None:
        """Done with it: its connection is kept when the body was read whole and the server
        keeps it open, else closed (a stream not read to its end is cut)."""
        if self.response.isclosed() and not self.response.will_close:
            self._keep(self.connection)
            return
        self.response.close()
        self.connection.close()


class _Collect:
    """Stands for the mediator while bgc reads the answer to its own ``initialize``."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.answer: Any = None

    def from_server_line(self, line: bytes | TooLong, related: Any = None) -> None:
        if isinstance(line, TooLong):
            return
        try:
            value = parse(line)
        except Unreadable:
            return
        if isinstance(value, dict) and value.get("id") == self.request_id:
            self.answer = value

    def owes(self, request_id: object) -> bool:
        return self.answer is None

    def version(self) -> str | None:
        result = self.answer.get("result") if isinstance(self.answer, dict) else None
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        return version if isinstance(version, str) else None


def _rpc_error(body: bytes | TooLong, request_id: object) -> dict[str, Any] | None:
    """The JSON-RPC error an HTTP error status carried for ``request_id``, or None."""
    if isinstance(body, TooLong):
        return None
    try:
        value = parse(body)
    except Unreadable:
        return None
    if isinstance(value, dict) and "error" in value and "result" not in value and id_key(value.get("id")) == id_key(request_id):
        return value
    return None


def _visible(text: str) -> bool:
    """Visible ASCII only (0x21 to 0x7E), as a session id must be, and not too long."""
    return 0 < len(text) <= MAX_SESSION_ID_CHARS and all(0x21 <= ord(char) <= 0x7E for char in text)

