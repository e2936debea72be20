"""What every test gets without asking: a private cache, and shared inputs that are required in CI.

The cache fixture exists because the suite used to write compiled policies into the developer's
real ``~/.cache/bgc``: a test could then pass on a warm cache it did not create, and a developer's
cache filled with throwaway entries. One directory per session keeps the speed of a warm cache
between tests while isolating the run; tests that assert on the cache set their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bgc-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(_session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``BGC_CACHE_DIR`` points into this run's temporary directory (subprocesses inherit it)."""
    monkeypatch.setenv("BGC_CACHE_DIR", str(_session_cache))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a store lives, once per engine (tests/store_support.py)."""
    from tests.store_support import fresh_postgres_database

    if request.param == "sqlite":
        yield str(tmp_path / "state" / "bgc.db")
    else:
        yield from fresh_postgres_database()
