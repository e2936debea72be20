"""The kernel's state behind one small interface (docs/kernel.md, "The store").

:class:`Store` is what the runtime asks of any engine; :class:`bgc.runtime.store.sqlite.SqliteStore`
is the embedded default (one file, stdlib ``sqlite3``). The approvals and ledger issue adds its
operations and a PostgreSQL engine behind the same interface.
"""

from __future__ import annotations

from bgc.runtime.store.base import GENESIS, Store, StoreError

__all__ = ["GENESIS", "URLS", "Store", "StoreError", "open_store", "store_exists"]

URLS = ("postgresql://", "postgres://")
"""How a store that is a database (PostgreSQL), not a SQLite file, is named."""


def store_exists(location: str) -> bool:
    """Whether there is a store at ``location`` to read (a database URL is taken as existing)."""
    import os

    return location.startswith(URLS) or os.path.isfile(location)


LEDGER_KEY_VARIABLE = "BGC_LEDGER_KEY"
"""Names the private key file every ledger entry written through a store is signed with."""


def open_store(location: str, *, create: bool = True, durable: bool = False) -> Store:
    """The store at ``location``: a ``postgresql://`` (or ``postgres://``) URL for a fleet of
    enforcers sharing one database, else a SQLite file (its directory created when missing).
    ``create=False`` (commands that only read or answer what is there) refuses a SQLite file
    that does not exist instead of making one. ``durable``: a SQLite store's every commit is on
    disk before it returns (:class:`~bgc.runtime.store.sqlite.SqliteStore`; PostgreSQL's always is).
    The ledger entries written through it are signed with the key file ``$BGC_LEDGER_KEY`` names
    (docs/ledger.md, "Signed entries"), when it names one."""
    import os

    store = _engine(location, create=create, durable=durable)
    store.ledger_key = os.environ.get(LEDGER_KEY_VARIABLE) or None
    return store


def _engine(location: str, *, create: bool, durable: bool) -> Store:
    if location.startswith(URLS):
        from bgc.runtime.store.postgresql import PostgresStore

        return PostgresStore(location)
    import os

    from bgc.core.values.files import make_directories
    from bgc.runtime.store.sqlite import SqliteStore

    if not create and not store_exists(location):
        raise StoreError(f"no store at {location} (an enforcer makes it when it first records a decision)")
    directory = os.path.dirname(location)
    if directory:
        try:
            make_directories(directory)
        except OSError as error:
            raise StoreError(f"cannot create the store's directory {directory}: {error.strerror or error}") from None
    return SqliteStore(location, durable=durable)
