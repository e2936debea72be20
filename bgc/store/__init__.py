"""The kernel's state behind one small interface (docs/kernel.md, "The store").

:class:`Store` is what the runtime asks of any engine; :class:`bgc.store.sqlite.SqliteStore`
is the embedded default (one file, stdlib ``sqlite3``). The approvals and ledger issue adds its
operations and a PostgreSQL engine behind the same interface.
"""

from __future__ import annotations

from typing import Protocol


class StoreError(RuntimeError):
    """The store could not answer (locked past its timeout, unreadable, full): callers fail
    closed, a consume that could not be recorded is no consume."""


class Store(Protocol):
    """What the kernel needs from its state. Every operation is one transaction.

    Only consume-once is here today. Pending permission requests (put, answer once, cancel) and
    ledger appends (append after the last entry's hash, read in order) join it with the
    approvals/ledger issue; docs/kernel.md sketches their shape so engines are built for them.
    """

    def consume_once(self, kind: str, key: str, expires: int) -> bool:
        """Record ``(kind, key)`` as used and return True, or return False when it was already
        used: of any number of concurrent callers, across processes, exactly one gets True.
        ``expires`` (epoch seconds) is when the record may be forgotten: after it the thing
        consumed is refused by its own expiry, so forgetting it cannot re-open it."""
        ...

    def prune(self, now: int) -> int:
        """Forget records that expired before ``now``; returns how many."""
        ...

    def close(self) -> None: ...
