"""The gate's fast paths against brute-force references (issue 10, item 3).

- :class:`bgc.core._gate_index.LaneIndex` files patterns under their literal directory and decides
  common shapes without automata: on generated patterns and texts it must give exactly the
  lanes :meth:`bgc.core.patterns.glob.Pattern.matches` gives, pattern by pattern.
- :class:`bgc.core.gate.Gate` decides from lane masks it remembers: on generated plans and atoms it
  must give exactly what a rule-by-rule reading of the plan gives.
- :func:`bgc.core.resources.normalise` returns a value unchanged when a per-resource test says it is
  canonical already: whatever that test accepts, the full reading must return unchanged.
"""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core.patterns import glob
from bgc.core import resources
from bgc.core.resources.kind import _CONTROL
from bgc.core._gate_index import LaneIndex
from bgc.core.gate import Gate
from bgc.core.plan import Approvals, Part, Plan, RequestResult, RuleRef
from tests.samples import examples

# --- patterns and texts over a small vocabulary, so that they meet often ----------------------

WORDS = ["a", "b", "src", "p1", "p12", "x.py", ".env", "ab"]
PATTERN_SEGMENTS = [*WORDS, "*", "**", "*.py", "a*", "*b", "?", "[ab]", "p1*", "\\*", "[!a]*"]
TEXT_SEGMENTS = [*WORDS, "*", "", "p1x", "abc", "srcs", "b.py"]


def _joined(segments: st.SearchStrategy[str], most: int) -> st.SearchStrategy[str]:
    return st.builds(
        lambda rooted, parts: ("/" if rooted else "") + "/".join(parts),
        st.booleans(),
        st.lists(segments, min_size=1, max_size=most),
    )


patterns = _joined(st.sampled_from(PATTERN_SEGMENTS), 5).filter(bool)
texts = _joined(st.sampled_from(TEXT_SEGMENTS), 6)


def _parsed(texts_: list[str]) -> list[glob.Pattern]:
    out = []
    for text in texts_:
        try:
            out.append(glob.parse(text))
        except glob.PatternError:
            continue
    return out


