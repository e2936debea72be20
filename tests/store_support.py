"""Stores to test against: a SQLite file, and a fresh database on the PostgreSQL server named by
``BGC_TEST_POSTGRES`` (.ci/run starts one; locally: ``eval "$(bash .ci/postgres start DIR)"``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

from tests.samples import missing_in_ci


def fresh_postgres_database() -> Iterator[str]:
    """The URL of a new, empty database, dropped afterwards."""
    server = os.environ.get("BGC_TEST_POSTGRES")
    if not server:
        missing_in_ci("BGC_TEST_POSTGRES names no PostgreSQL server (.ci/postgres starts one)")
    import psycopg

    name = "bgc_test_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = server.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
