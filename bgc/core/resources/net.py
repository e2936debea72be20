"""URLs: the values of ``net``, read as a WHATWG parser reads them and written back in one form.

A URL is read by a WHATWG parser (browsers, fetch, most HTTP clients): the host ends where that
parser ends it, not where a glob thinks (``https://evil.com\\.example.com`` is host ``evil.com``).
Values are parsed with ada (a WHATWG-conformant parser) and written back in one form
(:func:`canonical_url`); spellings a server would decode (``%61``) are decoded, ambiguous ones
refused, and so is a segment a parser or server reads as ``.`` or ``..``.

Patterns are globs over canonical URLs (:mod:`bgc.core.patterns.glob`). A ``deny`` or ``ask``
stands for every scheme, port and query of what it names (:func:`url_deny_patterns`), and the
lints say when a pattern can never match a canonical URL (:func:`url_pattern_problem`) or when a
wildcard in an allowed host can match more than whole labels (:func:`url_host_wildcard_problem`).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote_to_bytes

from bgc.core.resources.kind import Rejection, ResourceKind, dot_segment_problem, text_problem

__all__ = [
    "NET",
    "URL_SCHEMES",
    "canonical_url",
    "url_deny_patterns",
    "url_host_wildcard_problem",
    "url_pattern_problem",
]

URL_SCHEMES = ("http", "https", "ws", "wss")
"""The schemes a ``net`` value may have: WHATWG's special schemes that name a host (``file:`` is
a path, an ``fs`` value; ``ftp`` and opaque schemes have no agreed parse, so they are refused)."""

_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_AMBIGUOUS_ESCAPES = {
    0x2F: "'%2F' (an encoded '/', which some servers decode into a path separator)",
    0x5C: "'%5C' (an encoded '\\', which some servers read as '/')",
    0x25: "'%25' (an encoded '%': a server that decodes twice sees another character)",
}


def canonical_url(value: str) -> str | Rejection:
    """``scheme://host[:port]/path[?query]`` as a WHATWG parser reads ``value``, or why not.

    Scheme and host lower-cased, internationalised hosts in IDNA ASCII (``xn--``), IPv4 in dotted
    decimal, IPv6 compressed in brackets, the default port dropped, a trailing dot of the host
    dropped, an empty path written ``/``, the fragment dropped (it never reaches the server).
    In the path and query, escapes of unreserved characters are decoded (``%61`` is ``a`` to every
    server) and other escapes upper-cased; the query is otherwise kept as the parser wrote it. Refused: userinfo (``user@``: a second host-like name
    in front of the host), ``\\`` (WHATWG reads it as ``/``, other parsers as a character),
    schemes other than :data:`URL_SCHEMES`, a segment that reads as ``.``/``..``, escapes whose
    meaning in a path depends on the server (``%2F``, ``%5C``, ``%25``, controls), white space, and anything
    the parser refuses, and a value whose canonical form would be read as another URL (its parse
    is ambiguous: ``https://0../`` is host ``0.``, whose canonical spelling reads as ``0.0.0.0``).
    """
    first = _canonical_url_once(value)
    if isinstance(first, Rejection) or first == value:
        return first  # a value already canonical is its own second reading
    if _canonical_url_once(first) != first:
        return Rejection(value, "is ambiguous: its canonical spelling would be read as another URL")
    return first


def _canonical_url_once(value: str) -> str | Rejection:
    if "\\" in value:
        return Rejection(value, "has a '\\', which a WHATWG URL parser reads as '/' and others do not")
    if _SPACE.search(value):
        return Rejection(value, "has white space, which URL parsers strip or encode differently")
    scheme, sep, _rest = value.partition("://")
    if not sep or scheme.lower() not in URL_SCHEMES:
        return Rejection(value, f"is not a URL with one of the schemes {', '.join(URL_SCHEMES)} ('scheme://host/...')")
    problem = dot_segment_problem(value[len(scheme) + 3 :])
    if problem:
        return Rejection(value, problem)
    try:
        import ada_url  # here: only values read in full need the parser, and most gates never read a URL

        url = ada_url.parse_url(value, attributes=_ADA_PARTS)  # one call for every part
    except ValueError:
        return Rejection(value, "is not a valid URL (WHATWG)")
    if url["username"] or url["password"] or "@" in value.split("/", 3)[2]:
        return Rejection(value, "has userinfo ('user@host'), a name in front of the host")
    host = url["hostname"]
    if host.endswith("."):
        host = host[:-1]
    if not host or ".." in host or host.startswith("."):
        return Rejection(value, "has an empty host or an empty host label")
    host_or_problem = _canonical_host(host)
    if isinstance(host_or_problem, Rejection):
        return Rejection(value, host_or_problem.reason)
    host = host_or_problem
    raw_path = url["pathname"] or "/"
    if "//" in raw_path:
        return Rejection(value, "has an empty path segment ('//'), which many servers merge into one '/'")
    if ";" in raw_path:
        return Rejection(value, "has a ';' in its path: servers differ on path parameters (Tomcat drops them)")
    path, problem = _canonical_escapes(raw_path, in_path=True)
    query, _ = _canonical_escapes(url["search"], in_path=False)
    if problem:
        return Rejection(value, problem)
    port = f":{url['port']}" if url["port"] else ""
    return f"{url['protocol']}//{host}{port}{path}{query}"


_SPACE = re.compile(r"\s")
_ADA_PARTS = ("username", "password", "hostname", "port", "protocol", "pathname", "search")


IDNA_DEVIATIONS = frozenset("\u00df\u03c2\u200c\u200d")
"""Characters IDNA2008 (WHATWG) keeps and IDNA2003 (Python's ``idna`` codec, older clients) maps
away: ``straße.de`` is ``xn--strae-oqa.de`` to one and ``strasse.de`` to the other."""


def _canonical_host(host: str) -> str | Rejection:
    """The host as every client will reach it, or why clients disagree on where it leads.

    An IPv4-mapped IPv6 address (``[::ffff:169.254.169.254]``) connects to the IPv4 address, so
    it is written as that address; other IPv6 forms that embed IPv4 (``::a.b.c.d``, NAT64's
    ``64:ff9b::/96``) and unspecified addresses (``0.0.0.0``, ``[::]``: Linux connects them to
    the local host) are refused, as are hosts with IDNA deviation characters.
    """
    if host.startswith("["):
        address = ipaddress.IPv6Address(host[1:-1])
        if address.ipv4_mapped is not None:
            host = str(address.ipv4_mapped)
        elif address.is_unspecified or (int(address) < 2**32 and not address.is_loopback):
            return Rejection(host, f"has the IPv6 address {host}, which embeds an IPv4 address or means 'this host'")
        elif address in ipaddress.IPv6Network("64:ff9b::/96"):
            return Rejection(host, f"has the NAT64 address {host}, which reaches an IPv4 address")
    if host == "0.0.0.0":
        return Rejection(host, "has the host 0.0.0.0, which Linux connects to the local host")
    for label in host.split("."):
        if label.startswith("xn--"):
            try:
                decoded = label[4:].encode("ascii").decode("punycode")
            except UnicodeError:
                return Rejection(host, f"has the host label {label!r}, which is not valid punycode")
            if IDNA_DEVIATIONS & set(decoded):
                return Rejection(
                    host, f"has a host ({host}) with a character IDNA2003 and IDNA2008 clients map differently (ß, ς, ZWJ, ZWNJ)"
                )
    return host


def _canonical_escapes(text: str, in_path: bool) -> tuple[str, str]:
    """Unreserved escapes decoded, the others upper-cased; and why, when one in a path is ambiguous.

    A query is data for the application (``?next=%2Fhome`` is ordinary), so only a path's
    escapes can be ambiguous.
    """
    problem: list[str] = []

    def fix(match: re.Match[str]) -> str:
        byte = int(match.group(1), 16)
        char = chr(byte)
        if char in _UNRESERVED:
            return char
        if in_path and byte in _AMBIGUOUS_ESCAPES:
            problem.append(f"has {_AMBIGUOUS_ESCAPES[byte]}")
        elif in_path and (byte < 0x20 or byte == 0x7F):
            problem.append(f"has '%{byte:02X}', an encoded control character")
        return "%" + match.group(1).upper()

    fixed = _PERCENT.sub(fix, text)
    if in_path and not problem:
        if "%" in _PERCENT.sub("", fixed):
            problem.append("has a '%' that is not a two-digit escape (IIS reads '%u002e' as '.')")
        else:
            try:
                unquote_to_bytes(fixed).decode("utf-8")
            except UnicodeDecodeError:
                problem.append("has escapes that are not UTF-8 (an overlong '%C0%AE' reads as '.' on some servers)")
    return fixed, problem[0] if problem else ""


def _literal_runs(pattern: str) -> list[tuple[str, bool]]:
    """The pattern as ``(text, literal?)`` pieces: wildcards and classes are the non-literal ones."""
    out: list[tuple[str, bool]] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            out.append((pattern[index + 1], True))
            index += 2
        elif char == "[":
            end = pattern.find("]", index + 2)
            end = len(pattern) - 1 if end < 0 else end
            out.append((pattern[index : end + 1], False))
            index = end + 1
        else:
            out.append((char, char not in "*?"))
            index += 1
    return out


def url_deny_patterns(pattern: str) -> tuple[str, ...]:
    """The patterns a ``deny`` or ``ask`` on a URL stands for: every scheme, port and query.

    ``deny https://evil.com/**`` is written for a host, and a server answers on other schemes
    and ports too (``http://evil.com/``, ``https://evil.com:8443/``); ``deny https://h/admin``
    must not be dodged by ``https://h/admin?x``. Denies and asks are widened, as case folding
    widens them on a case-insensitive file system; allows never are (that would widen a grant).
    A literal scheme becomes ``*``, an authority without a port also matches ``:*``, and a
    pattern not ending in ``**`` also matches any query after it.
    """
    scheme, sep, rest = pattern.partition("://")
    if not sep or not scheme or "/" in scheme:
        return (pattern,)
    authority, slash, path = rest.partition("/")
    hosts = [authority]
    if not _has_port(authority) and not authority.endswith("*"):
        hosts.append(authority + ":*")
    tails = [slash + path]
    if not pattern.endswith("**"):
        tails += [slash + path + "\\?*", slash + path + "\\?*/**"]
    return tuple(f"*://{host}{tail}" for host in hosts for tail in tails)


def _has_port(authority: str) -> bool:
    """Does the pattern's authority name a port (``h:443``, ``\\[::1\\]:8080``, ``h:*``)?"""
    after_host = authority.rsplit("]", 1)[-1]
    return ":" in after_host


def url_pattern_problem(pattern: str) -> str | None:
    """Why a ``net`` pattern can never match a canonical URL (see :func:`canonical_url`), or None.

    Decided on the pattern's literal characters, part by part (scheme, host labels, port, path):
    a literal that no canonical URL has in that place makes the pattern dead (``deny
    https://EVIL.com/**`` protects nothing, since values are lower-cased first). A wildcard is
    given the benefit of the doubt, but the literal parts around it are still checked.
    """
    runs = _literal_runs(pattern)
    if all(literal for _, literal in runs):
        text = "".join(piece for piece, _ in runs)
        problem = text_problem(text)
        canonical = Rejection(text, problem) if problem else canonical_url(text)
        if isinstance(canonical, Rejection):
            return f"the gate refuses such a value: it {canonical.reason}"
        return None if canonical == text else f"values are canonical: this one is written `{canonical}`"
    scheme, sep, rest = pattern.partition("://")
    if not sep:
        return None
    if _is_literal(scheme) and scheme not in URL_SCHEMES:
        return f"values are URLs with a lower-case scheme among {', '.join(URL_SCHEMES)}"
    authority, slash, path = rest.partition("/")
    if not slash and authority != "**":
        return "canonical URLs always have a path (`https://h/`): end the pattern with `/` or `/**`"
    problem = _authority_problem(scheme, authority)
    if problem:
        return problem
    return _path_problem(path)


def _is_literal(text: str) -> bool:
    return all(literal for _, literal in _literal_runs(text))


def _authority_problem(scheme: str, authority: str) -> str | None:
    if "@" in authority:
        return "userinfo (`user@`) is refused in values"
    if authority.startswith("[") and ":" in authority.split("]", 1)[0]:
        return "`[` starts a class: write an IPv6 host as `\\[::1\\]`"
    host, port = authority, ""
    after_host = authority.rsplit("]", 1)[-1]
    if ":" in after_host:
        host, _, port = authority.rpartition(":")
    if _is_literal(port) and port:
        defaults = {"http": "80", "ws": "80", "https": "443", "wss": "443"}
        if not port.isdigit() or port != str(int(port)):
            return f"the port `{port}` is not written as canonical values write ports (digits, no leading zero)"
        if _is_literal(scheme) and defaults.get(scheme) == port:
            return f"values drop the default port: `:{port}` never appears after `{scheme}://`"
    if host.startswith(("\\[", "[")):
        return None
    for label in host.split("."):
        if not _is_literal(label) or label in ("*", "**"):
            continue
        bare = "".join(piece for piece, _ in _literal_runs(label))
        if not bare:
            return "an empty host label (`a..b`, a trailing `.`) never appears in canonical values"
        if bare != bare.lower():
            return f"values are canonical: hosts are lower-case (`{bare}` is written `{bare.lower()}`)"
        if not bare.isascii() or "%" in bare:
            return f"values are canonical: the host label `{bare}` is written in IDNA ASCII (`xn--…`), unescaped"
    return None


def _path_problem(path: str) -> str | None:
    literal_text = "/" + "".join(piece if literal else "*" for piece, literal in _literal_runs(path))
    in_path = re.split(r"[?*]", literal_text, maxsplit=1)[0]  # surely the path: before any query or wildcard
    for char in literal_text:
        if char == "\\" or char == "#" or char.isspace():
            return f"canonical URLs never contain {char!r} (a fragment is dropped; `\\` and white space are refused)"
        if not char.isascii():
            return f"canonical URLs never contain {char!r}: non-ASCII text is percent-encoded (`%C3%A9`)"
    if "//" in in_path:
        return "the gate refuses an empty path segment (`//`)"
    if ";" in in_path:
        return "the gate refuses a `;` in a path"
    for match in _PERCENT.finditer(literal_text):
        byte = int(match.group(1), 16)
        if match.start() < len(in_path) and (byte in _AMBIGUOUS_ESCAPES or byte < 0x20 or byte == 0x7F):
            return f"the gate refuses `{match.group(0)}` in a path (servers differ on what it means)"
        if chr(byte) in _UNRESERVED:
            return f"values are canonical: `{match.group(0)}` is decoded to `{chr(byte)}`"
        if match.group(1) != match.group(1).upper():
            return f"values are canonical: escapes are upper-case (`%{match.group(1).upper()}`)"
    return None


def url_host_wildcard_problem(pattern: str) -> str | None:
    """Why a wildcard in a ``net`` pattern's host could match more than whole host labels, or None.

    ``*.example.com`` means "some subdomain of example.com"; ``*example.com`` also matches
    ``evilexample.com``, and ``?`` or a class can match the ``.`` between labels. Only a ``*``
    standing for whole labels keeps the boundary the author sees.
    """
    scheme, sep, rest = pattern.partition("://")
    if not sep or any(not literal for _, literal in _literal_runs(scheme)):
        return None
    authority = rest.split("/", 1)[0]
    after_host = authority.rsplit("]", 1)[-1]
    host = authority.rpartition(":")[0] if ":" in after_host else authority
    if host in ("*", "**") or host.startswith("\\["):
        return None  # any host; or an IPv6 literal, whose brackets are written escaped
    labels = host.split(".")
    for label in labels:
        if label != "*" and not _is_literal(label):
            return f"`{label}` in the host `{host}` is a wildcard inside a label"
    if len(labels) > 1 and not _is_literal(labels[-1]):
        return f"the last label of the host `{host}` is a wildcard (`example.*` also matches `example.com.evil.net`)"
    return None


def _read(value: str, case_insensitive: bool) -> str | Rejection:
    """A value's canonical URL (a file system's case has nothing to do with URLs)."""
    return canonical_url(value)


_URL_TEXT = r"[A-Za-z0-9\-._~!$&()*+,=:@]"  # no escape, quote, space, ';', '\\', '%', '#', '?', '/' or non-ASCII
# lower-case http(s)/ws(s), a lower-case ASCII host whose last label starts with a letter (not an
# address) and no label starts 'xn--', a port of 1-4 digits that is not 80 or 443. A label is
# letters and digits with hyphens only inside; the repeats are possessive (``++``, ``*+``): each
# stops at a character its piece cannot hold, so giving any back could never match, and Python's
# engine would otherwise try that label by label, character by character.
_URL_ORIGIN = (
    r"(?:https?|wss?)://(?:(?!xn--)[a-z0-9]++(?:-++[a-z0-9]++)*+\.)*+(?!xn--)[a-z][a-z0-9]*+(?:-++[a-z0-9]++)*+"
    r"(?::(?!(?:80|443)(?:/|\Z))[1-9][0-9]{0,3})?"
)
_NOT_DOTS = r"(?!\.\.?(?:/|\?|\Z))"  # a path segment or query piece that is not '.' or '..'
_URL_SEGMENT = rf"{_NOT_DOTS}{_URL_TEXT}++"


def _url_query(separators: str) -> str:
    """A non-empty query whose pieces are split at ``separators``."""
    return rf"\?(?=.)(?:{_NOT_DOTS}{_URL_TEXT}*+(?:[{separators}]|\Z))*+"


NET = ResourceKind(
    read=_read,
    # an origin, a path of non-empty segments, an optional non-empty query; no piece of path or
    # query is '.' or '..'
    plain=rf"{_URL_ORIGIN}(?:/|(?:/{_URL_SEGMENT})++/?)(?:{_url_query('/?')})?",
    # the head ends in the path; a '/' in the rest is in the path too (its query has none)
    plain_split=(
        f"{_URL_ORIGIN}/(?:{_URL_SEGMENT}/)*",
        f"(?:{_URL_SEGMENT}(?:(/){_URL_SEGMENT})*+)?(?:{_url_query('?')})?",
    ),
    url=True,
)
"""``net``: a URL."""
