"""Property tests: bgc.core.patterns.glob against brute force on a small alphabet.

The reference matcher below is written from git's description of wildmatch (``**/`` is
"nothing, or anything ending in '/'", a trailing ``**`` is "anything"), directly on the
pattern text by recursion, and shares no code with bgc's segment model or automata. Every
string over {a, b, c, /} up to length 5 is enumerated; 'c' stands for "any other character",
so for the generated patterns these strings decide every question up to that length.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core.patterns import _automata as _glob_automata, _regex as _glob_regex
from bgc.core.compiler import _by_prefix
from bgc.core.patterns._syntax import DStar, Star, segment_matches
from bgc.core.patterns.glob import (
    AlgebraLimit,
    Pattern,
    PatternSet,
    _spliced,  # the candidates the algebra checks before it searches
    example,
    fold_case,
    intersect,
    is_empty,
    is_subset,
    is_subset_terms,
    overlaps,
    parse,
    plainly_outside,
)
from tests.samples import examples

ALPHABET = "abc/"
MAX_LEN = 5
STRINGS = tuple("".join(p) for n in range(MAX_LEN + 1) for p in itertools.product(ALPHABET, repeat=n))


def _tokens(pattern: str) -> tuple[tuple, ...]:
    """Tokens: ('lit', c), ('one', chars, negated), ('star',), ('dslash',) = '**/', ('dend',)."""
    out: list[tuple] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(("lit", pattern[i + 1]))
            i += 2
        elif c == "?":
            out.append(("one", frozenset(), True))
            i += 1
        elif c == "[":
            j = i + 1
            negated = pattern[j] in "!^"
            j += negated
            members: set[str] = set()
            first = True
            while first or pattern[j] != "]":
                first = False
                lo = pattern[j + 1] if pattern[j] == "\\" else pattern[j]
                j += 2 if pattern[j] == "\\" else 1
                if pattern[j] == "-" and pattern[j + 1] != "]":
                    hi = pattern[j + 2] if pattern[j + 1] == "\\" else pattern[j + 1]
                    j += 3 if pattern[j + 1] == "\\" else 2
                    members.update(chr(x) for x in range(ord(lo), ord(hi) + 1))
                else:
                    members.add(lo)
            out.append(("one", frozenset(members), negated))
            i = j + 1
        elif c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            whole = (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if j - i >= 2 and whole:
                if j == n:
                    out.append(("dend",))
                else:
                    out.append(("dslash",))
                    j += 1
            else:
                out.append(("star",))
            i = j
        else:
            out.append(("lit", c))
            i += 1
    return tuple(out)


def ref_match(pattern: str, text: str) -> bool:
    tokens = _tokens(pattern)

    @lru_cache(maxsize=None)
    def go(i: int, j: int) -> bool:
        if i == len(tokens):
            return j == len(text)
        tok = tokens[i]
        kind = tok[0]
        if kind == "dend":
            return True
        if kind == "dslash":
            return go(i + 1, j) or any(text[k - 1] == "/" and go(i + 1, k) for k in range(j + 1, len(text) + 1))
        if kind == "star":
            k = j
            while True:
                if go(i + 1, k):
                    return True
                if k == len(text) or text[k] == "/":
                    return False
                k += 1
        if j == len(text):
            return False
        ch = text[j]
        if kind == "lit":
            return ch == tok[1] and go(i + 1, j + 1)
        _, members, negated = tok
        return ch != "/" and ((ch in members) != negated) and go(i + 1, j + 1)

    return go(0, 0)


@lru_cache(maxsize=4096)
def lang(pattern: str) -> frozenset[str]:
    return frozenset(s for s in STRINGS if ref_match(pattern, s))


TOKEN = st.sampled_from(["a", "b", "?", "*", "[ab]", "[!a]"])
SEGMENT = st.one_of(st.just("**"), st.lists(TOKEN, min_size=0, max_size=3).map("".join))


@st.composite
def patterns(draw: st.DrawFn) -> str:
    segments = draw(st.lists(SEGMENT, min_size=1, max_size=3))
    text = ("/" if draw(st.booleans()) else "") + "/".join(segments)
    return text or "*"


PROPS = settings(max_examples=examples(30, thorough=600), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_witness(a: str, excepts: list[str], found: str | None) -> None:
    """``found`` is a shortest member of L(a) minus the excepts, or None when that is empty."""
    inside = sorted(lang(a) - frozenset().union(*(lang(e) for e in excepts)), key=len)
    if found is None:
        assert inside == [], (a, excepts, inside[:3])
        return
    assert ref_match(a, found) and not any(ref_match(e, found) for e in excepts), (a, excepts, found)
    if inside:
        assert len(found) == len(inside[0]), (a, excepts, found, inside[0])
    else:
        assert len(found) > MAX_LEN or set(found) - set(ALPHABET), (a, excepts, found)


@PROPS
@given(patterns(), st.lists(st.text(alphabet=ALPHABET, max_size=8), max_size=6))
def test_match_agrees_with_reference(p: str, extra: list[str]) -> None:
    pattern = parse(p)
    for s in STRINGS[:341] + tuple(extra):
        assert pattern.matches(s) == ref_match(p, s), (p, s)


@PROPS
@given(st.lists(patterns(), min_size=1, max_size=5))
def test_pattern_set_agrees_with_each_pattern(ps: list[str]) -> None:
    compiled = [parse(p) for p in ps]
    pset = PatternSet(compiled)
    for s in STRINGS[:341]:
        assert pset.matching(s) == frozenset(i for i, p in enumerate(compiled) if p.matches(s)), s


#: (learned characters, cached states, remembered answers): the default bounds, then each
#: way matching goes on past them (atom table, uncached bitmasks, answers not remembered),
#: from the start or mid-text.
Tier = tuple[int | None, int | None, int | None]
TIERS = st.sampled_from([(None, None, None), (0, None, None), (3, None, 1), (None, 3, None), (0, 2, 0), (2, 4, 2)])


def _bound(patch: pytest.MonkeyPatch, tier: Tier) -> None:
    for name, value in zip(("MAX_ROW_ENTRIES", "MAX_STATES", "MAX_ANSWERS"), tier):
        if value is not None:
            patch.setattr(_glob_automata, name, value)


@PROPS
@given(st.lists(patterns(), min_size=1, max_size=4), st.data(), TIERS)
def test_matching_agrees_with_reference_past_every_cache_bound(
    ps: list[str], data: st.DataObject, tier: Tier
) -> None:
    # a pattern given twice shares one lane of the set and must still be reported twice
    ps = ps + data.draw(st.lists(st.sampled_from(ps), max_size=3))
    with pytest.MonkeyPatch.context() as patch:
        _bound(patch, tier)
        fresh = [Pattern(p) for p in ps]  # not parse(): its cached automata were built unbounded
        pset = PatternSet(fresh)
        expected_of = {s: frozenset(i for i, p in enumerate(ps) if ref_match(p, s)) for s in STRINGS[:341]}
        for _ in range(2):  # the second round runs on what the first one learned
            for s, expected in expected_of.items():
                assert pset.matching(s) == expected, (ps, s, tier)
                assert all(fresh[i].matches(s) == (i in expected) for i in range(len(ps))), (ps, s, tier)


WIDE_TOKEN = st.sampled_from(["a", "é", "?", "*", "[à-ÿ]", "[!中]", "😀"])
WIDE_SEGMENT = st.one_of(st.just("**"), st.lists(WIDE_TOKEN, min_size=0, max_size=3).map("".join))
WIDE_TEXT = st.text(alphabet="aéàÿ中😀b/", max_size=8)


@PROPS
@given(st.lists(WIDE_SEGMENT, min_size=1, max_size=3).map("/".join), st.lists(WIDE_TEXT, max_size=30), TIERS)
def test_matching_beyond_ascii_agrees_with_reference(
    p: str, texts: list[str], tier: Tier
) -> None:
    # characters of one atom (é, à, ÿ for [à-ÿ]) are learned one by one: each must agree
    p = p or "*"
    with pytest.MonkeyPatch.context() as patch:
        _bound(patch, tier)
        fresh = Pattern(p)
        pset = PatternSet([fresh, Pattern("/**")])
        for s in texts + ["", "/", "é/à", "中😀"]:
            expected = ref_match(p, s)
            assert fresh.matches(s) == expected, (p, s, tier)
            assert pset.matching(s) == ({0} if expected else set()) | ({1} if s.startswith("/") else set()), (p, s)


@PROPS
@given(patterns(), patterns())
def test_intersect_is_exact_readable_and_never_widens(a: str, b: str) -> None:
    pa, pb = parse(a), parse(b)
    try:
        result = intersect(pa, pb)
    except AlgebraLimit as error:
        # only when "" is in both and nothing else covers it: no pattern spells the empty text
        assert "" in lang(a) & lang(b) and "empty text" in error.message, (a, b)
        return
    union = frozenset().union(*(lang(r.text) for r in result))
    assert union == lang(a) & lang(b), (a, b, [r.text for r in result])
    for r in result:
        assert parse(r.text) == r  # a readable glob of the dialect
        assert is_subset(r, [pa]) and is_subset(r, [pb]), (a, b, r.text)  # never widens
        assert not is_subset(r, [q for q in result if q != r]), (a, b, r.text)  # nothing subsumed
    # exact beyond the enumeration: L(a) ∩ L(b) ⊆ ∪ result, i.e. L(a) ⊆ ∪ result ∪ (everything − L(b))
    assert is_subset_terms(pa, [(r, ()) for r in result] + [(parse("**"), [pb])])
    assert intersect(pb, pa) == result


LITERAL_DIRECTORY = st.lists(st.sampled_from(["a", "b", "ab", "ba", "c"]), min_size=0, max_size=2).map(
    lambda segs: "/".join(["", *segs, "**"])
)
FLOATING = st.tuples(st.sampled_from(["a", "b", "ab", "ba", "*", "?", "a*", "[ab]"]), st.lists(SEGMENT, max_size=1)).map(
    lambda parts: "/**/" + "/".join([parts[0], *parts[1]])  # a first segment that may match the directory's
)


@PROPS
@given(LITERAL_DIRECTORY, FLOATING, st.lists(st.text(alphabet=ALPHABET, max_size=12), max_size=8))
def test_a_directory_below_a_floating_pattern_is_exact_and_matched_exactly(
    directory: str, floating: str, extra: list[str]
) -> None:
    # ``L/**`` ∩ ``/**/R`` written as ``L/**/R`` (glob.beneath) and matched through ``/**/R``
    pd, pf = parse(directory), parse(floating)
    result = intersect(pd, pf)
    assert frozenset().union(*(lang(r.text) for r in result)) == lang(directory) & lang(floating), (directory, floating)
    for r in result:
        for text in STRINGS[:1365] + tuple(extra):
            assert r.matches(text) == ref_match(r.text, text), (directory, floating, r.text, text)


@PROPS
@given(LITERAL_DIRECTORY, FLOATING, FLOATING)
def test_joined_patterns_compare_as_their_floating_parts(directory: str, first: str, second: str) -> None:
    pd = parse(directory)
    joined = [r for f in (first, second) for r in intersect(pd, parse(f))]
    for a, b in itertools.product(joined, repeat=2):
        # the enumeration is short: a subset answer must agree with it, and what it shows outside is
        subset, outside = is_subset(a, [b]), plainly_outside(a, b)
        assert subset == is_subset(Pattern(a.text), [Pattern(b.text)]), (a.text, b.text)  # unreduced
        assert not (subset and outside), (a.text, b.text)
        if subset:
            assert lang(a.text) <= lang(b.text), (a.text, b.text)
        elif not lang(a.text) <= lang(b.text):
            assert not subset, (a.text, b.text)


@PROPS
@given(st.lists(st.text(alphabet="ab/", max_size=4), max_size=12), st.text(alphabet="ab/", max_size=5))
def test_prefix_lookup_agrees_with_a_scan(prefixes: list[str], query: str) -> None:
    found = _by_prefix(prefixes)(query)
    assert found == [j for j, p in enumerate(prefixes) if p.startswith(query) or query.startswith(p)]


@PROPS
@given(st.lists(TOKEN, min_size=1, max_size=4).map("".join).filter(lambda s: "**" not in s), st.text("abc", max_size=6))
def test_a_segment_matches_a_literal_as_the_reference_does(segment: str, text: str) -> None:
    (simple,) = parse(segment)._elems
    assert segment_matches(simple.items, tuple(map(ord, text))) == ref_match(segment, text), (segment, text)


@PROPS
@given(patterns(), st.lists(patterns(), max_size=8))  # two or more: their rows share one automaton
def test_is_subset_and_example_agree_with_enumeration(a: str, bs: list[str]) -> None:
    pa, pbs = parse(a), [parse(b) for b in bs]
    subset = is_subset(pa, pbs)
    witness = example(pa, pbs)
    assert subset == (witness is None) == is_empty(pa, pbs)
    _check_witness(a, bs, witness)


@PROPS
@given(patterns(), st.lists(st.tuples(patterns(), st.lists(patterns(), max_size=2)), max_size=3))
def test_is_subset_terms_agrees_with_enumeration(a: str, terms: list[tuple[str, list[str]]]) -> None:
    covered = frozenset().union(
        *(lang(p) - frozenset().union(*(lang(e) for e in es)) for p, es in terms)
    )
    answer = is_subset_terms(parse(a), [(parse(p), [parse(e) for e in es]) for p, es in terms])
    if not lang(a) <= covered:
        assert answer is False, (a, terms)
    if answer is False:
        return
    # True must hold on every enumerated string
    assert lang(a) <= covered, (a, terms)


def test_reference_matcher_agrees_with_known_cases() -> None:
    # the reference itself, on the dialect's defining examples (DESIGN §2)
    assert ref_match("a/**/b", "a/b") and ref_match("a/**/b", "a/x/y/b")
    assert ref_match("**/b", "b") and not ref_match("a/**", "a") and ref_match("a/**", "a/")
    assert ref_match("*", ".env") and not ref_match("*", "a/b") and ref_match("a**b", "axb")


CASED = st.lists(st.sampled_from(["a", "A", "b", "?", "*", "[a-b]", "[!A]", "**", "/"]), min_size=1, max_size=5)


@PROPS
@given(CASED.map("".join))
def test_fold_case_matches_exactly_the_case_variants(p: str) -> None:
    pattern = parse(p)
    folded = fold_case(pattern)
    strings = ("".join(t) for n in range(5) for t in itertools.product("aAbB/", repeat=n))
    for s in strings:
        variants = ("".join(v) for v in itertools.product(*({c, c.swapcase()} for c in s)))
        assert folded.matches(s) == any(pattern.matches(v) for v in variants), (p, s, folded.text)


# --- the fast answers (probes, literal ends, 'lit/**', the union automaton) against enumeration ---


@PROPS
@given(patterns(), patterns())
def test_overlaps_agrees_with_enumeration_and_the_term_search(a: str, b: str) -> None:
    pa, pb = parse(a), parse(b)
    answer = overlaps(pa, pb)
    assert answer == overlaps(pb, pa)
    if lang(a) & lang(b):
        assert answer, (a, b)
    # disjoint exactly when L(a) lies inside "everything but L(b)": the search, with no probe to help it
    assert answer == (not is_subset_terms(pa, [(parse("**"), [pb])])), (a, b)


@PROPS
@given(patterns(), patterns())
def test_probes_and_spliced_texts_are_what_they_claim(a: str, b: str) -> None:
    pa, pb = parse(a), parse(b)
    assert pa.probes()
    for text in pa.probes():
        assert ref_match(a, text), (a, text)  # a probe is a fact about the pattern
    for text in _spliced(pa, pb):
        assert ref_match(a, text), (a, b, text)  # the algebra checks only the other side


DIRECTORY = st.lists(st.sampled_from(["a", "b", "ab", "[ab]", "*", "?"]), min_size=0, max_size=3).map(
    lambda segs: "/".join(["", *segs, "**"])
)


@PROPS
@given(patterns(), DIRECTORY)
def test_inside_a_directory_pattern_agrees_with_enumeration(a: str, directory: str) -> None:
    # 'lit/**' is answered from the literal prefix alone; other directories go to the search
    answer = is_subset(parse(a), [parse(directory)])
    if not lang(a) <= lang(directory):
        assert answer is False, (a, directory)
    if answer:
        assert lang(a) <= lang(directory), (a, directory)
    assert answer == (example(parse(a), [parse(directory)]) is None), (a, directory)


LONG_TOKEN = st.sampled_from(["a", "b", "ab", "ba", "aab", "?", "*", "[ab]", "[!a]"])
LONG_SEGMENT = st.one_of(st.just("**"), st.lists(LONG_TOKEN, min_size=0, max_size=5).map("".join))


@st.composite
def long_patterns(draw: st.DrawFn) -> str:
    """Patterns with many pieces per segment and chunks of several segments between ``**``s:
    where committing to a piece's earliest place could go wrong if the argument for it did."""
    segments = draw(st.lists(LONG_SEGMENT, min_size=1, max_size=6))
    return (("/" if draw(st.booleans()) else "") + "/".join(segments)) or "*"


