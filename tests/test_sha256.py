"""bgc.core.values.sha256 hashes small inputs with CPython's built-in SHA-256 and large ones with hashlib:
the digests must be hashlib's whatever the size, around the switch too, and when updated."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from bgc.core.values.sha256 import SMALL, sha256


@given(st.binary(max_size=4096), st.lists(st.binary(max_size=512), max_size=4))
def test_small_inputs_hash_as_hashlib_does(data: bytes, more: list[bytes]) -> None:
    ours, theirs = sha256(data), hashlib.sha256(data)
    for chunk in more:
        ours.update(chunk)
        theirs.update(chunk)
    assert ours.digest() == theirs.digest() and ours.hexdigest() == theirs.hexdigest()


@given(st.integers(min_value=-64, max_value=64), st.binary(min_size=1, max_size=64))
def test_inputs_around_the_switch_hash_as_hashlib_does(offset: int, fill: bytes) -> None:
    data = (fill * (SMALL // len(fill) + 2))[: SMALL + offset]
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
