"""JSON documents find where their values are written only when asked (a large plan is read
without walking its text twice). Checked against the eager reading it replaced — ``json.loads``
and then the walk over every token — on generated documents of every class that matters:
well-formed ones, ones with a repeated key (escaped or not, at any depth), ones with a lone
surrogate in a key or in a value."""

from __future__ import annotations

import json
from typing import Any

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