@settings(max_examples=examples(25, thorough=1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(patterns, min_size=1, max_size=12), st.lists(texts, min_size=1, max_size=20), st.booleans())
def test_lane_index_matches_exactly_what_each_pattern_matches(pattern_texts: list[str], text_list: list[str], fold: bool) -> None:
    compiled = _parsed(pattern_texts)
    if fold:  # folded patterns have classes where letters were: they leave the literal shapes
        compiled = [glob.fold_case(pattern) for pattern in compiled]
    index = LaneIndex(compiled)
    for text in text_list * 2:  # twice: the second pass reads remembered answers
        expected = sum(1 << lane for lane, pattern in enumerate(compiled) if pattern.matches(text))
        assert index.hits(text) == expected, (text, [p.text for p in compiled])


@settings(max_examples=examples(50, thorough=1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(patterns, min_size=1, max_size=12), st.lists(texts, min_size=1, max_size=20))
def test_a_values_deepest_directory_is_its_longest_prefix_that_is_one(pattern_texts: list[str], text_list: list[str]) -> None:
    """LaneIndex.locate by dict probes against the definition: the longest of the value's
    '/'-prefixes (and "") among the directories, at place 1 exactly when no '/' follows it."""
    index = LaneIndex(_parsed(pattern_texts))
    for text in text_list:
        prefixes = ["", *(text[: at + 1] for at, char in enumerate(text) if char == "/")]
        deepest = max((prefix for prefix in prefixes if prefix in index.directories), key=len)
        assert index.locate(text) == (index.directories[deepest], 1 if "/" not in text[len(deepest) :] else 2), text


def test_lane_index_files_the_common_shapes_without_automata() -> None:
    """The shapes a plan is made of are decided by dict lookups; only the rest needs a pattern set."""
    shaped = ["/p1/src/**", "/p1/src/*", "/p1/src/a.py", "https://h.example.com/*", "**", "*"]
    index = LaneIndex([glob.parse(text) for text in [*shaped, "/p1/**/tests/**"]])
    with_sets, stack = [], [("", index._root)]
    while stack:
        directory, (_, _, others, children) = stack.pop()
        with_sets += [directory] if others is not None else []
        stack += [(directory + segment + "/", child) for segment, child in children.items()]
    assert with_sets == ["/p1/"]
    assert index.hits("/p1/src/a.py") == 0b0010111  # /p1/src/**, /p1/src/*, the literal, **
    assert index.hits("/p1/src/b/c.py") == 0b0010001  # /p1/src/**, **
    assert index.hits("https://h.example.com/x") == 0b0011000  # https://h.example.com/*, **
    assert index.hits("/p1/a/tests/b") == 0b1010000


# --- the gate against a rule-by-rule reading of the plan ---------------------------------------

RULES = [RuleRef("p.bgp", 1, "deny", "secrets"), RuleRef("p.bgp", 2, "deny"), RuleRef("p.bgp", 3, "allow")]
APPROVALS = [None, Approvals(1), Approvals(2, ("alice", "bob")), Approvals(1, ("alice",))]


@st.composite
def parts(draw: st.DrawFn, kind: str) -> Part:
    resource, action = draw(st.sampled_from([("fs", "write"), ("fs", "read"), ("proc", "exec")]))
    pattern = draw(st.sampled_from(["/**", "/p1/**", "/p1/src/**", "/p1/src/*.py", "/**/.env", "/p1/src/a.py", "/src/*", "/[ab]*/**"]))
    excepts = tuple(sorted(set(draw(st.lists(st.sampled_from(["/p1/src/secrets/**", "/**/.env", "/p1/SRC/**", "/*/b"]), max_size=2)))))
    rules = tuple(draw(st.lists(st.sampled_from(RULES), max_size=2, unique=True)))
    approvals = draw(st.sampled_from(APPROVALS[1:])) if kind == "ask" else None
    return Part(resource, action, pattern, excepts, rules, approvals)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    requests = []
    for _ in range(draw(st.integers(1, 3))):
        granted, asked, denied = (tuple(draw(st.lists(parts(kind), max_size=3))) for kind in ("granted", "ask", "denied"))
        requests.append(RequestResult("fs:write:/**", "narrowed", granted, asked, denied))
    return Plan("sha256:" + "0" * 64, "sha256:" + "1" * 64, None, tuple(requests), (), draw(st.booleans()))


def reference_decision(plans_: list[Plan], atom: str) -> tuple[str, str, tuple[Approvals, ...]]:
    """The gate's rules read literally: every part of every plan, pattern by pattern."""
    resource, action, raw = atom.split(":", 2)
    fold = any(plan.fold_case for plan in plans_)
    value = resources.normalise(resource, raw, case_insensitive=fold)
    if isinstance(value, resources.Rejection):
        return "deny", f"rejected: {value.reason}", ()

    def holds(part: Part) -> bool:
        folded = fold and resource == "fs"
        cut = [glob.fold_case(glob.parse(t)) if folded else glob.parse(t) for t in part.excepts]
        return glob.parse(part.pattern).matches(value) and not any(p.matches(value) for p in cut)

    def of(kind: str) -> list[Part]:
        return [p for plan in plans_ for r in plan.requests for p in getattr(r, kind) if (p.resource, p.action) == (resource, action) and holds(p)]

    if of("granted"):
        return "allow", "", ()
    if asked := of("ask"):
        return "ask", "awaits approval", tuple(dict.fromkeys(p.approvals or Approvals(1) for p in asked))
    for part in sorted(of("denied"), key=lambda p: not p.rules):
        if not part.rules:
            return "deny", "no rule allows it", ()
        reason = f" ({part.rules[0].reason})" if part.rules[0].reason else ""
        return "deny", f"denied by {part.rules[0]}{reason}", ()
    return "deny", "not granted by the plan", ()


gate_values = st.sampled_from(["/p1/src/a.py", "/p1/src/secrets/k", "/p1/src/.env", "/p1/SRC/x", "/a/b", "/b/b", "/src/x",
                               "/p1/src//a.py", "/p1/./src/a.py", "/p1/src/../x.py", "/p12/src/a.py", "/p1", "/", "rel", "/a\x00"])  # fmt: skip


@settings(max_examples=examples(20, thorough=800), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(plans(), min_size=1, max_size=2), st.lists(st.tuples(st.sampled_from(["fs:write:", "fs:read:", "proc:exec:", "net:x:"]), gate_values), max_size=25))
def test_gate_decides_as_the_plan_reads_rule_by_rule(plans_: list[Plan], atoms: list[tuple[str, str]]) -> None:
    gate = Gate(plans_)
    for prefix, value in atoms * 2:  # twice: the second pass reads remembered outcomes
        atom = prefix + value
        decision = gate.decide(atom)
        assert (decision.effect, decision.reason, decision.approvals) == reference_decision(plans_, atom)


# --- values already canonical ------------------------------------------------------------------

URL_PIECES = ["https://", "http://", "wss://", "ftp://", "HTTPS://", "api", "a-b", "-a", "xn--ab", "1", "0", "example", "com",
              ".", "..", "/", "//", "?", "#", ":", ":80", ":443", ":8080", ":0", ":99999", "%41", "%2F", ";", "@", "'", "~",
              "q=1", "&", "é", " ", "\\", "A", "Z", "!$()*+,=", "[", "]", "\t"]  # fmt: skip
# each part of a URL: plain spellings, and spellings of every class the full reading changes or refuses
SCHEMES = (["https://", "http://", "ws://", "wss://"], ["ftp://", "HTTP://", "https:/", "", "file://", "https:///"])
LABELS = (["api", "a-b", "example", "com", "a1", "1a", "x"],
          ["xn--strae-oqa", "xn--zca", "xn--ab", "xn--", "-a", "b-", "1", "0", "0x1f", "127", "EX", "", "a_b", "é", "ß", "*", "a b"])
PORTS = (["", ":8080", ":1", ":8443"], [":80", ":443", ":0", ":65535", ":65536", ":99999", ":08", ":", ":a"])
PIECES = (["a", "B", "x.py", "~", "!", "$", "(", ")", "*", "+", ",", "=", ":", "@", "&", "-", "_", ".a", "a."],
          [".", "..", "%41", "%2e", "%2F", ";", "'", "é", " ", "#", "\\", "|", "^", "[", "`", "{", "\"", "<", "%", "\x7f"])


def _part(choices: tuple[list[str], list[str]]) -> st.SearchStrategy[str]:
    plain, odd = choices
    return st.one_of(st.sampled_from(plain), st.sampled_from(plain), st.sampled_from(plain), st.sampled_from(odd))


urls = st.builds(
    lambda scheme, labels, port, path, query: scheme + ".".join(labels) + port + path + query,
    _part(SCHEMES),
    st.lists(_part(LABELS), min_size=1, max_size=4),
    _part(PORTS),
    st.lists(st.one_of(st.just("/"), _part(PIECES)), max_size=8).map(lambda p: "/" + "".join(p)),
    st.one_of(st.just(""), st.lists(st.one_of(st.sampled_from(["/", "?"]), _part(PIECES)), max_size=5).map(lambda q: "?" + "".join(q))),
)
FS_PIECES = ["/", "//", ".", "..", "a", "B", "é", "e\u0301", " ", "\x00", "\x7f", "\\", "~1", ":", "%2e", "x.py"]
FS_SEGMENTS = (["a", "B", "x.py", ".env", "a.", " a", "~", "-", "é"], ["", ".", "..", "e\u0301", "\x00", "\x7f", "a\\b", "GIT~1", "a:b", "a ", "\u200c"])
paths = st.lists(_part(FS_SEGMENTS), max_size=6).map(lambda segments: "/" + "/".join(segments))


def _pieces(alphabet: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(alphabet), max_size=14).map("".join)


@settings(max_examples=examples(150, thorough=10_000), deadline=None)
@given(st.one_of(_pieces(URL_PIECES), urls))
def test_a_url_the_shortcut_accepts_is_one_the_full_reading_leaves_unchanged(text: str) -> None:
    if resources.plain_form("net")(text):
        assert resources._read("net", text, False) == text


@settings(max_examples=examples(100, thorough=5000), deadline=None)
@given(st.one_of(_pieces(FS_PIECES), paths), st.booleans())
def test_a_path_the_shortcut_accepts_is_one_the_full_reading_leaves_unchanged(text: str, case_insensitive: bool) -> None:
    assert resources.normalise("fs", text, case_insensitive=case_insensitive) == resources._read("fs", text, case_insensitive)


# the URL shortcut as first written, without possessive repeats: the language the rewrite must keep
_REFERENCE_TEXT = r"[A-Za-z0-9\-._~!$&()*+,=:@]"
_REFERENCE_NOT_DOTS = r"(?!\.\.?(?:/|\?|\Z))"
REFERENCE_URL = (
    r"(?:https?|wss?)://(?:(?!xn--)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*(?!xn--)[a-z](?:[a-z0-9-]*[a-z0-9])?"
    r"(?::(?!(?:80|443)(?:/|\Z))[1-9][0-9]{0,3})?"
    rf"(?:/|(?:/{_REFERENCE_NOT_DOTS}{_REFERENCE_TEXT}+)+/?)(?:\?(?=.)(?:{_REFERENCE_NOT_DOTS}{_REFERENCE_TEXT}*(?:[/?]|\Z))*)?"
)


@settings(max_examples=examples(150, thorough=10_000), deadline=None)
@given(st.one_of(_pieces(URL_PIECES), urls, urls.map(lambda u: u.replace("/", "-", 3)), urls.map(lambda u: u + "-")))
def test_the_url_shortcut_accepts_exactly_what_its_plain_backtracking_spelling_accepts(text: str) -> None:
    """Its repeats are possessive for speed; possessive must change nothing it accepts."""
    import re

    assert bool(resources.plain_form("net")(text)) == bool(re.fullmatch(REFERENCE_URL, text)), text


def test_the_shortcut_takes_the_plain_canonical_values() -> None:
    """Not a test that cannot fail: the shortcut must take the common values, or it buys nothing."""
    plain = ["/p7/src/util4/f1.py", "/a b/c~d-e.py", "https://api7.example.com/f1", "https://h.example.com:8443/a/b/?q=1&r=x",
             "http://localhost/", "wss://a-1.b2.example/x"]  # fmt: skip
    for text in plain:
        assert resources.plain_form("fs" if text.startswith("/") else "net")(text), text  # type: ignore[misc]
        assert resources._read("fs" if text.startswith("/") else "net", text, False) == text


# --- the warm path: one regex over whole atoms (bgc.core._gate_index.WarmPath) -----------------------

DIRECTORY_WORDS = ["a", "ab", "b", "src", "p1", "p12", ".git", "x y", "é", ""]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.lists(st.sampled_from(DIRECTORY_WORDS), max_size=4).map(lambda p: "/" + "".join(s + "/" for s in p)), max_size=8),
       st.lists(st.sampled_from([*DIRECTORY_WORDS, "/", "abc"]), max_size=6).map("/".join))  # fmt: skip
