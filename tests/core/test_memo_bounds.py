"""The algebra's and the compiler's memos: bounded in bytes, keyed by a digest of the question,
and holding answers only — never an exception, its traceback or the frames and automata that
traceback keeps alive. Each memo is filled past its bound with questions of every kind the
algebra remembers (decided and undecided), and what it holds is checked after every answer."""

from __future__ import annotations

import gc
import itertools
import types
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.compiler import Compiler
from bgc.core.gate import Gate
from bgc.core.patterns import _automata, _pattern, glob
from bgc.core.patterns.budget import Budget, CostMemo, Undecided, weight
from bgc.core.policy.loader import parse_policy
from tests.core.test_compiler import order, plan_for
from tests.samples import examples

SMALL = 2_500
"""A byte bound small enough that a few dozen questions of long patterns fill it."""

QUESTIONS = {
    "intersect": lambda a, b: glob.intersect(a, b),
    "overlaps": lambda a, b: glob.overlaps(a, b),
    "covered": lambda a, b: glob.is_subset(a, [b, "/**/z/**"]),
    "counterexample": lambda a, b: glob.example(a, [b]),
}
"""A way to ask each memoised question (the memo is named by the question)."""

_fresh = itertools.count()


def pattern_pair(length: int) -> tuple[str, str]:
    """Two long patterns no earlier test asked about (the memo is the process's)."""
    tag = next(_fresh)
    return f"/**/a{tag}/{'x' * length}/*.py", f"/**/{'x' * length}/b{tag}*.py"


def memo_of(name: str) -> CostMemo[object]:
    return next(fn.memo for fn in _memoised() if fn.__name__.lstrip("_") == name)


def _memoised() -> Iterator[object]:
    for value in vars(glob).values():
        if callable(value) and hasattr(value, "memo"):
            yield value


def test_every_memoised_question_is_filled_here() -> None:
    assert {fn.__name__.lstrip("_") for fn in _memoised()} == set(QUESTIONS)


def holds_no_exception(value: object, depth: int = 6) -> bool:
    """Whether nothing reachable from ``value`` (a few references deep) is an exception, a
    traceback or a frame."""
    seen: set[int] = set()
    frontier = [value]
    for _ in range(depth):
        following = []
        for item in frontier:
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, (BaseException, types.TracebackType, types.FrameType)):
                return False
            following.extend(gc.get_referents(item))
        frontier = following
    return True


@pytest.mark.parametrize("name", list(QUESTIONS))
@settings(max_examples=examples(10))
@given(lengths=st.lists(st.integers(1, 200), min_size=1, max_size=20))
def test_a_memo_stays_within_its_bytes_and_keeps_answers_only(name: str, lengths: list[int]) -> None:
    memo = memo_of(name)
    bound, memo.max_bytes = memo.max_bytes, SMALL
    memo.clear()
    try:
        dropped = False
        for length in itertools.islice(itertools.cycle(lengths), 120):
            a, b = pattern_pair(length)
            before = len(memo)
            first = QUESTIONS[name](a, b)
            dropped |= len(memo) <= before
            assert QUESTIONS[name](a, b) == first  # remembered or worked out again: the same answer
            assert memo.bytes <= SMALL
            assert sum(weight(key) + weight(value) for key, (value, _) in memo._entries.items()) == memo.bytes
            assert all(type(key) is bytes and len(key) == 20 for key in memo._entries)  # digests, not patterns
            assert all(holds_no_exception(value) for value in memo.values())
        assert dropped  # it was filled past its bound, and started over
    finally:
        memo.max_bytes = bound
        memo.clear()


def test_an_undecided_question_is_kept_as_words_not_as_its_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_automata, "MAX_WORK", 10)
    a, covering = f"/x{next(_fresh)}/**/a*b/**/e", ["/x*/**/a*/**", "/y/**"]
    for _ in range(2):  # worked out, then remembered: both raise afresh
        with pytest.raises(glob.AlgebraLimit, match="unknown"):
            glob.is_subset(a, covering)
    kept = memo_of("covered").values()
    assert any(isinstance(value, Undecided) for value in kept)
    assert all(holds_no_exception(value) for value in kept)


def test_the_compilers_request_memo_stays_within_its_bytes() -> None:
    policy = parse_policy("allow fs:write:/**\ndeny fs:write:/**/secrets/**\n", "p.bgp")
    compiler = Compiler(policy)
    compiler._requests.max_bytes = SMALL
    plans = []
    for index in range(60):
        requested = f"fs:write:/src{index}/{'m' * 80}/**"
        plans.append(compiler.compile(order(requested)).to_data())
        assert compiler._requests.bytes <= SMALL
        assert all(type(key) is bytes for key in compiler._requests._entries)
        assert all(holds_no_exception(value) for value in compiler._requests.values())
    assert len(compiler._requests) < 60  # started over on the way
    fresh = Compiler(policy)
    assert plans == [fresh.compile(order(f"fs:write:/src{index}/{'m' * 80}/**")).to_data() for index in range(60)]


