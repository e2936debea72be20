"""What every test gets without asking: a private cache, Hypothesis profiles, the ``e2e`` mark for
every test in tests/e2e, and an order that lets parallel workers finish together.

The cache fixture exists because the suite used to write compiled policies into the developer's
real ``~/.cache/bgc``: a test could then pass on a warm cache it did not create, and a developer's
cache filled with throwaway entries. One directory per session (per worker under pytest-xdist)
keeps the speed of a warm cache between tests while isolating the run; tests that assert on the
cache set their own.

Hypothesis: the ``default`` profile (the run CI makes) has no deadline, since a deadline on a
shared or loaded machine fails a correct test, and prints the blob that replays a failure, since
examples are random; ``--hypothesis-profile thorough`` runs ten times the examples
(tests/samples.py ``examples``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("default", deadline=None, print_blob=True)
settings.register_profile("thorough", settings.get_profile("default"), max_examples=1000)
settings.load_profile("default")  # the plugin loads --hypothesis-profile after this file


E2E = Path(__file__).parent / "e2e"


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by mark
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in tests/e2e is marked ``e2e``: the inner loop, ``-m "not e2e"``, leaves them
    out (tests/test_e2e_marker.py makes every other test that starts a process carry the mark).

    Tests marked ``first`` start before the rest (the order is otherwise kept): they are the
    longest (pip installing the pre-commit hooks, the hook tables with a process per call), and a
    long test started last keeps the other workers waiting for it at the end of the run."""
    for item in items:
        if item.path.is_relative_to(E2E):
            item.add_marker(pytest.mark.e2e)
    items.sort(key=lambda item: item.get_closest_marker("first") is None)


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bgc-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(_session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``BGC_CACHE_DIR`` points into this run's temporary directory (subprocesses inherit it)."""
    monkeypatch.setenv("BGC_CACHE_DIR", str(_session_cache))


@pytest.fixture(autouse=True)
def _isolated_config(_session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``XDG_CONFIG_HOME`` points into this run's temporary directory: `bgc init` makes the user's
    approver key there, never in the home directory of whoever runs the tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(_session_cache.parent / "config"))


@pytest.fixture(autouse=True)
def _this_bgc_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hooks a team shares start the ``bgc`` on ``PATH`` (bgc/app/commands/launcher.py): the
    one found first is this installation's script, beside its interpreter, as for a user who
    installed bgc and runs it by name (tests of another ``PATH`` set their own)."""
    here = os.path.dirname(sys.executable)
    if os.path.isfile(os.path.join(here, "bgc")):
        monkeypatch.setenv("PATH", here + os.pathsep + os.environ.get("PATH", ""))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a store lives, once per engine (tests/store_support.py)."""
    from tests.store_support import fresh_postgres_database

    if request.param == "sqlite":
        yield str(tmp_path / "state" / "bgc.db")
    else:
        yield from fresh_postgres_database()
