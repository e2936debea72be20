"""bgc's canonical encoding is byte for byte cbor2's ``canonical=True`` (bgc.core.values.canonical.encode).

bgc writes the encoding of its small data model itself so that a cold ``bgc gate`` need not
import cbor2 to derive a plan's id; cbor2 stays the reference it is held to, on values generated
by class: integers at every head boundary, text of any length and script (map keys sorted
length first), floats that fit half, single or only double precision, nested lists and maps,
frozen values."""

from __future__ import annotations

import enum
import struct
from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.values.canonical import MAX_INT, MIN_INT, FrozenMap, check_value, encode, envelope, freeze, thaw
from bgc.core.values.schema import DataModelError
from tests.samples import examples

BOUNDARIES = sorted({edge + delta for edge in (0, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1)
                     for delta in (-1, 0, 1)} | {MIN_INT, MAX_INT})  # fmt: skip
INTEGERS = st.one_of(
    st.sampled_from(BOUNDARIES).flatmap(lambda edge: st.sampled_from([edge, -edge - 1])).filter(lambda n: MIN_INT <= n <= MAX_INT),
    st.integers(min_value=MIN_INT, max_value=MAX_INT),
)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=300)
FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(width=16, allow_nan=False, allow_infinity=False),
    st.floats(width=32, allow_nan=False, allow_infinity=False),
)
SCALARS = st.one_of(st.none(), st.booleans(), INTEGERS, TEXT, st.binary(max_size=300), FLOATS)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=30), st.dictionaries(TEXT, inner, max_size=30)),
    max_leaves=60,
)


@settings(max_examples=examples(400), deadline=None)
@given(VALUES)
def test_the_encoding_is_cbor2s_canonical_encoding(value: Any) -> None:
    assert encode(value) == cbor2.dumps(value, canonical=True)
    assert encode(freeze(value)) == encode(value)  # frozen values (tuples, FrozenMap) encode as the plain ones


FROZEN_INSIDE_PLAIN = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(tuple),
        st.dictionaries(TEXT, inner, max_size=5),
        st.dictionaries(TEXT, inner, max_size=5).map(FrozenMap),
    ),
    max_leaves=30,
)


@settings(max_examples=examples(300), deadline=None)
@given(FROZEN_INSIDE_PLAIN)
def test_frozen_values_inside_plain_lists_encode_as_cbor2_encodes_them(value: Any) -> None:
    """A plain list holding a tuple or a FrozenMap (what every envelope is: ``[tag, version,
    body]`` with a frozen body, or a kernel request's params built in Python): the data model
    admits it (check_value), cbor2 wrote it, and so must the encoder."""
    assert encode(value) == cbor2.dumps(value, canonical=True)


def test_an_envelope_of_a_frozen_body_is_encoded() -> None:
    body = FrozenMap({"b": (1, 2), "aa": [FrozenMap({"z": ()})]})
    assert envelope("t", 1, body) == cbor2.dumps(["t", 1, body], canonical=True)
    assert encode([(), ("x",)]) == bytes.fromhex("82 80 81 61 78")


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(st.text(st.sampled_from("aé\U0001f600"), max_size=40), st.integers(0, 3), min_size=2, max_size=40))
def test_map_keys_are_ordered_as_cbor2_orders_them(value: dict[str, int]) -> None:
    """Keys whose text and encoded lengths disagree (multi-byte characters), around 23/24 bytes."""
    assert encode(value) == cbor2.dumps(value, canonical=True)


def test_each_float_takes_the_shortest_exact_width() -> None:
    assert encode(1.5) == b"\xf9\x3e\x00"  # half
    assert encode(100000.0) == b"\xfa\x47\xc3\x50\x00"  # single: too large for half
    assert encode(0.1) == b"\xfb" + struct.pack(">d", 0.1)  # double: neither narrower holds it
    assert encode(-0.0) == b"\xf9\x80\x00"
    assert encode(65504.0) == b"\xf9\x7b\xff"  # the largest half


class _Tagged(tuple):  # a tuple subclass: thawed into a list at the top, refused under a plain list
    __slots__ = ()


class _Listed(list):  # a list subclass: never in the data model
    __slots__ = ()


class _Keyed(dict):  # a dict subclass: thawed into a dict at the top, refused under a plain list
    pass


class _Frozen(FrozenMap):  # a FrozenMap subclass: a map wherever it is
    __slots__ = ()


class _Text(str):
    pass


class _Number(int):
    pass


class _Ratio(float):
    pass


class _Bytes(bytes):
    pass


class _Flag(enum.IntEnum):
    ON = 1


OUTSIDE = st.one_of(
    st.just("\ud800x"),  # a lone surrogate: no UTF-8
    st.sampled_from([MIN_INT - 1, MAX_INT + 1, -(2**70), 2**70]),
    st.sampled_from([float("inf"), float("-inf"), float("nan")]),
    st.sets(st.integers(), max_size=2), st.just(object()), st.just(_Listed([1])), st.just(bytearray(b"x")),
)  # fmt: skip
"""Values outside the data model, one of each kind."""
SUBCLASSED = st.sampled_from([_Text("x"), _Number(1), _Ratio(0.5), _Bytes(b"x"), _Flag.ON])
"""Subclasses of the scalars: never in the data model (its checks are by exact type)."""
ANY_VALUE = st.recursive(
    st.one_of(SCALARS, OUTSIDE, SUBCLASSED),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.lists(inner, max_size=4).map(_Tagged),
        st.dictionaries(st.one_of(TEXT, st.just("\udcff"), st.integers(0, 3), st.sampled_from([_Text("k"), b"k", None, 1.0])), inner, max_size=4),
        st.dictionaries(TEXT, inner, max_size=4).map(FrozenMap),
        st.dictionaries(TEXT, inner, max_size=4).map(_Frozen),
        st.dictionaries(TEXT, inner, max_size=4).map(_Keyed),
    ),
    max_leaves=12,
)


def _nested(depth: int, kinds: list[int]) -> Any:
    """``depth`` levels of containers, cycling through ``kinds`` (list, dict, tuple, FrozenMap)."""
    value: Any = 0
    for level in range(depth):
        kind = kinds[level % len(kinds)]
        value = [value] if kind == 0 else {"k": value} if kind == 1 else (value,) if kind == 2 else FrozenMap({"k": value})
    return value


@settings(max_examples=examples(500), deadline=None)
@given(st.one_of(ANY_VALUE, st.builds(_nested, st.integers(60, 70), st.lists(st.integers(0, 3), min_size=1, max_size=4))))
def test_the_encoder_refuses_exactly_what_check_value_refuses_with_its_error(value: Any) -> None:
    """The encoder checks while it encodes (one walk); the reference is the separate check
    (check_value on the thawed value) followed by cbor2: the same bytes for every value the
    check admits, the same located error for every value it refuses — surrogates in text and
    keys, integers past the heads, non-finite floats, foreign types, keys that are not text,
    nesting past the limit (through every kind of container), subclasses thawed at the top and
    refused below a plain list, subclasses of every scalar, a FrozenMap subclass anywhere."""
    try:
        check_value(thaw(value))
    except DataModelError as expected:
        with pytest.raises(DataModelError) as refused:
            encode(value)
        assert (refused.value.message, refused.value.path) == (expected.message, expected.path)
    else:
        assert encode(value) == cbor2.dumps(thaw(value), canonical=True)
