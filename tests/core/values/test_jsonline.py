"""The shared JSON-line reader: lines end at ``\\n`` only, every line is read strictly or refused
(never an exception that ends the stream), an oversized line is consumed without being held,
and what is passed on is the decided value, re-serialised in ASCII."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.values.canonical import MAX_DEPTH, MAX_INT, MIN_INT
from bgc.core.values.jsonline import LineReader, TooLong, Unreadable, dumps, parse, top_level_id

SEPARATORS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
"""Every character some reader ends a line at besides ``\\n`` (``str.splitlines``, universal newlines)."""

TEXT = st.text(st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from(SEPARATORS)), max_size=12)
VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(MIN_INT, MAX_INT), st.floats(allow_nan=False, allow_infinity=False), TEXT
    ),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)


@given(VALUES)
def test_a_value_is_written_as_one_ascii_line_that_reads_back_as_itself(value: Any) -> None:
    line = dumps(value)
    assert line.isascii() and line.endswith(b"\n") and line.count(b"\n") == 1
    assert not any(separator.encode("utf-8") in line for separator in SEPARATORS)
    assert parse(line[:-1]) == value


@settings(max_examples=300)
@given(st.binary(max_size=64) | VALUES.map(lambda value: json.dumps(value, ensure_ascii=False).encode("utf-8")))
def test_reading_a_line_either_gives_a_value_or_refuses_it(line: bytes) -> None:
    try:
        value = parse(line)
    except Unreadable:
        return
    assert parse(dumps(value)[:-1]) == value


UNREADABLE = [
        b'{"a":1}\r{"b":2}', b'{"a":\r1}', b'{"a":1}\r', b"\r",  # a carriage return anywhere
        *(f'{{"a":1}}{separator}{{"b":2}}'.encode() for separator in SEPARATORS[1:]),  # another separator between
        *(f'{{"a":{separator}1}}'.encode() for separator in SEPARATORS[1:]),  # or where JSON allows blanks
        b'{"a":"\xff"}', b'{"a":"\xed\xa0\x80"}', b'{"a":"\xc0\xaf"}', b"\xef\xbb\xbf{}",  # not UTF-8, or a BOM
        b'{"a":1,"a":2}', b'{"a":{"b":1,"b":1}}',  # a duplicate key
        b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}', b'{"a":1e400}', b'{"a":-1e400}',  # not a finite number
        b'{"a":' + b"9" * 21 + b"}", b'{"a":-' + b"9" * 5000 + b"}", b'{"a":18446744073709551616}',  # out of range
        b"[" * (MAX_DEPTH + 2) + b"]" * (MAX_DEPTH + 2), b"[" * 100_000 + b"]" * 100_000,  # too deep
        b'{"a":"\\ud800"}', b'{"\\udc00":1}',  # a lone surrogate
        b'{"a":1} {"b":2}', b"", b"{", b"\x00",  # not one JSON value
    ]  # fmt: skip
"""One line of every kind bgc refuses to read."""


def _kernel(line: bytes) -> None:
    from bgc.runtime.kernel.messages import Conflict, read_message

    answer = read_message(line.decode("utf-8", "surrogateescape"))
    if isinstance(answer, Conflict):
        raise Unreadable(answer.reason)


def _proxy(line: bytes) -> None:
    from bgc.adapters.jsonrpc import Refused, read_message

    try:
        read_message(line)
    except Refused as refusal:
        raise Unreadable(refusal.message) from None


READERS = {"jsonline": parse, "MCP and ACP proxies": _proxy, "kernel": _kernel}
"""Every enforcer's reader of JSON lines."""


@pytest.mark.parametrize("reader_name", READERS)
@pytest.mark.parametrize("line", UNREADABLE)
def test_every_kind_of_unreadable_line_is_refused_by_every_reader(reader_name: str, line: bytes) -> None:
    """Refused as that line's refusal, never an exception that would end the stream."""
    with pytest.raises(Unreadable):
        READERS[reader_name](line)


@given(st.integers(0, 300), st.sampled_from(["[]", "{}"]))
def test_nesting_is_read_up_to_the_data_models_depth_and_refused_past_it(depth: int, brackets: str) -> None:
    opening, closing = brackets
    inner = f'{{"k":{opening}{closing}}}' if opening == "{" else f"[{opening}{closing}]"
    line = ('{"k":' if opening == "{" else "[") * depth + inner + ("}" if opening == "{" else "]") * depth
    if depth + 1 <= MAX_DEPTH:
        assert parse(line.encode()) is not None
    else:
        with pytest.raises(Unreadable):
            parse(line.encode())


