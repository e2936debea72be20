"""Concrete values: what a tool really touches, canonicalised per resource or refused.

A rule is a pattern; a tool call touches a *value* (a path, a URL, a package name). Before any
rule sees a value it is put in its resource's one canonical form, or refused with the reason,
and a refused value is denied whatever the rules say. Why, per resource:

* ``fs`` and ``host`` (a path outside the workspace) — a file has many spellings (``/src//a``, ``/src/./a``, ``/x/../src/a``); a deny written
  for one must stop them all, so paths are normalised lexically. On a case-insensitive file
  system (``filesystem case-insensitive``) the OS also ignores spellings that no lexical rule
  can undo — Windows drops trailing dots and spaces, reads ``name::$DATA`` streams and 8.3 short
  names (``GIT~1``), HFS+ ignores zero-width code points — so such values are refused, as git's
  ``core.protectNTFS``/``protectHFS`` refuse them.
* ``net`` — a URL is read by a WHATWG parser (browsers, fetch, most HTTP clients): the host ends
  where that parser ends it, not where a glob thinks (``https://evil.com\\.example.com`` is host
  ``evil.com``). Values are parsed with ada (a WHATWG-conformant parser) and written back in one
  form; spellings a server would decode (``%61``) are decoded, ambiguous ones refused.
* ``proc`` — an argv in the argv dialect (:mod:`bgc.core.resources.proc`), one word a segment, matched as
  given: ``.`` and ``..`` are ordinary words there (``find .``), not segments to refuse.
* every other resource — matched as given, but a segment a URL parser or server would read as
  ``.`` or ``..`` is refused.

For all resources: NUL, control characters, lone surrogates and text that is not NFC are refused
(a decomposed accent could name the same file as the composed one a rule spells).

Refusing is the fail-closed answer to "this spelling could mean something the rules did not
see": a refused value is denied, never matched.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from dataclasses import dataclass
from bgc.core.resources.proc import ARGV_RESOURCES
from bgc.core.values.regexes import RegexOnFirstUse

TYPE_CHECKING = False  # not typing's: a cold `bgc gate` or hook never imports typing (tests/test_startup_imports.py)
if TYPE_CHECKING:
    from bgc.core.patterns.glob import Pattern

__all__ = ["Rejection", "URL_RESOURCES", "canonical_url", "decoded_dot_segment", "match_value", "normalise"]

URL_RESOURCES = frozenset({"net"})
"""Resources whose values are URLs, canonicalised by :func:`canonical_url`."""

URL_SCHEMES = ("http", "https", "ws", "wss")
"""The schemes a ``net`` value may have: WHATWG's special schemes that name a host (``file:`` is
a path, an ``fs`` value; ``ftp`` and opaque schemes have no agreed parse, so they are refused)."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """A concrete value that must not be matched at all, and why (the gate denies it)."""

    value: str
    reason: str


PATH_RESOURCES = frozenset({"fs", "host"})
"""Resources whose values are absolute paths, normalised alike: ``fs`` (in the workspace, ``/`` its
root) and ``host`` (a path of the machine outside the workspace, as agent hooks place it)."""


def normalise(resource: str, value: str, *, case_insensitive: bool = False) -> str | Rejection:
    """The value to match for ``resource``, or why it is refused (see the module docstring).

    ``case_insensitive`` says the policy declared ``filesystem case-insensitive``: ``fs`` values
    a Windows or HFS+ file system would read as another name are refused too.
    """
    already = _ALREADY_CANONICAL.get(resource) or _already_canonical(resource)
    if already is not None and already(value) and not (case_insensitive and resource == "fs"):
        return value
    return _read(resource, value, case_insensitive)


def plain_path(value: str) -> bool:
    """Whether ``value`` is an absolute path of printable ASCII with no empty, ``.`` or ``..``
    segment (a dotfile's included): then it is its own canonical form (on a case-sensitive file
    system), and so is every part of it from one of its ``/`` on. A cheap test: a path it
    refuses may be canonical too, and takes :func:`normalise`."""
    return value.isascii() and value.isprintable() and _PLAIN_FS_PATTERN.fullmatch(value) is not None


def plain_form(resource: str, *, case_insensitive: bool = False) -> Callable[[str], object] | None:
    """The test :func:`normalise` starts with for ``resource``: a value it accepts is its own
    canonical form (None: no value of the resource is taken so). A caller that decides many
    values asks once and reads the rest only of the values the test refuses."""
    if case_insensitive and resource == "fs":
        return None
    return _already_canonical(resource)


def _read(resource: str, value: str, case_insensitive: bool) -> str | Rejection:
    """:func:`normalise` without its shortcut for values already canonical: the full reading."""
    problem = _text_problem(value)
    if problem:
        return Rejection(value, problem)
    if resource in PATH_RESOURCES:
        return _fs_path(value, case_insensitive)
    if resource in URL_RESOURCES:
        return canonical_url(value)
    if resource in ARGV_RESOURCES:
        return value  # an argv, one word a segment: `.` and `..` are words (bgc.core.resources.proc)
    problem = _dot_segment_problem(value)
    return Rejection(value, problem) if problem else value


_URL_TEXT = r"[A-Za-z0-9\-._~!$&()*+,=:@]"  # no escape, quote, space, ';', '\\', '%', '#', '?', '/' or non-ASCII
_PLAIN_SEGMENT = r"[\x20-\x2d\x30-\x7e][\x20-\x2e\x30-\x7e]*+"  # printable ASCII, no '/', not empty, no leading '.'
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


ALREADY_CANONICAL = {
    # printable ASCII, absolute, segments that are not empty and do not start with '.' (so none is
    # '.' or '..'), no trailing '/'
    "fs": f"(?:/{_PLAIN_SEGMENT})++",
    # an origin, a path of non-empty segments, an optional non-empty query; no piece of path or
    # query is '.' or '..'
    "net": rf"{_URL_ORIGIN}(?:/|(?:/{_URL_SEGMENT})++/?)(?:{_url_query('/?')})?",
}
"""Per resource, a regular expression for values certainly in their canonical form already, so
that :func:`normalise` returns them as they are without the full reading (which for a URL means
a parser call), and the gate decides them in one regex pass (:mod:`bgc.core._gate_index`). Each is
unambiguous (a text can be read one way only: labels, segments and pieces are split at characters
they cannot hold), so matching stays linear. Each accepts only a plain subset of the canonical
values (tests check, on generated values, that whatever it accepts the full reading returns
unchanged); everything else, every value to refuse among it, takes the full reading. Not used
for ``fs`` on a case-insensitive file system, whose refusals the subset does not encode."""

_ALREADY_CANONICAL: dict[str, Callable[..., object]] = {}
""":data:`ALREADY_CANONICAL` compiled, each when first asked for (:func:`_already_canonical`): a
cold ``bgc gate`` of a plan with no URL never compiles the URL's expression (half a millisecond)."""


