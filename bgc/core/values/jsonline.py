"""JSON messages one per line: read bounded and total, written canonically.

Every enforcer that reads JSON lines from a peer (the MCP proxy, both ways; ``bgc authorize``
and the kernel's message reader) reads them here, so one rule holds for all:

- **Lines end at ``\\n`` and nowhere else.** A line is read up to a byte limit; a longer line
  is consumed in chunks and reported as too long without ever being held whole
  (:class:`LineReader`).
- **A line is one strict JSON value or it is refused** (:func:`parse`), never repaired:
  strict UTF-8 (an invalid sequence is refused, not replaced by U+FFFD), no carriage return
  anywhere (stdio readers such as Python's universal newlines end a line at a bare ``\\r``, so
  bytes that are one message here could be two there), no duplicate key, no ``NaN`` or
  ``Infinity``, integers within the data model's range (checked on the literal before it is
  converted), finite numbers, nesting within :data:`~bgc.core.values.canonical.MAX_DEPTH`, no
  lone surrogate. Every failure of the parser is the line's refusal (:class:`Unreadable`),
  never an exception that ends the stream.
- **What is passed on is the value that was decided, re-serialised** (:func:`dumps`): ASCII
  only, so no U+2028, U+2029, U+0085 or ``\\r`` can appear raw for another reader to split at,
  and no byte of the original line reaches the next reader.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

from bgc.core.values.canonical import MAX_DEPTH, MAX_INT, MIN_INT, check_value
from bgc.core.values.schema import DataModelError, format_path

MAX_LINE_BYTES = 4 * 1024 * 1024
"""The largest line a reader accepts by default: far above any JSON-RPC request a client sends."""

_CHUNK = 1 << 16
_INT_DIGITS = len(str(-MIN_INT))
"""Digits of the widest integer in range: a longer literal is refused before conversion (Python's
conversion of a long decimal literal costs quadratic time, and refuses 4,300 digits itself)."""


class Unreadable(ValueError):
    """A line that is not one strict JSON value; the message says why."""


class TooLong:
    """A line longer than the reader's limit, consumed without being held: its first bytes
    (``head``) and its length, for an answer that names what was refused."""

    __slots__ = ("head", "length", "request_id")

    def __init__(self, head: bytes, length: int, request_id: object) -> None:
        self.head = head
        self.length = length
        self.request_id = request_id
        """The top-level ``"id"`` of the JSON object the line starts, when it could be found
        while the line streamed past (:class:`_TopLevelId`); None otherwise."""


class LineReader:
    """The lines of a byte stream, split at ``\\n`` only, each at most ``limit`` bytes (without
    its ``\\n``); a longer one is a :class:`TooLong`. ``read(n)`` returns at most ``n`` bytes and
    ``b""`` at the end (``os.read`` on a descriptor: a thread blocked in it holds no lock the
    interpreter needs at exit). A last line without ``\\n`` is still a line.

    Each byte read is searched for ``\\n`` once, in the chunk it came in: a line that arrives in
    many chunks costs work linear in its length, not a search of all it holds so far per chunk.
    No more than ``limit`` bytes of a line are ever held."""

    def __init__(self, read: Callable[[int], bytes], limit: int = MAX_LINE_BYTES) -> None:
        self._read = read
        self.limit = limit
        self._buffer = bytearray()
        self._long: TooLong | None = None  # the line being consumed once it is over the limit
        self._scanner: _TopLevelId | None = None

    def __iter__(self) -> Iterator[bytes | TooLong]:
        while True:
            chunk = self._read(_CHUNK)
            if not chunk:
                if self._long is not None or self._buffer:
                    yield self._line()
                return
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                if end < 0:
                    self._take(chunk, start, len(chunk))
                    break
                self._take(chunk, start, end)
                yield self._line()
                start = end + 1

    def _take(self, chunk: bytes, start: int, end: int) -> None:
        """Add ``chunk[start:end]`` to the line: held while it fits the limit, else consumed
        (its id looked for as it streams past, :class:`_TopLevelId`)."""
        if self._long is None and len(self._buffer) + end - start <= self.limit:
            self._buffer += memoryview(chunk)[start:end]
            return
        if self._long is None:
            head = bytes(self._buffer[:256]) + chunk[start : start + max(0, 256 - len(self._buffer))]
            self._long, self._scanner = TooLong(head, len(self._buffer), None), _TopLevelId()
            self._scanner.feed(bytes(self._buffer))
            self._buffer.clear()
        assert self._scanner is not None
        self._scanner.feed(chunk[start:end])
        self._long.length += end - start

    def _line(self) -> bytes | TooLong:
        """The line read so far, ended: the reader starts the next one."""
        if self._long is not None:
            assert self._scanner is not None
            found, self._long = self._long, None
            found.request_id, self._scanner = self._scanner.found(), None
            return found
        line = bytes(self._buffer)
        self._buffer.clear()
        return line


def partial_reader(stream: IO[bytes]) -> Callable[[int], bytes]:
    """``read(n)`` of at most ``n`` bytes, whatever arrived, for a :class:`LineReader`: ``os.read``
    on the stream's descriptor when it has one (a thread blocked there holds none of the locks the
    interpreter takes at exit, so a process can exit while its peer is still connected), else the
    stream's own ``read1``."""
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return stream.read1 if hasattr(stream, "read1") else stream.read  # type: ignore[attr-defined]
    return lambda size: os.read(descriptor, size)


