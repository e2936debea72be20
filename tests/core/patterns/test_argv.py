"""The argv dialect: encoding round-trips, and a pattern matches exactly the argvs that a
word-by-word reference matcher says it does.

The reference below matches a list of word patterns against a list of words by recursion
(``fnmatch`` for one word: ``*`` is any run of the word's characters, slashes included; a pattern
word of only stars (``**``, two or more) is any number of whole words, at least one at the end, as git's trailing ``a/**``).
It shares no code with bgc.core.patterns.glob; every argv of up to three words over a small alphabet is
enumerated against generated patterns.
"""

from __future__ import annotations

import fnmatch
import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bgc.core.patterns import glob
from bgc.core.resources.proc import WORD_SLASH, ArgvError, decode_argv, encode_argv, pattern_of_words
from bgc.core.compiler import Compiler
from bgc.analysis.findings import Severity
from bgc.core.values.model import GrantAtom, ModelError, WorkOrder
from tests.samples import examples

WORD_CHARS = "ab/. "
WORDS = ("", *("".join(p) for n in (1, 2) for p in itertools.product(WORD_CHARS, repeat=n)))
ARGVS = tuple(list(a) for n in (1, 2, 3) for a in itertools.product(WORDS[:12], repeat=n) if list(a) != [""])


def reference(patterns: list[str], words: list[str], *, after_word: bool = False) -> bool:
    """Word-by-word: does the list of word patterns match the list of words?"""
    if not patterns:
        return not words
    head, rest = patterns[0], patterns[1:]
    if len(head) >= 2 and set(head) == {"*"}:  # `**` (and `***`, as git reads it) is whole words
        if not rest:
            return len(words) >= 1 if after_word else True
        return any(reference(rest, words[i:], after_word=True) for i in range(len(words) + 1))
    return bool(words) and fnmatch.fnmatchcase(words[0], head.replace("**", "*")) and reference(
        rest, words[1:], after_word=True
    )


word_pattern = st.one_of(
    st.just("**"),
    st.lists(st.sampled_from(["a", "b", "/", ".", "*", "?", "[!a]", "[/.]"]), max_size=3).map("".join),
)


@settings(max_examples=examples(60, thorough=1200), deadline=None)
@given(st.lists(word_pattern, min_size=1, max_size=3))
def test_pattern_matches_exactly_the_argvs_the_word_matcher_does(words: list[str]) -> None:
    assume(words != [""])  # the empty program: no argv, no pattern
    text = pattern_of_words(words)
    pattern = glob.parse(text)
    for argv in ARGVS:
        assert pattern.matches(encode_argv(argv)) == reference(words, argv), (words, argv)


@settings(max_examples=examples(125, thorough=2500), deadline=None)
@given(st.lists(st.text(st.characters(blacklist_characters=WORD_SLASH), max_size=6), min_size=1, max_size=5))
def test_encoding_round_trips_and_words_cannot_forge_boundaries(argv: list[str]) -> None:
    assume(argv != [""])
    value = encode_argv(argv)
    assert decode_argv(value) == tuple(argv)
    assert value.count("/") == len(argv) - 1  # one separator between words, none inside them


def test_a_word_holding_the_slash_stand_in_has_no_spelling() -> None:
    with pytest.raises(ArgvError):
        encode_argv(["cat", f"a{WORD_SLASH}b"])
    for empty in ([], [""]):
        with pytest.raises(ArgvError):
            encode_argv(empty)


def test_star_does_not_cross_a_word_but_does_cross_a_slash_inside_one() -> None:
    assert glob.parse("cat/*").matches(encode_argv(["cat", "/etc/passwd"]))
    assert not glob.parse("cat/*").matches(encode_argv(["cat", "a", "b"]))
    assert not glob.parse("git/diff/*").matches(encode_argv(["git", "diff", "a b", "c"]))
    assert glob.parse("npm/run/test*").matches(encode_argv(["npm", "run", "test:unit"]))
    assert not glob.parse("npm/run/test*").matches(encode_argv(["npm", "run", "test", "x"]))


POLICY = """\
allow proc:exec:git/status, git/diff, git/diff/**, find/., npm/run/test*
deny proc:exec:git/push, git/push/**
tool shell.run needs proc:exec:{argv0}

expect allow proc:exec:git/status
expect allow proc:exec:git/diff/--stat/HEAD~1
expect allow proc:exec:find/.
expect deny proc:exec:git/push/origin/main
expect deny proc:exec:git/status/--porcelain
expect deny proc:exec:git/diff∕x
"""


def test_argv_rules_decide_with_the_algebra_and_expects(tmp_path) -> None:
    from bgc.analysis.checks import check_paths
    from bgc.core.policy.loader import load_policy

    path = tmp_path / "p.bgp"
    path.write_text(POLICY)
    result = check_paths([str(path)])
    assert not result.errors
    assert [f for f in result.findings if f.severity is not Severity.NOTE] == [], result.findings
    policy = load_policy(str(path))
    compiler = Compiler(policy)
    # a request of every `git diff` argv is granted whole; `git **` is narrowed around push
    order = WorkOrder.from_data(
        {
            "intent": {"kind": "x.y", "payload": None},
            "requests": ["proc:exec:git/diff/**", "proc:exec:git/**", "proc:exec:find/."],
            "calls": [{"tool": "shell.run", "params": {"argv0": "/usr/bin/git"}}],
            "origin": {"model": "m", "parents": [], "prompt": "sha256:" + "0" * 64},
        }
    )
    plan = compiler.compile(order)
    verdicts = {str(r.atom): r.verdict for r in plan.requests}
    assert verdicts == {
        "proc:exec:git/diff/**": "granted",
        "proc:exec:git/**": "narrowed",
        "proc:exec:find/.": "granted",
    }
    # the template's parameter is one word: /usr/bin/git is not the argv `"" usr bin git`
    assert [n.atom for n in plan.calls[0].needs] == [f"proc:exec:{WORD_SLASH}usr{WORD_SLASH}bin{WORD_SLASH}git"]


def test_proc_requests_keep_dot_words_other_resources_refuse_them() -> None:
    assert GrantAtom.parse("proc:exec:find/./-name/..").pattern == "find/./-name/.."
    with pytest.raises(ModelError):
        GrantAtom.parse("pkg:install:a/./b")
