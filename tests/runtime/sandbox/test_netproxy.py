"""The sandbox's network proxy: its decisions are the gate's, by class of URL spelling; what it
cannot read exactly (smuggling, oversize, slow heads) is refused; a refused request is never
resolved or connected; a name leads to a private address only when the plan grants the address."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bgc.core.compiler import Compiler
from bgc.core.gate import Gate
from bgc.core.policy.loader import parse_policy
from bgc.core.values.model import WorkOrder
from bgc.errors import UsageError
from bgc.runtime.sandbox.netproxy import NetDecider, ProxyLimits, Refused, parse_head, start_proxy
from tests.samples import PROMPT, examples

POLICY = """\
allow net:connect:http://api.example.com/v1/** because "the API"
deny net:connect:http://api.example.com/v1/admin/** because "not the admin API"
allow net:connect:http://xn--bcher-kva.example/** because "an IDN host"
allow net:connect:http://127.0.0.1:8080/ok/** because "a loopback service, by address"
allow net:connect:http://api.example.com:8080/ok/** because "the API's other port"
ask net:connect:http://ask.example.com/** because "a person decides"
allow net:connect:https://tls.example.com/** because "a whole TLS host"
allow net:connect:https://docs.example.com/guide/** because "part of a TLS host"
allow net:connect:https://*.wild.example.com/** because "subdomains"
allow net:connect:https://api.example.com/** because "cut by the admin deny"
allow net:connect:https://10.1.2.3:8443/** because "a private TLS service, by address"
"""


def plan_of(policy: str):  # type: ignore[no-untyped-def]
    order = {"intent": {"kind": "sandbox.run", "payload": "p"}, "requests": ["net:connect:**"],
             "origin": {"model": "m", "parents": [], "prompt": PROMPT}}  # fmt: skip
    return Compiler(parse_policy(policy, "net.bgp")).compile(WorkOrder.from_data(order))


PLAN = plan_of(POLICY)
REFERENCE = Gate([PLAN])
"""The gate ``bgc gate`` would decide with: the reference every proxy decision is held to."""


def decide(raw: bytes, decider: NetDecider | None = None) -> tuple[str, object]:
    """``("allow", verdict)`` or ``("refused", Refused)`` for a request head."""
    try:
        return "allow", (decider or NetDecider([PLAN])).request(parse_head(raw))
    except Refused as refused:
        return "refused", refused


# --- plain HTTP: spellings of URLs, decided as the gate decides them ------------------------------


def mixed_case(text: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(text), max_size=len(text)).map(
        lambda upper: "".join(char.upper() if flip else char for char, flip in zip(text, upper))
    )


IPV4_SPELLINGS = ["127.0.0.1", "0x7f.0.0.1", "2130706433", "127.1", "0177.0.0.1", "0x7f000001", "[::ffff:127.0.0.1]"]
"""Spellings a WHATWG parser reads as 127.0.0.1."""
HOSTS = {
    "api.example.com": st.one_of(mixed_case("api.example.com"), st.just("api.example.com.")),
    "xn--bcher-kva.example": st.sampled_from(
        ["xn--bcher-kva.example", "XN--BCHER-KVA.example", "bücher.example", "BÜCHER.example"]
    ),
    "127.0.0.1": st.sampled_from(IPV4_SPELLINGS),
    "ask.example.com": mixed_case("ask.example.com"),
    "evil.com": st.sampled_from(["evil.com", "api.example.com.evil.com", "apiXexample.com"]),
}
SEGMENTS = ["v1", "admin", "ok", "x", "é", "..", ".", "%2e%2e", "%2F", "a;b", "~u"]


@st.composite
def spelled_path(draw: st.DrawFn) -> str:
    segments = draw(st.lists(st.sampled_from(SEGMENTS), max_size=4))
    spelled = []
    for segment in segments:
        encode = draw(st.lists(st.booleans(), min_size=len(segment), max_size=len(segment)))
        # an unreserved character percent-encoded, in either case of hex
        spelled.append("".join(
            (f"%{ord(char):02x}" if draw(st.booleans()) else f"%{ord(char):02X}") if flip and char.isalnum() and char.isascii() else char
            for char, flip in zip(segment, encode)
        ))  # fmt: skip
    query = draw(st.sampled_from(["", "?q=1", "?next=%2Fhome"]))
    return "/" + "/".join(spelled) + query


@st.composite
def spelled_request(draw: st.DrawFn) -> tuple[str, str]:
    """An absolute-form URL and the Host header a client sends with it (the same host, spelled
    its own way)."""
    host = draw(st.sampled_from(sorted(HOSTS)))
    spelling, header = draw(HOSTS[host]), draw(HOSTS[host])
    port = draw(st.sampled_from(["", ":80", ":080", ":8080", ":9"]))
    userinfo = draw(st.sampled_from(["", "", "", "user@", "user:pw@"]))
    scheme = draw(mixed_case("http"))
    return f"{scheme}://{userinfo}{spelling}{port}{draw(spelled_path())}", f"{header}{port}"


@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.too_slow])
@given(spelled_request())
def test_a_plain_request_is_decided_as_the_gate_decides_its_url(request: tuple[str, str]) -> None:
    url, host = request
    reference = REFERENCE.decide("net:connect:" + url)
    raw = f"GET {url} HTTP/1.1\r\nHost: {host}\r\nAccept: */*\r\n\r\n".encode()
    outcome, found = decide(raw)
    if outcome == "allow":  # never wider than the gate
        assert reference.effect == "allow", (url, reference)
        assert found.rule == reference.rule  # type: ignore[attr-defined]
        canonical = found.url  # type: ignore[attr-defined]
        assert REFERENCE.decide("net:connect:" + canonical) == reference  # what is forwarded is what was decided
    elif (url + host).isascii():  # the head is ASCII: only the gate's refusal refuses it
        assert reference.effect != "allow", (url, found)
        assert found.status == 403 and found.reason  # type: ignore[attr-defined]
        if reference.effect == "deny" and reference.rule is not None:
            assert found.rule == reference.rule  # type: ignore[attr-defined]  # named by the rule that decided
    else:  # a client writes a URL in ASCII: any other is refused, whatever the gate says
        assert found.status == 400  # type: ignore[attr-defined]


@given(
    spelled_request(),
    st.sampled_from(["evil.com", "api.example.com:81", "127.0.0.2", "api.example.com@evil.com", "a b"]),
)
@settings(max_examples=examples(100))
def test_a_host_header_naming_another_host_is_refused(request: tuple[str, str], other: str) -> None:
    url, _ = request
    assume(url.isascii())
    outcome, found = decide(f"GET {url} HTTP/1.1\r\nHost: {other}\r\n\r\n".encode())
    assert outcome == "refused"
    assert found.status in (400, 403)  # type: ignore[attr-defined]  # 403: the URL itself was refused first


def test_the_granted_classes_are_reached() -> None:
    """The generators above meet both answers: a spelling of a granted URL is allowed."""
    for url in ["HTTP://API.example.com:80/v1/%61", "http://0x7f.1:8080/ok/x", "http://XN--BCHER-KVA.example./a"]:
        outcome, _ = decide(f"GET {url} HTTP/1.1\r\nHost: {url.split('/')[2]}\r\n\r\n".encode())
        assert outcome == "allow", url
    for url in [
        "http://api.example.com/v1/admin/x",
        "http://api.example.com/v1/%2e%2e/admin",
        "http://u@api.example.com/v1/",
    ]:
        assert decide(f"GET {url} HTTP/1.1\r\nHost: api.example.com\r\n\r\n".encode())[0] == "refused", url


def test_ask_is_refused_naming_its_rule() -> None:
    outcome, found = decide(b"GET http://ask.example.com/ HTTP/1.1\r\nHost: ask.example.com\r\n\r\n")
    assert outcome == "refused" and found.status == 403 and "approv" in found.reason  # type: ignore[attr-defined]
    assert found.rule is not None and found.rule.reason == "a person decides"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "target", ["https://tls.example.com/", "ws://api.example.com/v1/", "/v1/x", "*", "api.example.com:80"]
)
def test_only_http_urls_in_absolute_form_are_forwarded(target: str) -> None:
    outcome, found = decide(f"GET {target} HTTP/1.1\r\nHost: api.example.com\r\n\r\n".encode())
    assert outcome == "refused" and found.status in (400, 501)  # type: ignore[attr-defined]


# --- CONNECT: a tunnel reaches every path of its host and port ------------------------------------

TUNNEL_HOSTS = ["tls.example.com", "docs.example.com", "a.wild.example.com", "x.y.wild.example.com", "wild.example.com",
                "api.example.com", "evil.com", "10.1.2.3", "127.0.0.1"]  # fmt: skip
WITNESS_PATHS = ["", "v1/admin/x", "x", "guide/", "guide/a"]
"""Paths under a tunnel's root, one at least of which the gate refuses whenever a tunnel is refused
for a plan like :data:`POLICY`."""


@st.composite
def spelled_authority(draw: st.DrawFn) -> tuple[str, str, int]:
    host = draw(st.sampled_from(TUNNEL_HOSTS))
    port = draw(st.sampled_from([443, 8443, 22]))
    spelled = draw(mixed_case(host)) + draw(st.sampled_from(["", "."]))
    return f"{spelled}:{draw(st.sampled_from(['', '0']))}{port}", host, port


@settings(max_examples=examples(200))
@given(spelled_authority(), st.lists(st.sampled_from(["a", "b", "guide", "v1", "admin", "%C3%A9"]), max_size=3))
def test_a_tunnel_is_allowed_only_when_every_url_of_its_host_and_port_is(
    authority: tuple[str, str, int], path: list[str]
) -> None:
    spelled, host, port = authority
    root = f"https://{host}{'' if port == 443 else f':{port}'}/"
    outcome, found = decide(f"CONNECT {spelled} HTTP/1.1\r\nHost: {spelled}\r\n\r\n".encode())
    if outcome == "allow":
        for url in (root, root + "/".join(path), *(root + witness for witness in WITNESS_PATHS)):
            assert REFERENCE.decide("net:connect:" + url).effect == "allow", (spelled, url)
        assert found.rule is not None  # type: ignore[attr-defined]
    else:
        assert found.status == 403  # type: ignore[attr-defined]
        assert any(REFERENCE.decide("net:connect:" + root + witness).effect != "allow" for witness in WITNESS_PATHS)


def test_the_tunnel_classes_are_reached() -> None:
    allowed = ["tls.example.com:443", "TLS.Example.COM.:0443", "a.wild.example.com:443", "10.1.2.3:8443"]
    for authority in allowed:
        assert decide(f"CONNECT {authority} HTTP/1.1\r\n\r\n".encode())[0] == "allow", authority
    # part of a host; a host cut by a deny on another scheme (denies stand for every scheme); the bare
    # domain of a wildcard; another port
    for authority in ["docs.example.com:443", "api.example.com:443", "wild.example.com:443", "tls.example.com:8443"]:
        assert decide(f"CONNECT {authority} HTTP/1.1\r\n\r\n".encode())[0] == "refused", authority


@pytest.mark.parametrize("target", ["tls.example.com", "tls.example.com:", "tls.example.com:0", "tls.example.com:65536",
                                    "tls.example.com:443/x", "u@tls.example.com:443", "::1:443", "tls.example.com:+443"])  # fmt: skip
def test_a_connect_target_is_host_and_port(target: str) -> None:
    outcome, found = decide(f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
    assert outcome == "refused" and found.status in (400, 403)  # type: ignore[attr-defined]


def test_a_connect_with_a_body_is_refused() -> None:
    outcome, found = decide(b"CONNECT tls.example.com:443 HTTP/1.1\r\nContent-Length: 3\r\n\r\n")
    assert outcome == "refused" and found.status == 400  # type: ignore[attr-defined]


# --- addresses a granted name resolves to ---------------------------------------------------------

NOT_PUBLIC = ["127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10",
              "0.0.0.0/8", "224.0.0.0/4", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8"]  # fmt: skip
PUBLIC = ["8.8.8.0/24", "93.184.216.0/24", "2606:4700::/32"]


@settings(max_examples=examples(200))
@given(st.sampled_from(NOT_PUBLIC).flatmap(lambda net: st.ip_addresses(network=net)))
def test_a_name_leads_to_an_address_that_is_not_public_only_when_the_address_is_granted(address) -> None:  # type: ignore[no-untyped-def]
    decider = NetDecider([PLAN])
    verdict = decider.request(
        parse_head(b"GET http://api.example.com:8080/ok/x HTTP/1.1\r\nHost: api.example.com:8080\r\n\r\n")
    )
    checked = decider.address(verdict, address)
    if address == ipaddress.ip_address("127.0.0.1"):
        assert not isinstance(checked, Refused)  # the plan grants http://127.0.0.1:8080/ok/**
    else:
        assert isinstance(checked, Refused) and checked.status == 403 and str(address) in checked.reason


@settings(max_examples=examples(100))
@given(st.sampled_from(PUBLIC).flatmap(lambda net: st.ip_addresses(network=net)))
def test_a_name_leads_to_a_public_address(address) -> None:  # type: ignore[no-untyped-def]
    decider = NetDecider([PLAN])
    verdict = decider.request(parse_head(b"CONNECT tls.example.com:443 HTTP/1.1\r\n\r\n"))
    assert decider.address(verdict, address) == verdict


def test_a_tunnel_to_a_private_address_by_name_needs_the_address_granted() -> None:
    decider = NetDecider([PLAN])
    granted = decider.request(parse_head(b"CONNECT tls.example.com:443 HTTP/1.1\r\n\r\n"))
    assert isinstance(decider.address(granted, ipaddress.ip_address("10.1.2.3")), Refused)  # granted on 8443 only
    plan = plan_of(POLICY + 'allow net:connect:https://svc.example.com:8443/** because "a name for it"\n')
    decider = NetDecider([plan])
    named = decider.request(parse_head(b"CONNECT svc.example.com:8443 HTTP/1.1\r\n\r\n"))
    assert not isinstance(decider.address(named, ipaddress.ip_address("10.1.2.3")), Refused)


# --- heads the proxy cannot read exactly ----------------------------------------------------------

BASE = [b"POST http://api.example.com/v1/x HTTP/1.1", b"Host: api.example.com", b"Accept: */*"]


def head_of(lines: list[bytes]) -> bytes:
    return b"\r\n".join(lines) + b"\r\n\r\n"


def test_the_base_head_is_read() -> None:
    head = parse_head(head_of([*BASE, b"Content-Length: 5"]))
    assert (head.body, head.length) == ("length", 5)
    assert parse_head(head_of([*BASE, b"Transfer-Encoding: Chunked"])).body == "chunked"
    assert decide(head_of(BASE))[0] == "allow"


LENGTHS = [b"5", b"0"]
CODINGS = [b"chunked", b"Chunked", b" chunked"]


@settings(max_examples=examples(200))
@given(
    st.sampled_from(["Content-Length", "content-length", "CONTENT-LENGTH"]), st.sampled_from(LENGTHS),
    st.sampled_from(["Transfer-Encoding", "transfer-encoding"]), st.sampled_from(CODINGS), st.booleans(), st.randoms(),
)  # fmt: skip
def test_both_framings_are_refused(cl_name: str, cl: bytes, te_name: str, te: bytes, te_first: bool, rng) -> None:  # type: ignore[no-untyped-def]
    framing = [te_name.encode() + b": " + te, cl_name.encode() + b": " + cl]
    lines = BASE[1:] + (framing if te_first else framing[::-1])
    rng.shuffle(lines)
    with pytest.raises(Refused) as refused:
        parse_head(head_of([BASE[0], *lines]))
    assert refused.value.status == 400


@pytest.mark.parametrize(
    "lines",
    [
        [b"Content-Length: 5", b"Content-Length: 5"],
        [b"Content-Length: 5", b"content-length: 6"],
        [b"Content-Length: 5, 5"], [b"Content-Length: +5"], [b"Content-Length: -1"], [b"Content-Length: 0x5"],
        [b"Content-Length: 5 5"], [b"Content-Length: "], [b"Content-Length: 1e3"], [b"Content-Length: " + b"9" * 19],
        [b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked"],
        [b"Transfer-Encoding: gzip, chunked"], [b"Transfer-Encoding: chunked, identity"], [b"Transfer-Encoding: identity"],
        [b"Transfer-Encoding: xchunked"], [b"Transfer-Encoding: chunked;q=1"], [b"Transfer-Encoding: chunk"],
        [b"Transfer-Encoding: \x0bchunked"], [b"Transfer-Encoding:\xa0chunked"],
        [b"Host: api.example.com"],  # a second Host
        [b"Content-Length : 5"], [b"Transfer-Encoding\t: chunked"], [b" Transfer-Encoding: chunked"],
        [b"X-Folded: a", b" Transfer-Encoding: chunked"], [b"X-Folded: a", b"\tb"],
        [b"X-Nul: a\x00b"], [b"X-Del: a\x7fb"], [b"X-Latin: caf\xe9"], [b"X-Utf8: caf\xc3\xa9"], [b"Bad Name: x"],
        [b"[x]: y"], [b": empty"], [b"NoColon"],
    ],
)  # fmt: skip
def test_ambiguous_framing_and_header_lines_are_refused(lines: list[bytes]) -> None:
    with pytest.raises(Refused) as refused:
        parse_head(head_of([*BASE, *lines]))
    assert refused.value.status in (400, 501)


@pytest.mark.parametrize(
    "request_line",
    [
        b"POST  http://api.example.com/v1/x HTTP/1.1", b"POST http://api.example.com/v1/x  HTTP/1.1",
        b"POST\thttp://api.example.com/v1/x HTTP/1.1", b"POST http://api.example.com/v1/x HTTP/1.1 ",
        b"POST http://api.example.com/v1/x http/1.1", b"POST http://api.example.com/v1/x HTTP/2.0",
        b"POST http://api.example.com/v1/x HTTP/1.10", b"POST http://api.example.com/v1/x", b"POST",
        b"PO(ST http://api.example.com/v1/x HTTP/1.1", b"",
    ],
)  # fmt: skip
def test_a_request_line_not_method_target_version_is_refused(request_line: bytes) -> None:
    with pytest.raises(Refused) as refused:
        parse_head(head_of([request_line, *BASE[1:]]))
    assert refused.value.status == 400


@settings(max_examples=examples(200))
@given(st.data(), st.sampled_from([0, 1, 2]), st.integers(0x00, 0xFF))
def test_a_byte_outside_visible_ascii_in_the_request_line_is_refused(data: st.DataObject, line: int, byte: int) -> None:
    """Any control, space or non-ASCII byte anywhere in the request line, any but a space or tab in
    a header line (a bare CR or LF among them)."""
    assume(byte < 0x21 or byte > 0x7E)
    lines = list(BASE)
    place = data.draw(st.integers(0, len(lines[line])))
    lines[line] = lines[line][:place] + bytes([byte]) + lines[line][place:]
    if line == 0 or byte not in (0x09, 0x20):  # a header may hold a space or a tab, nothing else of these
        assert decide(head_of(lines))[0] == "refused"


@pytest.mark.parametrize("ending", [b"\n", b"\r"])
def test_a_line_not_ended_by_crlf_is_refused(ending: bytes) -> None:
    raw = BASE[0] + ending + b"\r\n".join(BASE[1:]) + b"\r\n\r\n"
    with pytest.raises(Refused):
        parse_head(raw)


def test_an_empty_line_before_the_request_line_is_refused() -> None:
    with pytest.raises(Refused):
        parse_head(b"\r\n" + head_of(BASE))


def test_an_http11_request_without_host_is_refused() -> None:
    with pytest.raises(Refused):
        parse_head(head_of([BASE[0], b"Content-Length: 0"]))


def test_oversize_heads_are_refused() -> None:
    limits = ProxyLimits()
    with pytest.raises(Refused) as refused:
        parse_head(head_of([*BASE, b"X-Big: " + b"a" * limits.max_head_bytes]), limits)
    assert refused.value.status == 431
    with pytest.raises(Refused) as refused:
        parse_head(
            head_of([b"GET http://api.example.com/v1/" + b"a" * limits.max_request_line + b" HTTP/1.1", BASE[1]]),
            limits,
        )
    assert refused.value.status == 414
    with pytest.raises(Refused) as refused:
        parse_head(head_of([*BASE, *(b"X-%d: y" % n for n in range(limits.max_headers))]), limits)
    assert refused.value.status == 431


# --- the proxy served on its socket ---------------------------------------------------------------


@dataclass
class Upstream:
    """A loopback server that records every connection's bytes and answers one fixed response."""

    port: int
    connections: list[bytes] = field(default_factory=list)
    done: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    reached: int = 0
    """Connections made to it: every one accepted, and (once the server has stopped) every one
    still waiting to be, so that a connection the proxy made is counted however late it came."""

    def received(self, count: int) -> list[bytes]:
        """The bytes of the first ``count`` connections, once each has ended."""
        for _ in range(count):
            assert self.done.acquire(timeout=60), "the upstream connection did not end"
        return self.connections