def _already_canonical(resource: str) -> Callable[..., object] | None:
    """The compiled test of :data:`ALREADY_CANONICAL` for ``resource`` (None: it has none)."""
    found = _ALREADY_CANONICAL.get(resource)
    if found is None and resource in ALREADY_CANONICAL:
        found = _ALREADY_CANONICAL[resource] = re.compile(ALREADY_CANONICAL[resource]).fullmatch
    return found

PLAIN_SPLIT = {
    "fs": (f"(?:/{_PLAIN_SEGMENT})*/", f"{_PLAIN_SEGMENT}(?:(/){_PLAIN_SEGMENT})*+"),
    # the head ends in the path; a '/' in the rest is in the path too (its query has none)
    "net": (f"{_URL_ORIGIN}/(?:{_URL_SEGMENT}/)*", f"(?:{_URL_SEGMENT}(?:(/){_URL_SEGMENT})*+)?(?:{_url_query('?')})?"),
}
"""Per resource, a part of :data:`ALREADY_CANONICAL` cut at a ``/``: ``(head, rest)``, where
every text matching ``head`` (which ends in ``/``) followed by text matching ``rest`` is
accepted by :data:`ALREADY_CANONICAL` (a test checks), and ``rest`` has one group, set when
the rest holds a ``/``. Any ``/``-prefix of such a value longer than its head is a head too, so
the gate finds a plain value's deepest directory among a plan's directories that are heads,
matched as literal text, and checks only the rest (:mod:`bgc.core._gate_index`), instead of reading
the value twice."""


def _dot_segment_problem(text: str) -> str | None:
    for seg in text.split("/"):
        if seg in (".", ".."):
            return f"has a '{seg}' segment"
    seg = decoded_dot_segment(text)
    if seg is not None:
        return f"has a segment that decodes to '{seg}' (percent-encoding, '\\', '?', '#' or ';')"
    return None


