"""Ed25519 keys: making them, their files, their public text form, and who is trusted.

The cryptography is PyCA's ``cryptography`` (OpenSSL's Ed25519); nothing here computes a
signature by hand. A private key lives in a PKCS#8 PEM file that only its owner may read (mode
0600), created exclusively and atomically: an existing key is never overwritten, and a failure
leaves no half-written file. A public key is written as text, ``ed25519:<base64url>`` (the 32
raw bytes, unpadded), which is what policies and `bgc key show` print.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from dataclasses import dataclass
from bgc.errors import InputError, Span, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

PUBLIC_PREFIX = "ed25519:"
KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A key's name: also its file name, so no separator, no leading dot, nothing to escape."""
_B64URL = re.compile(r"[A-Za-z0-9_-]{43}")


class KeyError_(InputError):
    """A key file or a public key text that is not what it should be."""


def b64url(data: bytes) -> str:
    """Unpadded base64url (RFC 4648 §5), the text form of every binary value bgc prints."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_b64url(text: str) -> bytes | None:
    """The bytes of unpadded base64url text, or None when it is not exactly that (no padding, no
    whitespace, no other alphabet, and the canonical form: re-encoding gives the same text)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text) or len(text) % 4 == 1:
        return None
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return data if b64url(data) == text else None


@dataclass(frozen=True, slots=True)
class PublicKey:
    """An Ed25519 public key: its 32 raw bytes."""

    raw: bytes

    def __post_init__(self) -> None:
        if type(self.raw) is not bytes or len(self.raw) != 32:
            raise ValueError("an Ed25519 public key is 32 bytes")

    @property
    def text(self) -> str:
        return PUBLIC_PREFIX + b64url(self.raw)

    def __str__(self) -> str:
        return self.text

    def verify(self, signature: bytes, data: bytes) -> bool:
        """Whether ``signature`` is this key's Ed25519 signature of ``data`` (never raises)."""
        return _verifier(self.raw)(signature, data)


def parse_public(text: str) -> PublicKey | str:
    """The key written ``ed25519:<43 base64url characters>``, or why ``text`` is not one."""
    if not text.startswith(PUBLIC_PREFIX):
        return f"expected a public key 'ed25519:<base64url>', got {text[:60]!r}"
    body = text[len(PUBLIC_PREFIX) :]
    raw = from_b64url(body) if _B64URL.fullmatch(body) else None
    if raw is None or len(raw) != 32:
        return "the public key is not 32 bytes of unpadded base64url (43 characters)"
    try:
        _load_public(raw)
    except ValueError:
        return "the public key is not a point of Ed25519"
    return PublicKey(raw)


def _load_public(raw: bytes):  # type: ignore[no-untyped-def]
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return Ed25519PublicKey.from_public_bytes(raw)


_VERIFIERS: dict[bytes, object] = {}


def _verifier(raw: bytes):  # type: ignore[no-untyped-def]
    """A verify function for the key ``raw``, kept: loading a key costs as much as a verify."""
    found = _VERIFIERS.get(raw)
    if found is None:
        from cryptography.exceptions import InvalidSignature

        try:
            key = _load_public(raw)
        except ValueError:
            return lambda signature, data: False

        def verify(signature: bytes, data: bytes) -> bool:
            try:
                key.verify(signature, data)
            except InvalidSignature:
                return False
            return True

        if len(_VERIFIERS) > 1024:  # bounded: a stream of messages may name many keys
            _VERIFIERS.clear()
        _VERIFIERS[raw] = found = verify
    return found  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A private key and its public half; ``repr`` never shows the secret."""

    private: Ed25519PrivateKey
    public: PublicKey
    name: str = ""

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)

    def __repr__(self) -> str:
        return f"SigningKey({self.name!r}, {self.public.text})"

    @classmethod
    def generate(cls, name: str = "") -> SigningKey:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return cls._of(Ed25519PrivateKey.generate(), name)

    @classmethod
    def from_seed(cls, seed: bytes, name: str = "") -> SigningKey:
        """The key whose 32-byte secret seed is ``seed`` (RFC 8032 §5.1.5)."""
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return cls._of(Ed25519PrivateKey.from_private_bytes(seed), name)

    @classmethod
    def _of(cls, private: Ed25519PrivateKey, name: str) -> SigningKey:
        return cls(private, PublicKey(private.public_key().public_bytes_raw()), name)

    def seed(self) -> bytes:
        return self.private.private_bytes_raw()

    def pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def key_paths(name: str, directory: str) -> tuple[Path, Path]:
    """Where key ``name`` lives: ``DIR/NAME.key`` (private) and ``DIR/NAME.pub`` (public text)."""
    if not KEY_NAME.fullmatch(name):
        raise UsageError(f"a key name is 1 to 64 of [A-Za-z0-9_.-], not starting with '.' or '-'; got {name!r}")
    return Path(directory, f"{name}.key"), Path(directory, f"{name}.pub")


def create_exclusive(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a new file ``path`` with ``mode``, all or nothing, never replacing one.

    The bytes go to a temporary file (created 0600 by mkstemp, then chmod-ed) beside the
    target, which is then hard-linked into place: the link fails when ``path`` exists (the
    exclusive create of O_EXCL, but of a complete file), and readers never see it half-written.
    """
    import tempfile

    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.link(temporary, path)
    finally:
        os.unlink(temporary)


def new_key(name: str, directory: str) -> SigningKey:
    """Make key ``name`` in ``directory``: the private file (0600) first, then the public one.

    Refuses (nothing written) when either file exists. Returns the key; callers print only its
    public half.
    """
    private_path, public_path = key_paths(name, directory)
    if not os.path.isdir(directory):
        raise UsageError(f"no such directory {directory!r}")
    for path in (private_path, public_path):
        if os.path.lexists(path):
            raise UsageError(f"{path} exists; a key is never overwritten (choose another name or remove it)")
    key = SigningKey.generate(name)
    try:
        create_exclusive(private_path, key.pem(), 0o600)
    except FileExistsError:
        raise UsageError(f"{private_path} exists; a key is never overwritten") from None
    try:
        create_exclusive(public_path, (key.public.text + "\n").encode(), 0o644)
    except BaseException:
        private_path.unlink(missing_ok=True)
        raise
    return key


def load_private(path: str) -> SigningKey:
    """The private key in the PEM file ``path``; refuses one that others may read."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from bgc.core.values.files import read_bounded

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise KeyError_("no such key file", Span(path)) from None
    if mode & 0o077:
        raise KeyError_(
            f"the private key file is readable by others (mode {mode & 0o777:o})",
            Span(path),
            hint=f"chmod 600 {path}",
        )
    data = read_bounded(path, error=KeyError_)
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise KeyError_(f"not an unencrypted PKCS#8 PEM private key ({error})", Span(path)) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise KeyError_("not an Ed25519 private key", Span(path))
    return SigningKey._of(private, Path(path).stem)


def load_public(path_or_text: str) -> PublicKey:
    """A public key given as its text, or as a ``.pub``/``.key`` file holding or implying it."""
    if path_or_text.startswith(PUBLIC_PREFIX):
        parsed = parse_public(path_or_text)
        if isinstance(parsed, str):
            raise KeyError_(parsed)
        return parsed
    if path_or_text.endswith(".key"):
        return load_private(path_or_text).public
    from bgc.core.values.files import read_bounded

    text = read_bounded(path_or_text, error=KeyError_).decode("utf-8", "replace").strip()
    parsed = parse_public(text)
    if isinstance(parsed, str):
        raise KeyError_(parsed, Span(path_or_text, 1, 1), source=text)
    return parsed