class _TopLevelId:
    """The value of the top-level ``"id"`` member of a JSON object read in chunks, found in one
    pass with bounded memory: JSON-RPC's way to answer a request bgc refuses to read whole.
    Only a string (at most 1,024 bytes) or a number counts; a line that repeats the key, is not
    an object, or puts a container there has no id. Strings are skipped with one search each."""

    _CAPTURE = 1024

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.started = False
        self.object = False
        self.expect_key = False
        self.key: bytearray | None = None
        self.value: bytearray | None = None
        self.values: list[bytes | None] = []

    def feed(self, data: bytes) -> None:
        pos, size = 0, len(data)
        while pos < size:
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                    self._capture(data[pos : pos + 1])
                    pos += 1
                    continue
                cut = self._next(_STRING_END, data, pos)
                if cut is None:
                    return
                self._capture(data[pos : cut + 1])
                if data[cut] == 0x5C:
                    self.escaped = True
                else:
                    self.in_string = False
                    if self.depth == 1:
                        self.expect_key = False
                pos = cut + 1
                continue
            if not self.started:
                pos = _BLANKS.match(data, pos).end()  # type: ignore[union-attr]  # '*' matches anywhere
                if pos == size:
                    return
                self.started, self.object = True, data[pos] == 0x7B
            if not self.object:
                return
            cut = self._next(_STRUCTURE, data, pos)
            if cut is None:
                return
            self._capture(data[pos:cut])
            self._structure(data[cut])
            pos = cut + 1

    def _next(self, pattern: re.Pattern[bytes], data: bytes, pos: int) -> int | None:
        """Where ``pattern`` next matches in ``data``; None (the rest captured) when it does not."""
        found = pattern.search(data, pos)
        if found is None:
            self._capture(data[pos:])
            return None
        return found.start()

    def _structure(self, byte: int) -> None:
        char = chr(byte)
        if char == '"':
            self.in_string = True
            if self.depth == 1 and self.expect_key:
                self.key = bytearray()
            self._capture(b'"')
        elif char in "{[":
            self.depth += 1
            if self.depth == 1:
                self.expect_key = True
            elif self.depth == 2 and self.value is not None:
                self.value = None
                self.values.append(None)  # a container is no id
        elif char in "}]":
            self._end_value()
            self.depth -= 1
        elif char == ":" and self.depth == 1:
            is_id = self.key is not None and _decoded(bytes(self.key)) == "id"
            self.key = None
            self.value = bytearray() if is_id else None
        elif char == "," and self.depth == 1:
            self._end_value()
            self.expect_key = True

    def _capture(self, data: bytes) -> None:
        if self.depth != 1:
            return
        if self.key is not None:
            target = self.key
        elif self.value is not None:
            target = self.value
        else:
            return
        if len(target) + len(data) > self._CAPTURE:  # too long for an id, or a key that is not "id"
            if target is self.value:
                self.values.append(None)
            self.key = self.value = None
            return
        target += data

    def _end_value(self) -> None:
        if self.depth == 1 and self.value is not None:
            self.values.append(bytes(self.value))
            self.value = None

    def found(self) -> object:
        if len(self.values) != 1 or self.values[0] is None:
            return None
        value = _decoded(self.values[0])
        return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


