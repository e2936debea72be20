"""The embedded store: one SQLite file, WAL journal, one transaction per operation.

WAL lets readers run beside the one writer; ``BEGIN IMMEDIATE`` takes the write lock at the
start of every write, so racing processes queue on the busy timeout instead of failing, and a
primary key refuses a second insert of the same nonce inside its own transaction. A lock held
past the timeout is a :class:`~bgc.runtime.store.StoreError`: the caller denies.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

from bgc.runtime.store.base import StoreError
from bgc.runtime.store.sql import SqlStore

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000


SCHEMA_VERSION = 3
"""Kept in the file's ``user_version``: a store opened again skips creating its tables (a write
transaction on every open was most of a hook's store cost)."""


class SqliteStore(SqlStore):
    """A :class:`~bgc.runtime.store.Store` in the SQLite file ``path`` (created when missing)."""

    _errors = (sqlite3.Error,)

    def __init__(self, path: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, durable: bool = False) -> None:
        """``durable``: every commit is on disk before it returns (``synchronous = FULL``: one
        fsync of the write-ahead log per commit). Otherwise (``NORMAL``) a commit survives a
        crash of the process but may be lost with the machine until the log is checkpointed —
        which the last connection to close does, so a one-shot process that is the only user of
        the file is durable when it exits, but not one that shares the file with a long-lived
        connection (a decision server's), nor a long-lived connection itself."""
        try:
            # one thread uses a connection at a time, but the one that closes it may be another
            # (the MCP proxy closes its threads' stores when it exits)
            self._db = sqlite3.connect(
                path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            if self._db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                self._write(self._create_versioned)  # a new file (or an older layout): one write, once
        except sqlite3.Error as error:
            raise StoreError(f"cannot open the store {path}: {error}") from None

    def _create_versioned(self) -> None:
        self._create()
        self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _write(self, work: Callable[[], T]) -> T:
        # BEGIN and COMMIT inside the try: an exception that comes between statements (the
        # hook's deadline, by SIGALRM) must not leave the transaction, and its write lock, open
        # on a connection the decision server keeps
        try:
            self._db.execute("BEGIN IMMEDIATE")
            result = work()
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        return result
