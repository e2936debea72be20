"""The malformed-policy corpus: every file is refused with exit 2, the right place, a human message.

Each file in tests/policies_bad/ starts with ``# expect: LINE:COL message fragment``. The test
loads it as a library call (a PolicyError with that span) and through ``bgc check`` (exit 2, the
location and message on the output, never a traceback).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.codes import CODES
from bgc.core.policy.format import format_text
from bgc.core.policy.loader import load_policy, parse_policy
from bgc.core.policy.parser import PolicyError
from tests.samples import bgc, examples

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "policies_bad"
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
    assert error.code in CODES and error.code < "BGC100"
    assert error.span.file == str(path)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_check_exits_2_with_location(path: Path) -> None:
    line, col, fragment = expectation(path)
    result = bgc("check", str(path))
    assert result.exit_code == 2, result.output
    # this repository's bgc.toml is in play, so the absolute path given is shown from its root
    assert f"{path.relative_to(ROOT).as_posix()}:{line}:{col}:" in result.output
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


# ---- no input crashes the front end -------------------------------------------------------

_PIECES = [
    "allow", "ask", "deny", "tool", "needs", "mode", "default", "include", "expect", "filesystem",
    "case-insensitive", "when", "because", "approvals", "of", "in", "and", "or", "not", "matches",
    "intent.kind", "origin.model", "call.tool", "fs:write:/src/**", "*:*:/x", '"a b"', '"', "{", "}",
    "[", "]", "(", ")", ",", "==", "!=", "#c", "\n", "  ", "{path}", "fs:read:{p}", "2", "\\", "/**",
    "\x00", "\t", "\r", "é",
]  # fmt: skip


@settings(max_examples=examples(200, thorough=4000), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=3)), max_size=30).map(" ".join))
def test_any_text_is_a_policy_or_a_located_error(text: str) -> None:
    """Whatever the text: a Policy (which then formats idempotently) or a PolicyError with a
    real line and column, never another exception."""
    try:
        parse_policy(text, "/nonexistent-bgc-dir/f.bgp")
    except PolicyError as error:
        assert error.span is not None and error.span.line >= 1 and error.span.col >= 1
        assert error.render()
        return
    formatted = format_text(text, "f.bgp")
    assert format_text(formatted, "f.bgp") == formatted
