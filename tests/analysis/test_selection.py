"""``bgc check --select/--ignore`` and ``select``/``ignore`` in ``[tool.bgc]``, read as ruff reads them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.analysis.selection import ALL, LINT_CODES, Layer, Selection, selector_problem, selectors
from tests.samples import bgc, examples


def reference(code: str, layers: list[tuple[list[str] | None, list[str]]]) -> bool:
    """Ruff's resolution, written from its documentation: per layer, the selectors (select and
    ignore) that match the code are ranked by specificity (ALL least, then by length), an ignore
    beating a select of the same rank; the best decides. No match: a layer that selects leaves
    the code out, one that only ignores keeps the state before it."""
    on = True
    for select, ignore in layers:
        ranked = [(0 if s == ALL else len(s), 0, True) for s in select or () if s == ALL or code.startswith(s)]
        ranked += [(0 if s == ALL else len(s), 1, False) for s in ignore if s == ALL or code.startswith(s)]
        if ranked:
            on = max(ranked)[2]
        elif select is not None:
            on = False
    return on


SELECTORS = st.sampled_from([ALL, "BGC", "BGC1", "BGC10", "BGC11", "BGC101", "BGC104", "BGC12", "BGC120", "BGC5", "BGC541"])
LAYER = st.tuples(st.one_of(st.none(), st.lists(SELECTORS, max_size=3)), st.lists(SELECTORS, max_size=3))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(LAYER, max_size=3))
def test_selection_follows_ruff(layers: list[tuple[list[str] | None, list[str]]]) -> None:
    selection = Selection(tuple(Layer(tuple(s) if s is not None else None, tuple(i)) for s, i in layers))
    for code in LINT_CODES:
        assert selection.reports(code) == reference(code, layers), (code, layers)


@pytest.mark.parametrize(
    ("layers", "reported"),
    [
        ([], set(LINT_CODES)),
        ([(["ALL"], ["BGC104"])], set(LINT_CODES) - {"BGC104"}),  # ruff: --select ALL --ignore E501
        ([(["BGC104"], ["ALL"])], {"BGC104"}),  # ruff: --ignore ALL --select E501
        ([(["BGC1"], ["BGC10"])], {c for c in LINT_CODES if c.startswith("BGC1") and not c.startswith("BGC10")}),
        ([(["BGC103"], ["BGC103"])], set()),  # a tie: ignore wins
        ([(None, ["BGC103"]), (["BGC103"], [])], {"BGC103"}),  # the command line's select overrides a configured ignore
        ([(["BGC103"], []), (None, ["BGC103"])], set()),
        ([(["BGC103"], []), (None, ["BGC104"])], {"BGC103"}),  # an ignore-only layer keeps what came before
    ],
)
def test_the_cases_ruff_documents(layers: list[tuple[list[str] | None, list[str]]], reported: set[str]) -> None:
    selection = Selection(tuple(Layer(tuple(s) if s is not None else None, tuple(i)) for s, i in layers))
    assert {code for code in LINT_CODES if selection.reports(code)} == reported


def test_selectors_are_checked_and_split_at_commas() -> None:
    assert selectors(["BGC101,BGC103", " BGC1 ", ""]) == ("BGC101", "BGC103", "BGC1")
    assert selector_problem("ALL") is None and selector_problem("BGC541") is None and selector_problem("BGC") is None
    assert "selects no lint" in (selector_problem("BGC2") or "")  # expects are always reported
    assert "selects no lint" in (selector_problem("BGC0") or "")
    assert "not a code" in (selector_problem("bgc101") or "")
    assert "not a code" in (selector_problem("E501") or "")


POLICY = "tool fs.write needs fs:write:{path}\nallow fs:write:/**\ndeny fs:write:/.git/**\nexpect deny fs:write:/a\n"
"""BGC104 (line 2), BGC103 (line 3) and a failing expect, BGC201 (line 4)."""


def reported(result) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted({word.split("[")[1].split("]")[0] for word in result.stdout.split() if "[BGC" in word})


def test_through_the_command_line_and_the_configuration(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "p.bgp").write_text(POLICY)
    assert reported(bgc("check", "p.bgp", cwd=tmp_path)) == ["BGC103", "BGC104", "BGC201"]
    assert reported(bgc("check", "p.bgp", "--ignore", "BGC104", cwd=tmp_path)) == ["BGC103", "BGC201"]
    assert reported(bgc("check", "p.bgp", "--select", "BGC104", cwd=tmp_path)) == ["BGC104", "BGC201"]
    assert reported(bgc("check", "p.bgp", "--select=BGC1", "--ignore=BGC103,BGC104", cwd=tmp_path)) == ["BGC201"]
    (tmp_path / "bgc.toml").write_text('policies = ["p.bgp"]\nignore = ["BGC103"]\n')
    assert reported(bgc("check", cwd=tmp_path)) == ["BGC104", "BGC201"]
    assert reported(bgc("check", "--select", "BGC103", cwd=tmp_path)) == ["BGC103", "BGC201"]
    (tmp_path / "bgc.toml").write_text('policies = ["p.bgp"]\nselect = ["BGC1"]\nignore = "BGC10"\n')
    assert reported(bgc("check", cwd=tmp_path)) == ["BGC201"]


def test_a_selector_that_selects_no_lint_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "p.bgp").write_text(POLICY)
    refused = bgc("check", "p.bgp", "--ignore", "BGC201", cwd=tmp_path)
    assert refused.exit_code == 2 and "--ignore: 'BGC201' selects no lint" in refused.output
    (tmp_path / "bgc.toml").write_text('policies = ["p.bgp"]\nselect = ["BGC1", "BGC1O1"]\n')
    configured = bgc("check", cwd=tmp_path)
    assert configured.exit_code == 2 and "bgc.toml:2:" in configured.output and "'BGC1O1' is not a code" in configured.output
