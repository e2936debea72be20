"""The malformed-policy corpus: every file is refused with exit 2, the right place, a human message.

Each file in tests/policies_bad/ starts with ``# expect: LINE:COL message fragment``. The test
loads it as a library call (a PolicyError with that span) and through ``bgc check`` (exit 2, the
location and message on the output, never a traceback).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bgc.cli import app
from bgc.policy.parser import ERROR_CODES, PolicyError, load_policy

CORPUS = Path(__file__).parent / "policies_bad"
FILES = sorted(CORPUS.glob("*.bgp"))
_HEADER = re.compile(rb"# expect: (\d+):(\d+) (.+)")


def expectation(path: Path) -> tuple[int, int, str]:
    match = _HEADER.match(path.read_bytes().split(b"\n", 1)[0])
    assert match, f"{path.name} must start with '# expect: LINE:COL fragment'"
    return int(match.group(1)), int(match.group(2)), match.group(3).decode()


def test_corpus_is_large_enough() -> None:
    assert len(FILES) >= 25


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_library_error_is_located(path: Path) -> None:
    line, col, fragment = expectation(path)
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    error = caught.value
    assert (error.span.line, error.span.col) == (line, col), error.render()
    assert fragment in error.render()
    assert error.code in ERROR_CODES
    assert error.span.file == str(path)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_check_exits_2_with_location(path: Path) -> None:
    line, col, fragment = expectation(path)
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:{col}:" in result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_caret_sits_under_the_offending_text() -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(CORPUS / "unknown-keyword.bgp")
    rendered = caught.value.render().splitlines()
    assert rendered[1] == "  alow fs:write:/src/**"
    assert rendered[2] == "  ^^^^"
    assert rendered[3] == "  hint: did you mean `allow`?"
