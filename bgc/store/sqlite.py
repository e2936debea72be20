"""The embedded store: one SQLite file, WAL journal, one transaction per operation.

WAL lets readers run beside the one writer; ``BEGIN IMMEDIATE`` takes the write lock at the
start of a consume, so racing processes queue on the busy timeout instead of failing, and the
primary key makes a second insert of the same nonce fail inside its own transaction. A lock
held past the timeout is a :class:`~bgc.store.StoreError`: the caller denies.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

from bgc.canonical import digest_text
from bgc.store import GENESIS, StoreError

BUSY_TIMEOUT_MS = 5000
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS consumed ("
    " kind TEXT NOT NULL, key TEXT NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY (kind, key)"
    ") WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS ledger (seq INTEGER PRIMARY KEY, digest TEXT NOT NULL, entry BLOB NOT NULL)",
)


class SqliteStore:
    """A :class:`~bgc.store.Store` in the SQLite file ``path`` (created when missing)."""

    def __init__(self, path: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        try:
            self._db = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open the store {path}: {error}") from None

    def consume_once(self, kind: str, key: str, expires: int) -> bool:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("INSERT INTO consumed (kind, key, expires) VALUES (?, ?, ?)", (kind, key, expires))
            except sqlite3.IntegrityError:
                self._db.execute("ROLLBACK")
                return False
            self._db.execute("COMMIT")
            return True
        except sqlite3.Error as error:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"the store could not record a consume: {error}") from None

    def append(self, make: Callable[[int, str], bytes]) -> tuple[int, str]:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                last = self._db.execute("SELECT seq, digest FROM ledger ORDER BY seq DESC LIMIT 1").fetchone()
                seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
                data = make(seq, prev)
                digest = digest_text(data)
                self._db.execute("INSERT INTO ledger (seq, digest, entry) VALUES (?, ?, ?)", (seq, digest, data))
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return seq, digest
        except sqlite3.Error as error:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"the store could not append to the ledger: {error}") from None

    def rows(self) -> Iterator[tuple[int, str, bytes]]:
        try:
            cursor = self._db.execute("SELECT seq, digest, entry FROM ledger ORDER BY seq")
            while batch := cursor.fetchmany(1000):
                yield from ((seq, digest, bytes(entry)) for seq, digest, entry in batch)
        except sqlite3.Error as error:
            raise StoreError(f"the store could not read the ledger: {error}") from None

    def prune(self, now: int) -> int:
        try:
            with self._db:
                return self._db.execute("DELETE FROM consumed WHERE expires < ?", (now,)).rowcount
        except sqlite3.Error as error:
            raise StoreError(f"the store could not prune: {error}") from None

    def close(self) -> None:
        self._db.close()
