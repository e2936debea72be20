"""SHA-256 for the start-up paths: without importing :mod:`hashlib` when the input is small.

Importing hashlib loads OpenSSL's binding (``_hashlib``) and BLAKE2, about 3 ms of a cold
``bgc gate``, ``bgc hook`` or ``bgc compile`` on the machine this was measured on: more than
hashing everything such a process hashes (cache keys and entries, a small plan's id). CPython
also builds SHA-256 in (``_sha256``; ``_sha2`` from Python 3.12), slower per byte than OpenSSL
(about 13 µs per KiB there, against under 1), so :func:`sha256` hashes small inputs with it and
large ones with hashlib. SHA-256 is one function: the digest is the same either way, and each
input pays the least. No bgc imports: the hook's client (:mod:`bgc.adapters.agents.client`) uses it
before anything else is loaded.
"""

from __future__ import annotations

try:
    from _sha256 import sha256 as _builtin  # CPython 3.11
except ImportError:  # pragma: no cover - the interpreter decides which one exists
    try:
        from _sha2 import sha256 as _builtin  # type: ignore[import-not-found,no-redef]  # CPython 3.12+
    except ImportError:
        from hashlib import sha256 as _builtin  # type: ignore[assignment]  # another Python

SMALL = 256 * 1024
"""Inputs up to this many bytes are hashed by the built-in SHA-256; larger ones by hashlib, whose
import they repay (about 3 ms of import against 13 µs per KiB saved)."""


def sha256(data: bytes = b""):  # type: ignore[no-untyped-def]  # a hashlib-like object; typing costs an import
    """A SHA-256 hash object over ``data`` (``update``, ``digest``, ``hexdigest`` as hashlib's)."""
    if len(data) <= SMALL:
        return _builtin(data)
    import hashlib

    return hashlib.sha256(data)
