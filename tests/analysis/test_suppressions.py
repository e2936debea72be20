"""``# bgc: ignore[BGC101]``: a lint silenced on its own line, and BGC120 for a suppression that
silences nothing (ruff's ``# noqa`` and RUF100, for policies)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.analysis.checks import check_paths
from bgc.analysis.selection import LINT_CODES
from tests.samples import examples

LINTED = """\
tool fs.write needs fs:write:{{path}}
allow fs:write:/**{a}
deny fs:write:/.git/**{b}
allow fs:write:/.git/hooks/**{c}
"""
"""Three lints, one per line: BGC104 (line 2), BGC103 (line 3), BGC101 (line 4)."""
FOUND = {2: "BGC104", 3: "BGC103", 4: "BGC101"}


def findings(tmp_path: Path, text: str) -> list[tuple[str, int]]:
    path = tmp_path / "p.bgp"
    path.write_text(text)
    return sorted((f.rule_id, f.span.line) for f in check_paths([str(path)]).findings)


def test_the_lints_of_the_fixture(tmp_path: Path) -> None:
    assert findings(tmp_path, LINTED.format(a="", b="", c="")) == sorted((code, line) for line, code in FOUND.items())


SUFFIXES = st.sampled_from(["", "  # bgc: ignore[{code}]", "  # why  # bgc: ignore[{code}]", "  #bgc:ignore[ {code} ,BGC109]"])


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(SUFFIXES, st.sampled_from(["own", "other", "not a lint", "bare", "unknown"])), min_size=3, max_size=3))
def test_a_directive_silences_exactly_what_it_names_on_its_line(tmp_path_factory: pytest.TempPathFactory, choices: list) -> None:  # type: ignore[type-arg]
    """Reference: a line's lint is silenced iff its directive names its code; every directive
    reports (BGC120, on its line) each code that silenced nothing, once (BGC109 never fires here)."""
    codes = {"own": None, "other": "BGC112", "not a lint": "BGC201", "unknown": "BGC999"}
    suffixes, expected = {}, []
    for line, (suffix, kind) in zip(FOUND, choices):
        code = FOUND[line] if kind == "own" else codes.get(kind)
        if kind == "bare" and suffix:
            suffixes[line] = "  # bgc: ignore"
            expected += [(FOUND[line], line), ("BGC120", line)]
            continue
        suffixes[line] = suffix.format(code=code)
        silenced = bool(suffix) and code == FOUND[line]
        if not silenced:
            expected.append((FOUND[line], line))
        if suffix:
            expected += [("BGC120", line)] * ((not silenced) + ("BGC109" in suffix))
    text = LINTED.format(a=suffixes[2], b=suffixes[3], c=suffixes[4])
    assert findings(tmp_path_factory.mktemp("s"), text) == sorted(expected), text


def test_the_messages_say_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "p.bgp"
    path.write_text(
        "tool fs.write needs fs:write:{path}\n"
        "allow fs:write:/**  # bgc: ignore\n"
        "deny fs:write:/x, /x/**  # bgc: ignore[BGC103]\n"
        "# bgc: ignore[BGC101]\n"
        "expect deny fs:write:/a  # bgc: ignore[BGC201, E501]\n"
    )
    found = {(f.span.line, f.message) for f in check_paths([str(path)]).findings if f.rule_id == "BGC120"}
    assert found == {
        (2, "`# bgc: ignore` names no code: it would hide every lint this line ever gets"),
        (3, "unused suppression: no BGC103 finding on this line"),
        (4, "unused suppression: no BGC101 finding on this line"),
        (5, "`BGC201` is not a lint and cannot be suppressed"),
        (5, "`E501` is not a finding code"),
    }


def test_a_failing_expect_cannot_be_suppressed(tmp_path: Path) -> None:
    text = "tool fs.write needs fs:write:{path}\nexpect allow fs:write:/a  # bgc: ignore[BGC201, BGC120]\n"
    assert findings(tmp_path, text) == [("BGC201", 2)]


def test_naming_bgc120_silences_the_findings_about_its_own_directive(tmp_path: Path) -> None:
    text = LINTED.format(a="  # bgc: ignore[BGC104, BGC103, BGC120]", b="", c="")
    assert findings(tmp_path, text) == [("BGC101", 4), ("BGC103", 3)]


def test_a_directive_inside_a_quoted_pattern_is_no_directive(tmp_path: Path) -> None:
    text = 'tool fs.write needs fs:write:{path}\nallow fs:write:"/#bgc:ignore[BGC104]/**", /**\n'
    assert findings(tmp_path, text) == [("BGC104", 2)]


def test_every_code_a_lint_reports_may_be_named() -> None:
    """LINT_CODES is what a directive and --select may name: every code a lint module reports."""
    import re

    lints = Path(__file__).parents[2] / "bgc" / "analysis" / "lints"
    import bgc.codes

    reported = {getattr(bgc.codes, name) for path in lints.glob("*.py") for name in re.findall(r"codes\.([A-Z_]+)\b", path.read_text()) if name != "CODES"}
    assert reported == set(LINT_CODES)
