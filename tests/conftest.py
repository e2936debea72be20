"""What every test gets without asking: a private cache, and shared inputs that are required in CI.

The cache fixture exists because the suite used to write compiled policies into the developer's
real ``~/.cache/bgc``: a test could then pass on a warm cache it did not create, and a developer's
cache filled with throwaway entries. One directory per session keeps the speed of a warm cache
between tests while isolating the run; tests that assert on the cache set their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bgc-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(_session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``BGC_CACHE_DIR`` points into this run's temporary directory (subprocesses inherit it)."""
    monkeypatch.setenv("BGC_CACHE_DIR", str(_session_cache))