@st.composite
def near_misses(draw: st.DrawFn, pattern: Pattern) -> list[str]:
    """Texts the pattern matches (its probes, wildcards spelled 'a') and, for each, edits that
    may just miss: a character dropped, one inserted, a stretch repeated — the texts on which a
    backtracking matcher errs or stalls."""
    out = []
    for probe in pattern.probes():
        text = probe.replace("\ue000", "a")
        out.append(text)
        for _ in range(3):
            i = draw(st.integers(0, len(text)))
            j = draw(st.integers(i, len(text)))
            out.append(text[:i] + text[i + 1 :])
            out.append(text[:i] + draw(st.sampled_from("ab/")) + text[i:])
            out.append(text[:i] + text[i:j] * draw(st.integers(2, 6)) + text[j:])
    return out


@PROPS
@given(long_patterns(), st.lists(st.text(alphabet="ab/", max_size=30), max_size=8), st.data())
def test_regex_matching_agrees_with_the_automaton(p: str, texts: list[str], data: st.DataObject) -> None:
    # the automaton, checked against the reference above, is the reference for long texts
    pattern = parse(p)
    source = _glob_regex.translate(pattern._elems)
    if source is None:
        return  # past MAX_WORK: Pattern.matches uses the automaton itself
    regex = _glob_regex.compile_matcher(pattern._elems)
    automaton = _glob_automata.Automaton([_glob_automata.positions(pattern._elems)])
    for text in texts + data.draw(near_misses(pattern)):
        assert (regex.fullmatch(text) is not None) == automaton.accepts(text), (p, source, text)


@PROPS
@given(long_patterns())
def test_regex_is_refused_exactly_past_its_work_bound(p: str) -> None:
    # the work is segments per chunk times the longest piece; past the bound, no regex
    elems = parse(p)._elems
    worst = 0
    chunk: list[int] = []
    chunks = [chunk]
    for e in elems:
        if isinstance(e, DStar):
            chunk = []
            chunks.append(chunk)
            continue
        pieces = [0]
        for item in e.items:
            if isinstance(item, Star):
                pieces.append(0)
            else:
                pieces[-1] += 1
        chunk.append(max(pieces))
    head, *searched = chunks
    worst = max([*head, *(len(c) * max(c) for c in searched if c)], default=0)
    assert (_glob_regex.translate(elems) is None) == (worst > _glob_regex.MAX_WORK), (p, worst)
