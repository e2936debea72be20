"""The fleet store: one PostgreSQL database shared by many enforcers (``psycopg`` 3).

Install with ``pip install 'boundgraph-bgc[postgresql]'``. Same operations and the same
guarantees as the SQLite engine (they share :mod:`bgc.runtime.store.sql`), across machines: writes are
serialised by a transaction-scoped advisory lock, so a nonce is consumed by exactly one of any
number of racing enforcers and the ledger has one order whoever appends. Every failure is a
:class:`~bgc.runtime.store.StoreError`: the caller denies.

A long-lived enforcer (the decision server, the MCP proxy, ``bgc authorize`` reading a stream)
keeps one connection, which a server restart breaks. An operation that finds its connection
lost connects again and runs once more; while the server is down, that connect fails and the
operation is a :class:`~bgc.runtime.store.StoreError` (a deny), and the first operation after the
server is back succeeds on a new connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from bgc.runtime.store.base import StoreError
from bgc.runtime.store.sql import SqlStore

T = TypeVar("T")

WRITE_LOCK = 0x6267_635F_7374_6F72  # "bgc_stor": the advisory lock every write holds
CHANNEL = "bgc_approvals"
"""Notified (with the request's id) in the transaction that makes, answers, cancels or uses a
permission request: delivered when it commits, to every enforcer and page that listens."""


class PostgresStore(SqlStore):
    """A :class:`~bgc.runtime.store.Store` in the PostgreSQL database at ``url``."""

    placeholder = "%s"
    blob = "BYTEA"

    def __init__(self, url: str, *, connect_timeout: int = 10) -> None:
        try:
            import psycopg
        except ImportError:
            raise StoreError("a postgresql:// store needs psycopg: pip install 'boundgraph-bgc[postgresql]'") from None
        self._errors = (psycopg.Error,)
        self._connect = lambda: psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout)
        try:
            self._db = self._connect()
            self._write(self._create)
        except psycopg.Error as error:
            raise StoreError(f"cannot open the store {_redacted(url)}: {error}") from None

    def _lost(self) -> bool:
        return bool(self._db.closed or self._db.broken)

    def _reconnect(self) -> None:
        """A new connection in place of the lost one; the tables exist already."""
        self._db.close()
        self._db = self._connect()
        self._head = None  # another enforcer may have appended while this one was cut off

    def _changed(self, request_id: str) -> None:
        self._db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, request_id))

    def _write(self, work: Callable[[], T]) -> T:
        with self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            return work()


def _redacted(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class Listener:
    """Wakes on :data:`CHANNEL`: every page and every enforcer of a fleet that holds a call
    learns of an answer when it commits, instead of reading the store again and again. Its
    own connection (a listening connection runs no other statement). Lost, it connects again;
    while it cannot, :meth:`wait` returns at once, and the caller reads the store as it would
    without it (fail closed: a missed wake is a later read, never an allow)."""

    def __init__(self, url: str, *, connect_timeout: int = 10) -> None:
        import psycopg

        self._errors = (psycopg.Error,)
        self._connect = lambda: psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout)
        self._db = None
        try:
            self._listen()
        except psycopg.Error as error:
            raise StoreError(f"cannot listen on the store {_redacted(url)}: {error}") from None

    def _listen(self) -> None:
        self._db = self._connect()
        self._db.execute(f"LISTEN {CHANNEL}")

    def wait(self, seconds: float) -> bool:
        """Up to ``seconds`` for a notification (True), or False when none came."""
        import time

        try:
            if self._db is None or self._db.closed or self._db.broken:
                self._listen()
            assert self._db is not None
            for _ in self._db.notifies(timeout=seconds, stop_after=1):
                return True
            return False
        except self._errors:
            if self._db is not None:
                self._db.close()
            self._db = None
            time.sleep(min(seconds, 1.0))  # the server is away: a read will tell
            return True

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def listener(url: str) -> Listener:
    """A :class:`Listener` on the PostgreSQL store at ``url``."""
    return Listener(url)
