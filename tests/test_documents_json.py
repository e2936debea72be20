"""JSON documents find where their values are written only when asked (a large plan is read
without walking its text twice). Checked against the eager reading it replaced — ``json.loads``
and then the walk over every token — on generated documents of every class that matters:
well-formed ones, ones with a repeated key (escaped or not, at any depth), ones with a lone
surrogate in a key or in a value."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.values.canonical import DataModelError, check_value
from bgc.core.values.documents import DocumentError, _json_int, _json_locations, _load_json, _locator, parse_document
from bgc.errors import Span
from tests.samples import examples

KEYS = st.sampled_from(["a", "b", "kind", "é", "\ud800", "x y"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from(["t", "\udfff", "ü", ""]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.lists(st.tuples(KEYS, inner), max_size=4),
    max_leaves=25,
)


def render(value: Any, escape: bool) -> str:
    """JSON text for ``value``; a list of pairs is a map that may repeat a key (json.dumps
    cannot write one); ``escape`` writes text as ``\\uXXXX`` escapes (a lone surrogate always is:
    UTF-8 cannot carry it)."""
    if isinstance(value, list) and value and all(isinstance(item, tuple) for item in value):
        keys = [text(key, escape) for key, _ in value]
        return "{" + ", ".join(f"{key}: {render(item, escape)}" for key, (_, item) in zip(keys, value)) + "}"
    if isinstance(value, list):
        return "[\n" + ",\n".join(render(item, escape) for item in value) + "]"
    return text(value, escape) if isinstance(value, str) else json.dumps(value)


def text(value: str, escape: bool) -> str:
    return json.dumps(value, ensure_ascii=escape or any(0xD800 <= ord(char) <= 0xDFFF for char in value))


def eager(text: str, path: str) -> tuple[Any, dict[Any, Any], dict[Any, Any]] | tuple[str, Span]:
    """The reading before: every location found at once, while reading; an error as (message, span)."""
    lines = text.splitlines()
    locate = _locator(text)

    def fail(message: str, offset: int) -> DocumentError:
        line, col = locate(offset)
        return DocumentError(message, Span(path, line, col), source=lines[line - 1] if line <= len(lines) else None)

    data = json.loads(text, parse_int=_json_int)
    try:
        locations, key_locations = _json_locations(text, locate, fail)
    except DocumentError as error:
        return error.message, error.span
    try:
        check_value(data)
    except DataModelError as problem:
        for cut in range(len(problem.path), -1, -1):
            if problem.path[:cut] in locations:
                line, col = locations[problem.path[:cut]]
                return problem.message, Span(path, line, col)
    return data, locations, key_locations


@settings(max_examples=examples(150, thorough=3000), deadline=None)
@given(VALUES, st.booleans())
def test_lazy_locations_agree_with_the_eager_reading(value: Any, escape: bool) -> None:
    written = render(value, escape)
    expected = eager(written, "d.json")
    try:
        document = parse_document(written.encode("utf-8"), "d.json", "json")
    except DocumentError as error:
        assert len(expected) == 2, (written, error.message)
        message, span = expected
        assert error.message.endswith(message) and (error.span.line, error.span.col) == (span.line, span.col), written
        return
    assert len(expected) == 3, (written, expected)
    assert (document.data, document.locations, document.key_locations) == expected


def test_locations_are_found_only_when_asked(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from bgc.core.values import documents

    walks: list[str] = []
    real = documents._json_locations
    monkeypatch.setattr(documents, "_json_locations", lambda text, *rest: walks.append(text) or real(text, *rest))
    document = _load_json('{"a": [1, {"b": "c"}]}', "d.json")
    assert document.data == {"a": [1, {"b": "c"}]} and walks == []
    assert document.locations[("a", 1, "b")] == (1, 17) and document.key_locations[("a", 1, "b")] == ((1, 12), (1, 15))
    assert document.locations[()] == (1, 1) and len(walks) == 1  # found once


def _outcome(data: bytes, through_json: bool) -> Any:
    """What reading ``data`` as JSON gives — the data, or the error's message and place — read
    as bgc reads it, or (``through_json``) with every text left to ``json.loads``."""
    from bgc.core.values import documents

    with pytest.MonkeyPatch.context() as patch:
        if through_json:
            patch.setattr(documents, "_json_scanner", lambda: None)
        try:
            read = parse_document(data, "d.json", "json").data
        except DocumentError as error:
            return "error", error.message, error.span.line, error.span.col
    return "data", json.dumps(read, sort_keys=True, allow_nan=True)  # NaN never equals itself; its text does


BREAKS = st.sampled_from([
    "", " ", "\n\t", "\r", "\r\n", "\x0b", "\x1c", "\u2028", "\u3000", "\ufeff", " \ufeff", "\x0c", "\u00a0", "x", ",", "]",
    "]]", "}", "{", "[", '"', '"\\ud800"', "\ud800", "\U0001f600", "NaN", "-Infinity", "1e999", "-", "00", "-0", "1.", ".5", "tru",
    "true false", '"a":1', "1" * 5000, "\\", "\x00",
])  # fmt: skip
"""What damages a document: JSON's four spaces and the spaces it does not take (vertical tab, a
separator, U+2028, U+3000, a BOM anywhere), lone surrogates raw and escaped, a character past the
BMP, numbers of every broken shape and one too long to convert, constants, brackets, keys."""


@settings(max_examples=examples(300, thorough=3000), deadline=None)
@given(VALUES, st.booleans(), BREAKS, st.integers(0, 1000), BREAKS, st.booleans())
def test_the_scanner_reads_every_text_as_json_loads_does(
    value: Any, escape: bool, insert: str, at: int, append: str, truncate: bool
) -> None:
    """JSON is read by ``_json``'s scanner without importing json; on generated documents and
    damaged ones (a character inserted anywhere, something appended, the text cut short, a BOM,
    NaN and overflowing numbers, repeated and invalid keys) the outcome — data, or the error
    message and its line and column — is the outcome of leaving every text to ``json.loads``."""
    written = render(value, escape)
    at %= len(written) + 1
    damaged = written[:at] + insert + (written[at:at + 1] if truncate else written[at:]) + append
    data = damaged.encode("utf-8", "surrogatepass")
    assert _outcome(data, through_json=False) == _outcome(data, through_json=True)


class _Text(str):
    pass


class _Map(dict):
    pass


class _List(list):
    pass


class _Flag(enum.IntEnum):
    ON = 1


def _nested(depth: int, inner: Any) -> Any:
    for level in range(depth):
        inner = [inner] if level % 2 else {"k": inner}
    return inner


OUTPUT_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=8), st.floats(), st.just((1, "x")),
        st.sampled_from([_Text("x"), _Flag.ON, 10**400, "\ud800", "\u2028\x7f\U0001f600"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(_List),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 3), st.sampled_from([_Text("k"), None, 1.5, True])), inner, max_size=4),
        st.dictionaries(st.text(max_size=4), inner, max_size=4).map(_Map),
        st.builds(_nested, st.integers(60, 70), inner),
    ),
    max_leaves=20,
)  # fmt: skip
"""What a hook might answer with, and what json.dumps takes besides: subclasses of text, maps,
lists and integers (an IntEnum writes its value), integers too long to write, lone surrogates,
keys of every type json.dumps converts, nesting about bgc's depth limit."""


@settings(max_examples=examples(300), deadline=None)
@given(OUTPUT_VALUES)
def test_json_text_is_json_dumps_without_ascii_escapes(value: Any) -> None:
    """What a hook writes: byte for byte ``json.dumps(value, ensure_ascii=False)``, for every
    value (floats, tuples, subclasses, keys that are not text and nesting past bgc's limit are
    left to json.dumps itself), and the same refusal for an integer too long to write."""
    from bgc.core.values.documents import json_text

    def written(write: Any) -> Any:
        try:
            return write(value)
        except ValueError as error:  # an integer too long to write: the same refusal
            return type(error), str(error)

    assert written(json_text) == written(lambda v: json.dumps(v, ensure_ascii=False))
