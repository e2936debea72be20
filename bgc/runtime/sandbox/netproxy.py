"""The sandbox's only way out: an HTTP proxy, run outside it, that lets through exactly the granted URLs.

A confined command has a network namespace of its own, with nothing in it but a loopback
device. When its plan grants ``net:connect``, the parent runs this proxy on a Unix socket in a
private directory, and :mod:`bgc.runtime.sandbox.netbridge` relays the sandbox's loopback port to
it. Every request is one ``net:connect`` atom decided by the gate, exactly as ``bgc gate``
decides it (the URL canonicalised by :mod:`bgc.core.resources.net`, then matched), and every
decision names its rule:

- a plain-HTTP request (absolute form, ``GET http://host/path HTTP/1.1``) is the atom
  ``net:connect:URL`` of its canonical URL, and is forwarded with that canonical path, so the
  server receives what was decided;
- ``CONNECT host:port`` (a TLS tunnel, whose paths the proxy never sees) is allowed only when the
  plan grants every URL of ``https://host:port/``, the pattern ``https://host:port/**`` as a
  whole: a grant of some paths of a host does not open a tunnel to it.

Anything else fails closed: ``ask`` is refused (no one can approve inside a sandbox), as is a
request the proxy cannot read exactly (ambiguous framing, folded or non-ASCII headers, a Host
header naming another host than the URL), a head too large or too slow, and a granted name that
resolves to an address that is not public unless the plan grants that address too. A refused
request is never resolved or connected. The HTTP rules the parser holds to are in
docs/sandbox.md ("The network").
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import re
import socket
import stat
import threading
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple, Self

from bgc.core import resources
from bgc.core.gate import Gate, GateDecision
from bgc.core.patterns import glob
from bgc.core.patterns.budget import Budget
from bgc.core.values.limits import ORDER_BUDGET
from bgc.errors import UsageError

if TYPE_CHECKING:
    from bgc.core.plan import Plan, RuleRef

__all__ = [
    "NetDecider",
    "ProxyDecision",
    "ProxyHandle",
    "ProxyLimits",
    "Refused",
    "RequestHead",
    "parse_head",
    "start_proxy",
]

SOCKET_NAME = "net.sock"
"""The proxy's socket, in the private directory :func:`start_proxy` is given."""


@dataclass(frozen=True)
class ProxyLimits:
    """What one client may make the proxy do: every read and wait is bounded."""

    max_connections: int = 64
    """Client connections served at once; one more is answered 503 and closed."""
    max_head_bytes: int = 16 * 1024
    """A request head, request line and headers together (431 beyond)."""
    max_request_line: int = 8 * 1024
    """The request line alone (414 beyond)."""
    max_headers: int = 100
    """Header fields in one head (431 beyond)."""
    max_chunk_line: int = 64
    """A chunk-size line of a chunked body (no chunk extensions: the size, in hex, and CRLF)."""
    max_trailer_bytes: int = 4 * 1024
    """The trailer section after a chunked body (read and dropped)."""
    head_seconds: float = 30.0
    """The whole head must arrive within this, however it is dripped (slowloris)."""
    resolve_seconds: float = 10.0
    connect_seconds: float = 10.0
    idle_seconds: float = 300.0
    """A relay with no byte in either direction for this long (up to twice it) is closed."""
    max_addresses: int = 16
    """Resolved addresses tried, at most, for one request."""


class Refused(Exception):
    """A request the proxy will not serve: the status it answers and why."""

    def __init__(self, status: int, reason: str, atom: str | None = None, rule: RuleRef | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.atom, self.rule = status, reason, atom, rule


class RequestHead(NamedTuple):
    """A request head read exactly: ``headers`` as sent (values without surrounding white
    space), ``body`` how the body is framed and ``length`` its Content-Length."""

    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]
    body: Literal["none", "length", "chunked"]
    length: int

    def field(self, name: str) -> str | None:
        """The one value of header ``name`` (the parser refused a repeated Host, Content-Length
        or Transfer-Encoding), or None."""
        return next((value for key, value in self.headers if key.lower() == name), None)


