"""The store's operations, written once in the SQL both engines speak.

An engine (:mod:`bgc.runtime.store.sqlite`, :mod:`bgc.runtime.store.postgresql`) supplies a connection, its
placeholder style and one primitive, :meth:`SqlStore._write`: run a function inside a write
transaction that no other writer overlaps (SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's
transaction-scoped advisory lock). Everything else is here, so the two engines cannot drift
apart in meaning. Every database error becomes a :class:`~bgc.runtime.store.StoreError`.

An operation whose connection the engine finds lost (:meth:`SqlStore._lost`: a PostgreSQL server
restarted) runs once more on a new connection. Running it again is safe for every operation
here: a consume that had committed before the connection broke reads as already used (a deny,
never a second allow), answers and modes are kept once by their keys, and an append that had
committed leaves its entry in the chain, which the second run follows with one more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from bgc.core.values.canonical import digest_text
from bgc.runtime.store.base import GENESIS, StoreError

T = TypeVar("T")

USED_REQUEST = "permission-request"
"""The ``consume_once`` kind of a permission request whose outcome was applied to its call."""

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bgc_consumed (kind TEXT NOT NULL, key TEXT NOT NULL, expires BIGINT NOT NULL, PRIMARY KEY (kind, key))",
    "CREATE TABLE IF NOT EXISTS bgc_ledger (seq BIGINT PRIMARY KEY, digest TEXT NOT NULL, entry {blob} NOT NULL)",
    "CREATE TABLE IF NOT EXISTS bgc_requests (id TEXT PRIMARY KEY, call TEXT NOT NULL, body {blob} NOT NULL,"
    " created BIGINT NOT NULL, expires BIGINT NOT NULL, cancelled BIGINT)",
    "CREATE INDEX IF NOT EXISTS bgc_requests_call ON bgc_requests (call, expires)",
    "CREATE TABLE IF NOT EXISTS bgc_mode_decisions (session TEXT NOT NULL, id TEXT NOT NULL, body {blob} NOT NULL,"
    " PRIMARY KEY (session, id))",
    "CREATE TABLE IF NOT EXISTS bgc_answers (request TEXT NOT NULL, approver TEXT NOT NULL, decision TEXT NOT NULL,"
    " body {blob} NOT NULL, PRIMARY KEY (request, approver, decision))",
    "CREATE TABLE IF NOT EXISTS bgc_tool_pins (server TEXT NOT NULL, tool TEXT NOT NULL, digest TEXT NOT NULL,"
    " PRIMARY KEY (server, tool))",
    "CREATE TABLE IF NOT EXISTS bgc_tool_versions (server TEXT NOT NULL, tool TEXT NOT NULL, digest TEXT NOT NULL,"
    " body {blob} NOT NULL, seen BIGINT NOT NULL, PRIMARY KEY (server, tool, digest))",
)


class SqlStore:
    """A :class:`~bgc.runtime.store.Store` over a DB-API connection; see the module docstring."""

    _db: Any
    _errors: tuple[type[BaseException], ...]
    _head: tuple[int, str] | None = None
    """The last entry this connection appended or read: where its next append goes first."""
    ledger_key: str | None = None
    """The private key file the ledger's entries written through this store are signed with."""
    _signer: Any = None
    placeholder = "?"
    blob = "BLOB"

    def _sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def _run(self, text: str, params: tuple[Any, ...] = ()) -> Any:
        return self._db.execute(self._sql(text), params)

    def _write(self, work: Callable[[], T]) -> T:
        raise NotImplementedError

    def _create(self) -> None:
        for statement in SCHEMA:
            self._run(statement.format(blob=self.blob))

    def _changed(self, request_id: str) -> None:
        """A permission request was made, answered, cancelled or used, inside the write that did
        it: an engine that can tell its listeners (PostgreSQL's ``NOTIFY``) does; others are
        watched by their file."""

    def _lost(self) -> bool:
        """Whether the connection is gone (the engine connects again before the next try)."""
        return False

    def _reconnect(self) -> None:
        raise NotImplementedError

    def _connected(self, work: Callable[[], T]) -> T:
        if self._lost():
            self._reconnect()
        return work()

    def _guard(self, what: str, work: Callable[[], T]) -> T:
        try:
            return self._connected(work)
        except self._errors as error:
            if not self._lost():
                raise StoreError(f"the store could not {what}: {error}") from None
        try:  # the connection was lost: once more, on a new one
            return self._connected(work)
        except self._errors as error:
            raise StoreError(f"the store could not {what}: {error}") from None

    def signer(self) -> Any:
        """The ledger key (a :class:`~bgc.runtime.kernel.keys.SigningKey`), or None: no key, entries
        unsigned. A key named but unreadable is a :class:`StoreError`: nothing is recorded."""
        if self.ledger_key is None:
            return None
        if self._signer is None:
            from bgc.errors import BgcError
            from bgc.runtime.kernel.keys import load_private

            try:
                self._signer = load_private(self.ledger_key)
            except BgcError as error:
                raise StoreError(f"cannot load the ledger key {self.ledger_key}: {error.message}") from None
        return self._signer

    # ---- single use ------------------------------------------------------------------------------

    def consume_once(self, kind: str, key: str, expires: int) -> bool:
        def insert() -> bool:
            cursor = self._run(
                "INSERT INTO bgc_consumed (kind, key, expires) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (kind, key, expires),
            )
            if kind == USED_REQUEST and cursor.rowcount == 1:
                self._changed(key)
            return cursor.rowcount == 1

        return self._guard("record a consume", lambda: self._write(insert))

    def consumed(self, kind: str, key: str) -> bool:
        def select() -> bool:
            return (
                self._run("SELECT 1 FROM bgc_consumed WHERE kind = ? AND key = ?", (kind, key)).fetchone() is not None
            )

        return self._guard("read a consume", select)

    def prune(self, now: int) -> int:
        return self._guard(
            "prune",
            lambda: self._write(lambda: self._run("DELETE FROM bgc_consumed WHERE expires < ?", (now,)).rowcount),
        )

    # ---- the ledger --------------------------------------------------------------------------------

    def append(self, make: Callable[[int, str], bytes]) -> tuple[int, str]:
        """First optimistically: the entry after the head this connection last appended, in one
        statement; the number's primary key refuses it when another writer got there first.
        Correct because numbers are only ever taken in order (a free ``seq`` means ``seq - 1``
        is the last entry). When refused (or on the first append), the head is read and the
        entry inserted under the write lock, so contention costs a wait, not a retry loop."""

        def head() -> tuple[int, str]:
            last = self._run("SELECT seq, digest FROM bgc_ledger ORDER BY seq DESC LIMIT 1").fetchone()
            return (int(last[0]), str(last[1])) if last else (0, GENESIS)

        def insert(seq: int, prev: str) -> tuple[int, str] | None:
            data = make(seq, prev)
            digest = digest_text(data)
            cursor = self._run(
                "INSERT INTO bgc_ledger (seq, digest, entry) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (seq, digest, data),
            )
            return (seq, digest) if cursor.rowcount == 1 else None

        def locked() -> tuple[int, str]:
            while True:  # writers on the optimistic path do not wait for the lock: one may still win
                seq, prev = head()
                added = insert(seq + 1, prev)
                if added is not None:
                    return added

        def add() -> tuple[int, str]:
            if self._head is not None:  # the uncontended case: one statement
                added = insert(self._head[0] + 1, self._head[1])
                if added is not None:
                    self._head = added
                    return added
            self._head = self._write(locked)  # raced, or first append: under the write lock
            return self._head

        return self._guard("append to the ledger", add)

    def rows(self) -> Iterator[tuple[int, str, bytes]]:
        def ordered() -> Any:
            cursor = self._db.cursor()
            cursor.execute("SELECT seq, digest, entry FROM bgc_ledger ORDER BY seq")
            return cursor

        cursor = self._guard("read the ledger", ordered)
        try:
            while batch := cursor.fetchmany(1000):
                yield from ((seq, digest, bytes(entry)) for seq, digest, entry in batch)
        except self._errors as error:
            raise StoreError(f"the store could not read the ledger: {error}") from None

    # ---- permission requests -------------------------------------------------------------------------

    def put_request(self, request_id: str, call: str, body: bytes, created: int, expires: int) -> str:
        """Record a request unless a live, unused one for the same call exists; the id that stands.

        A request is used once its outcome was applied to a call (``consume_once(USED_REQUEST,
        id, …)``): the next attempt at the same call makes a new request."""

        def put() -> str:
            live = self._run(
                "SELECT id FROM bgc_requests WHERE call = ? AND expires > ? AND cancelled IS NULL"
                " AND id NOT IN (SELECT key FROM bgc_consumed WHERE kind = ?) ORDER BY created DESC, id LIMIT 1",
                (call, created, USED_REQUEST),
            ).fetchone()
            if live:
                return str(live[0])
            self._run(
                "INSERT INTO bgc_requests (id, call, body, created, expires) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (request_id, call, body, created, expires),
            )
            self._changed(request_id)
            return request_id

        return self._guard("record a permission request", lambda: self._write(put))

    def request(self, request_id: str) -> tuple[bytes, int | None] | None:
        """A request's body and when it was cancelled (None: not cancelled), or None if unknown."""
        row = self._guard(
            "read a request",
            lambda: self._run("SELECT body, cancelled FROM bgc_requests WHERE id = ?", (request_id,)).fetchone(),
        )
        return None if row is None else (bytes(row[0]), row[1])

    def requests(self, since_expiry: int) -> list[tuple[str, bytes, int | None]]:
        """Requests that expire after ``since_expiry``: id, body, cancelled time; oldest first."""
        rows = self._guard(
            "list requests",
            lambda: self._run(
                "SELECT id, body, cancelled FROM bgc_requests WHERE expires > ? ORDER BY created, id", (since_expiry,)
            ).fetchall(),
        )
        return [(str(row[0]), bytes(row[1]), row[2]) for row in rows]

    def cancel(self, request_id: str, at: int) -> bool:
        """Cancel a request (first cancellation wins); False when it is unknown."""

        def cancel() -> bool:
            if self._run(
                "UPDATE bgc_requests SET cancelled = ? WHERE id = ? AND cancelled IS NULL", (at, request_id)
            ).rowcount:
                self._changed(request_id)
            return self._run("SELECT 1 FROM bgc_requests WHERE id = ?", (request_id,)).fetchone() is not None

        return self._guard("cancel a request", lambda: self._write(cancel))

    def add_answer(self, request_id: str, approver: str, decision: str, body: bytes) -> bool:
        """Keep a signed answer; an approver's second answer of the same kind is not kept (False)."""

        def add() -> bool:
            cursor = self._run(
                "INSERT INTO bgc_answers (request, approver, decision, body) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (request_id, approver, decision, body),
            )
            if cursor.rowcount == 1:
                self._changed(request_id)
            return cursor.rowcount == 1

        return self._guard("record an answer", lambda: self._write(add))

    def answers(self, request_id: str) -> list[bytes]:
        rows = self._guard(
            "read answers",
            lambda: self._run(
                "SELECT body FROM bgc_answers WHERE request = ? ORDER BY approver, decision", (request_id,)
            ).fetchall(),
        )
        return [bytes(row[0]) for row in rows]

    # ---- modes chosen by people ----------------------------------------------------------------------

    def add_mode(self, session: str, body: bytes) -> None:
        """Keep a signed mode decision, by the digest of its bytes: every decision is kept, the
        same decision once (which one stands is decided from their signed content)."""
        self._guard("record a mode decision", lambda: self._write(lambda: self._run(
            "INSERT INTO bgc_mode_decisions (session, id, body) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (session, digest_text(body), body),
        )))  # fmt: skip

    def modes(self, session: str) -> list[bytes]:
        rows = self._guard(
            "read mode decisions",
            lambda: self._run("SELECT body FROM bgc_mode_decisions WHERE session = ? ORDER BY id", (session,)).fetchall(),
        )
        return [bytes(row[0]) for row in rows]

    # ---- MCP tool pins ---------------------------------------------------------------------------------

    def tool_pins(self, server: str) -> dict[str, str]:
        """The trusted version (its digest) of each pinned tool of ``server``."""
        rows = self._guard(
            "read tool pins",
            lambda: self._run("SELECT tool, digest FROM bgc_tool_pins WHERE server = ?", (server,)).fetchall(),
        )
        return {str(row[0]): str(row[1]) for row in rows}

    def pin_tool(self, server: str, tool: str, digest: str, replacing: str | None) -> bool:
        """Trust ``digest`` for ``tool``: on first use (``replacing`` None) only when no version is
        pinned yet; else only in place of ``replacing``. False when another got there first."""

        def pin() -> bool:
            if replacing is None:
                sql = "INSERT INTO bgc_tool_pins (server, tool, digest) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
                return bool(self._run(sql, (server, tool, digest)).rowcount == 1)
            sql = "UPDATE bgc_tool_pins SET digest = ? WHERE server = ? AND tool = ? AND digest = ?"
            return bool(self._run(sql, (digest, server, tool, replacing)).rowcount == 1)

        return self._guard("pin a tool", lambda: self._write(pin))

    def put_tool_version(self, server: str, tool: str, digest: str, body: bytes, seen: int) -> None:
        """Keep a version of a tool as a server listed it (its digest names it: kept once)."""
        self._guard("record a tool version", lambda: self._write(lambda: self._run(
            "INSERT INTO bgc_tool_versions (server, tool, digest, body, seen) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (server, tool, digest, body, seen),
        )))  # fmt: skip

    def tool_versions(self, server: str | None = None) -> list[tuple[str, str, str, bytes, int]]:
        """Kept versions (of ``server``'s tools, or of all): server, tool, digest, body, when first seen."""
        where, params = ("WHERE server = ?", (server,)) if server is not None else ("", ())
        rows = self._guard(
            "read tool versions",
            lambda: self._run(
                f"SELECT server, tool, digest, body, seen FROM bgc_tool_versions {where} ORDER BY server, tool, seen",
                params,
            ).fetchall(),
        )
        return [(str(row[0]), str(row[1]), str(row[2]), bytes(row[3]), int(row[4])) for row in rows]

    def all_tool_pins(self) -> list[tuple[str, str, str]]:
        """Every pin: server, tool, digest."""
        rows = self._guard(
            "read tool pins",
            lambda: self._run("SELECT server, tool, digest FROM bgc_tool_pins ORDER BY server, tool").fetchall(),
        )
        return [(str(row[0]), str(row[1]), str(row[2])) for row in rows]

    def close(self) -> None:
        self._db.close()