def test_the_trie_finds_the_longest_word_that_starts_a_text(words: list[str], text: str) -> None:
    import re

    from bgc.core._gate_index import _trie

    trie = _trie(sorted({"", *words}))
    assert trie is not None
    found = re.compile(f"(?>({trie}))").match(text)
    assert found is not None and found.group(1) == max((w for w in {"", *words} if text.startswith(w)), key=len)


def test_the_trie_writes_branches_that_go_on_alike_once() -> None:
    """A thousand projects laid out alike make a regex the size of a few: the size is what a
    match walks through (each branch a jump away), so it must not grow with the projects."""
    import re

    from bgc.core._gate_index import _trie

    def layout(count: int) -> list[str]:
        return sorted({"/", *(f"/p{g}/{below}" for g in range(count) for below in ("", "src/", "src/secrets/"))})

    assert len(_trie(layout(1000)) or "") < 3 * len(_trie(layout(10)) or "")
    trie = re.compile(f"(?>({_trie(layout(1000))}))")
    for text, deepest in [("/p999/src/secrets/k", "/p999/src/secrets/"), ("/p10/src/a", "/p10/src/"), ("/p1000/src/", "/"),
                          ("/p07/src/", "/"), ("/p5/srcx", "/p5/"), ("/p42/", "/p42/")]:  # fmt: skip
        found = trie.match(text)
        assert found is not None and found.group(1) == deepest, text


