"""bgc.core.patterns.glob: the dialect's meaning (DESIGN §2), its errors, concrete values and the algebra."""

from __future__ import annotations

import dataclasses
import time
from typing import Self

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.patterns import _automata as _glob_automata
from bgc.errors import BgcError
from bgc.core.patterns.glob import (
    AlgebraLimit,
    Pattern,
    PatternError,
    PatternSet,
    escape,
    example,
    fold_case,
    has_dot_segment,
    intersect,
    is_empty,
    is_subset,
    is_subset_terms,
    parse,
)
from bgc.core.resources import Rejection, match_value, normalise


class Yardsticks:
    """How long the block it wraps takes, in yardsticks (``count``): a yardstick is the time a fixed
    piece of pure-Python work takes in this process, measured just before and just after the block
    (the longer of the two). A bound on work that must not explode, written in yardsticks, holds on
    a fast machine and on a loaded one alike, where a bound in seconds fails a correct test."""

    count: float

    def __enter__(self) -> Self:
        self._before = _yardstick()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        took = time.perf_counter() - self._started
        self.count = took / max(self._before, _yardstick())


def _yardstick() -> float:
    started = time.perf_counter()
    total = 0
    for i in range(100_000):
        total += i * i
    return time.perf_counter() - started


# --- the dialect --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/xb", False),
        ("**/b", "b", True),
        ("**/b", "x/y/b", True),
        ("a/**", "a/x/y", True),
        ("a/**", "a", False),
        ("/**", "/", True),
        ("*", ".env", True),  # a deny rule must never miss dotfiles
        ("/**/*", "/home/.env", True),
        ("*", "a/b", False),
        ("?", "/", False),
        ("a**b", "axyb", True),  # '**' inside a segment is '*'
        ("a**b", "a/b", False),
        ("[!a]", "/", False),  # a class never matches '/'
        ("[!a]", "b", True),
        ("[[:alpha:]]", "é", False),  # POSIX classes are ASCII (C locale), as in git
        ("?", "é", True),  # one character is one code point
        ("\\*", "*", True),
        ("\\*", "x", False),
        ("a\\/b", "a/b", True),  # an escaped slash is a slash
        ("***", "a/b/c", True),  # three stars as a whole segment is '**'
        ("File", "file", False),  # case-sensitive
    ],
)
def test_dialect(pattern: str, text: str, expected: bool) -> None:
    assert parse(pattern).matches(text) is expected


@pytest.mark.parametrize(
    ("pattern", "message", "column"),
    [
        ("", "empty pattern", 1),
        ("/src/[a-", "unclosed [", 6),
        ("abc/de[f", "unclosed [", 7),
        ("/tmp/x\\", "trailing \\ escapes nothing", 7),
        ("[[:spaci:]]", "unknown character class [:spaci:]", 2),
        ("foo[/]bar", "a class cannot contain '/'", 5),
        ("[a\\/]", "a class cannot contain '/'", 4),
        ("[z-a]", "empty range z-a (its start is after its end)", 3),
    ],
)
def test_malformed_patterns_say_what_and_where(pattern: str, message: str, column: int) -> None:
    with pytest.raises(PatternError) as info:
        parse(pattern)
    error = info.value
    assert isinstance(error, BgcError)
    assert error.message == f"{message} at column {column}"
    assert error.column == column
    rendered = error.render().splitlines()
    assert rendered[1] == f"  {pattern}"
    assert rendered[2] == "  " + " " * (column - 1) + "^"


def test_pattern_is_an_immutable_hashable_value_of_its_nfc_text() -> None:
    p = parse("/caf\u0065\u0301/**")
    assert p.text == "/caf\u00e9/**"
    assert p == Pattern("/café/**") and hash(p) == hash(Pattern("/café/**"))
    assert parse("/a/**") is parse("/a/**")  # cached
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.text = "x"  # type: ignore[misc]
    assert p.matches("/café/x") and not p.matches("/cafe\u0301/x")


def test_matching_is_linear_for_adversarial_patterns() -> None:
    # each pattern against a long near miss (where a backtracking matcher explodes) and against
    # the same text completed into a match: fast, and still right both ways
    cases = [
        ("/**/a/**/b/**/c/**/d", ("/a/b/c" * 700)[:4096], ("/a/b/c" * 700)[:4094] + "/d"),
        ("*a*a*a*a*a*b", "a" * 4096, "a" * 4095 + "b"),
    ]
    for pattern, near_miss, match in cases:
        p = parse(pattern)
        with Yardsticks() as took:
            assert not p.matches(near_miss)
            assert p.matches(match)
        assert took.count < 100, pattern


def test_pattern_set_reports_which_patterns_match() -> None:
    texts = ["/src/a.py", "/src/a/b.py", "/etc/passwd", "/home/u/.ssh/id", "/home/u/x"]
    patterns = [parse(p) for p in ["/src/**", "/**/*.py", "/etc/*", "/home/*/.ssh/**", "**", "/nope"]]
    pset = PatternSet(patterns)
    for text in texts:
        assert pset.matching(text) == {i for i, p in enumerate(patterns) if p.matches(text)}
    assert pset.matching("/src/a.py") == {0, 1, 4}
    assert PatternSet([]).matching("/x") == frozenset()


