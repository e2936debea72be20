"""Canonical encoding: deterministic CBOR and content ids.

Every value with an id is encoded as ``[type-tag, version, body]`` (so two types never share a
digest) in deterministic CBOR (RFC 8949 §4.2: shortest-form integers and floats, definite
lengths, no tags, map keys sorted by their encoded bytes). Because the data model only allows
*text* map keys, cbor2's ``canonical=True`` (length-first) key order is the same as RFC 8949's
bytewise order. The encoding of this small data model is written here (:func:`encode`), byte for
byte what ``cbor2.dumps(value, canonical=True)`` writes (tests/core/values/test_canonical.py holds the
two equal on generated values): a cold ``bgc gate`` derives its plan's id on every call, and
importing cbor2 (which imports typing) cost it more than the rest of its decision; cbor2 still
reads CBOR documents and ledger entries and checks them.

The data model is: int in the range of CBOR major types 0/1 (``-2**64 .. 2**64-1``), finite
float, text of Unicode scalar values, bytes, bool, null, list, and maps with text keys. ``1`` and
``1.0`` are different values. Anything else (NaN, infinities, lone surrogates, bigger integers,
sets, datetimes, tags) is rejected with the path of the offending value, never coerced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from hashlib import sha256

from dataclasses import dataclass
from typing import Any
from bgc.core.values.schema import DataModelError, ModelError
from bgc.core.values.schema import format_path as format_path  # re-exported: its readers import it from here
from bgc.core.values.schema import kind_name as kind_name

_TextKeyed = Mapping[str, Any]

MAX_DEPTH = 64
"""Nesting deeper than this is refused: no honest order needs it, and it bounds recursion."""
MIN_INT = -(2**64)
MAX_INT = 2**64 - 1
"""The integers CBOR encodes without a tag; cbor2 would write anything beyond as a bignum (tag 2/3)."""
INT_OUT_OF_RANGE = "integer out of range for the canonical encoding (-2**64 .. 2**64-1)"


def check_text(text: str, path: tuple[str | int, ...] = (), what: str = "text") -> None:
    """Raise :class:`DataModelError` unless ``text`` is valid Unicode (no lone surrogates).

    Python strings may hold lone surrogates (JSON ``"\\ud800"``, YAML ``"\\ud800"``) that have no
    UTF-8 encoding; caught here they become a located error instead of a crash in the encoder.
    Readers check map keys with this before a key joins a field path, so every path is printable.
    """
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = ord(text[error.start])
        raise DataModelError(f"{what} is not valid Unicode (lone surrogate U+{bad:04X})", path) from None


def check_value(value: Any, path: tuple[str | int, ...] = (), depth: int = 0) -> None:
    """Raise :class:`DataModelError` unless ``value`` lies inside the canonical data model.

    Exact type checks on purpose: a ``datetime`` or a cbor2 ``frozendict`` is not a map of the
    data model, and ``bool`` is checked before ``int`` because it is a subclass of it.
    """
    if depth > MAX_DEPTH:
        raise DataModelError(f"nesting deeper than {MAX_DEPTH} levels", path)
    kind = type(value)
    if value is None or kind in (bool, bytes):
        return
    if kind is int:
        if not MIN_INT <= value <= MAX_INT:
            raise DataModelError(INT_OUT_OF_RANGE, path)
        return
    if kind is str:
        check_text(value, path)
        return
    if kind is float:
        from math import isfinite  # here: math is a module a cold gate (no float in its plan) need not load

        if not isfinite(value):
            raise DataModelError(f"{value!r} is not a finite number", path)
        return
    if kind is list or kind is tuple:
        for index, item in enumerate(value):
            check_value(item, (*path, index), depth + 1)
        return
    if kind is dict or isinstance(value, FrozenMap):
        for key, item in value.items():
            if type(key) is not str:
                raise DataModelError(f"map key {key!r} is not text", path)
            check_text(key, path, f"map key {key!r}")
            check_value(item, (*path, key), depth + 1)
        return
    raise DataModelError(f"a {kind.__name__} value is not allowed here", path)


class FrozenMap(_TextKeyed):
    """An immutable, hashable map with text keys, so values can hold maps and stay frozen."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        self._items: dict[str, Any] = dict(sorted((items or {}).items()))
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"