def test_a_trie_too_deep_for_the_regex_compiler_is_refused_and_its_atoms_take_the_full_path() -> None:
    from bgc.core._gate_index import MAX_TRIE_NESTING, _trie

    deep = ["/" + "a/" * depth for depth in range(1, 2 * MAX_TRIE_NESTING)]
    assert _trie(deep) is None
    assert _trie([]) == "(?!)"
    part = Part("fs", "write", deep[-1] + "**", (), (RULES[2],))
    gate = Gate([Plan("sha256:" + "0" * 64, "sha256:" + "1" * 64, None, (RequestResult("fs:write:/**", "narrowed", (part,)),), ())])
    gate.warm_up()
    assert gate._warm_match("fs:write:" + deep[-1] + "x") is None
    assert gate.decide("fs:write:" + deep[-1] + "x").effect == "allow"
    assert gate.decide("fs:write:" + deep[-2] + "x").effect == "deny"


@settings(max_examples=examples(250, thorough=5000), deadline=None)
@given(st.one_of(_pieces(URL_PIECES), urls, _pieces(FS_PIECES), paths))
def test_a_plain_head_and_rest_make_a_value_the_shortcut_accepts(text: str) -> None:
    """PLAIN_SPLIT against ALREADY_CANONICAL: every cut at a '/' that reads as head + rest is an
    accepted value; the rest's group is set exactly when it holds a '/'; and every longer
    '/'-prefix of the value is a head too (so the deepest head is the deepest directory)."""
    import re

    for resource, (head, rest) in {name: row.plain_split for name, row in resources.RESOURCES.items() if row.plain_split}.items():
        cuts = [index + 1 for index, char in enumerate(text) if char == "/"]
        for cut in cuts:
            if not (re.fullmatch(head, text[:cut]) and (tail := re.fullmatch(rest, text[cut:]))):
                continue
            assert resources.plain_form(resource)(text), (resource, text, cut)
            assert (tail.lastindex == 1) == ("/" in text[cut:]), (resource, text, cut)
            assert all(re.fullmatch(head, text[:longer]) for longer in cuts if longer > cut), (resource, text, cut)