def test_pattern_set_scales_to_thousands_of_patterns() -> None:
    patterns = [parse(f"/p{i}/**/*.{i % 7}") for i in range(3000)] + [parse("/p17/x/**")]
    pset = PatternSet(patterns)
    with Yardsticks() as took:
        for _ in range(100):
            assert pset.matching("/p17/x/y/z.3") == {17, 3000}
            assert pset.matching("/p2999/q.3") == {2999} and pset.matching("/p2999/q.5") == frozenset()
    assert took.count < 400


def test_pattern_set_reports_every_index_of_a_repeated_pattern() -> None:
    # a gate's plans repeat patterns; equal ones share a lane but each index is an answer
    patterns = [parse(p) for p in ["/src/**", "/etc/*", "/src/**", "/**/*.py", "/src/**"]]
    pset = PatternSet(patterns)
    assert len(pset) == 5
    assert pset.matching("/src/a.py") == {0, 2, 3, 4}
    assert pset.matching("/etc/x") == {1}
    assert pset.matching("/var/x") == frozenset()


def test_learned_characters_stay_bounded_and_matching_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # hundreds of distinct characters must not grow the per-state character rows past the bound
    monkeypatch.setattr(_glob_automata, "MAX_ROW_ENTRIES", 8)
    pset = PatternSet([parse("/**/x*"), parse("/*/[à-ÿ]*")])
    for i in range(300):
        c, d = chr(0x100 + i), chr(0xE0 + i % 32)
        assert pset.matching(f"/{c}/x{d}") == {0}
        assert pset.matching(f"/{c}/{d}x") == {1}
        assert pset.matching(f"/{c}{d}") == frozenset()
    assert pset.auto._row_entries <= 8


# --- escaping and case ------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1).filter(lambda t: normalise("x", t) == t))
def test_escape_matches_exactly_the_text(text: str) -> None:
    p = parse(escape(text))
    assert p.matches(text)
    assert p.literal == text
    assert not p.matches(text + "x") and not p.matches(text[:-1])


def test_escape_neutralises_every_wildcard() -> None:
    assert escape("a*b?c[d]e\\f") == "a\\*b\\?c\\[d]e\\\\f"
    assert parse(escape("/x/**")).matches("/x/**") and not parse(escape("/x/**")).matches("/x/y")
    assert escape("") == ""


def test_fold_case_makes_letters_case_insensitive() -> None:
    folded = fold_case(parse("/Secret/*.KEY"))
    assert folded.text == "/[Ssſ][Ee][Cc][Rr][Ee][Tt]/*.[Kk][Ee][Yy]"
    for text in ["/secret/a.key", "/SECRET/b.Key", "/Secret/c.KEY"]:
        assert folded.matches(text)
    assert not folded.matches("/secrets/a.key")
    assert is_subset(parse("/Secret/*.KEY"), [folded])
    assert fold_case(parse("/123/*")) == parse("/123/*")  # nothing to fold: the same pattern
    assert fold_case(parse("[!a]")).matches("A") and fold_case(parse("[!a]")).matches("a")  # some variant is not 'a'


# --- concrete values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("fs", "/a//b/./c/", "/a/b/c"),
        ("fs", "/a/b/../c", "/a/c"),
        ("fs", "/", "/"),
        ("fs", "//", "/"),
        ("fs", "/..", Rejection("/..", "climbs above '/' with '..'")),
        ("fs", "/a/../../b", Rejection("/a/../../b", "climbs above '/' with '..'")),
        ("fs", "a/b", Rejection("a/b", "is a relative path (fs paths must start with '/')")),
        ("fs", "", Rejection("", "is a relative path (fs paths must start with '/')")),
        ("fs", "/a\x00b", Rejection("/a\x00b", "contains NUL")),
        ("fs", "/a\nb", Rejection("/a\nb", "contains the control character U+000A")),
        ("fs", "/a\x9bb", Rejection("/a\x9bb", "contains the control character U+009B")),
        ("fs", "/cafe\u0301", Rejection("/cafe\u0301", "is not in Unicode NFC form (a decomposed name could dodge a rule)")),
        ("fs", "/\udc80", Rejection("/\udc80", "is not valid UTF-8 (byte 0x80)")),  # surrogateescape
        ("fs", "/\ud800", Rejection("/\ud800", "is not valid Unicode (lone surrogate U+D800)")),
        ("pkg", "a//b/", "a//b/"),
        ("net", "https://h/a//b/", Rejection("https://h/a//b/", "has an empty path segment ('//'), which many servers merge into one '/'")),
        ("net", "https://h/a/../b", Rejection("https://h/a/../b", "has a '..' segment")),
        ("net", "https://h/./b", Rejection("https://h/./b", "has a '.' segment")),
        ("net", "cmd\x1b", Rejection("cmd\x1b", "contains the control character U+001B")),
    ],
)
def test_normalise(resource: str, value: str, expected: str | Rejection) -> None:
    assert normalise(resource, value) == expected


