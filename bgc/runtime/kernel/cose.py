"""COSE_Sign1 (RFC 9052 §4.2) with EdDSA over Ed25519 (RFC 9053 §2.2, algorithm -8): the signed
envelope of capability tokens and execution nonces.

Written here rather than taken from a COSE package: bgc needs one structure and one algorithm,
and the package index's COSE library (pycose) had its last release in 2023 and pulls in more
than it would use. The signature itself is ``cryptography``'s; this module only lays out bytes,
and tests/runtime/kernel/test_cose.py checks them against the COSE working group's Ed25519 example
(cose-wg/Examples, eddsa-sig-01) byte for byte.

Decoding is strict, because every byte of a token is attacker-supplied: exactly tag 18 around
an array of four, a protected header that is a canonical map naming EdDSA, definite lengths,
no other tags, no duplicate keys, and sizes bounded before anything is decoded.
"""

from __future__ import annotations

import io
from typing import Any

import cbor2

from dataclasses import dataclass
from bgc.runtime.kernel.keys import PublicKey, SigningKey

ALG = 1
KID = 4
EDDSA = -8
SIGN1_TAG = 18
MAX_SIGN1_BYTES = 256 * 1024
"""A signed envelope larger than this is refused before it is decoded (a token is a plan's
grants, kilobytes; a nonce is a hundred bytes)."""


class CoseError(ValueError):
    """Bytes that are not a COSE_Sign1 this module accepts."""


@dataclass(frozen=True, slots=True)
class Sign1:
    """A decoded COSE_Sign1: headers, payload and signature, and the bytes that were signed."""

    protected: dict[int, Any]
    protected_bytes: bytes
    unprotected: dict[Any, Any]
    payload: bytes
    signature: bytes

    @property
    def kid(self) -> bytes | None:
        kid = self.protected.get(KID, self.unprotected.get(KID))
        return kid if type(kid) is bytes else None

    def to_be_signed(self, external_aad: bytes = b"") -> bytes:
        return sig_structure(self.protected_bytes, self.payload, external_aad)

    def verify(self, key: PublicKey, external_aad: bytes = b"") -> bool:
        """Whether the signature is ``key``'s over this envelope (the algorithm was checked on
        decoding: only EdDSA reaches here)."""
        return key.verify(self.signature, self.to_be_signed(external_aad))


def sig_structure(protected: bytes, payload: bytes, external_aad: bytes = b"") -> bytes:
    """``Sig_structure`` for a COSE_Sign1 (RFC 9052 §4.4): what the signature covers."""
    return cbor2.dumps(["Signature1", protected, external_aad, payload], canonical=True)


def sign1(
    payload: bytes,
    key: SigningKey,
    *,
    protected: dict[int, Any] | None = None,
    unprotected: dict[int, Any] | None = None,
    external_aad: bytes = b"",
) -> bytes:
    """The tagged COSE_Sign1 of ``payload`` signed by ``key``.

    The protected header is ``{1: -8}`` plus ``protected`` (bgc puts the signer's public key
    there as its ``kid``, so the key is covered by the signature), encoded canonically.
    """
    header = {ALG: EDDSA, **(protected or {})}
    protected_bytes = cbor2.dumps(header, canonical=True)
    signature = key.sign(sig_structure(protected_bytes, payload, external_aad))
    return cbor2.dumps(
        cbor2.CBORTag(SIGN1_TAG, [protected_bytes, unprotected or {}, payload, signature]), canonical=True
    )


def decode_sign1(data: bytes, *, allow_unprotected: bool = False) -> Sign1:
    """The COSE_Sign1 in ``data``; :class:`CoseError` for anything else (see the module doc).

    The unprotected header is not signed, so bgc's envelopes leave it empty and a non-empty one
    is refused unless ``allow_unprotected`` (only to read other producers' examples).
    """
    if type(data) is not bytes:
        raise CoseError("expected bytes")
    if len(data) > MAX_SIGN1_BYTES:
        raise CoseError(f"larger than {MAX_SIGN1_BYTES:,} bytes")
    if not data.startswith(b"\xd2"):  # tag 18 in one byte: the only spelling canonical CBOR has
        raise CoseError("not a tagged COSE_Sign1 (tag 18)")
    body = strict_cbor(data[1:], "COSE_Sign1")
    if type(body) is not list or len(body) != 4:
        raise CoseError("a COSE_Sign1 is an array of four items")
    protected_bytes, unprotected, payload, signature = body
    if type(protected_bytes) is not bytes or type(payload) is not bytes or type(signature) is not bytes:
        raise CoseError("protected header, payload and signature must be byte strings")
    if type(unprotected) is not dict:
        raise CoseError("the unprotected header must be a map")
    if unprotected and not allow_unprotected:
        raise CoseError("the unprotected header must be empty (nothing unsigned is read)")
    protected = strict_cbor(protected_bytes, "protected header") if protected_bytes else {}
    if type(protected) is not dict:
        raise CoseError("the protected header must be a map")
    if protected.get(ALG) != EDDSA or type(protected.get(ALG)) is not int or ALG in unprotected:
        raise CoseError("the protected header must name the algorithm EdDSA (-8), and only there")
    if len(signature) != 64:
        raise CoseError("an Ed25519 signature is 64 bytes")
    return Sign1(protected, protected_bytes, unprotected, payload, signature)


def strict_cbor(data: bytes, what: str) -> Any:
    """One canonical CBOR item, all of ``data``: it must re-encode to the very same bytes, which
    refuses indefinite lengths, non-shortest forms, unsorted or duplicate keys and (since the
    caller checks kinds) every tag cbor2 would turn into a Python value."""
    stream = io.BytesIO(data)
    try:
        value = cbor2.CBORDecoder(stream, allow_indefinite=False, allow_duplicate_keys=False, max_depth=70).decode()
        again = cbor2.dumps(value, canonical=True)
    except (cbor2.CBORError, ValueError, TypeError, OverflowError, RecursionError) as error:
        raise CoseError(f"invalid CBOR in the {what}: {error}") from None
    if again != data:
        raise CoseError(f"the {what} is not canonical CBOR (RFC 8949 §4.2)")
    return value