_STRING_END = re.compile(rb'["\\]')
_STRUCTURE = re.compile(rb'[{}\[\]:,"]')
_BLANKS = re.compile(rb"[ \t]*")


def top_level_id(line: bytes) -> object:
    """The top-level ``"id"`` of a line that could not be read (:class:`_TopLevelId`), or None:
    whom to answer when a message is refused."""
    scanner = _TopLevelId()
    scanner.feed(line)
    return scanner.found()


def _decoded(data: bytes) -> object:
    try:
        return parse(data.strip(b" \t"))
    except Unreadable:
        return None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise Unreadable(f"duplicate key {key!r}")
            seen.add(key)
    return result


def _constant(name: str) -> Any:
    raise Unreadable(f"{name} is not a JSON number")


def _integer(literal: str) -> int:
    """A JSON integer; one too long to convert stands for the nearest integer out of range, which
    the data model's check then refuses by name."""
    if len(literal.lstrip("-")) > _INT_DIGITS:
        return MIN_INT - 1 if literal.startswith("-") else MAX_INT + 1
    return int(literal)


def parse(line: bytes) -> Any:
    """The one strict JSON value of ``line`` (without its ``\\n``), or :class:`Unreadable`."""
    if b"\r" in line:
        raise Unreadable("a carriage return in a line: lines end at a line feed and nowhere else")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unreadable(f"not UTF-8 (byte 0x{line[error.start]:02x} at offset {error.start})") from None
    return parse_text(text)


def parse_text(text: str, *, data_model: bool = True) -> Any:
    """:func:`parse` of a line already decoded (its characters, not its bytes, were read).
    ``data_model=False`` leaves integer ranges, finite numbers, depth beyond the parser's own
    bound and lone surrogates to a caller that refuses them field by field, with codes of its own."""
    if "\r" in text:
        raise Unreadable("a carriage return in a line: lines end at a line feed and nowhere else")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:  # bytes that were not UTF-8, decoded with surrogateescape
            raise Unreadable(f"not UTF-8 (character {error.start + 1} is U+{ord(text[error.start]):04X})") from None
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_constant, parse_int=_integer)
        if data_model:
            check_value(value)
    except Unreadable:
        raise
    except RecursionError:
        raise Unreadable(f"nesting deeper than {MAX_DEPTH} levels") from None
    except DataModelError as error:
        where = f"{format_path(error.path)}: " if error.path else ""
        raise Unreadable(f"{where}{error.message}") from None
    except json.JSONDecodeError as error:
        raise Unreadable(f"not one JSON value: {error.msg} (column {error.colno})") from None
    except Exception as error:  # noqa: BLE001 - every failure of the reader is this line's refusal
        raise Unreadable(f"not one JSON value ({type(error).__name__}: {error})") from None
    return value


def dumps(value: Any) -> bytes:
    """``value`` as one line, ``\\n`` included: ASCII only (every other character escaped),
    compact, no ``NaN``; what a reader of it sees is exactly ``value``."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"