def test_the_data_model_bounds_are_the_edges() -> None:
    assert parse(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    assert parse(str(MAX_INT).encode()) == MAX_INT and parse(str(MIN_INT).encode()) == MIN_INT
    assert parse('"\u2028\x85"'.encode()) == "\u2028\x85"  # inside a string: a character like any other


CHUNKS = st.integers(1, 97)


def reader(data: bytes, chunk: int, limit: int) -> tuple[LineReader, list[int]]:
    """A reader over ``data`` delivered ``chunk`` bytes at a time, and the sizes it held."""
    stream = io.BytesIO(data)
    held: list[int] = []

    def read(size: int) -> bytes:
        held.append(len(lines._buffer))
        return stream.read(min(size, chunk))

    lines = LineReader(read, limit)
    return lines, held


@given(st.lists(TEXT.map(lambda text: text.replace("\n", "")), max_size=6), CHUNKS)
def test_lines_end_at_a_line_feed_and_nowhere_else(texts: list[str], chunk: int) -> None:
    data = b"".join(text.encode("utf-8") + b"\n" for text in texts)
    lines, _ = reader(data, chunk, 1 << 20)
    assert list(lines) == [text.encode("utf-8") for text in texts]


ID_SPELLINGS = st.one_of(st.integers(-(2**53) + 1, 2**53 - 1), st.text(max_size=20))


@settings(max_examples=150)
@given(ID_SPELLINGS, st.booleans(), st.integers(200, 3000), CHUNKS, st.sampled_from(["", " ", "\t "]))
def test_an_oversized_line_is_consumed_unheld_and_answers_with_its_own_id(
    request_id: object, id_last: bool, pad: int, chunk: int, space: str
) -> None:
    fields = [f'"params":{{"id":"not me","pad":"{"x" * pad}","s":"\\"id\\":0"}}', f'"id"{space}:{space}{json.dumps(request_id)}']
    message = ("{" + ",".join(['"jsonrpc":"2.0"', '"method":"ping"', *(fields if id_last else fields[::-1])]) + "}").encode()
    limit = 100
    lines, held = reader(message + b"\n" + b'{"after":1}\n', chunk, limit)
    first, second = list(lines)
    assert isinstance(first, TooLong) and first.request_id == request_id and first.length == len(message)
    assert second == b'{"after":1}'
    assert max(held) <= limit + chunk + 1  # never the whole line


@pytest.mark.parametrize(
    "line",
    [b'{"id":1,"id":2}', b'[{"id":1}]', b'{"id":[1]}', b'{"id":{"a":1}}', b'{"id":true}', b'{"id":null}', b'"id"', b'{"a":{"id":1}}'],
)
def test_a_line_without_one_top_level_scalar_id_has_none(line: bytes) -> None:
    assert top_level_id(line) is None


def test_the_escaped_spelling_of_id_is_the_id() -> None:
    assert top_level_id(b'{"\\u0069d":"x"}') == "x"


def test_the_last_line_without_a_line_feed_is_still_read() -> None:
    assert list(LineReader(io.BytesIO(b"a\nb").read1, 10)) == [b"a", b"b"]


class Searched(bytes):
    """A chunk that counts the bytes its searches for a line feed pass over (work done in C,
    which tests/work_steps.py cannot count)."""

    passed = 0

    def find(self, sub: Any, start: Any = 0, end: Any = None) -> int:
        assert sub == b"\n" and end is None
        found = bytes.find(self, sub, start)
        Searched.passed += (found + 1 if found >= 0 else len(self)) - start
        return found


@settings(max_examples=60)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=4), st.integers(1, 257), st.integers(100, 4000))
def test_every_byte_is_searched_for_a_line_feed_once(lengths: list[int], chunk: int, limit: int) -> None:
    """However many chunks a line arrives in, each byte is searched once: reading a line is
    linear in its length (searching all a line held so far for each chunk made it quadratic)."""
    data = b"".join(b"x" * length + b"\n" for length in lengths) + b"tail"
    stream = io.BytesIO(data)
    Searched.passed = 0
    read = lambda size: Searched(stream.read(min(size, chunk)))  # noqa: E731
    lines = list(LineReader(read, limit))
    assert Searched.passed == len(data)
    expected = [b"x" * length if length <= limit else length for length in lengths] + [b"tail"]
    assert [line.length if isinstance(line, TooLong) else line for line in lines] == expected

