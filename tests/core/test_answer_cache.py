"""The pattern algebra's answers kept between processes (bgc.core.answer_cache): a compile that
recalls them gives byte-identical plans to one that works everything out, also when the order's
budget runs out midway; an entry that is truncated, corrupt, tampered with or of the wrong
shape is a miss (the answer is worked out again), never a wrong answer or an error; the entry
is bounded."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core import answer_cache, cache
from bgc.core.patterns import _automata, glob
from bgc.core.answer_cache import AnswerCache
from bgc.core.compiler import Compiler
from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder
from bgc.core.plan import Plan
from bgc.core.policy.ast import Policy
from bgc.core.policy.loader import parse_policy
from tests.samples import PROMPT, examples

ROOT = Path(__file__).resolve().parents[2]
GROUP = "/policies/generated.bgp"

SEGMENTS = ["a", "b", "src", "*", "**", "?", "*.key", "[ab]", "S*", "x?z"]
patterns = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map(lambda segments: "/" + "/".join(segments))
rules = st.lists(st.tuples(st.sampled_from(["allow", "ask", "deny"]), patterns), min_size=1, max_size=12)
budgets = st.sampled_from([None, 3_000, 30_000, 300_000])
"""Order budgets: none of the limits to ``bgc.core.values.limits.ORDER_BUDGET``'s, and small ones that run out
midway (a recalled answer must cost what working it out does, or the run-out point moves)."""


def policy_of(generated: list[tuple[str, str]], fold: bool) -> Policy:
    text = "filesystem case-insensitive\n" if fold else ""
    text += "".join(f"{effect} fs:write:{pattern}\n" for effect, pattern in generated)
    return parse_policy(text, "generated.bgp")


def order_of(*requests: str) -> WorkOrder:
    atoms = GrantSet.of(GrantAtom("fs", "write", pattern) for pattern in requests)
    return WorkOrder(Intent("patch.apply", "x"), (), atoms, ProposalOrigin("m", (), Digest.of(b"prompt")))


def forget() -> None:
    """Drop every answer this process remembers, as a fresh process starts."""
    for question in (glob._intersect, glob._overlaps, glob._covered, glob._counterexample):
        question.cache_clear()  # type: ignore[attr-defined]


class Counting(AnswerCache):
    """An entry that records the questions asked of it and counts the answers it gave back."""

    def __init__(self, group: str) -> None:
        super().__init__(group)
        self.asked: list[str] = []
        self.kinds: dict[str, str] = {}
        self.served = 0

    def recall(self, name: str, args: tuple[object, ...]) -> tuple[object, int] | None:
        question = answer_cache._question(name, args)
        if question is not None:
            self.kinds[answer_cache._key(question)] = name
        return super().recall(name, args)

    def lookup(self, question: str) -> tuple[object, int] | None:
        found = super().lookup(question)
        self.asked.append(question)
        self.served += found is not None
        return found

    def worked_out(self) -> set[str]:
        """The questions whose answers were worked out (kept anew), not taken from the entry."""
        return set(self.new_answers())


@contextmanager
def cache_in(directory: str) -> Iterator[None]:
    previous = os.environ.get("BGC_CACHE_DIR")
    os.environ["BGC_CACHE_DIR"] = directory
    try:
        yield
    finally:
        if previous is None:
            del os.environ["BGC_CACHE_DIR"]
        else:
            os.environ["BGC_CACHE_DIR"] = previous


def compiled(policy: Policy, order: WorkOrder, budget: int | None, shelf: AnswerCache | None = None) -> bytes:
    """The plan as canonical bytes, compiled in a 'fresh process' (nothing remembered)."""
    forget()
    compiler = Compiler(policy, order_budget=budget)
    if shelf is None:
        plan = compiler.compile(order)
    else:
        with glob.answers_kept_on(shelf):
            plan = compiler.compile(order)
        shelf.save()
    return plan_bytes(plan)


def plan_bytes(plan: Plan) -> bytes:
    return json.dumps(plan.to_data(), sort_keys=True, ensure_ascii=False).encode() + str(plan.id()).encode()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules, st.lists(patterns, min_size=1, max_size=3), st.booleans(), budgets)
def test_recalled_answers_give_byte_identical_plans(
    generated: list[tuple[str, str]], requested: list[str], fold: bool, budget: int | None
) -> None:
    policy, order = policy_of(generated, fold), order_of(*requested)
    with tempfile.TemporaryDirectory() as directory, cache_in(directory):
        uncached = compiled(policy, order, budget)
        writer = Counting(GROUP)
        assert compiled(policy, order, budget, writer) == uncached
        reader = Counting(GROUP)
        assert compiled(policy, order, budget, reader) == uncached
        kept = answer_cache._read(GROUP)
    assert writer.served == 0
    assert kept == writer.new_answers()  # everything the first compile worked out was kept...
    assert reader.served >= min(1, len(kept))  # ...and the second one used it
    assert not reader.new_answers() or budget is not None  # only a budget can leave a question unasked before


def _entry_path(directory: str) -> Path:
    name = cache.entry_key(answer_cache.NAMESPACE, GROUP)
    assert name is not None
    return Path(directory) / name


POLICY_TEXT = [("allow", "/src/**"), ("allow", "/**/a/**"), ("deny", "/**/*.key"), ("ask", "/src/b/**"), ("deny", "/**/S*")]
ORDER = order_of("/**", "/src/*/x?z")


def _written(directory: str) -> tuple[Policy, bytes, dict[str, object]]:
    """A policy, its plan compiled with nothing kept, and the answers that compile kept."""
    policy = policy_of(POLICY_TEXT, fold=True)
    uncached = compiled(policy, ORDER, None)
    assert compiled(policy, ORDER, None, AnswerCache(GROUP)) == uncached
    kept = answer_cache._read(GROUP)
    assert kept and _entry_path(directory).exists()
    return policy, uncached, kept


@functools.cache
def _kept_once() -> tuple[Policy, bytes, dict[str, object], bytes, tuple[str, ...], dict[str, str]]:
    """:func:`_written` once per process, for the properties that damage what it kept: the policy,
    its uncached plan, the answers kept, the entry's bytes as written, and the questions a compile
    asks when every answer is served (checked here: the sound entry serves every one) with the
    question each names (its key is a digest). Each
    example puts the entry's bytes into a fresh cache directory instead of compiling twice more
    to write them again (the bytes depend on the answers and bgc's code, not on the directory)."""
    with tempfile.TemporaryDirectory() as directory, cache_in(directory):
        policy, uncached, kept = _written(directory)
        raw = _entry_path(directory).read_bytes()
        clean = Counting(GROUP)
        assert compiled(policy, ORDER, None, clean) == uncached and clean.served == len(clean.asked) > 0
    with tempfile.TemporaryDirectory() as directory, cache_in(directory):  # the bytes alone serve as well
        _entry_path(directory).write_bytes(raw)
        again = Counting(GROUP)
        assert compiled(policy, ORDER, None, again) == uncached and again.served == len(again.asked) == len(clean.asked)
    return policy, uncached, kept, raw, tuple(sorted(set(clean.asked))), clean.kinds


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_entries_are_misses(data: st.DataObject) -> None:
    """Truncated at any length, any byte changed: the envelope's digest fails, nothing is served
    and every answer is worked out again."""
    policy, uncached, kept, raw, *_ = _kept_once()
    with tempfile.TemporaryDirectory() as directory, cache_in(directory):
        path = _entry_path(directory)
        if data.draw(st.booleans(), label="truncate"):
            damaged = raw[: data.draw(st.integers(0, len(raw) - 1), label="length")]
        else:
            at = data.draw(st.integers(0, len(raw) - 1), label="offset")
            damaged = raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255), label="xor")]) + raw[at + 1 :]
        path.write_bytes(damaged)
        reader = Counting(GROUP)
        assert compiled(policy, ORDER, None, reader) == uncached
        assert reader.served == 0 and reader.new_answers() == kept  # every answer worked out again, the same