@dataclass(frozen=True)
class ProxyDecision:
    """What the proxy decided for one request: what it asked (``request``, its request line
    as read), the atom decided (None when it was refused before there was one: a request the
    proxy cannot read), the effect, why, and the rule that decided (None: no rule allows it)."""

    request: str
    atom: str | None
    effect: Literal["allow", "deny"]
    reason: str
    rule: RuleRef | None = None


PHRASES = {
    200: "Connection established", 400: "Bad Request", 403: "Forbidden", 408: "Request Timeout",
    414: "URI Too Long", 431: "Request Header Fields Too Large", 501: "Not Implemented",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}  # fmt: skip

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TARGET = re.compile(rb"[\x21-\x7e]+")
_FIELD_VALUE = re.compile(rb"[\x20-\x7e\t]*")
_DIGITS = re.compile(r"[0-9]{1,18}")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})\r\n")
_AUTHORITY = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~\-]+):([0-9]{1,5})")
_HOST_FIELD = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~\-]+)(?::[0-9]{1,5})?")
_VERSIONS = (b"HTTP/1.1", b"HTTP/1.0")
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "upgrade", "host",
})  # fmt: skip
"""Headers for this hop only (RFC 9110 §7.6.1; and Host, which the proxy writes from the URL):
never forwarded, nor any header ``Connection`` names."""
FRAMING = frozenset({"content-length", "transfer-encoding"})
"""The body's framing, which the proxy writes itself (:func:`upstream_head`)."""


def parse_head(raw: bytes, limits: ProxyLimits = ProxyLimits()) -> RequestHead:
    """A request head (``raw`` ends with the blank line), read exactly or refused.

    Refused (:class:`Refused`), because two readers could frame or route it differently: a line
    not ended by CRLF, a bare CR, an empty line before the request line, a request line that is
    not ``METHOD SP TARGET SP HTTP/1.x`` in visible ASCII, a folded header line (obs-fold), a
    header name that is not a token or is followed by white space, a value with a control or a
    non-ASCII byte, a repeated Host, Content-Length or Transfer-Encoding, a Content-Length that
    is not digits, a Transfer-Encoding other than exactly ``chunked`` (or in HTTP/1.0), and both
    framings at once; and a head beyond ``limits``.
    """
    if len(raw) > limits.max_head_bytes:
        raise Refused(431, f"the request head is longer than {limits.max_head_bytes} bytes")
    if not raw.endswith(b"\r\n\r\n"):
        raise Refused(400, "the request head does not end with an empty line")
    lines = raw[:-4].split(b"\r\n")
    if any(b"\n" in line or b"\r" in line for line in lines):
        raise Refused(400, "a line of the head does not end with CRLF (a bare LF or CR)")
    request_line, fields = lines[0], lines[1:]
    if len(request_line) > limits.max_request_line:
        raise Refused(414, f"the request line is longer than {limits.max_request_line} bytes")
    words = request_line.split(b" ")
    if (
        len(words) != 3
        or not _TOKEN.fullmatch(words[0])
        or not _TARGET.fullmatch(words[1])
        or words[2] not in _VERSIONS
    ):
        raise Refused(400, "the request line is not 'METHOD TARGET HTTP/1.1' in visible ASCII, one space apart")
    if len(fields) > limits.max_headers:
        raise Refused(431, f"the request has more than {limits.max_headers} header fields")
    headers: list[tuple[str, str]] = []
    for line in fields:
        if line[:1] in (b" ", b"\t"):
            raise Refused(400, "a header line is folded (obs-fold: it starts with white space)")
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise Refused(400, "a header name is not a token followed at once by ':'")
        value = value.strip(b" \t")
        if not _FIELD_VALUE.fullmatch(value):
            raise Refused(400, f"the header {name.decode()} has a control character or a byte that is not ASCII")
        headers.append((name.decode(), value.decode()))
    names = [name.lower() for name, _ in headers]
    for single in ("host", "content-length", "transfer-encoding"):
        if names.count(single) > 1:
            raise Refused(400, f"the header {single} is repeated")
    method, target, version = words[0].decode(), words[1].decode(), words[2].decode()
    if version == "HTTP/1.1" and method != "CONNECT" and "host" not in names:
        raise Refused(400, "an HTTP/1.1 request has no Host header")
    head = RequestHead(method, target, version, tuple(headers), "none", 0)
    length, coding = head.field("content-length"), head.field("transfer-encoding")
    if length is not None and coding is not None:
        raise Refused(400, "the request has both Content-Length and Transfer-Encoding")
    if coding is not None:
        if coding.lower() != "chunked" or version == "HTTP/1.0":
            raise Refused(501, "the only Transfer-Encoding forwarded is 'chunked', in HTTP/1.1")
        return head._replace(body="chunked")
    if length is not None:
        if not _DIGITS.fullmatch(length):
            raise Refused(400, "the Content-Length is not a number")
        return head._replace(body="length", length=int(length))
    return head


