"""Server-sent events, read bounded and written plainly: how Streamable HTTP carries a stream of
JSON-RPC messages (https://html.spec.whatwg.org/multipage/server-sent-events.html, "Parsing an
event stream").

Reading follows the standard's algorithm: lines end at CRLF, LF or CR; a line starting with a
colon is a comment; ``field: value`` sets ``event``, ``data`` (appended, joined with LF), ``id``
(the stream's last event id, kept across events) or ``retry`` (digits only); a blank line
dispatches the event, and an event with no data is none (but its ``id`` still counts). An
incomplete event at the end of the stream is dropped. Bounds, so a peer's stream costs bounded
memory whatever it sends: a line longer than ``max_event_bytes`` or an event whose data grows
past it is consumed without being held (its event is :class:`Oversized`, which carries the id it
named when that came first); an ``id`` that is not visible ASCII (a value a reader would put back
in a ``Last-Event-ID`` header) or longer than :data:`MAX_EVENT_ID_CHARS` is ignored.

Writing: every message is one ``data:`` line of compact ASCII JSON
(:func:`bgc.core.values.jsonline.dumps`, which holds no line break), so what a reader joins is
exactly what was written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAX_EVENT_ID_CHARS = 256
"""The longest event id kept (it travels back in a ``Last-Event-ID`` header)."""
_CHUNK = 1 << 16
_VISIBLE = re.compile(rb"[\x21-\x7e]+")
_DIGITS = re.compile(rb"[0-9]+")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Event:
    """One dispatched event: its type, its data (bytes, lines joined with LF), and the stream's
    last event id and retry delay (milliseconds) as they stood when it was dispatched."""

    data: bytes
    event: str = "message"
    id: str | None = None
    retry: int | None = None


@dataclass(frozen=True, slots=True)
class Oversized:
    """An event (or a line) larger than the reader's limit, consumed without being held."""

    length: int
    id: str | None = None


class SseReader:
    """The events of a byte stream, each at most ``max_event_bytes`` of data. ``read(n)``
    returns at most ``n`` bytes and ``b""`` at the end of the stream. ``last_id`` and ``retry``
    are the stream's, as the standard keeps them, for a reader that reconnects."""

    def __init__(self, read: Callable[[int], bytes], max_event_bytes: int) -> None:
        self._read = read
        self.limit = max_event_bytes
        self.last_id: str | None = None
        self.retry: int | None = None
        self._buffer = bytearray()
        self._after_cr = False  # the last line ended at a CR: an LF first in the next chunk ends nothing
        self._first = True

    def __iter__(self) -> Iterator[Event | Oversized]:
        data = bytearray()
        event = b""
        oversized: int | None = None  # bytes of the event dropped so far, once it is over the limit
        has_data = False
        for line in self._lines():
            if isinstance(line, int):  # a line over the limit: the event it is in is over it too
                oversized = (oversized or 0) + line
                continue
            if not line:
                if oversized is not None:
                    yield Oversized(oversized + len(data), self.last_id)
                elif has_data:
                    yield Event(bytes(data[:-1]), (event or b"message").decode("utf-8", "replace"), self.last_id, self.retry)
                data.clear()
                event, oversized, has_data = b"", None, False
                continue
            if line.startswith(b":"):
                continue
            name, colon, value = line.partition(b":")
            if colon and value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                if oversized is None and len(data) + len(value) + 1 > self.limit:
                    oversized = len(data) + len(value) + 1
                    data.clear()
                elif oversized is not None:
                    oversized += len(value) + 1
                else:
                    data += value + b"\n"
                has_data = True
            elif name == b"event":
                event = value
            elif name == b"id":
                if b"\0" not in value:
                    self.last_id = (
                        value.decode("ascii")
                        if _VISIBLE.fullmatch(value) and len(value) <= MAX_EVENT_ID_CHARS
                        else None
                    )
            elif name == b"retry" and _DIGITS.fullmatch(value) and len(value) <= 9:
                self.retry = int(value)

    def _lines(self) -> Iterator[bytes | int]:
        """The stream's lines without their ends; the length of a line over the limit (consumed)."""
        scanned = 0  # no line ends before this offset of the buffer: each byte is searched once
        while True:
            found = _line_end(self._buffer, self._after_cr, scanned)
            if found is not None:
                start, end, after_cr = found
                line = bytes(self._buffer[start:end])
                del self._buffer[: end + 1]
                self._after_cr = after_cr
                scanned = 0
                yield line if len(line) <= self.limit else len(line)
                continue
            scanned = len(self._buffer)
            if len(self._buffer) > self.limit + 1:
                yield len(self._buffer) + self._skip_line()
                scanned = 0
                continue
            chunk = self._read(_CHUNK)
            if not chunk:
                return  # an incomplete last line (and its event) is dropped, as the standard says
            self._buffer += chunk
            if self._first and (len(self._buffer) >= len(_BOM) or not _BOM.startswith(self._buffer)):
                self._first = False  # decided once three bytes (or a byte no BOM starts with) came
                if self._buffer.startswith(_BOM):
                    del self._buffer[: len(_BOM)]
                    scanned = 0

    def _skip_line(self) -> int:
        """Consume the rest of an overlong line, up to its end, holding a chunk at a time; how
        many bytes of it there were."""
        self._buffer.clear()
        skipped = 0
        while True:
            chunk = self._read(_CHUNK)
            if not chunk:
                return skipped
            found = _line_end(bytearray(chunk), False)
            if found is not None:
                self._buffer += chunk[found[1] + 1 :]
                self._after_cr = found[2]
                return skipped + found[1]
            skipped += len(chunk)


def _line_end(buffer: bytearray, after_cr: bool, scanned: int = 0) -> tuple[int, int, bool] | None:
    """Where the first line of ``buffer`` starts and ends (the index of its CR or LF), and
    whether it ended at a CR (so that an LF coming next, perhaps in the next chunk, belongs to
    it and ends nothing); None when no line ends in it yet. No line ends before ``scanned``."""
    start = 1 if after_cr and buffer[:1] == b"\n" else 0
    cr = buffer.find(b"\r", max(start, scanned))
    lf = buffer.find(b"\n", max(start, scanned))
    if lf >= 0 and (cr < 0 or lf < cr):
        return start, lf, False
    if cr >= 0:
        return start, cr, True
    return None


def event_bytes(data: bytes, event_id: str | None = None) -> bytes:
    """One ``message`` event carrying ``data`` (a line of compact JSON, no line break inside)."""
    assert b"\n" not in data and b"\r" not in data
    head = f"id: {event_id}\n".encode("ascii") if event_id is not None else b""
    return head + b"event: message\ndata: " + data + b"\n\n"


def priming_bytes(event_id: str, retry_ms: int | None = None) -> bytes:
    """An event with an id and no data: a client may resume after it (``Last-Event-ID``)."""
    retry = f"retry: {retry_ms}\n" if retry_ms is not None else ""
    return f"id: {event_id}\n{retry}data: \n\n".encode("ascii")


KEEPALIVE = b": keep-alive\n\n"
"""A comment line: keeps a quiet stream's connection open, and finds a client that left."""
