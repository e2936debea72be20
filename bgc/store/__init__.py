"""The kernel's state behind one small interface (docs/kernel.md, "The store").

:class:`Store` is what the runtime asks of any engine; :class:`bgc.store.sqlite.SqliteStore`
is the embedded default (one file, stdlib ``sqlite3``). The approvals and ledger issue adds its
operations and a PostgreSQL engine behind the same interface.
"""

from __future__ import annotations

from bgc.store.base import GENESIS, Store, StoreError

__all__ = ["GENESIS", "Store", "StoreError", "open_store"]


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
