"""Reading data documents (YAML, JSON, CBOR) into the canonical data model, with locations.

Orders, plans and test files all arrive as documents. This module turns bytes into plain data
and keeps, for YAML, the line and column of every value, so a later stage's complaint about
``requests[2]`` can point at the exact place in the file. It is strict where a loose reader
would be dangerous: YAML is loaded without object-building tags, aliases are bounded, dates stay
strings, duplicate keys are errors; CBOR refuses indefinite lengths, duplicate keys and tags;
NaN and infinities are refused everywhere; input size and nesting depth are bounded.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from bgc.canonical import MAX_DEPTH, DataModelError, check_value, format_path
from bgc.errors import InputError, Span

if TYPE_CHECKING:
    from bgc.model import WorkOrder

MAX_BYTES = 8 * 1024 * 1024
"""Larger documents are refused before parsing: no work order is megabytes of YAML."""
MAX_NODES = 200_000
"""Bound on values after alias expansion (the 'billion laughs' guard)."""

FORMATS = ("yaml", "json", "cbor")
_EXTENSIONS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".cbor": "cbor"}

Location = tuple[int, int]
T = TypeVar("T")


class DocumentError(InputError):
    """A document could not be read: the message says what, the span says where."""


@dataclass(frozen=True, slots=True)
class Document:
    """Plain data read from ``path`` plus, where the format gives them, value locations."""

    path: str
    data: Any
    text: str | None = None
    locations: dict[tuple[str | int, ...], Location] = field(default_factory=dict)

    def span(self, path: tuple[str | int, ...]) -> Span:
        """The nearest known location of the value at ``path`` (walking up to its parents)."""
        for cut in range(len(path), -1, -1):
            where = self.locations.get(path[:cut])
            if where is not None:
                return Span(self.path, where[0], where[1])
        return Span(self.path)

    def source_line(self, span: Span) -> str | None:
        if self.text is None or not span.line:
            return None
        lines = self.text.splitlines()
        return lines[span.line - 1] if span.line <= len(lines) else None

    def error_at(self, path: tuple[str | int, ...], message: str) -> DocumentError:
        """A located error about the value at ``path``, naming the field path in words."""
        span = self.span(path)
        return DocumentError(f"{format_path(path)}: {message}", span, source=self.source_line(span))

    def build(self, make: Callable[[Any], T]) -> T:
        """Convert ``data`` with ``make``; a :class:`DataModelError` becomes a located error."""
        try:
            return make(self.data)
        except DataModelError as error:
            raise self.error_at(error.path, error.message) from None


def format_for(path: str, explicit: str | None = None) -> str:
    """The document format: ``explicit`` if given, else from the extension (``-`` needs one)."""
    if explicit is not None:
        if explicit not in FORMATS:
            raise DocumentError(f"unknown input format {explicit!r} (expected one of: {', '.join(FORMATS)})")
        return explicit
    if path == "-":
        raise DocumentError("reading from stdin needs --input-format yaml|json|cbor", Span("-"))
    suffix = Path(path).suffix.lower()
    if suffix not in _EXTENSIONS:
        raise DocumentError(
            f"cannot tell the format of {path!r} from its extension "
            f"(expected .yaml, .yml, .json or .cbor)",
            Span(path),
        )
    return _EXTENSIONS[suffix]


def read_bytes(path: str) -> bytes:
    """The file's bytes (``-`` is stdin), refusing missing, unreadable and oversized files."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise DocumentError("no such file", Span(path)) from None
    except IsADirectoryError:
        raise DocumentError("is a directory, expected a file", Span(path)) from None
    except OSError as error:
        raise DocumentError(f"cannot read: {error.strerror}", Span(path)) from None
    if len(data) > MAX_BYTES:
        raise DocumentError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB", Span(path))
    return data


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
    """Read and decode one document; every failure is a :class:`DocumentError` with a span."""
    fmt = format_for(path, input_format)
    return parse_document(read_bytes(path), path, fmt)


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


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _JsonDuplicate(key)
        result[key] = value
    return result


class _JsonDuplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def _load_json(text: str, path: str) -> Document:
    lines = text.splitlines()
    try:
        data = json.loads(text, object_pairs_hook=_json_pairs, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        line = lines[error.lineno - 1] if 0 < error.lineno <= len(lines) else None
        raise DocumentError(f"invalid JSON: {error.msg}", Span(path, error.lineno, error.colno), source=line) from None
    except _JsonDuplicate as error:
        raise DocumentError(f"duplicate key {error.key!r} in a JSON object", Span(path)) from None
    except ValueError as error:
        raise DocumentError(f"invalid JSON: {error}", Span(path)) from None
    except RecursionError:
        raise DocumentError(f"nesting deeper than {MAX_DEPTH} levels", Span(path)) from None
    return Document(path, data, text)


# --- CBOR -------------------------------------------------------------------------------------


def _load_cbor(data: bytes, path: str) -> Any:
    import cbor2

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


def _yaml_loader_class() -> type:
    """A SafeLoader without the timestamp resolver, so ``2026-01-01`` stays a string."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return Loader


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
            if key in result:
                raise fail(f"{format_path((*where, key))}: duplicate key {key!r}", key_node.start_mark)
            result[key] = convert(value_node, (*where, key), depth + 1)
        return result

    data = convert(node, (), 0)
    return Document(path, data, text, locations)


def load_order(path: str, input_format: str | None = None) -> WorkOrder:
    """Read a work order from ``path`` (``-`` is stdin); errors name the file, field and place."""
    from bgc.model import WorkOrder

    return read_document(path, input_format).build(WorkOrder.from_data)
