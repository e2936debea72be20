"""COSE_Sign1 against the COSE working group's Ed25519 example, and strict decoding."""

from __future__ import annotations

import cbor2
import pytest

from bgc.runtime.kernel import cose
from bgc.runtime.kernel.keys import PublicKey, SigningKey

# cose-wg/Examples, eddsa-examples/eddsa-sig-01.json ("EdDSA-01: EdDSA - 25519 - sign0"); the key
# is RFC 8032 §7.1's TEST 1 key, the protected header {1: -8, 3: 0}, the unprotected {4: '11'}.
D = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
X = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
TO_BE_SIGNED = bytes.fromhex("846A5369676E61747572653145A2012703004054546869732069732074686520636F6E74656E742E")
EXPECTED = bytes.fromhex(
    "D28445A201270300A10442313154546869732069732074686520636F6E74656E742E5840"
    "7142FD2FF96D56DB85BEE905A76BA1D0B7321A95C8C4D3607C5781932B7AFB8711497DFA751BF40B58B3BCC32300B1487F3DB34085EEF013BF08F4A44D6FEF0D"
)
PLAINTEXT = b"This is the content."


def test_sign1_matches_the_cose_wg_example_byte_for_byte() -> None:
    key = SigningKey.from_seed(D)
    assert key.public.raw == X
    produced = cose.sign1(PLAINTEXT, key, protected={3: 0}, unprotected={4: b"11"})
    assert produced == EXPECTED
    decoded = cose.decode_sign1(EXPECTED, allow_unprotected=True)
    assert decoded.to_be_signed() == TO_BE_SIGNED
    assert decoded.verify(PublicKey(X))
    assert decoded.payload == PLAINTEXT and decoded.kid == b"11"


def test_a_changed_byte_anywhere_never_verifies() -> None:
    signed = cose.sign1(PLAINTEXT, SigningKey.from_seed(D), protected={cose.KID: X})
    for index in range(len(signed)):
        changed = bytearray(signed)
        changed[index] ^= 0x01
        try:
            decoded = cose.decode_sign1(bytes(changed))
        except cose.CoseError:
            continue
        assert not decoded.verify(PublicKey(X)), index


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (cbor2.dumps([b"\xa1\x01\x27", {}, b"x", bytes(64)]), "untagged"),
        (cbor2.dumps(cbor2.CBORTag(98, [b"\xa1\x01\x27", {}, b"x", bytes(64)])), "COSE_Sign, not Sign1"),
        (cbor2.dumps(cbor2.CBORTag(18, [b"\xa1\x01\x26", {}, b"x", bytes(64)])), "ES256, not EdDSA"),
        (cbor2.dumps(cbor2.CBORTag(18, [b"", {1: -8}, b"x", bytes(64)])), "algorithm unprotected"),
        (cbor2.dumps(cbor2.CBORTag(18, [b"\xa1\x01\x27", {}, b"x", bytes(63)])), "short signature"),
        (cbor2.dumps(cbor2.CBORTag(18, [b"\xa1\x01\x27", {}, b"x"])), "three items"),
        (cbor2.dumps(cbor2.CBORTag(18, [b"\xa1\x01\x27", {}, "x", bytes(64)])), "text payload"),
        (b"\xd2\x9f" + cbor2.dumps(b"\xa1\x01\x27") + b"\xa0\x41x" + cbor2.dumps(bytes(64)) + b"\xff", "indefinite"),
        (b"\xd2\x84\x43\xa1\x01\x27\xa0\x58\x01x" + cbor2.dumps(bytes(64)), "non-shortest length"),
        (cbor2.dumps(cbor2.CBORTag(18, [b"\xa1\x01\x27", {}, b"x", bytes(64)])) + b"\x00", "trailing byte"),
        (EXPECTED, "unprotected header (unsigned) not empty"),
        (b"\xd2" + b"\x84" * 10_000, "deep nesting"),
        (b"\xd2" + bytes(cose.MAX_SIGN1_BYTES), "too large"),
    ],
)
def test_decoding_refuses(data: bytes, why: str) -> None:
    with pytest.raises(cose.CoseError):
        cose.decode_sign1(data)