def test_an_answer_larger_than_the_whole_memo_is_not_kept() -> None:
    memo: CostMemo[str] = CostMemo(max_bytes=100)
    assert memo.get(b"k", Budget(), lambda: "x" * 1000) == "x" * 1000
    assert len(memo) == 0 and memo.bytes == 0


GATE_POLICY = "allow fs:write:/**\ndeny fs:write:/**/secrets/**\nallow git:push:origin/*\n"
NEEDS = {
    "fs": lambda tag, length: ("fs", "write", f"/src{tag}/{'m' * length}/*.py"),
    "fs-denied": lambda tag, length: ("fs", "write", f"/src{tag}/{'m' * length}/secrets/*"),
    "git": lambda tag, length: ("git", "push", f"origin/b{tag}{'m' * length}*"),
    "ungranted": lambda tag, length: ("net", "get", f"https://h{tag}.example/{'m' * length}*"),
}
"""Pattern needs of each kind a gate remembers: granted, denied by an except, another resource,
and a resource/action no part grants (whose empty terms are remembered too)."""


@settings(max_examples=examples(10))
@given(lengths=st.lists(st.integers(1, 200), min_size=1, max_size=20))
def test_a_gates_memos_stay_within_their_bytes_and_keep_answers_only(lengths: list[int]) -> None:
    plan = plan_for(GATE_POLICY, "fs:write:/**", "git:push:origin/*")
    gate, fresh = Gate([plan]), Gate([plan])
    gate._pattern_needs.max_bytes = gate._term_cache.max_bytes = SMALL
    dropped = False
    for index, length in enumerate(itertools.islice(itertools.cycle(lengths), 120)):
        resource, action, text = NEEDS[list(NEEDS)[index % len(NEEDS)]](next(_fresh), length)
        before = len(gate._pattern_needs)
        answer = gate.need(resource, action, text, Budget())
        dropped |= len(gate._pattern_needs) <= before
        assert gate.need(resource, action, text, Budget()) == answer
        assert answer == Gate([plan]).need(resource, action, text, Budget())
        for memo in (gate._pattern_needs, gate._term_cache):
            assert memo.bytes <= SMALL
            assert sum(weight(key) + weight(value) for key, (value, _) in memo._entries.items()) == memo.bytes
            assert all(type(key) is bytes and len(key) == 20 for key in memo._entries)  # digests, not texts
            assert all(holds_no_exception(value) for value in memo.values())
    assert dropped
    assert fresh._pattern_needs.bytes == 0  # one gate's memo is its own


PATTERN_TEXTS = {
    "literal": lambda tag, length: f"/src{tag}/{'m' * length}.py",
    "star": lambda tag, length: f"/src{tag}/{'m' * length}*.py",
    "globstar": lambda tag, length: f"/**/d{tag}/{'m' * length}/**",
    "class": lambda tag, length: f"/c{tag}/[a-f]{'m' * length}?",
    "escaped": lambda tag, length: f"/e{tag}/\\*{'m' * length}",
    "not-nfc": lambda tag, length: f"/n{tag}/e\u0301{'m' * length}",
}
"""Pattern text of each shape the parser reads (the cache is keyed by text, parsed or not)."""


@settings(max_examples=examples(10))
@given(lengths=st.lists(st.integers(1, 200), min_size=1, max_size=20))
def test_the_parse_cache_stays_within_its_bytes_and_keeps_patterns_only(lengths: list[int]) -> None:
    memo = _pattern._parsed
    bound, memo.max_bytes = memo.max_bytes, SMALL
    memo.clear()
    try:
        dropped = False
        for index, length in enumerate(itertools.islice(itertools.cycle(lengths), 120)):
            text = PATTERN_TEXTS[list(PATTERN_TEXTS)[index % len(PATTERN_TEXTS)]](next(_fresh), length)
            before = len(memo)
            parsed = glob.parse(text)
            dropped |= len(memo) <= before
            assert glob.parse(text) == parsed == glob.Pattern(text)
            with pytest.raises(glob.PatternError):
                glob.parse(text + "[")  # not remembered, raised afresh
            assert memo.bytes <= SMALL
            assert sum(weight(key) + weight(value) for key, (value, _) in memo._entries.items()) == memo.bytes
            assert all(type(key) is bytes and len(key) == 20 for key in memo._entries)  # digests, not texts
            assert all(holds_no_exception(value) for value in memo.values())
        assert dropped
    finally:
        memo.max_bytes = bound
        memo.clear()
