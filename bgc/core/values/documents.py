"""Reading data documents (YAML, JSON, CBOR) into the canonical data model, with locations.

Orders, plans and test files all arrive as documents. This module turns bytes into plain data
and keeps, for YAML and JSON, the line and column of every value, so a later stage's complaint
about ``requests[2]`` can point at the exact place in the file. It is strict where a loose reader
would be dangerous: YAML is loaded without object-building tags, aliases are bounded, dates stay
strings; duplicate keys are errors in every format; CBOR refuses indefinite lengths and tags;
NaN, infinities, lone surrogates and integers beyond CBOR's untagged range are refused
everywhere; input size and nesting depth are bounded.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import sys
from bisect import bisect_right
from collections.abc import Callable

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from bgc.core.values.canonical import (
    INT_OUT_OF_RANGE,
    MAX_DEPTH,
    MAX_INT,
    MIN_INT,
    DataModelError,
    check_text,
    check_value,
    format_path,
)
from bgc.errors import InputError, Span
from bgc.core.values.files import read_bounded

if TYPE_CHECKING:
    from bgc.core.values.model import WorkOrder

T = TypeVar("T")

MAX_NODES = 200_000
"""Bound on values after alias expansion (the 'billion laughs' guard)."""

FORMATS = ("yaml", "json", "cbor")
_EXTENSIONS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".cbor": "cbor"}

Location = tuple[int, int]


class DocumentError(InputError):
    """A document could not be read: the message says what, the span says where."""


Locations = dict[tuple[str | int, ...], Location]
KeyLocations = dict[tuple[str | int, ...], tuple[Location, Location]]


class _Places:
    """A document's value and key locations, found once, on first use.

    For JSON, finding them means walking the whole text a second time in Python, which costs a
    large plan far more than reading it, while only an error (or a test) ever asks where a value
    is: ``bgc gate`` verifying a 500 KB plan should not pay for a message it does not write.
    """

    __slots__ = ("_find", "_found")

    def __init__(self, find: Callable[[], tuple[Locations, KeyLocations]]) -> None:
        self._find: Callable[[], tuple[Locations, KeyLocations]] | None = find
        self._found: tuple[Locations, KeyLocations] = ({}, {})

    @classmethod
    def known(cls, locations: Locations, key_locations: KeyLocations) -> _Places:
        return cls(lambda: (locations, key_locations))

    def get(self) -> tuple[Locations, KeyLocations]:
        if self._find is not None:
            self._found, self._find = self._find(), None
        return self._found


@dataclass(frozen=True, slots=True)
class Document:
    """Plain data read from ``path`` plus, where the format gives them, value locations and the
    locations of map keys (``key_locations``: start and end of the key as written, by the path
    of its value)."""

    path: str
    data: Any
    text: str | None = None
    places: _Places = field(default_factory=lambda: _Places.known({}, {}), compare=False, repr=False)

    @property
    def locations(self) -> Locations:
        """Where each value starts, by field path."""
        return self.places.get()[0]

    @property
    def key_locations(self) -> KeyLocations:
        """Where each map key is written (start and end), by the path of its value."""
        return self.places.get()[1]

    def span(self, path: tuple[str | int, ...]) -> Span:
        """The nearest known location of the value at ``path`` (walking up to its parents)."""
        for cut in range(len(path), -1, -1):
            where = self.locations.get(path[:cut])
            if where is not None:
                return Span(self.path, where[0], where[1])
        return Span(self.path)

    def key_span(self, path: tuple[str | int, ...]) -> Span:
        """Where the map key of the value at ``path`` is written, start to end: what a complaint
        about the key itself (an unknown key) points at. Falls back to :meth:`span`."""
        where = self.key_locations.get(path)
        if where is None:
            return self.span(path)
        (line, col), (end_line, end_col) = where
        return Span(self.path, line, col, end_line, end_col)

    def source_line(self, span: Span) -> str | None:
        if self.text is None or not span.line:
            return None
        lines = self.text.splitlines()
        return lines[span.line - 1] if span.line <= len(lines) else None

    def error_at(self, path: tuple[str | int, ...], message: str, *, at_key: bool = False) -> DocumentError:
        """A located error about the value at ``path`` (``at_key``: about its key), naming the
        field path in words."""
        span = self.key_span(path) if at_key else self.span(path)
        return DocumentError(f"{format_path(path)}: {message}", span, source=self.source_line(span))

    def build(self, make: Callable[[Any], T]) -> T:
        """Convert ``data`` with ``make``; a :class:`DataModelError` becomes a located error, at
        the key it names when the key is at fault (an unknown key), else at the value."""
        try:
            return make(self.data)
        except DataModelError as error:
            raise self.error_at(error.path, error.message, at_key=error.at_key) from None


def format_for(path: str, explicit: str | None, data: bytes) -> str:
    """The document format: ``explicit`` if given, else from the extension, else (stdin, ``-``)
    sniffed from the content ``data`` (:func:`sniff_format`)."""
    if explicit is not None:
        if explicit not in FORMATS:
            raise DocumentError(f"unknown input format {explicit!r} (expected one of: {', '.join(FORMATS)})")
        return explicit
    if path == "-":
        return sniff_format(data)
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in _EXTENSIONS:
        raise DocumentError(
            f"cannot tell the format of {path!r} from its extension "
            f"(expected .yaml, .yml, .json or .cbor)",
            Span(path),
        )
    return _EXTENSIONS[suffix]


_TEXT_SPACE = b" \t\r\n"


def sniff_format(data: bytes) -> str:
    """The format of a document that came without a name (stdin), from its first bytes.

    A first byte of 0x80 or more that is not a UTF-8 byte-order mark cannot begin text a person
    wrote, and is where every CBOR array, map or tag begins: ``cbor``. Text whose first
    character (after a BOM and blanks) is ``{`` or ``[`` is ``json``, anything else ``yaml``.
    A YAML document in flow style (``{intent: …}``) therefore reads as JSON and fails as JSON,
    with a hint naming ``--input-format yaml``: guessing never turns one document into another.
    """
    if data[:1] and data[0] >= 0x80 and not data.startswith(codecs.BOM_UTF8):
        return "cbor"
    text = data.removeprefix(codecs.BOM_UTF8).lstrip(_TEXT_SPACE)
    return "json" if text[:1] in (b"{", b"[") else "yaml"


def read_bytes(path: str) -> bytes:
    """The file's bytes (``-`` is stdin), refusing missing, unreadable and oversized files
    (:func:`bgc.core.values.files.read_bounded`) with a :class:`DocumentError`."""
    return read_bounded(path, stream=sys.stdin.buffer if path == "-" else None, error=DocumentError)


def decode_utf8(data: bytes, path: str) -> str:
    """Strict UTF-8 (a BOM is tolerated); the error points at the line and column of the bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        head = data[: error.start]
        line = head.count(b"\n") + 1
        col = error.start - (head.rfind(b"\n") + 1) + 1
        raise DocumentError(
            f"not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})", Span(path, line, col)
        ) from None
    return text.removeprefix("\ufeff")


def read_document(path: str, input_format: str | None = None) -> Document:
    """Read and decode one document; every failure is a :class:`DocumentError` with a span.

    stdin's format is sniffed when not given (:func:`sniff_format`); an error then says which
    format was assumed and how to name another."""
    return document_from_bytes(read_bytes(path), path, input_format)


def document_from_bytes(data: bytes, path: str, input_format: str | None = None) -> Document:
    """:func:`read_document` of bytes already read from ``path``: for a caller that needs the
    very bytes it decodes (a key derived from them must name what was read)."""
    fmt = format_for(path, input_format, data)
    if path != "-" or input_format is not None:
        return parse_document(data, path, fmt)
    try:
        return parse_document(data, path, fmt)
    except DocumentError as error:
        if error.hint is None:
            error.hint = f"stdin was read as {fmt} (from its first bytes); name the format with --input-format yaml|json|cbor"
        raise


def parse_document(data: bytes, path: str, fmt: str) -> Document:
    """Decode ``data`` in format ``fmt``; the result holds only data-model values."""
    if fmt == "cbor":
        document = Document(path, _load_cbor(data, path))
    else:
        text = decode_utf8(data, path)
        document = _load_json(text, path) if fmt == "json" else _load_yaml(text, path)
    try:
        check_value(document.data)
    except DataModelError as error:
        raise document.error_at(error.path, error.message) from None
    return document


# --- JSON -------------------------------------------------------------------------------------

_JSON_SPACE = re.compile(r"[ \t\n\r]*")
"""JSON's four whitespace characters."""
_JSON_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity")
"""Every scalar token json.loads accepts except strings (NaN and Infinity are Python extensions)."""


def _locator(text: str) -> Callable[[int], Location]:
    """Offset → 1-based (line, column), breaking lines exactly as ``str.splitlines`` does.

    :meth:`Document.source_line` uses ``splitlines``, so counting the same way keeps the quoted
    line and the caret in agreement even around ``\r`` or ``U+2028`` inside a JSON string.
    """
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def locate(offset: int) -> Location:
        line = bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    return locate


_INT_DIGITS = 65
"""2**64 has 65 binary digits: an integer literal with more significant digits is out of the data
model's range whatever its base (see :func:`_too_long`)."""


def _int_digits(literal: str) -> str:
    """The digits of an integer literal — JSON, or any YAML 1.1 form — without its sign, its
    ``0b``/``0x`` prefix and its ``_`` and sexagesimal ``:`` separators."""
    digits = literal.replace("_", "").replace(":", "").lstrip("+-")
    return digits[2:] if digits[:2] in ("0b", "0x") else digits


def _too_long(literal: str) -> bool:
    """Whether an integer literal has more than :data:`_INT_DIGITS` significant digits, and so
    lies outside ``-2**64 .. 2**64-1`` (a sexagesimal literal that long has a first part over 20
    digits or more than 11 parts, each a factor of 60).

    Such a literal is never converted: Python refuses (with a message of its own, unlocated) to
    convert decimal literals over 4300 digits, and converting a huge one costs quadratic time.
    """
    return len(_int_digits(literal).lstrip("0")) > _INT_DIGITS


def _json_int(literal: str) -> int:
    """A JSON integer; a literal too long to convert (:func:`_too_long`) stands for the nearest
    out-of-range integer, which :func:`check_value` then reports at its place."""
    if _too_long(literal):
        return MIN_INT - 1 if literal.startswith("-") else MAX_INT + 1
    return int(literal)


def _json_locations(
    text: str, locate: Callable[[int], Location], fail: Callable[[str, int], DocumentError]
) -> tuple[Locations, KeyLocations]:
    """Where each value of well-formed JSON ``text`` starts, and where each map key is written
    (quotes included), by field path.

    ``json.loads`` gives no positions, so this walks the text it has just accepted a second
    time, token by token, with an explicit stack (any nesting json accepted is fine). Map keys
    are checked here, before they join a path: duplicates (which ``json.loads`` would silently
    merge) are refused at the second key, and keys that are not valid Unicode at the key.
    """
    scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
    space, scalar = _JSON_SPACE.match, _JSON_SCALAR.match

    def skip(pos: int) -> int:
        """The offset of the first non-space character at or after ``pos``."""
        return space(text, pos).end()  # type: ignore[union-attr]  # '*' matches anywhere

    locations: Locations = {}
    key_locations: KeyLocations = {}
    stack: list[tuple[tuple[str | int, ...], set[str] | None, list[int]]] = []  # path, keys seen, count

    def member(pos: int) -> tuple[tuple[str | int, ...], int]:
        """The path of the next member of the innermost container, and where its value starts."""
        container, keys, count = stack[-1]
        count[0] += 1
        if keys is None:
            return (*container, count[0] - 1), pos
        key, end = scanstring(text, pos + 1)
        try:
            check_text(key, container, f"map key {key!r}")
        except DataModelError as error:
            raise fail(f"{format_path(container)}: {error.message}", pos) from None
        if key in keys:
            raise fail(f"{format_path((*container, key))}: duplicate key {key!r}", pos)
        keys.add(key)
        key_locations[(*container, key)] = (locate(pos), locate(end))
        colon = skip(end)
        return (*container, key), skip(colon + 1)

    where: tuple[str | int, ...] = ()
    pos = skip(0)
    while True:
        locations[where] = locate(pos)
        opener = text[pos]
        if opener in "{[":
            pos = skip(pos + 1)
            if text[pos] not in "}]":
                stack.append((where, set() if opener == "{" else None, [0]))
                where, pos = member(pos)
                continue
            pos += 1
        elif opener == '"':
            pos = scanstring(text, pos + 1)[1]
        else:
            pos = scalar(text, pos).end()  # type: ignore[union-attr]  # json.loads accepted it
        pos = skip(pos)
        while stack and text[pos] in "}]":
            stack.pop()
            pos = skip(pos + 1)
        if not stack:
            return locations, key_locations
        where, pos = member(skip(pos + 1))  # past the ','


class _IrregularKeys(Exception):
    """A JSON map with a duplicate key or a key that is not valid Unicode: read it again, the
    slow way, to say where (:func:`_json_locations`)."""


def _regular_map(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s map, refusing what it would silently accept: a repeated key (it keeps the
    last) and a key with a lone surrogate."""
    result = dict(pairs)
    if len(result) != len(pairs) or not all(key.isascii() or _valid_text(key) for key in result):
        raise _IrregularKeys
    return result


def _valid_text(text: str) -> bool:
    try:
        check_text(text)
    except DataModelError:
        return False
    return True


def _load_json(text: str, path: str) -> Document:
    """JSON text as a document. Duplicate and invalid keys are refused while parsing (in C, but
    for one call per map); where values are written is worked out only if asked (:class:`_Places`)."""

    def fail(message: str, offset: int) -> DocumentError:
        lines = text.splitlines()
        line, col = _locator(text)(offset)
        return DocumentError(message, Span(path, line, col), source=lines[line - 1] if line <= len(lines) else None)

    def places() -> tuple[Locations, KeyLocations]:
        return _json_locations(text, _locator(text), fail)

    try:
        data = json.loads(text, parse_int=_json_int, object_pairs_hook=_regular_map)
    except json.JSONDecodeError as error:
        raise fail(f"invalid JSON: {error.msg}", error.pos) from None
    except RecursionError:
        raise DocumentError(f"nesting deeper than {MAX_DEPTH} levels", Span(path)) from None
    except _IrregularKeys:
        places()  # raises, located at the first duplicate or invalid key
        raise DocumentError("a map key is repeated or not valid Unicode", Span(path)) from None
    return Document(path, data, text, _Places(places))


# --- CBOR -------------------------------------------------------------------------------------

_CBOR_TAG_NAMES = {
    0: "a datetime string",
    1: "an epoch datetime",
    2: "a bignum",
    3: "a negative bignum",
    258: "a set",
    55799: "the self-describe marker",
}
"""Tags cbor2 would quietly turn into Python values; named so the refusal says what was meant."""


def _refuse_cbor_tags(data: bytes, path: str) -> None:
    """Refuse a tag (major type 6) anywhere in the first CBOR item, with its number and offset.

    cbor2 interprets several tags itself (bignums, epoch datetimes, self-describe…) before any
    hook could refuse them, so this walks the item heads first: major type and argument, skipping
    string bodies and counting the items arrays and maps still owe. It stops quietly at anything
    malformed (truncation, reserved or indefinite lengths), which the decoder then reports itself.
    """
    pos, pending, size = 0, 1, len(data)
    while pending and pos < size:
        start, head = pos, data[pos]
        major, info = head >> 5, head & 0x1F
        if info < 24:
            argument, pos = info, pos + 1
        elif info < 28:
            pos = start + 1 + (1 << (info - 24))
            if pos > size:
                return
            argument = int.from_bytes(data[start + 1 : pos], "big")
        else:
            return
        if major == 6:
            name = _CBOR_TAG_NAMES.get(argument)
            detail = f", {name}" if name else ""
            raise DocumentError(
                f"CBOR tags are not allowed (tag {argument} at byte offset {start}{detail})", Span(path)
            )
        pending -= 1
        if major in (2, 3):
            pos += argument
        elif major == 4:
            pending += argument
        elif major == 5:
            pending += 2 * argument


def _load_cbor(data: bytes, path: str) -> Any:
    import cbor2

    _refuse_cbor_tags(data, path)
    stream = io.BytesIO(data)
    try:
        decoder = cbor2.CBORDecoder(
            stream, allow_indefinite=False, allow_duplicate_keys=False, max_depth=MAX_DEPTH + 2
        )
        value = decoder.decode()
    except (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError, RecursionError) as error:
        raise DocumentError(f"invalid CBOR: {error}", Span(path)) from None
    if stream.tell() != len(data):
        raise DocumentError(f"invalid CBOR: {len(data) - stream.tell()} bytes after the first value", Span(path))
    return value


# --- YAML -------------------------------------------------------------------------------------

_YAML_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
}

_SCALAR_KINDS = {
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "true or false",
    "tag:yaml.org,2002:null": "null",
}
"""The typed scalar tags and what their text must be, in words. The loader keeps, as
``scalar_forms``, the pattern YAML resolves plain scalars of each tag by: the text it accepts."""


def _yaml_loader_class() -> type:
    """A SafeLoader without the timestamp resolver, so ``2026-01-01`` stays a string."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.scalar_forms = {  # type: ignore[attr-defined]
        tag: pattern
        for resolvers in Loader.yaml_implicit_resolvers.values()
        for tag, pattern in resolvers
        if tag in _SCALAR_KINDS
    }
    return Loader


def _scalar_problem(node: Any, forms: dict[str, re.Pattern[str]]) -> str | None:
    """Why a scalar cannot become a value of its tag, checked before PyYAML's constructors see
    it: they assume text the resolver accepts, so an explicit ``!!int ""`` or ``!!bool maybe``
    crashed them (IndexError, KeyError), and ``0x_`` (which the resolver does accept) leaked
    Python's message; an integer literal too long to convert (:func:`_too_long`) is out of range,
    said as such, not in Python's words."""
    form = forms.get(node.tag)
    is_int = node.tag == "tag:yaml.org,2002:int"
    if form is not None and (not form.match(node.value) or (is_int and not _int_digits(node.value))):
        return f"!!{node.tag.rpartition(':')[2]} needs {_SCALAR_KINDS[node.tag]}"
    if is_int and _too_long(node.value):
        return INT_OUT_OF_RANGE
    return None


_LOADER: type | None = None


def _load_yaml(text: str, path: str) -> Document:
    import yaml

    global _LOADER
    if _LOADER is None:
        _LOADER = _yaml_loader_class()
    lines = text.splitlines()

    def fail(message: str, mark: Any = None) -> DocumentError:
        if mark is None:
            return DocumentError(message, Span(path))
        line = lines[mark.line] if mark.line < len(lines) else None
        return DocumentError(message, Span(path, mark.line + 1, mark.column + 1), source=line)

    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as error:
        problem = error.problem or error.context or "malformed YAML"
        raise fail(f"invalid YAML: {problem}", error.problem_mark) from None
    except yaml.YAMLError as error:
        raise fail(f"invalid YAML: {error}") from None
    except RecursionError:
        raise fail(f"nesting deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    if node is None:
        raise fail("empty document: expected a map")
    locations: dict[tuple[str | int, ...], Location] = {}
    key_locations: dict[tuple[str | int, ...], tuple[Location, Location]] = {}
    budget = [MAX_NODES]

    def convert(node: Any, where: tuple[str | int, ...], depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise fail(f"nesting deeper than {MAX_DEPTH} levels", node.start_mark)
        budget[0] -= 1
        if budget[0] < 0:
            raise fail(f"more than {MAX_NODES} values after alias expansion", node.start_mark)
        locations.setdefault(where, (node.start_mark.line + 1, node.start_mark.column + 1))
        if node.tag not in _YAML_TAGS:
            raise fail(f"{format_path(where)}: the YAML tag {node.tag!r} is not allowed", node.start_mark)
        if isinstance(node, yaml.ScalarNode):
            problem = _scalar_problem(node, loader.scalar_forms)
            if problem:
                raise fail(f"{format_path(where)}: {problem}", node.start_mark)
            try:
                value = loader.construct_object(node)
            except (yaml.YAMLError, ValueError) as error:
                raise fail(f"{format_path(where)}: {error}", node.start_mark) from None
            return value
        if isinstance(node, yaml.SequenceNode):
            return [convert(item, (*where, i), depth + 1) for i, item in enumerate(node.value)]
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise fail("merge keys (<<) are not allowed", key_node.start_mark)
            key = convert(key_node, where, depth + 1)
            if not isinstance(key, str):
                raise fail(f"{format_path(where)}: map key {key!r} is not text", key_node.start_mark)
            try:
                check_text(key, where, f"map key {key!r}")
            except DataModelError as error:
                raise fail(f"{format_path(where)}: {error.message}", key_node.start_mark) from None
            if key in result:
                raise fail(f"{format_path((*where, key))}: duplicate key {key!r}", key_node.start_mark)
            start, end = key_node.start_mark, key_node.end_mark
            key_locations[(*where, key)] = ((start.line + 1, start.column + 1), (end.line + 1, end.column + 1))
            result[key] = convert(value_node, (*where, key), depth + 1)
        return result

    data = convert(node, (), 0)
    return Document(path, data, text, _Places.known(locations, key_locations))


def load_order(path: str, input_format: str | None = None) -> WorkOrder:
    """Read a work order from ``path`` (``-`` is stdin); errors name the file, field and place."""
    from bgc.core.values.model import WorkOrder

    return read_document(path, input_format).build(WorkOrder.from_data)