def test_match_value_normalises_like_the_gate() -> None:
    p = parse("/src/**")
    assert match_value(p, "/src//a/./b") is True
    assert match_value(p, "/src/../etc/passwd") is False
    assert match_value(p, "src/a") == Rejection("src/a", "is a relative path (fs paths must start with '/')")
    assert match_value(parse("a/../b"), "a/../b", None) is True  # raw: exactly as given


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [("/src/../etc", True), ("/a/./b", True), ("/a/\\.\\./b", True), ("/a/[.]/b", True), ("..", True),
     ("/a/.../b", False), ("/a/.env", False), ("/a/*/b", False), ("/a/?/b", False)],
)  # fmt: skip
def test_has_dot_segment(pattern: str, expected: bool) -> None:
    assert has_dot_segment(pattern) is expected


# --- algebra ------------------------------------------------------------------------------------


def _texts(patterns: list[Pattern]) -> list[str]:
    return [p.text for p in patterns]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("/**", "/src/**", ["/src/**"]),
        ("/src/**", "/**/*.py", ["/src/**/*.py"]),
        ("/src/**", "/etc/**", []),
        ("/a/*/c", "/a/b/*", ["/a/b/c"]),
        ("**/*.py", "**/test_*", ["**/test_*.py"]),
        ("*a*", "*b*", ["*a*b*", "*b*a*"]),
        ("/home/*/.ssh/**", "/home/alice/**", ["/home/alice/.ssh/**"]),
        ("/x/[a-m]*", "/x/[h-z]*", ["/x/[h-m]*"]),
        ("/x/[!a]", "/x/[ab]", ["/x/b"]),
        ("/src/main.py", "/src/*.py", ["/src/main.py"]),
        ("/src/main.py", "/src/*.rs", []),
    ],
)
def test_intersect(a: str, b: str, expected: list[str]) -> None:
    assert _texts(intersect(parse(a), parse(b))) == expected
    assert _texts(intersect(parse(b), parse(a))) == expected


def test_intersect_blow_up_is_an_algebra_limit_not_a_hang() -> None:
    with Yardsticks() as took, pytest.raises(AlgebraLimit) as info:
        intersect(parse("*a*a*a*a*a*a*a*a*"), parse("*b*b*b*b*b*b*b*b*"))
    assert "unknown" in info.value.message
    assert isinstance(info.value, BgcError)
    assert took.count < 400


def test_deep_patterns_intersect_without_python_recursion() -> None:
    # a sub-problem per segment (and per character inside a segment): more than Python's
    # default recursion limit of 1,000 deep, evaluated with an explicit stack
    assert intersect("/*a" * 1100 + "/x", "/**/*b/x") == []
    assert intersect("/" + "*a" * 1100 + "/x", "/*b/x") == []


def test_decisions_hit_their_bound_quickly() -> None:
    # "an 'a' 17 characters from the end" needs 2**17 DFA states to find the shortest example
    # (is_subset answers this one at once: a probe, 17 'a's, is outside '*b*')
    with Yardsticks() as took, pytest.raises(AlgebraLimit):
        example(parse("*a????????????????"), [parse("*b*")])
    assert took.count < 1000


def test_is_subset() -> None:
    assert is_subset(parse("/src/**/*.py"), [parse("/src/**")])
    assert is_subset(parse("/src/*.py"), [parse("/src/a*"), parse("/src/[!a]*")])
    assert not is_subset(parse("/src/**"), [parse("/src/**/*.py")])
    assert not is_subset(parse("/src/**"), [])
    assert is_subset(parse("/x/**"), [parse("**")])


def test_is_empty_and_example() -> None:
    assert not is_empty(parse("/src/**"))
    assert is_empty(parse("/src/*.py"), [parse("/src/**")])
    assert is_empty(parse("/src/?"), [parse("/src/[a-m]"), parse("/src/[!a-m]")])
    assert example(parse("/src/**"), [parse("/src/*.py")]) == "/src/"
    assert example(parse("/src/*"), [parse("/src/"), parse("/src/a")]) == "/src/b"
    assert example(parse("/**/.env")) == "/.env"
    assert example(parse("/src/*.py"), [parse("/src/**")]) is None


def test_is_subset_terms_handles_excepts() -> None:
    everything_but_env = (parse("/**"), [parse("**/.env")])
    assert is_subset_terms(parse("/src/*.py"), [everything_but_env])
    assert not is_subset_terms(parse("/src/*"), [everything_but_env])
    assert is_subset_terms(parse("/src/*"), [everything_but_env, (parse("/src/.env"), [])])


def test_algebra_accepts_pattern_text() -> None:
    from bgc.core.patterns import glob

    assert glob.intersect("/src/**", "/**/*.py") == [glob.parse("/src/**/*.py")]
    assert glob.is_subset("/src/a.py", ["/src/*"])
    assert glob.is_empty("/a", ["/*"])
    assert glob.example("/src/**", ["/src/*.py"]) == "/src/"
    assert glob.is_subset_terms("/src/a", [("/src/*", ["/src/b"])])
    with pytest.raises(glob.PatternError, match="unclosed"):
        glob.intersect("/src/[a", "/x")
