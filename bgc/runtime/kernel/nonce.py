"""Execution nonces: the kernel's signed, short-lived, single-use permission for one exact call.

A strict execution preflight (``bgc preflight``) checks a ToolCallRequest as ``authorize``
would, then signs ``["bgc.ExecutionNonce", 1, {nonce, request, nbf, exp}]`` with the kernel's
key: ``request`` is the digest of the capability token's identity (the digest of its whole
chain) and the request's id, tool, server and params (:func:`request_digest`), so the nonce is
good for that call under that token and no other: a holder of another token, whatever id its
links claim, cannot spend it. ``authorize``
consumes it once, in the store; a second use is a replay.
"""

from __future__ import annotations

import os
from typing import Any

from bgc.core.values import canonical
from dataclasses import dataclass
from bgc.core.values.canonical import DataModelError
from bgc.runtime.kernel import cose
from bgc.runtime.kernel.keys import PublicKey, SigningKey, b64url, from_b64url

NONCE_TAG = "bgc.ExecutionNonce"
REQUEST_TAG = "bgc.ExecutionRequest"
VERSION = 1
DEFAULT_TTL = 60
"""Seconds a nonce stays usable: a preflight is followed by its call at once."""
MAX_NONCE_TEXT = 4096


class NonceError(ValueError):
    """A nonce that is not well formed."""


@dataclass(frozen=True, slots=True)
class Nonce:
    """A nonce's claims and its envelope (signature not yet checked)."""

    nonce: str
    request: str
    nbf: int
    exp: int
    envelope: cose.Sign1

    def signed_by(self, key: PublicKey) -> bool:
        return self.envelope.kid == key.raw and self.envelope.verify(key)


def request_digest(token: str, request_id: str, tool: str, server: str, params: Any) -> str:
    """The digest a nonce is bound to: the token's identity (:attr:`bgc.runtime.kernel.token.Token.id`)
    and the request's id, tool, server and params, canonically."""
    body = {"token": token, "id": request_id, "tool": tool, "server": server, "params": params}
    return canonical.digest_text(canonical.envelope(REQUEST_TAG, VERSION, body))


def issue_nonce(request: str, key: SigningKey, *, now: int, ttl: int = DEFAULT_TTL) -> str:
    """A fresh nonce bound to the request digest ``request``, as base64url text."""
    body = {"nonce": b64url(os.urandom(16)), "request": request, "nbf": now, "exp": now + ttl}
    payload = canonical.envelope(NONCE_TAG, VERSION, body)
    return b64url(cose.sign1(payload, key, protected={cose.KID: key.public.raw}))


def read_nonce(text: Any) -> Nonce:
    """The nonce written as ``text``; :class:`NonceError` when it is not one (unverified)."""
    if type(text) is not str or len(text) > MAX_NONCE_TEXT:
        raise NonceError("an execution nonce is base64url text of bounded size")
    data = from_b64url(text)
    if data is None:
        raise NonceError("an execution nonce is unpadded base64url text")
    try:
        envelope = cose.decode_sign1(data)
        value = cose.strict_cbor(envelope.payload, "nonce")
        canonical.check_value(value)
    except (cose.CoseError, DataModelError) as error:
        raise NonceError(f"not an execution nonce: {error}") from None
    if not (type(value) is list and len(value) == 3 and value[0] == NONCE_TAG and value[1] == VERSION
            and type(value[1]) is int and type(value[2]) is dict):
        raise NonceError(f"not a {NONCE_TAG} version {VERSION}")  # fmt: skip
    body = value[2]
    kinds = {"nonce": str, "request": str, "nbf": int, "exp": int}
    if set(body) != set(kinds) or any(type(body[key]) is not kind for key, kind in kinds.items()):
        raise NonceError("an execution nonce holds exactly nonce, request (text), nbf and exp (integers)")
    return Nonce(body["nonce"], body["request"], body["nbf"], body["exp"], envelope)
