"""Characters that make what a reviewer reads differ from what bgc reads are refused.

A lone carriage return inside a comment hides the rule after it from bgc while an editor shows
that rule on its own line; a right-to-left override reorders how a line is displayed; a
zero-width space makes a pattern differ from the one on screen; an escape sequence can redraw a
terminal. The class is generated from Unicode's own categories (every control, format, line and
paragraph separator character, except TAB and the newline) and every member is tried in every
place text can stand: a comment, a reason string, a bare pattern, a quoted pattern, an include
path, the start and the end of a line. Each must be refused (BGC017) at its line and column, with
the character named and never echoed raw, and the policy must not load.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from bgc.codes import CODES
from bgc.core.policy.format import format_text
from bgc.core.policy.loader import load_policy, parse_policy
from bgc.core.policy.parser import PolicyError, parse_source
from tests.samples import bgc, characters_in

HIDDEN = [char for char in characters_in("Cc", "Cf", "Zl", "Zp") if char not in "\t\n"]
"""Every control, format, line separator and paragraph separator character but TAB and LF."""

LINE_BREAKS = {char for char in HIDDEN if len(f"a{char}b".splitlines()) == 2}
EMBEDDINGS = ("LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI")
BIDI = {char for char in HIDDEN if unicodedata.bidirectional(char) in EMBEDDINGS} | {"\u200e", "\u200f", "\u061c"}
"""Embeddings, overrides, isolates, and the directional marks LRM, RLM and ALM."""


def kind(char: str) -> str:
    """The words the message must use for ``char``'s kind."""
    if char in LINE_BREAKS:
        return "line break"
    if char in BIDI:
        return "bidirectional control"
    return "invisible format" if unicodedata.category(char) == "Cf" else "control character"


# (template, line, col): `{c}` is where the character goes; the rest must parse without it
PLACES = {
    "comment": ("allow fs:read:/**\n# note{c}deny fs:write:/etc/**\n", 2, 7),
    "string": ('deny fs:write:/etc/** because "keep{c}out"\n', 1, 36),
    "bare-pattern": ("allow fs:read:/**\ndeny fs:write:/etc/{c}x\n", 2, 20),
    "quoted-pattern": ('deny fs:write:"/etc/{c}x"\n', 1, 21),
    "include": ('include "base{c}.bgp"\n', 1, 14),
    "line-start": ("allow fs:read:/**\n{c}deny fs:write:/etc/**\n", 2, 1),
    "line-end": ("deny fs:write:/etc/**{c}  # why\n", 1, 22),
}


def test_the_class_holds_every_example_the_issue_names() -> None:
    named = "\r\x0b\x0c\x85\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    assert set(named + "\u200b\x00\x1b") <= set(HIDDEN)
    assert {"\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"} == LINE_BREAKS
    assert len(HIDDEN) > 200  # 63 controls, 160+ format characters, LS and PS


@pytest.mark.parametrize("place", PLACES)
def test_every_hidden_character_is_refused_at_its_place(place: str) -> None:
    template, line, col = PLACES[place]
    for char in HIDDEN:
        with pytest.raises(PolicyError) as caught:
            parse_policy(template.replace("{c}", char), "p.bgp")
        error = caught.value
        code = f"U+{ord(char):04X}"
        assert (error.code, error.span.line, error.span.col) == ("BGC017", line, col), (code, error.render())
        assert code in error.message, error.message
        rendered = error.render()
        assert char not in rendered, f"{code} echoed raw"
        assert kind(char) in error.message, (code, error.message)