def _wrong_answers(kind: str) -> st.SearchStrategy[object]:
    """Answers no question of this kind can have (an answer of another question's type, too)."""
    anything = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
                         st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))  # fmt: skip
    if kind == "intersect":  # a list of pattern texts, each exactly as it parses
        return st.one_of(
            anything.filter(lambda value: not isinstance(value, list) or value),
            st.lists(st.sampled_from(["", "/a/../b\u0000", "[", "/e\u0301"]), min_size=1, max_size=2),
        )
    if kind == "counterexample":  # a text or None
        return anything.filter(lambda value: value is not None and not isinstance(value, str))
    return anything.filter(lambda value: not isinstance(value, bool))  # overlaps, covered: a boolean


@settings(max_examples=examples(20, thorough=400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_answers_of_the_wrong_shape_are_misses(data: st.DataObject) -> None:
    """Entries whose envelope is sound but whose content is not an answer: a wrong group, no
    answers table, an answer of the wrong type for its question, a cost that is not a count of
    steps. Each is a miss: the plan is the uncached one, and the answer is worked out again."""
    policy, uncached, kept, _, asked, kinds = _kept_once()  # asked: what a compile asks when every answer is served
    with tempfile.TemporaryDirectory() as directory, cache_in(directory):
        chosen = data.draw(st.lists(st.sampled_from(asked), min_size=1, max_size=len(asked), unique=True))
        answers = dict(kept)
        for question in chosen:
            answer, cost = kept[question]  # type: ignore[misc]
            kind = kinds[question]
            answers[question] = data.draw(st.one_of(
                st.tuples(_wrong_answers(kind), st.just(cost)).map(list),
                st.tuples(st.just(answer), st.one_of(st.integers(max_value=-1), st.floats(), st.booleans(), st.none(),
                                                     st.text(max_size=3))).map(list),
                st.one_of(st.none(), st.integers(), st.lists(st.just(answer), max_size=1), st.lists(st.just(cost), min_size=3, max_size=3)),
            ))  # fmt: skip
        payload = {"group": GROUP, "answers": answers}
        whole = data.draw(st.sampled_from(["answers", "group", "table", "json"]), label="what")
        if whole == "group":
            payload["group"] = "/another/policy.bgp"
        elif whole == "table":
            payload["answers"] = list(answers)
        encoded = json.dumps(payload).encode()
        cache.store_bytes(answer_cache.NAMESPACE, GROUP, encoded[:-1] if whole == "json" else encoded)
        reader = Counting(GROUP)
        assert compiled(policy, ORDER, None, reader) == uncached
        assert reader.worked_out() >= set(chosen)  # every damaged answer was worked out again
        if whole != "answers":
            assert reader.served == 0 and reader.new_answers() == kept  # every answer worked out again, the same


def test_an_entry_over_the_size_bound_is_not_read(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as directory, cache_in(directory):
        policy, uncached, kept = _written(directory)
        size = len(_entry_path(directory).read_bytes())
        monkeypatch.setattr(answer_cache, "MAX_BYTES", size // 2)
        reader = Counting(GROUP)
        assert compiled(policy, ORDER, None, reader) == uncached
        assert reader.served == 0


def test_the_entry_is_bounded_and_keeps_the_latest_answers_first(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as directory, cache_in(directory):
        policy, uncached, kept = _written(directory)
        assert len(kept) > 6
        monkeypatch.setattr(answer_cache, "MAX_ANSWERS", 6)
        other = order_of("/b/**")
        shelf = AnswerCache(GROUP)
        compiled(policy, other, None, shelf)
        bounded = answer_cache._read(GROUP)
        assert len(bounded) == 6
        new = list(shelf.new_answers())
        assert list(bounded)[: len(new)] == new[:6]  # this run's own first
        monkeypatch.setattr(answer_cache, "MAX_CHARS", 40)
        shelf = AnswerCache(GROUP)
        compiled(policy, order_of("/a/**"), None, shelf)
        assert sum(len(question) for question in answer_cache._read(GROUP)) <= 40


def test_questions_name_their_patterns_exactly() -> None:
    """Distinct questions are distinct texts (shape, order, nesting), and case folding shows."""
    p = [glob.parse(text) for text in ("/a", "/b", "/a/**", "/[Aa]")]
    questions = [
        answer_cache._question("overlaps", (p[0], p[1])),
        answer_cache._question("overlaps", (p[1], p[0])),
        answer_cache._question("overlaps", (p[0], p[3])),
        answer_cache._question("covered", (p[0], ((p[1], ()), (p[2], ())))),
        answer_cache._question("covered", (p[0], ((p[1], (p[2],)),))),
        answer_cache._question("covered", (p[0], ((p[1], ()),))),
        answer_cache._question("covered", (p[0], ())),
        answer_cache._question("counterexample", (p[0], ((p[1], ()),))),
    ]
    assert len(set(questions)) == len(questions)
    many = tuple((p[1], ()) for _ in range(answer_cache.MAX_KEPT_QUESTION))
    assert answer_cache._question("covered", (p[0], many)) is None


@pytest.mark.e2e
def test_bgc_compile_recalls_answers_across_processes(tmp_path: Path) -> None:
    """The real command, in fresh processes: the second compile reads the first one's answers and
    prints the same bytes, which are also what a compile without any cache prints."""
    policy = tmp_path / "p.bgp"
    policy.write_text("".join(f"{effect} fs:write:{pattern}\n" for effect, pattern in POLICY_TEXT))
    order = tmp_path / "o.json"
    order.write_text(json.dumps({
        "intent": {"kind": "patch.apply", "payload": "x"}, "requests": ["fs:write:/**", "fs:write:/src/*/x?z"],
        "calls": [], "origin": {"model": "m", "parents": [], "prompt": PROMPT},
    }))  # fmt: skip

    def run(cache_dir: str) -> bytes:
        env = {**os.environ, "BGC_CACHE_DIR": cache_dir}
        argv = [sys.executable, "-m", "bgc", "compile", str(order), "-p", str(policy), "--format", "json"]
        done = subprocess.run(argv, env=env, capture_output=True, check=False)
        assert done.returncode == 1 and not done.stderr, done.stderr
        return done.stdout

    kept = tmp_path / "cache"
    first = run(str(kept))
    entries = {path.name: path.read_bytes() for path in kept.iterdir()}
    assert run(str(kept)) == first == run("")
    assert {path.name: path.read_bytes() for path in kept.iterdir()} == entries  # nothing new to write
    with cache_in(str(kept)):
        assert len(answer_cache._read(os.path.realpath(policy))) > 0


@pytest.mark.parametrize(("bound", "code"), [("MAX_WORK", "steps"), ("MAX_VISITED", "states")])
def test_kept_answers_are_keyed_by_digest_and_limits_by_code(monkeypatch, bound: str, code: str) -> None:  # type: ignore[no-untyped-def]
    """The entry names no pattern and holds no limit's words: each question is kept under a
    digest, each undecided answer as the code of the bound it hit; recalled, both give the
    plan that working everything out gives."""
    monkeypatch.setattr(_automata, bound, 10)
    with tempfile.TemporaryDirectory() as directory, cache_in(directory):
        policy, uncached, kept = _written(directory)
        raw = _entry_path(directory).read_bytes()
        assert all(re.fullmatch("[0-9a-f]{40}", key) for key in kept)
        limits = [answer for answer, _ in kept.values() if isinstance(answer, dict)]  # type: ignore[misc]
        assert limits and all(answer == {"limit": code} for answer in limits)
        assert b"unknown" not in raw and b"/src/" not in raw.split(b'"answers"', 1)[1].split(b":", 1)[0]
        reader = Counting(GROUP)
        assert compiled(policy, ORDER, None, reader) == uncached
        assert reader.served == len(reader.asked) > 0 and not reader.worked_out()  # limits served too


def test_a_limit_that_names_patterns_is_not_kept() -> None:
    a, b = glob.parse("/x*"), glob.parse("/x*")
    named = glob.Undecided("'/x*' and '/x*' both match the empty text")
    assert answer_cache._entry("intersect", (a, b), named) is None
    kept = answer_cache._entry("overlaps", (a, b), answer_cache._limits()["terms"])
    assert kept is not None and kept[1] == {"limit": "terms"}
    assert answer_cache._decoded("overlaps", kept[1]) == answer_cache._limits()["terms"]