NET_PATTERNS = ["https://api.example.com/*", "https://api.example.com/**", "https://api.example.com/v1/**",
                "*://api.example.com/admin\\?*", "https://*.example.com/**", "https://api.example.com/v1/a?x/*",
                "https://api.example.com/v1/a", "http://localhost:8080/**", "**"]  # fmt: skip
NET_VALUES = ["https://api.example.com/", "https://api.example.com/a", "https://api.example.com/v1/a", "https://api.example.com/v1/a/",
              "https://api.example.com/v1/a?x/y", "https://api.example.com/v1/a?x", "https://api.example.com/admin?q=1",
              "https://evil.example.com/v1/a", "http://localhost:8080/x", "https://API.example.com/a", "https://api.example.com/./a",
              "https://api.example.com:443/a", "https://api.example.com/%61", "https://api.example.com//a", "https://api.example.com",
              "javascript:alert(1)", "a", "", "/a", "api.example.com/a"]  # fmt: skip
FS_PATTERNS = ["/**", "/p1/**", "/p1/src/**", "/p1/src/*", "/p1/src/*.py", "/**/.env", "/p1/src/a.py", "/p1/.git/**", "/[ab]*/**",
               "/p1/src/secrets/**", "/*", "/p12/src/**"]  # fmt: skip
FS_VALUES = ["/p1/src/a.py", "/p1/src/b.txt", "/c/b", "/p1/a.py", "/p1/src/secrets/k", "/p1/src/.env", "/p1/.git/config", "/p1/src", "/p1/src/b/c.py", "/a/b", "/b",
             "/p12/src/a.py", "/p1/src//a.py", "/p1/./src/a.py", "/p1", "/", "rel", "/p1/src/", "/x y/é"]  # fmt: skip


@st.composite
def warm_plans(draw: st.DrawFn) -> Plan:
    kinds: list[list[Part]] = [[], [], []]
    for _ in range(draw(st.integers(1, 8))):
        resource, action, vocabulary = draw(st.sampled_from([("fs", "write", FS_PATTERNS), ("fs", "read", FS_PATTERNS), ("net", "connect", NET_PATTERNS)]))
        pattern = draw(st.sampled_from(vocabulary))
        excepts = tuple(sorted(set(draw(st.lists(st.sampled_from(vocabulary), max_size=2)))))
        kind = draw(st.integers(0, 2))
        approvals = draw(st.sampled_from(APPROVALS[1:])) if kind == 1 else None
        rules = tuple(draw(st.lists(st.sampled_from(RULES), max_size=2, unique=True)))
        kinds[kind].append(Part(resource, action, pattern, excepts, rules, approvals))
    request = RequestResult("fs:write:/**", "narrowed", *(tuple(parts) for parts in kinds))
    return Plan("sha256:" + "0" * 64, "sha256:" + "1" * 64, None, (request,), (), draw(st.booleans()))


# fs values at every depth, over the patterns' own words (so they meet literals, directories and
# pattern sets), with spellings to read first ('//', '.', '..') and ones to refuse
DEEP_FS_VALUES = st.lists(st.sampled_from(["p1", "p12", "src", "secrets", "a.py", "b", ".env", ".git", "SRC", "", ".", "..", "x y"]),
                          max_size=7).map(lambda segments: "/" + "/".join(segments))  # fmt: skip