def _unicode_problem(value: str) -> str | None:
    """Why ``value`` is not Unicode text (it holds a lone surrogate), or ``None``.

    A lone surrogate U+DC80–U+DCFF is how Python carries a byte that was not UTF-8
    (``surrogateescape``: command-line arguments, ``bgc gate`` and ``bgc match`` input), so it is
    reported as that byte.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        cp = ord(value[error.start])
        if 0xDC80 <= cp <= 0xDCFF:
            return f"is not valid UTF-8 (byte 0x{cp - 0xDC00:02X})"
        return f"is not valid Unicode (lone surrogate U+{cp:04X})"
    return None


_CONTROL = RegexOnFirstUse("[\x00-\x1f\x7f-\x9f]")
"""Unicode's control characters (general category Cc: C0, DEL and C1; fixed by Unicode's
stability policy, and a test compares it with ``unicodedata`` over every code point)."""


def _text_problem(value: str) -> str | None:
    if value.isascii() and value.isprintable():
        return None  # the common case: no control characters, surrogates or decompositions
    problem = _unicode_problem(value)
    if problem:
        return problem
    control = _CONTROL.search(value)
    if control:
        cp = ord(control.group())
        return "contains NUL" if cp == 0 else f"contains the control character U+{cp:04X}"
    if not unicodedata.is_normalized("NFC", value):
        return "is not in Unicode NFC form (a decomposed name could dodge a rule)"
    return None


# ---- fs ----------------------------------------------------------------------------------------


def _fs_path(value: str, case_insensitive: bool) -> str | Rejection:
    if not case_insensitive and _PLAIN_FS_PATTERN.fullmatch(value):
        return value  # absolute, no empty, '.' or '..' segment: what the reading below returns (a dotfile's path)
    if not value.startswith("/"):
        return Rejection(value, "is a relative path (fs paths must start with '/')")
    stack: list[str] = []
    for seg in value.split("/"):
        if seg == ".." and not stack:
            return Rejection(value, "climbs above '/' with '..'")
        if seg == "..":
            stack.pop()
        elif seg not in ("", "."):
            stack.append(seg)
    if case_insensitive:
        problem = _alias_problem(value, stack)
        if problem:
            return Rejection(value, problem)
    return "/" + "/".join(stack)


HFS_IGNORED = frozenset(
    [0x200C, 0x200D, 0x200E, 0x200F, 0xFEFF, *range(0x202A, 0x202F), *range(0x206A, 0x2070)]
)
"""Code points HFS+ ignores when it compares names (git's ``is_hfs_dotgit`` list): ``.g\\u200cit``
is ``.git`` there."""

_SHORT_NAME = RegexOnFirstUse(r"~[0-9]")
"""An 8.3 short name's tail (``GIT~1``, ``PROGRA~2``): Windows reaches the long name through it."""


def _alias_problem(value: str, segments: list[str]) -> str | None:
    """Why a case-insensitive (Windows, macOS) file system could read ``value`` as another name.

    Refused by class, not by name: a rule protects ``/.git/**``, but the alias that reaches it
    could be spelt for any protected name, so every name with such a spelling is refused.
    """
    if "\\" in value:
        return "has a '\\', which Windows reads as '/' (filesystem case-insensitive)"
    for seg in segments:
        if seg[-1] in ". ":
            return f"has a segment ending in {seg[-1]!r}, which Windows drops ({seg!r}; filesystem case-insensitive)"
        if ":" in seg:
            return f"has a ':' in {seg!r}: Windows reads it as a drive or a stream (::$DATA) (filesystem case-insensitive)"
        if _SHORT_NAME.search(seg):
            return f"has {seg!r}, which reads as an 8.3 short name (GIT~1) on Windows (filesystem case-insensitive)"
        for ch in seg:
            if ord(ch) in HFS_IGNORED or unicodedata.category(ch) == "Cf":
                return (
                    f"has the invisible code point U+{ord(ch):04X}, which HFS+ ignores in names "
                    "(filesystem case-insensitive)"
                )
    return None


def normalise_fs_pattern(text: str) -> str | Rejection:
    """An fs pattern whose literal segments are normalised as the paths it stands for will be.

    A call's need is a template with the call's parameters escaped in (``{path}/*`` with
    ``path: /src//secret`` is ``/src//secret/*``); the tool touches ``/src/secret/<x>``, so the
    need must be judged as ``/src/secret/*``, or a deny of ``/src/secret/**`` is dodged by
    spelling. Empty and ``.`` segments drop, ``..`` removes the literal segment before it, a
    trailing ``/`` drops. A ``..`` after a wildcard segment is refused: what it climbs out of
    is not known (``/src/**/..`` can be ``/``). Escapes (``\\*``) are kept as written.

    A pattern with no escape and no empty, ``.`` or ``..`` segment (what a call's need almost
    always is) is its own normal form, and is handed back without being read segment by segment.
    """
    if _PLAIN_FS_PATTERN.fullmatch(text):
        return text
    return _read_fs_pattern(text)


def _read_fs_pattern(text: str) -> str | Rejection:
    """:func:`normalise_fs_pattern` without its shortcut for plain patterns: the full reading."""
    stack: list[tuple[str, bool]] = []  # (segment text, is it literal?)
    for seg in _pattern_segments(text)[1:] if text.startswith("/") else [None]:
        if seg is None:
            return Rejection(text, "is a relative path (fs paths must start with '/')")
        bare = _UNESCAPE.sub(r"\1", seg)
        literal = _WILDCARD.search(seg) is None
        if literal and bare in ("", "."):
            continue
        if literal and bare == "..":
            if not stack:
                return Rejection(text, "climbs above '/' with '..'")
            if not stack[-1][1]:
                return Rejection(text, "has a '..' after a wildcard segment: where it leads is not known")
            stack.pop()
            continue
        stack.append((seg, literal))
    return "/" + "/".join(seg for seg, _ in stack)


_UNESCAPE = RegexOnFirstUse(r"\\(.)", re.S)
_PLAIN_FS_PATTERN = RegexOnFirstUse(r"(?:/(?!\.\.?(?:/|\Z))[^/\\]+)+")
"""A pattern :func:`normalise_fs_pattern` leaves as it is: ``/`` segments, none empty, ``.`` or
``..``, no escape (so every ``/`` separates and every segment is kept as written)."""
_WILDCARD = RegexOnFirstUse(r"(?<!\\)(?:\\\\)*[*?[]")


def _pattern_segments(text: str) -> list[str]:
    """``text`` split at its unescaped ``/`` (an escaped ``\\/`` is a separator too, as in git)."""
    segments, current, index = [], [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] == "/":
                segments.append("".join(current))
                current = []
            else:
                current.append(text[index : index + 2])
            index += 2
            continue
        if char == "/":
            segments.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    segments.append("".join(current))
    return segments


# ---- URLs --------------------------------------------------------------------------------------

_PERCENT = RegexOnFirstUse(r"%([0-9A-Fa-f]{2})")
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
    problem = _dot_segment_problem(value[len(scheme) + 3 :])
    if problem:
        return Rejection(value, problem)
    try:
        import ada_url  # here: only net values need the parser, and the gate's start-up should not pay for it

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


_SPACE = RegexOnFirstUse(r"\s")
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
    import ipaddress

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
                from urllib.parse import unquote_to_bytes

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
        canonical = normalise("net", text)
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


# ---- other resources ---------------------------------------------------------------------------

_URL_SEGMENT_END = RegexOnFirstUse(r"[/\\?#;]")


def decoded_dot_segment(text: str) -> str | None:
    """``.`` or ``..`` when a segment of ``text`` is one the way a URL parser reads it, else None.

    A URL parser percent-decodes ``%2e``, reads ``\\`` as ``/`` and ends a path segment at ``?``
    and ``#`` (WHATWG, RFC 3986 §6.2.2); servers also cut path parameters at ``;``. So
    ``v1/%2e%2e/admin``, ``v1/..\\admin``, ``public/..?x`` and ``a/..;/b`` all climb out of where
    they seem to be. Refusing them errs on the closed side (``..%3Fx`` is refused too).
    """
    if "%" in text:
        from urllib.parse import unquote  # here: urllib.parse (and the ipaddress it imports) only for escapes

        text = unquote(text)
    for segment in _URL_SEGMENT_END.split(text):
        if segment in (".", ".."):
            return segment
    return None


def match_value(pattern: Pattern, text: str, resource: str | None = "fs") -> bool | Rejection:
    """Does ``text`` match ``pattern`` once normalised for ``resource`` as the gate does?

    ``resource=None`` matches the text exactly as given, provided it is text at all (bytes that
    were not UTF-8 are refused). A value the resource refuses is returned as its
    :class:`Rejection` (the gate denies it whatever the pattern).
    """
    if resource is not None:
        value = normalise(resource, text)
        if isinstance(value, Rejection):
            return value
        text = value
    elif problem := _unicode_problem(text):
        return Rejection(text, problem)
    return pattern.matches(text)
