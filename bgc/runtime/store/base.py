"""What every store engine shares: the interface, its error, the ledger's genesis digest.

Apart from :mod:`bgc.runtime.store` (which picks an engine by location) so that the engines import
this module and never the package that imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

GENESIS = "sha256:" + "0" * 64
"""The ``prev`` of a ledger's first entry."""


class StoreError(RuntimeError):
    """The store could not answer (locked past its timeout, unreadable, full): callers fail
    closed, a consume that could not be recorded is no consume."""


class Store(Protocol):
    """What the kernel needs from its state. Every operation is one transaction.

    Consume-once (nonces) and the ledger (append after the last entry's hash, read in order) are
    here; pending permission requests join with approvals.
    """

    def consume_once(self, kind: str, key: str, expires: int) -> bool:
        """Record ``(kind, key)`` as used and return True, or return False when it was already
        used: of any number of concurrent callers, across processes, exactly one gets True.
        ``expires`` (epoch seconds) is when the record may be forgotten: after it the thing
        consumed is refused by its own expiry, so forgetting it cannot re-open it."""
        ...

    def consumed(self, kind: str, key: str) -> bool:
        """Whether ``(kind, key)`` was used already (a preflight asks, without using it)."""
        ...

    def append(self, make: Callable[[int, str], bytes]) -> tuple[int, str]:
        """Append one ledger entry after the last one, atomically across processes: ``make(seq,
        prev)`` builds the entry's bytes from its number and the previous entry's digest (the
        genesis digest for the first); returns the new entry's number and digest."""
        ...

    def rows(self) -> Iterator[tuple[int, str, bytes]]:
        """Every ledger row in order: number, digest as stored, bytes as stored."""
        ...

    def prune(self, now: int) -> int:
        """Forget records that expired before ``now``; returns how many."""
        ...

    ledger_key: str | None
    """The private key file this store's ledger entries are signed with (None: unsigned)."""

    def signer(self) -> Any:
        """The loaded ledger key, or None; :class:`StoreError` when it cannot be loaded."""
        ...

    def close(self) -> None: ...