def complete(data: bytes) -> bool:
    """Whether ``data`` holds a whole request as the upstream reads one: the head, then the body
    its Content-Length or chunked framing says."""
    head, end, body = data.partition(b"\r\n\r\n")
    if not end:
        return False
    if b"\r\nTransfer-Encoding: chunked" in head:
        return body.endswith(b"0\r\n\r\n")
    length = re.search(rb"\r\nContent-Length: (\d+)", head)
    return length is None or len(body) >= int(length[1])


@contextlib.contextmanager
def upstream_server() -> Iterator[Upstream]:
    found = Upstream(0)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data = b""
            with contextlib.suppress(OSError):
                while not complete(data) and (chunk := self.request.recv(65536)):
                    data += chunk
                self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                self.request.shutdown(socket.SHUT_WR)
                while chunk := self.request.recv(65536):  # whatever else the proxy sends, until it closes
                    data += chunk
            found.connections.append(data)
            found.done.release()

    class Server(socketserver.ThreadingTCPServer):
        def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
            found.reached += 1
            super().process_request(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    found.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.socket.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:
                server.socket.accept()[0].close()
                found.reached += 1
        server.server_close()


def exchange(socket_path: str, data: bytes, *, drip: bool = False) -> bytes:
    """Send ``data`` to the proxy (or a byte at a time, never finishing, when ``drip``) and read
    everything it answers until it closes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(60)
        client.connect(socket_path)
        if drip:
            with contextlib.suppress(OSError):
                for byte in data:
                    client.send(bytes([byte]))
                    threading.Event().wait(0.05)
        else:
            with contextlib.suppress(BrokenPipeError):  # the proxy may answer and close before reading it all
                client.sendall(data)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := client.recv(65536):
                answer += chunk
        return answer


@pytest.fixture
def proxy_dir(tmp_path: Path) -> str:
    return str(tmp_path / "net")


def served_plan(port: int, extra: str = "") -> object:
    return plan_of(
        f'allow net:connect:http://127.0.0.1:{port}/ok/** because "ok"\n'
        f'allow net:connect:https://127.0.0.1:{port}/** because "tunnel"\n'
        f'allow net:connect:http://localhost:{port}/** because "by name"\n' + extra
    )


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    """Every name the process resolves (the proxy resolves on a thread of this process)."""
    calls: list[tuple[object, ...]] = []
    real = socket.getaddrinfo

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", spy)
    return calls


def test_a_granted_request_is_forwarded_as_decided(proxy_dir: str) -> None:
    with upstream_server() as upstream:
        decisions: list[object] = []
        with start_proxy([served_plan(upstream.port)], proxy_dir, record=decisions.append) as proxy:
            request = (
                f"GET http://127.0.0.1:{upstream.port}/ok/%61?x=%2f HTTP/1.1\r\nHost: 127.0.0.1:{upstream.port}\r\n"
                "Proxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n"
            )
            answer = exchange(proxy.socket_path, request.encode())
        assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"ok")
        (sent,) = upstream.received(1)
        assert sent == (
            f"GET /ok/a?x=%2F HTTP/1.1\r\nHost: 127.0.0.1:{upstream.port}\r\nAccept: */*\r\nConnection: close\r\n\r\n".encode()
        )
        (decision,) = decisions
        assert decision.effect == "allow" and decision.rule.reason == "ok"  # type: ignore[attr-defined]


def test_a_refused_request_is_never_resolved_or_connected(
    proxy_dir: str, resolutions: list[tuple[object, ...]]
) -> None:
    with upstream_server() as upstream:
        decisions: list[object] = []
        with start_proxy([served_plan(upstream.port)], proxy_dir, record=decisions.append) as proxy:
            for target in [f"http://127.0.0.1:{upstream.port}/no", f"http://not-granted.example:{upstream.port}/ok/"]:
                host = target.split("/")[2]
                answer = exchange(proxy.socket_path, f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                assert answer.startswith(b"HTTP/1.1 403 Forbidden") and b"net:connect:" + target.encode() in answer
            answer = exchange(
                proxy.socket_path, f"CONNECT not-granted.example:{upstream.port} HTTP/1.1\r\n\r\n".encode()
            )
            assert answer.startswith(b"HTTP/1.1 403")
    assert upstream.reached == 0 and resolutions == []
    assert [decision.effect for decision in decisions] == ["deny"] * 3  # type: ignore[attr-defined]


def test_a_name_that_resolves_to_loopback_needs_the_address_granted(
    proxy_dir: str, resolutions: list[tuple[object, ...]]
) -> None:
    with upstream_server() as upstream:
        request = (
            f"GET http://localhost:{upstream.port}/ok/a HTTP/1.1\r\nHost: localhost:{upstream.port}\r\n\r\n".encode()
        )
        refused = plan_of(f'allow net:connect:http://localhost:{upstream.port}/** because "by name"\n')
        with start_proxy([refused], proxy_dir) as proxy:
            answer = exchange(proxy.socket_path, request)
        assert answer.startswith(b"HTTP/1.1 403") and b"not a public address" in answer
        assert upstream.reached == 0 and resolutions
        with start_proxy([served_plan(upstream.port)], proxy_dir) as proxy:  # /ok/** is granted by address too
            assert exchange(proxy.socket_path, request).startswith(b"HTTP/1.1 200")
        assert len(upstream.received(1)) == 1


def test_a_tunnel_relays_both_ways(proxy_dir: str) -> None:
    with upstream_server() as upstream, start_proxy([served_plan(upstream.port)], proxy_dir) as proxy:
        # the tunnel carries whatever follows the CONNECT head, already sent or not
        answer = exchange(
            proxy.socket_path, f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\n\r\nHELLO /any\r\n\r\n".encode()
        )
        assert upstream.received(1) == [b"HELLO /any\r\n\r\n"]
    assert (
        answer
        == b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    )


@pytest.mark.parametrize(
    ("framing", "body", "forwarded"),
    [
        ("Content-Length: 5", b"hello", b"Content-Length: 5\r\nConnection: close\r\n\r\nhello"),
        ("Transfer-Encoding: chunked", b"5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n",
         b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
    ],
)  # fmt: skip
def test_a_request_after_the_body_never_reaches_the_server(
    proxy_dir: str, framing: str, body: bytes, forwarded: bytes
) -> None:
    smuggled = b"GET /v1/admin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with upstream_server() as upstream, start_proxy([served_plan(upstream.port)], proxy_dir) as proxy:
        head = f"POST http://127.0.0.1:{upstream.port}/ok/ HTTP/1.1\r\nHost: 127.0.0.1:{upstream.port}\r\n{framing}\r\n\r\n"
        answer = exchange(proxy.socket_path, head.encode() + body + smuggled)
        (sent,) = upstream.received(1)
    assert answer.endswith(b"ok")
    assert sent.endswith(forwarded) and b"admin" not in sent


@pytest.mark.parametrize(
    ("framing", "body", "kept"),
    [
        ("Transfer-Encoding: chunked", b"5\r\nhello\r\n0\r\n\r\n", b"\r\nTransfer-Encoding: chunked\r\n"),
        ("Content-Length: 5", b"hello", b"\r\nContent-Length: 5\r\n"),
    ],
)
@pytest.mark.parametrize(
    "connection", ["Transfer-Encoding", "content-length", "close, Content-Length, transfer-encoding"]
)
def test_a_connection_header_cannot_take_the_framing_away(
    proxy_dir: str, framing: str, body: bytes, kept: bytes, connection: str
) -> None:
    """A body forwarded without its framing would be read by the server as the next request."""
    with upstream_server() as upstream, start_proxy([served_plan(upstream.port)], proxy_dir) as proxy:
        head = (
            f"POST http://127.0.0.1:{upstream.port}/ok/ HTTP/1.1\r\nHost: 127.0.0.1:{upstream.port}\r\n"
            f"Connection: {connection}\r\n{framing}\r\n\r\n"
        )
        exchange(proxy.socket_path, head.encode() + body)
        (sent,) = upstream.received(1)
    assert kept in sent and sent.endswith(b"\r\n\r\n" + body)


@pytest.mark.parametrize("chunk", [b"5;ext=1\r\nhello\r\n0\r\n\r\n", b"5 \r\nhello\r\n0\r\n\r\n", b"5\nhello\r\n0\r\n\r\n",
                                   b"5\r\nhelloXX0\r\n\r\n", b"-5\r\nhello\r\n0\r\n\r\n", b"0x5\r\nhello\r\n0\r\n\r\n"])  # fmt: skip
def test_a_chunked_body_the_proxy_cannot_frame_ends_the_request(proxy_dir: str, chunk: bytes) -> None:
    with upstream_server() as upstream, start_proxy([served_plan(upstream.port)], proxy_dir) as proxy:
        head = f"POST http://127.0.0.1:{upstream.port}/ok/ HTTP/1.1\r\nHost: 127.0.0.1:{upstream.port}\r\nTransfer-Encoding: chunked\r\n\r\n"
        exchange(proxy.socket_path, head.encode() + chunk + b"GET /v1/admin HTTP/1.1\r\n\r\n")
        (sent,) = upstream.received(1)
    assert not sent.endswith(b"0\r\n\r\n") and b"admin" not in sent  # the body never ends: the server sees no request


def test_a_slow_head_is_cut_off(proxy_dir: str) -> None:
    """A head dripped a byte at a time, never finished, ends with 408 (the deadline is for the
    whole head, not for each byte)."""
    limits = ProxyLimits(head_seconds=0.5)
    with start_proxy([PLAN], proxy_dir, limits=limits) as proxy:
        answer = exchange(proxy.socket_path, head_of(BASE)[:-2] + b"X-Never-Ending: " + b"a" * 100_000, drip=True)
    assert answer.startswith(b"HTTP/1.1 408")


def test_an_oversize_head_is_refused_when_served(proxy_dir: str) -> None:
    with start_proxy([PLAN], proxy_dir) as proxy:
        answer = exchange(proxy.socket_path, head_of([*BASE, b"X-Big: " + b"a" * 20_000]))
    assert answer.startswith(b"HTTP/1.1 431")


def test_connections_beyond_the_bound_are_refused(proxy_dir: str) -> None:
    with start_proxy([PLAN], proxy_dir, limits=ProxyLimits(max_connections=2)) as proxy:
        held = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2)]
        try:
            for client in held:
                client.connect(proxy.socket_path)
                client.send(b"GET ")  # a head begun: each holds its slot
            answer = exchange(proxy.socket_path, head_of(BASE))
        finally:
            for client in held:
                client.close()
    assert answer.startswith(b"HTTP/1.1 503")


def test_a_decision_that_cannot_be_recorded_is_refused(proxy_dir: str) -> None:
    def failing(_decision: object) -> None:
        raise OSError("the ledger is gone")

    with upstream_server() as upstream, start_proxy([served_plan(upstream.port)], proxy_dir, record=failing) as proxy:
        request = f"GET http://127.0.0.1:{upstream.port}/ok/a HTTP/1.1\r\nHost: 127.0.0.1:{upstream.port}\r\n\r\n"
        answer = exchange(proxy.socket_path, request.encode())
    assert answer.startswith(b"HTTP/1.1 403") and b"could not be recorded" in answer
    assert upstream.reached == 0


def test_the_socket_lives_in_a_private_directory(tmp_path: Path) -> None:
    with start_proxy([PLAN], str(tmp_path / "net")) as proxy:
        assert os.stat(os.path.dirname(proxy.socket_path)).st_mode & 0o777 == 0o700
    assert not os.path.exists(proxy.socket_path)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    with pytest.raises(UsageError):
        start_proxy([PLAN], str(shared))
    (tmp_path / "private").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "private")
    with pytest.raises(UsageError):
        start_proxy([PLAN], str(tmp_path / "link"))


def test_a_request_that_cannot_be_decided_is_refused(proxy_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error while deciding is a refusal that says so, recorded like any other, never an allow."""

    def broken(self: NetDecider, head: object) -> None:
        raise RuntimeError("the plan could not be read")

    monkeypatch.setattr(NetDecider, "request", broken)
    decisions: list[object] = []
    with start_proxy([PLAN], proxy_dir, record=decisions.append) as proxy:
        answer = exchange(proxy.socket_path, head_of(BASE))
    assert answer.startswith(b"HTTP/1.1 403") and b"could not be decided" in answer
    assert [decision.effect for decision in decisions] == ["deny"]  # type: ignore[attr-defined]
