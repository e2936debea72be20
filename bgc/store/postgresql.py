"""The fleet store: one PostgreSQL database shared by many enforcers (``psycopg`` 3).

Install with ``pip install 'boundgraph-bgc[postgresql]'``. Same interface and the same
guarantees as the SQLite engine, across machines: a nonce is consumed by exactly one of any
number of racing enforcers (the primary key, ``INSERT … ON CONFLICT DO NOTHING``), and ledger
appends are serialised by a transaction-scoped advisory lock, so the chain has one order
whoever appends. Every failure is a :class:`~bgc.store.StoreError`: the caller denies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from bgc.canonical import digest_text
from bgc.store import GENESIS, StoreError

LEDGER_LOCK = 0x6267_635F_6C65_6467  # "bgc_ledg": the advisory lock that orders appends
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bgc_consumed (kind TEXT NOT NULL, key TEXT NOT NULL, expires BIGINT NOT NULL, PRIMARY KEY (kind, key))",
    "CREATE TABLE IF NOT EXISTS bgc_ledger (seq BIGINT PRIMARY KEY, digest TEXT NOT NULL, entry BYTEA NOT NULL)",
)


class PostgresStore:
    """A :class:`~bgc.store.Store` in the PostgreSQL database at ``url``."""

    def __init__(self, url: str, *, connect_timeout: int = 10) -> None:
        try:
            import psycopg
        except ImportError:
            raise StoreError("a postgresql:// store needs psycopg: pip install 'boundgraph-bgc[postgresql]'") from None
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        try:
            self._db: Any = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout)
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (LEDGER_LOCK,))  # one creator at a time
                for statement in _SCHEMA:
                    self._db.execute(statement)
        except self._errors as error:
            raise StoreError(f"cannot open the store {_redacted(url)}: {error}") from None

    def consume_once(self, kind: str, key: str, expires: int) -> bool:
        try:
            row = self._db.execute(
                "INSERT INTO bgc_consumed (kind, key, expires) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
                (kind, key, expires),
            ).fetchone()
        except self._errors as error:
            raise StoreError(f"the store could not record a consume: {error}") from None
        return row is not None

    def append(self, make: Callable[[int, str], bytes]) -> tuple[int, str]:
        try:
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (LEDGER_LOCK,))
                last = self._db.execute("SELECT seq, digest FROM bgc_ledger ORDER BY seq DESC LIMIT 1").fetchone()
                seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
                data = make(seq, prev)
                digest = digest_text(data)
                self._db.execute("INSERT INTO bgc_ledger (seq, digest, entry) VALUES (%s, %s, %s)", (seq, digest, data))
            return seq, digest
        except self._errors as error:
            raise StoreError(f"the store could not append to the ledger: {error}") from None

    def rows(self) -> Iterator[tuple[int, str, bytes]]:
        try:
            with self._db.cursor() as cursor:
                cursor.execute("SELECT seq, digest, entry FROM bgc_ledger ORDER BY seq")
                while batch := cursor.fetchmany(1000):
                    yield from ((seq, digest, bytes(entry)) for seq, digest, entry in batch)
        except self._errors as error:
            raise StoreError(f"the store could not read the ledger: {error}") from None

    def prune(self, now: int) -> int:
        try:
            return self._db.execute("DELETE FROM bgc_consumed WHERE expires < %s", (now,)).rowcount
        except self._errors as error:
            raise StoreError(f"the store could not prune: {error}") from None

    def close(self) -> None:
        self._db.close()


def _redacted(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