warm_atoms = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["fs:write:", "fs:read:"]), st.one_of(st.sampled_from(FS_VALUES), DEEP_FS_VALUES)),
        st.tuples(st.just("net:connect:"), st.one_of(st.sampled_from(NET_VALUES), urls)),
    ),
    max_size=30,
)


@settings(max_examples=examples(50, thorough=1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(warm_plans(), warm_atoms)
def test_the_warm_and_the_cold_path_decide_as_the_plan_reads_rule_by_rule(plan: Plan, atoms: list[tuple[str, str]]) -> None:
    """The same atoms through a new gate (dict probes on the atom's heads, before any regex exists)
    and a warmed one (one regex): both exactly as the plan reads, part by part (literal patterns, pattern sets,
    case folding when the plan folds, URLs, non-canonical and refused values)."""
    cold, warm = Gate([plan]), Gate([plan])
    warm.warm_up()
    for prefix, value in atoms * 2:  # twice: the second pass meets the same directories again
        atom = prefix + value
        expected = reference_decision([plan], atom)
        for gate in (cold, warm):
            decision = gate.decide(atom)
            assert (decision.effect, decision.reason, decision.approvals) == expected
    assert cold._warm is None  # fewer atoms than WARM_AFTER: the cold gate never built its regex


def test_no_decision_computes_an_outcome_where_the_directory_decides() -> None:
    """Every outcome that depends only on a value's directory and place is worked out when the
    gate is built: fresh values, cold or warm, in projects met for the first time, compute none
    (a fresh set of atoms at N = 1,000 kept meeting new directories)."""
    parts = []
    for g in range(50):
        parts += [Part("fs", "write", f"/p{g}/src/**", (f"/p{g}/src/secrets/**",), (RULES[2],)),
                  Part("net", "connect", f"https://api{g}.example.com/*", (), (RULES[2],))]  # fmt: skip
    denied = (Part("fs", "write", f"/p{g}/src/secrets/**", (), (RULES[0],)) for g in range(50))
    plan = Plan("sha256:" + "0" * 64, "sha256:" + "1" * 64, None, (RequestResult("fs:write:/**", "narrowed", tuple(parts), (), tuple(denied)),), ())
    gates = [Gate([plan]), Gate([plan])]
    gates[1].warm_up()
    atoms = [atom for g in range(60) for atom in (f"fs:write:/p{g}/src/m/f.py", f"fs:write:/p{g}/src/secrets/k", f"fs:write:/p{g}/x",
                                                 f"net:connect:https://api{g}.example.com/a", f"net:connect:https://api{g}.example.com/a/b")]  # fmt: skip
    for gate in gates:
        for index in (index for actions in gate._indices.values() for index in actions.values()):
            index._outcome = None  # type: ignore[method-assign]  # computing one now would fail
        decided = [gate.decide(atom).effect for atom in atoms]
        assert decided == [effect for g in range(60) for effect in
                           (["allow", "deny", "deny", "allow", "deny"] if g < 50 else ["deny"] * 5)]  # fmt: skip


def test_the_warm_path_takes_the_plain_values() -> None:
    """Not a test that cannot fail: plain values of every resource with a plain form must take the
    one-regex path, or the property above tests only the full path."""
    parts = [Part("fs", "write", "/p1/src/**", (), (RULES[2],)), Part("net", "connect", "https://api.example.com/*", (), (RULES[2],))]
    gate = Gate([Plan("sha256:" + "0" * 64, "sha256:" + "1" * 64, None, (RequestResult("fs:write:/**", "narrowed", tuple(parts)),), ())])
    gate.warm_up()
    for atom in ["fs:write:/p1/src/a.py", "fs:write:/q/a", "net:connect:https://api.example.com/a", "net:connect:https://evil.example.com/a",
                 "net:connect:https://api.example.com/a/b?q=1"]:  # fmt: skip
        assert gate._warm_match(atom) is not None, atom
    for atom in ["fs:write:/p1/src/.env", "fs:write:/p1//a", "net:connect:https://API.example.com/a", "fs:read:/p1/src/a.py"]:
        assert gate._warm_match(atom) is None, atom


def test_a_new_gate_takes_plain_values_by_dict_probes_with_no_reading_and_no_split() -> None:
    """Not a test that cannot fail: a new gate's plain values (of every resource with a plain
    form, at and below their directories, literal or not) must be decided from the atom's heads,
    reading nothing and asking the index nothing by value; only the rest take the full path."""
    parts = [Part("fs", "write", "/p1/src/**", ("/p1/src/secrets/**",), (RULES[2],)), Part("fs", "write", "/p1/a.py", (), (RULES[2],)),
             Part("net", "connect", "https://api.example.com/*", (), (RULES[2],))]  # fmt: skip
    plan = Plan("sha256:" + "0" * 64, "sha256:" + "1" * 64, None, (RequestResult("fs:write:/**", "narrowed", tuple(parts)),), ())
    gate = Gate([plan])
    for index in (index for actions in gate._indices.values() for index in actions.values()):
        index.outcome = None  # type: ignore[assignment,method-assign]  # the full path would fail
    for atom in ["fs:write:/p1/src/a.py", "fs:write:/p1/src/secrets/k", "fs:write:/q/a", "fs:write:/p1/a.py", "fs:write:/p1/b.py",
                 "net:connect:https://api.example.com/a", "net:connect:https://api.example.com/a/b?q=1", "net:connect:https://evil.example.com/a"]:  # fmt: skip
        assert (gate.decide(atom).effect, gate.decide(atom).reason) == reference_decision([plan], atom)[:2], atom
    for atom in ["fs:write:/p1/src/.env", "fs:write:/p1//a", "net:connect:https://API.example.com/a", "net:connect:http://x:80/a"]:
        with pytest.raises(TypeError):
            gate.decide(atom)
    assert gate._warm is None


def test_a_new_gate_builds_its_warm_path_only_after_deciding_enough_atoms() -> None:
    """A one-shot gate (a hook, one `bgc gate`) never pays for compiling the warm regex; a
    long-lived one builds it once, and decides exactly as before."""
    from bgc.core.gate import WARM_AFTER

    granted = Part("fs", "write", "/p1/src/**", ("/p1/src/secrets/**",), (RULES[2],))
    plan = Plan("sha256:" + "0" * 64, "sha256:" + "1" * 64, None, (RequestResult("fs:write:/**", "narrowed", (granted,)),), ())
    gate = Gate([plan])
    atoms = [f"fs:write:/p1/src/{'secrets/' if i % 3 == 0 else ''}f{i}.py" for i in range(WARM_AFTER + 10)]
    before = [gate.decide(atom) for atom in atoms[: WARM_AFTER - 1]]
    assert gate._warm is None
    after = [gate.decide(atom) for atom in atoms[WARM_AFTER - 1 :]]
    assert gate._warm is not None and gate._warm_match(atoms[-1]) is not None
    assert [decision.effect for decision in before + after] == ["deny" if i % 3 == 0 else "allow" for i in range(len(atoms))]


def test_the_control_characters_are_exactly_unicodes_category_cc() -> None:
    import sys
    import unicodedata

    assert [cp for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)) == "Cc"] == [
        cp for cp in range(sys.maxunicode + 1) if _CONTROL.fullmatch(chr(cp))
    ]


def test_a_gate_with_a_root_never_takes_the_probes_or_the_regex(tmp_path: pathlib.Path) -> None:
    """Links must be resolved before a value is matched: a plain value whose link lands in a
    denied directory is denied from the first decision, however the root was given."""
    (tmp_path / "p1" / "src" / "secrets").mkdir(parents=True)
    (tmp_path / "p1" / "src" / "key").symlink_to(tmp_path / "p1" / "src" / "secrets" / "k")
    granted = Part("fs", "write", "/p1/src/**", ("/p1/src/secrets/**",), (RULES[2],))
    plan = Plan("sha256:" + "0" * 64, "sha256:" + "1" * 64, None, (RequestResult("fs:write:/**", "narrowed", (granted,)),), ())
    warmed = Gate([plan])
    warmed.warm_up()
    for gate in (Gate([plan], root=str(tmp_path)), Gate([plan]).rooted(str(tmp_path)), warmed.rooted(str(tmp_path))):
        assert gate.decide("fs:write:/p1/src/key").effect == "deny"
        assert gate.decide("fs:write:/p1/src/a.py").effect == "allow"
    assert warmed.decide("fs:write:/p1/src/key").effect == "allow"  # without a root the name is all there is
