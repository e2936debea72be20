"""The kernel's state behind one small interface (docs/kernel.md, "The store").

:class:`Store` is what the runtime asks of any engine; :class:`bgc.store.sqlite.SqliteStore`
is the embedded default (one file, stdlib ``sqlite3``). The approvals and ledger issue adds its
operations and a PostgreSQL engine behind the same interface.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

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

    def close(self) -> None: ...


def open_store(location: str) -> Store:
    """The store at ``location``: a ``postgresql://`` (or ``postgres://``) URL for a fleet of
    enforcers sharing one database, else a SQLite file (its directory created when missing)."""
    if location.startswith(("postgresql://", "postgres://")):
        from bgc.store.postgresql import PostgresStore

        return PostgresStore(location)
    import os

    from bgc.store.sqlite import SqliteStore

    directory = os.path.dirname(location)
    if directory:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot create the store's directory {directory}: {error.strerror or error}") from None
    return SqliteStore(location)
