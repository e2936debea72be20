"""What several test modules share: one small policy, a valid prompt digest, the one way to run
the CLI in-process, the one way to reach an input the repository does not carry, walking and
editing plain data (every field of a document, mutated one at a time), how many Hypothesis
examples a test runs, and every character of a kind (control, format, separator)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

PROMPT = "sha256:" + "ab" * 32

POLICY = """\
allow fs:read:/**
allow fs:write:/src/** because "source"
deny fs:write:/src/secrets, /src/secrets/** because "secrets"
tool fs.write needs fs:write:{path}
expect deny fs:write:/src/secrets/key
"""


def bgc(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None, app: Any = None):  # type: ignore[no-untyped-def]
    """Run the CLI in-process (from ``cwd`` when given, as a user in that directory would); a
    traceback or an unexpected exception fails the calling test. ``app`` runs another typer app
    instead of bgc's (a test's own, built as bgc's groups are).

    Every in-process CLI test goes through here (tests/app/test_cli_help.py checks that no test
    builds its own ``CliRunner``), so none can pass while printing a traceback.
    """
    from typer.testing import CliRunner

    if app is None:
        from bgc.app.cli import app

    _build_the_command_once()
    with contextlib.chdir(cwd or "."):
        result = CliRunner().invoke(app, list(args), input=input, env=env)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@functools.cache
def _build_the_command_once() -> None:
    """typer's runner turns the app into a click command on every call: for bgc's app that is
    most of the time an in-process CLI test takes (typer reads every command's signature and
    type hints again), far more than running the command. The command is the same each time, so
    the runner gets it built once per process (once per app). Every typer from 0.26 to 0.29 has
    its runner look the builder up as ``typer.testing._get_command``; the assert fails loudly if
    a new typer moves it."""
    import typer.testing

    assert callable(typer.testing._get_command), "typer.testing no longer builds the command through _get_command"
    typer.testing._get_command = functools.cache(typer.testing._get_command)


def require_shared_input(path: Path | str | None, what: str) -> Path:
    """The path of an input the repository does not carry (conformance vectors, the SARIF schema).

    Missing on a developer's machine, the test is skipped with the reason; missing under
    ``CI=true`` the test fails, because CI provides every such input and a silent skip there
    would turn a broken download into a green run.
    """
    if path is not None and Path(path).is_file():
        return Path(path)
    missing_in_ci(f"{what} is missing ({path or 'no path given'})")
    raise AssertionError("unreachable")


def missing_in_ci(message: str) -> None:
    """Skip the test with ``message``, or fail it under ``CI=true`` (where nothing may be missing)."""
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{message}; CI=true requires it")
    pytest.skip(message)


def walk(value: object, path: tuple = ()):  # type: ignore[no-untyped-def]
    """Every (path, value) pair of plain data, the container before its members."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, (*path, index))


def replaced(data: Any, path: tuple[str | int, ...], change: Any) -> Any:
    """A deep copy of ``data`` with ``change(container, last key)`` applied at ``path``."""
    out = json.loads(json.dumps(data))
    target = out
    for key in path[:-1]:
        target = target[key]
    change(target, path[-1])
    return out


def examples(n: int, *, thorough: int | None = None) -> int:
    """``n`` Hypothesis examples in the default run; under ``--hypothesis-profile thorough``
    (tests/conftest.py) ten times as many, or ``thorough`` when given (a property whose default
    count was cut to keep the default run short keeps the thorough count it had). The profile's own
    ``max_examples`` (100 by default, 1,000 when thorough) cannot reach a test that names its count."""
    if settings.default.max_examples > 100:
        return max(n * settings.default.max_examples // 100, thorough or 0)
    return n * settings.default.max_examples // 100


def characters_in(*categories: str) -> tuple[str, ...]:
    """Every code point whose Unicode general category is one of ``categories`` (of
    :data:`CHARACTER_KINDS`), in code point order: the adversarial inputs "every character of a kind"."""
    assert set(categories) <= set(CHARACTER_KINDS), categories
    by_category = _characters_by_category()
    return tuple(sorted((char for category in categories for char in by_category[category]), key=ord))


CHARACTER_KINDS = ("Cc", "Cf", "Zl", "Zp")
"""The categories :func:`characters_in` knows: controls, format characters, separators."""


@functools.cache
def _characters_by_category() -> dict[str, tuple[str, ...]]:
    """:data:`CHARACTER_KINDS`' characters by category: one scan of all 1,114,112 code points per
    process (four modules used to scan them each, at import, in every worker)."""
    kept: dict[str, list[str]] = {category: [] for category in CHARACTER_KINDS}
    for char in map(chr, range(sys.maxunicode + 1)):
        found = kept.get(unicodedata.category(char))
        if found is not None:
            found.append(char)
    return {category: tuple(chars) for category, chars in kept.items()}