def test_bgc_check_exits_2_at_every_place_and_loads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every character once, the places in turn (the library test above tries every pair)."""
    monkeypatch.chdir(tmp_path)  # no configuration: paths print as given
    expected = {}
    places = list(PLACES.items())
    for index, char in enumerate(HIDDEN):
        place, (template, line, col) = places[index % len(places)]
        name = f"{place}-{ord(char):05x}.bgp"
        Path(name).write_text(template.replace("{c}", char), encoding="utf-8", newline="")
        expected[name] = (line, col)
    Path("base.bgp").write_text("deny fs:*:/.env\n")
    result = bgc("check", *expected)
    assert result.exit_code == 2
    output = result.output
    assert f"bgc check: {len(expected)} files could not be parsed" in output
    for name, (line, col) in expected.items():
        assert f"{name}:{line}:{col}: error[BGC017]:" in output, name
    assert not set(output) & set(HIDDEN), "a hidden character reached the terminal"
    assert " rules, " not in output and "expect" not in output  # no policy was loaded or run


def test_the_error_shows_the_line_escaped_with_the_caret_under_the_character() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy('deny fs:write:/etc/** because "a\u202eb\u2066c"\n', "p.bgp")
    rendered = caught.value.render().splitlines()
    assert rendered[0] == (
        "p.bgp:1:33: error: U+202E RIGHT-TO-LEFT OVERRIDE is a bidirectional control character: it reorders "
        "how the line is displayed, so what a reviewer reads differs from what bgc reads"
    )
    assert rendered[1] == '  deny fs:write:/etc/** because "a\\u202eb\\u2066c"'
    assert rendered[2] == "  " + " " * 32 + "^" * len("\\u202e")
    assert rendered[3].startswith("  hint: delete it")


def test_a_lone_carriage_return_cannot_hide_a_deny() -> None:
    text = "allow fs:write:/**\n# harmless comment\rdeny fs:write:/etc/**\nexpect deny fs:write:/etc/passwd\n"
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "p.bgp")
    assert (caught.value.span.line, caught.value.span.col) == (2, 19)
    assert "line break" in caught.value.message and "U+000D" in caught.value.message


def test_the_first_hidden_character_is_reported_and_later_ones_are_escaped() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy("allow fs:read:/**\n# a\u200bb\rc\x1b[2K\n\u2028\n", "p.bgp")
    error = caught.value
    assert (error.span.line, error.span.col) == (2, 4)
    assert error.render().splitlines()[1:3] == ["  # a\\u200bb\\rc\\x1b[2K", "     ^^^^^^"]


def test_a_lone_surrogate_handed_to_the_parser_is_refused_too() -> None:
    with pytest.raises(PolicyError, match="U\\+D800 is a lone surrogate") as caught:
        parse_source('deny fs:write:"/a\ud800"\n', "p.bgp")
    assert (caught.value.code, caught.value.span.col) == ("BGC017", 18)


# ---- CRLF stays one line break ---------------------------------------------------------------

CRLF = (
    'include "base.bgp"\r\n# a comment\r\nallow fs:read:/**  # trailing\r\n\r\nmode edit {\r\n'
    '    allow fs:write:/src/**\r\n}\r\ndeny fs:write:"/my dir/**" because "why"\r\nexpect deny fs:write:/.env\r\n'
)


def test_crlf_files_parse_as_their_lf_twin(tmp_path: Path) -> None:
    (tmp_path / "base.bgp").write_bytes(b"deny fs:*:/.env\r\n")
    (tmp_path / "crlf.bgp").write_bytes(CRLF.encode())
    (tmp_path / "lf.bgp").write_bytes(CRLF.replace("\r\n", "\n").encode())
    crlf, lf = load_policy(tmp_path / "crlf.bgp"), load_policy(tmp_path / "lf.bgp")
    assert crlf.rules == lf.rules and crlf.modes == lf.modes and crlf.expects == lf.expects
    assert [rule.span.line for rule in crlf.rules] == [rule.span.line for rule in lf.rules]
    assert format_text(CRLF, "crlf.bgp") == format_text(CRLF.replace("\r\n", "\n"), "lf.bgp")


def test_bgc_check_and_fmt_accept_crlf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("base.bgp").write_bytes(b"deny fs:*:/.env\r\n")
    Path("crlf.bgp").write_bytes(CRLF.encode())
    assert bgc("check", "crlf.bgp").exit_code in (0, 1)  # lints may warn; it loads
    assert bgc("fmt", "crlf.bgp").exit_code == 0
    formatted = Path("crlf.bgp").read_bytes()
    assert formatted.count(b"\r\n") == formatted.count(b"\n") > 0  # CRLF stays CRLF, like ruff and black
    assert bgc("fmt", "--check", "crlf.bgp").exit_code == 0


def test_fmt_refuses_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = "allow   fs:read:/**\n# x\u2028deny fs:write:/etc/**\n".encode()
    Path("p.bgp").write_bytes(data)
    result = bgc("fmt", "p.bgp")
    assert result.exit_code == 2 and "p.bgp:2:4: error: U+2028 LINE SEPARATOR is a line break" in result.output
    assert Path("p.bgp").read_bytes() == data


def test_the_code_is_registered() -> None:
    assert "BGC017" in CODES
    assert "`BGC017`" in (Path(__file__).resolve().parents[3] / "docs" / "policy-language.md").read_text()