def freeze(value: Any) -> Any:
    """Deep-freeze plain data: lists become tuples and dicts :class:`FrozenMap` (checked first)."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item) for item in value)
    if isinstance(value, Mapping):
        return FrozenMap({key: freeze(item) for key, item in value.items()})
    return value


def thaw(value: Any) -> Any:
    """The inverse of :func:`freeze`: plain lists and dicts, ready for any encoder."""
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    return value


def encode(value: Any) -> bytes:
    """Deterministic CBOR of a data-model value (frozen or plain): RFC 8949 §4.2, as cbor2's
    ``canonical=True`` writes it. Refuses what :func:`check_value` refuses, with its located
    error: one walk encodes and checks (the check alone cost as much as the encoding), and only
    a refused value is walked again, by :func:`check_value`, to say where."""
    plain = thaw(value)
    out: list[bytes] = []
    try:
        _encode_into(plain, out, 0)
    except (DataModelError, UnicodeEncodeError) as refused:
        check_value(plain)  # raises the same refusal, located
        raise DataModelError(f"not in the data model: {refused}", ()) from None
    return b"".join(out)


def _head(major: int, argument: int) -> bytes:
    """A data item's head: its major type and the shortest form of its argument."""
    if argument < 24:
        return _SMALL_HEADS[major][argument]
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if argument < 1 << (8 * size):
            return bytes((major << 5 | info,)) + argument.to_bytes(size, "big")
    raise ValueError(INT_OUT_OF_RANGE)  # _encode_into refused it first


_SMALL_HEADS = [[bytes((major << 5 | argument,)) for argument in range(24)] for major in range(8)]
"""Every one-byte head (an argument below 24), made once: most of a plan's items have one."""


def _encode_into(value: Any, out: list[bytes], depth: int) -> None:
    """Append the encoding of ``value`` to ``out``, refusing (unlocated) what :func:`check_value`
    refuses. Thawed at the top only (:func:`thaw` leaves a plain list's items as they are): a
    tuple or FrozenMap inside a plain list, as in every envelope of a frozen body, is an array
    or map as for cbor2."""
    if depth > MAX_DEPTH:
        raise DataModelError(f"nesting deeper than {MAX_DEPTH} levels", ())
    kind = type(value)
    if kind is str:
        data = value.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError
        out += (_head(3, len(data)), data)
    elif kind is dict or kind is FrozenMap or isinstance(value, FrozenMap):
        keyed = []
        for key, item in value.items():
            if type(key) is not str:
                raise DataModelError(f"map key {key!r} is not text", ())
            data = key.encode("utf-8")
            keyed.append((_head(3, len(data)) + data, item))
        keyed.sort(key=_canonical_key_order)
        out.append(_head(5, len(keyed)))
        for key_bytes, item in keyed:
            out.append(key_bytes)
            _encode_into(item, out, depth + 1)
    elif kind is list or kind is tuple:
        out.append(_head(4, len(value)))
        for item in value:
            _encode_into(item, out, depth + 1)
    elif kind is int:
        if not MIN_INT <= value <= MAX_INT:
            raise DataModelError(INT_OUT_OF_RANGE, ())
        out.append(_head(0, value) if value >= 0 else _head(1, -1 - value))
    elif value is None:
        out.append(b"\xf6")
    elif kind is bool:
        out.append(b"\xf5" if value else b"\xf4")
    elif kind is bytes:
        out += (_head(2, len(value)), value)
    elif kind is float:
        if value - value != 0.0:  # infinite or NaN (either minus itself is NaN)
            raise DataModelError(f"{value!r} is not a finite number", ())
        out.append(_minimal_float(value))
    else:
        raise DataModelError(f"a {kind.__name__} value is not allowed here", ())


def _canonical_key_order(pair: tuple[bytes, Any]) -> tuple[int, bytes]:
    """cbor2's canonical order of encoded map keys: length first, then bytewise."""
    return len(pair[0]), pair[0]


def _minimal_float(value: float) -> bytes:
    """The shortest of double, single and half precision that holds ``value`` exactly (tried in
    that order, stopping at the first that does not), as cbor2 does."""
    import struct  # floats are rare in bgc's values: only what encodes one pays for it

    encoded = struct.pack(">Bd", 0xFB, value)
    for layout, initial in ((">Bf", 0xFA), (">Be", 0xF9)):
        try:
            shorter = struct.pack(layout, initial, value)
        except OverflowError:
            break
        if struct.unpack(layout, shorter)[1] != value:
            break
        encoded = shorter
    return encoded


def envelope(type_tag: str, version: int, body: Any) -> bytes:
    """The canonical bytes of a typed value: ``[type-tag, version, body]``."""
    return encode([type_tag, version, body])


def digest_text(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``; :class:`Digest` wraps it as a value."""
    return "sha256:" + sha256(data).hexdigest()


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True, slots=True, order=True)
class Digest:
    """A content address: ``sha256:`` followed by 64 lowercase hex digits.

    Here, beside the encoding it addresses, rather than with the work-order values
    (:mod:`bgc.core.values.model`, which re-exports it): reading a plan needs ids, not the order model."""

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not _DIGEST.fullmatch(self.text):
            raise ModelError(f"expected a digest 'sha256:' + 64 lowercase hex digits, got {self.text!r}")

    @classmethod
    def of(cls, data: bytes) -> Digest:
        return cls(digest_text(data))

    def __str__(self) -> str:
        return self.text