class Verdict(NamedTuple):
    """An allowed request: the atom decided, what decided it, where to connect, and (for plain
    HTTP) the canonical URL to forward."""

    atom: str
    rule: RuleRef | None
    reason: str
    host: str
    port: int
    url: str | None


class NetDecider:
    """A proxy's requests decided against plans, as the gate decides their ``net:connect`` atoms.

    It holds a gate of its own: a gate remembers what it decided, and the proxy decides on its
    own thread.
    """

    def __init__(self, plans: Iterable[Plan]) -> None:
        self.gate = Gate(plans)

    def request(self, head: RequestHead) -> Verdict:
        """A plain-HTTP request: its URL's canonical form decided, the Host header the same host."""
        if head.method == "CONNECT":
            return self.tunnel(head)
        if "://" not in head.target:
            raise Refused(400, "a proxy request names its URL in full ('GET http://host/path HTTP/1.1')")
        if head.target.partition("://")[0].lower() != "http":
            raise Refused(501, "only http:// URLs are forwarded; https:// goes through CONNECT")
        url = self._canonical(head.target)
        verdict = self.url(url)
        self._same_host(head, "http", verdict)
        return verdict

    def url(self, url: str) -> Verdict:
        """The canonical ``http://`` URL decided: the atom ``net:connect:URL``."""
        atom = "net:connect:" + url
        verdict = _allowed(atom, self.gate.decide(atom))
        authority = url.split("/", 3)[2]
        host, port = _split_authority(authority, 80)
        return verdict._replace(host=host, port=port, url=url)

    def tunnel(self, head: RequestHead) -> Verdict:
        """``CONNECT host:port``: allowed when every URL of ``https://host:port/`` is granted."""
        if head.body != "none":
            raise Refused(400, "a CONNECT request has no body")
        found = _AUTHORITY.fullmatch(head.target)
        if found is None or not 0 < int(found[2]) < 65536:
            raise Refused(400, "a CONNECT target is 'host:port' (an IPv6 address in brackets)")
        verdict = self.root(self._canonical(f"https://{head.target}/"))
        self._same_host(head, "https", verdict)
        return verdict

    def root(self, root: str) -> Verdict:
        """A tunnel to the canonical ``https://host[:port]/`` decided: its root granted, and the
        pattern of all its URLs inside the grants (TLS hides the path: a tunnel reaches all)."""
        atom = "net:connect:" + root
        decision = self.gate.decide(atom)
        pattern = glob.escape(root) + "**"
        whole = self.gate.need("net", "connect", pattern, Budget(ORDER_BUDGET))
        if whole.effect != "allow" or decision.effect != "allow":
            if decision.rule is not None and decision.effect != "allow":
                _allowed(atom, decision)  # the deny or ask rule that holds the root itself
            reason = (
                f"a tunnel reaches every path of {root} (TLS hides them), and the plan does not grant "
                f"net:connect:{pattern} as a whole"
            )
            raise Refused(403, reason, "net:connect:" + pattern)
        host, port = _split_authority(root.split("/", 3)[2], 443)
        return _allowed(atom, decision)._replace(atom="net:connect:" + pattern, host=host, port=port)

    def address(self, verdict: Verdict, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> Verdict | Refused:
        """Whether the request may go to ``address``, which its host name resolved to: a public
        address may; another (loopback, private, link-local, …) only when the plan grants the
        request with that address as its host, so a name cannot lead to this machine's or its
        network's services (DNS rebinding) unless a grant names them."""
        if address.is_global and not address.is_multicast:
            return verdict
        literal = f"[{address}]" if address.version == 6 else str(address)
        try:
            if verdict.url is None:
                return self.root(self._canonical(f"https://{literal}:{verdict.port}/"))
            rest = verdict.url.split("/", 3)[3]
            return self.url(self._canonical(f"http://{literal}:{verdict.port}/{rest}"))
        except Refused as refused:
            reason = (
                f"{verdict.host} resolves to {address}, which is not a public address, and the plan does not "
                f"grant it by address ({refused.reason})"
            )
            return Refused(403, reason, verdict.atom, refused.rule)

    def _canonical(self, url: str) -> str:
        canonical = resources.normalise("net", url)
        if isinstance(canonical, resources.Rejection):
            raise Refused(403, f"rejected: {canonical.reason}", "net:connect:" + url)
        return canonical

    def _same_host(self, head: RequestHead, scheme: str, verdict: Verdict) -> None:
        """The Host header, when there is one, must name the host and port the URL names."""
        given = head.field("host")
        if given is None:
            return
        same = _HOST_FIELD.fullmatch(given) is not None and resources.normalise("net", f"{scheme}://{given}/")
        default = 80 if scheme == "http" else 443
        if not isinstance(same, str) or _split_authority(same.split("/", 3)[2], default) != (
            verdict.host,
            verdict.port,
        ):
            raise Refused(
                400, f"the Host header ({given}) names another host than the request ({verdict.host}:{verdict.port})"
            )


def _allowed(atom: str, decision: GateDecision) -> Verdict:
    """The gate's decision of ``atom`` as the proxy's: allow, else refused with the gate's reason."""
    if decision.effect == "allow":
        reason = f"granted by {decision.rule}" if decision.rule else "granted"
        return Verdict(atom, decision.rule, reason, "", 0, None)
    if decision.effect == "ask":
        raise Refused(
            403, "awaits approval, and no one can approve a connection from inside a sandbox", atom, decision.rule
        )
    raise Refused(403, decision.reason or "not granted by the plan", atom, decision.rule)


def _split_authority(authority: str, default: int) -> tuple[str, int]:
    """A canonical authority's host (IPv6 without brackets) and port."""
    if authority.startswith("["):
        host, _, port = authority[1:].partition("]")
        return host, int(port[1:]) if port else default
    host, colon, port = authority.partition(":")
    return host, int(port) if colon else default


def _answer(status: int, text: str) -> bytes:
    from bgc.text import escape_field

    body = f"bgc sandbox: {escape_field(text)}\n".encode()
    head = (
        f"HTTP/1.1 {status} {PHRASES[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def upstream_head(head: RequestHead, url: str) -> bytes:
    """The head forwarded for a plain-HTTP request: origin form with the canonical path and
    query (what was decided), Host from the URL, the end-to-end headers in order, the body's
    framing as the proxy forwards it (written by the proxy, so that no ``Connection`` header can
    take it away), and ``Connection: close`` (one request per connection: nothing after its body
    is read)."""
    authority = url.split("/", 3)[2]
    path = url[len("http://") + len(authority) :]
    connection = (value for key, value in head.headers if key.lower() == "connection")
    dropped = HOP_BY_HOP | FRAMING | {token.strip().lower() for value in connection for token in value.split(",")}
    lines = [f"{head.method} {path} {head.version}", f"Host: {authority}"]
    lines += [f"{key}: {value}" for key, value in head.headers if key.lower() not in dropped]
    if head.body == "length":
        lines.append(f"Content-Length: {head.length}")
    elif head.body == "chunked":
        lines.append("Transfer-Encoding: chunked")
    return ("\r\n".join([*lines, "Connection: close"]) + "\r\n\r\n").encode()


class ProxyHandle:
    """A running proxy: its ``socket_path``, the ``plans`` it decides by, and :meth:`close`.
    Every decision it makes is passed to the ``record`` callback given to :func:`start_proxy`
    (one thread calls it, in order, before the request goes on: one it cannot record is refused)."""

    def __init__(
        self, socket_path: str, plans: tuple[Plan, ...], loop: asyncio.AbstractEventLoop, thread: threading.Thread,
        stop: Callable[[], None],
    ) -> None:  # fmt: skip
        self.socket_path, self.plans = socket_path, plans
        self._loop, self._thread, self._stop = loop, thread, stop

    def close(self) -> None:
        """Stop serving, end every connection, remove the socket."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop)
            self._thread.join()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def start_proxy(
    plans: Iterable[Plan], directory: str, *, record: Callable[[ProxyDecision], None] | None = None,
    limits: ProxyLimits = ProxyLimits(),
) -> ProxyHandle:  # fmt: skip
    """Serve the proxy for ``plans`` on ``directory``/net.sock, on a thread of its own.

    ``directory`` is created (mode 0700) when missing; an existing one must be a directory (not
    a link) owned by this user that no one else may enter, since whoever reaches the socket uses
    the grants. ``record`` receives every decision (see :class:`ProxyHandle`).
    """
    socket_path = os.path.join(directory, SOCKET_NAME)
    _private_directory(directory)
    if len(os.fsencode(socket_path)) >= 108:
        raise UsageError(f"the proxy's socket path is too long for a Unix socket: {socket_path}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(socket_path)
        listener.listen(limits.max_connections)
    except OSError as error:
        listener.close()
        raise UsageError(f"cannot listen on {socket_path}: {error.strerror}") from None
    held = tuple(plans)
    proxy = _Proxy(NetDecider(held), limits, record)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    thread = threading.Thread(target=proxy.run, args=(loop, listener, started), name="bgc-netproxy", daemon=True)
    thread.start()
    started.wait()
    handle = ProxyHandle(socket_path, held, loop, thread, proxy.stop)
    if proxy.failure is not None:
        handle.close()
        raise UsageError(f"the network proxy could not start: {proxy.failure}")
    return handle


def _private_directory(directory: str) -> None:
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise UsageError(f"{directory} must be a directory of this user that no one else may enter (mode 0700)")


class _Proxy:
    """The proxy's event loop: one task per client connection, at most ``max_connections``."""

    def __init__(
        self, decider: NetDecider, limits: ProxyLimits, record: Callable[[ProxyDecision], None] | None
    ) -> None:
        self.decider, self.limits, self.record = decider, limits, record
        self.tasks: set[asyncio.Task[None]] = set()
        self.recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bgc-netproxy-record")
        self.closing: asyncio.Event | None = None
        self.failure: Exception | None = None

    def run(self, loop: asyncio.AbstractEventLoop, listener: socket.socket, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(listener, started))
        except Exception as error:  # noqa: BLE001 - reported to start_proxy, which is waiting
            self.failure = error
        finally:
            started.set()
            listener.close()
            self.recorder.shutdown(wait=True)
            loop.close()

    def stop(self) -> None:
        assert self.closing is not None
        self.closing.set()

    async def _serve(self, listener: socket.socket, started: threading.Event) -> None:
        self.closing = asyncio.Event()
        server = await asyncio.start_unix_server(self._client, sock=listener, limit=self.limits.max_head_bytes)
        started.set()
        await self.closing.wait()
        server.close()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await server.wait_closed()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self.tasks) >= self.limits.max_connections:
            writer.write(_answer(503, f"more than {self.limits.max_connections} connections at once"))
            await _close(writer)
            return
        self.tasks.add(task)
        try:
            await self._serve_one(reader, writer)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, Refused):
            pass  # the client or the server went away or stalled, or a body could not be framed: it ends
        finally:
            self.tasks.discard(task)
            await _close(writer)

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limits = self.limits
        request = ""
        try:
            try:
                raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), limits.head_seconds)
            except TimeoutError:
                raise Refused(408, f"the request head did not arrive within {limits.head_seconds:g} s") from None
            except asyncio.LimitOverrunError:
                raise Refused(431, f"the request head is longer than {limits.max_head_bytes} bytes") from None
            except asyncio.IncompleteReadError as partial:
                if partial.partial.strip():
                    raise Refused(400, "the connection ended inside the request head") from None
                return
            request = raw.split(b"\r\n", 1)[0][: limits.max_request_line].decode("latin-1")
            head = parse_head(raw, limits)
            verdict = self.decider.request(head)
            addresses = await self._addresses(verdict)
        except Refused as refused:
            await self._refuse(writer, request, refused)
            return
        except Exception as error:  # noqa: BLE001 - what cannot be decided is refused, and says why
            await self._refuse(writer, request, Refused(403, f"the request could not be decided: {error}"))
            return
        decision = ProxyDecision(request, verdict.atom, "allow", verdict.reason, verdict.rule)
        if not await self._recorded(decision):
            await self._refuse(
                writer, request, Refused(403, "the decision could not be recorded", verdict.atom, verdict.rule)
            )
            return
        upstream = await self._connect(addresses, verdict.port)
        if upstream is None:
            writer.write(_answer(502, f"could not connect to {verdict.host} port {verdict.port}"))
            return
        up_reader, up_writer = upstream
        seen = [asyncio.get_running_loop().time()]
        try:
            if verdict.url is None:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                both = [self._copy(reader, up_writer, seen), self._copy(up_reader, writer, seen)]
                await self._relay(both, seen, len(both))
            else:
                up_writer.write(upstream_head(head, verdict.url))
                # the response is relayed until the server closes; the body forwarded as framed and
                # nothing after it (a second request on the connection never reaches the server)
                await self._relay(
                    [self._copy(up_reader, writer, seen, half_close=False), self._body(head, reader, up_writer, seen)],
                    seen,
                    1,
                )
        finally:
            await _close(up_writer)

    async def _refuse(self, writer: asyncio.StreamWriter, request: str, refused: Refused) -> None:
        await self._recorded(ProxyDecision(request, refused.atom, "deny", refused.reason, refused.rule))
        writer.write(_answer(refused.status, f"{refused.atom}: {refused.reason}" if refused.atom else refused.reason))

    async def _recorded(self, decision: ProxyDecision) -> bool:
        if self.record is None:
            return True
        try:
            await asyncio.get_running_loop().run_in_executor(self.recorder, self.record, decision)
        except Exception:  # noqa: BLE001 - a decision that cannot be recorded is not acted on
            return False
        return True

    async def _addresses(self, verdict: Verdict) -> list[str]:
        """Where an allowed request may connect: its address, or the addresses its name resolves
        to that :meth:`NetDecider.address` allows (refused when none is)."""
        try:
            return [str(ipaddress.ip_address(verdict.host))]
        except ValueError:
            pass
        loop = asyncio.get_running_loop()
        try:
            found = await asyncio.wait_for(
                loop.getaddrinfo(verdict.host, verdict.port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP),
                self.limits.resolve_seconds,
            )
        except (TimeoutError, OSError) as error:
            raise Refused(
                502, f"{verdict.host} could not be resolved ({error or 'timed out'})", verdict.atom, verdict.rule
            ) from None
        allowed: list[str] = []
        refusal: Refused | None = None
        for *_, address in found[: self.limits.max_addresses]:
            ip = ipaddress.ip_address(str(address[0]).partition("%")[0])
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            checked = self.decider.address(verdict, ip)
            if isinstance(checked, Refused):
                refusal = refusal or checked
            elif str(ip) not in allowed:
                allowed.append(str(ip))
        if not allowed:
            raise refusal or Refused(502, f"{verdict.host} resolves to no address", verdict.atom, verdict.rule)
        return allowed

    async def _connect(
        self, addresses: list[str], port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for address in addresses:
            try:
                return await asyncio.wait_for(asyncio.open_connection(address, port), self.limits.connect_seconds)
            except (TimeoutError, OSError):
                continue
        return None

    async def _relay(self, jobs: list[Coroutine[None, None, None]], seen: list[float], needed: int) -> None:
        """Run the copies ``jobs`` until the first ``needed`` of them end (the rest are then
        cancelled), one fails, or no byte has moved for ``idle_seconds``."""
        loop = asyncio.get_running_loop()
        tasks = [asyncio.ensure_future(job) for job in jobs]
        try:
            while not all(task.done() for task in tasks[:needed]):
                running = [task for task in tasks if not task.done()]
                done, _ = await asyncio.wait(
                    running, timeout=self.limits.idle_seconds, return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    task.result()  # a failed copy, or a body the proxy cannot frame, ends the connection
                if not done and loop.time() - seen[0] >= self.limits.idle_seconds:
                    return
        finally:
            for task in tasks:
                task.cancel()

    async def _body(
        self, head: RequestHead, reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter, seen: list[float]
    ) -> None:
        if head.body == "length":
            await _forward(reader, up_writer, head.length, seen)
        elif head.body == "chunked":
            await self._chunked(reader, up_writer, seen)
        await up_writer.drain()

    async def _chunked(self, reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter, seen: list[float]) -> None:
        """A chunked body forwarded chunk by chunk: sizes in hex, no extensions; the trailer
        section read, bounded, and dropped."""
        limits = self.limits
        while True:
            found = _CHUNK_SIZE.fullmatch(await _line(reader, limits.max_chunk_line))
            if found is None:
                raise Refused(400, "a chunk-size line is not hex digits and CRLF")
            size = int(found[1], 16)
            if size == 0:
                break
            up_writer.write(b"%x\r\n" % size)
            await _forward(reader, up_writer, size, seen)
            if await reader.readexactly(2) != b"\r\n":
                raise Refused(400, "a chunk is not followed by CRLF")
            up_writer.write(b"\r\n")
        trailer = 0
        while (line := await _line(reader, limits.max_trailer_bytes)) != b"\r\n":
            trailer += len(line)
            if trailer > limits.max_trailer_bytes:
                raise Refused(400, "the chunked body's trailer section is too long")
        up_writer.write(b"0\r\n\r\n")

    async def _copy(
        self, source: asyncio.StreamReader, target: asyncio.StreamWriter, seen: list[float], half_close: bool = True
    ) -> None:
        """Bytes from ``source`` to ``target`` until ``source`` ends (then ``target``'s write side
        ends too, when ``half_close``)."""
        loop = asyncio.get_running_loop()
        while data := await source.read(65536):
            seen[0] = loop.time()
            target.write(data)
            await target.drain()
        if half_close and target.can_write_eof() and not target.is_closing():
            target.write_eof()


async def _line(reader: asyncio.StreamReader, limit: int) -> bytes:
    """A line of a chunked body, ended by CRLF and at most ``limit`` bytes."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise Refused(400, "a line of the body is too long") from None
    if len(line) > limit or not line.endswith(b"\r\n") or b"\r" in line[:-2]:
        raise Refused(400, "a line of the body is too long or does not end with CRLF")
    return line


async def _forward(reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter, size: int, seen: list[float]) -> None:
    """Exactly ``size`` bytes of the body, from the client to the server."""
    loop = asyncio.get_running_loop()
    while size:
        data = await reader.read(min(size, 65536))
        if not data:
            raise asyncio.IncompleteReadError(b"", size)
        seen[0] = loop.time()
        size -= len(data)
        up_writer.write(data)
        await up_writer.drain()


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError, asyncio.CancelledError):
        await writer.wait_closed()
