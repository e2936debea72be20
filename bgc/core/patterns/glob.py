"""The pattern dialect: parsing, linear matching and the exact set algebra.

This module is the dialect's one door and holds the algebra; a parsed pattern and the
operations on one pattern live in :mod:`bgc.core.patterns._pattern` (re-exported here), the engines in
``bgc._glob_*``. Patterns are git's wildmatch with ``WM_PATHNAME``, case-sensitive: ``*`` and ``?`` never
cross ``/``, ``**`` as a whole segment spans segments, classes never match ``/``. Malformed
patterns are errors with a column, never silently literal. See docs/patterns.md.

Why it is built this way:

* Matching runs a lazily built DFA over the pattern's position automaton, so it is linear in
  the text whatever the pattern. One pattern is matched by ``re`` in C instead when a
  translation that commits to the earliest place of every piece is exact and cheap
  (:mod:`bgc.core.patterns._regex`: atomic groups, so it cannot backtrack either).
  :class:`PatternSet` scans a text once for any number of patterns.
* The algebra is exact. :func:`intersect` computes readable globs symbolically and prunes
  members that others cover; inclusion, emptiness and examples are decided on automata over
  the character classes the patterns actually distinguish, so any Unicode works. Every
  decision is bounded: past the bound it raises :class:`AlgebraLimit` ("unknown"), which
  callers treat as not granted.
* Results are cached per pattern and per question: the compiler asks the same questions
  many times. ``bgc compile`` also keeps the answers between processes, spelled out as the
  patterns' texts (:func:`answers_kept_on`, :mod:`bgc.core.answer_cache`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Protocol, TypeVar

from bgc.core.patterns._automata import Automaton, search
from bgc.core.patterns._pattern import (
    Pattern,
    PatternSet,
    _patterns_of,
    beneath,
    _spliced,
    escape,
    fold_case,
    has_dot_segment,
    parse,
    size_problem,
)
from bgc.core.patterns._syntax import PatternError, Segment
from bgc.core.patterns.budget import AlgebraLimit, Budget, BudgetExhausted, CostMemo, Undecided

_T = TypeVar("_T")

__all__ = [
    "AlgebraLimit",
    "AnswerShelf",
    "Budget",
    "BudgetExhausted",
    "Pattern",
    "PatternError",
    "PatternSet",
    "answers_kept_on",
    "disjoint_ends",
    "escape",
    "example",
    "fold_case",
    "has_dot_segment",
    "intersect",
    "is_empty",
    "is_subset",
    "is_subset_terms",
    "overlaps",
    "uncovered_example",
    "parse",
    "plainly_outside",
    "size_problem",
]

# ---------------------------------------------------------------------------------------------
# Algebra


#: Steps charged for asking a question at all (the fast paths, the memo, Python's calls).
QUESTION_STEPS = 32

#: Steps charged for each pattern an intersection writes, besides its length: rendering it,
#: parsing the text back to check it, and translating it to a regex when it is first matched.
PATTERN_STEPS = 1500

#: Steps charged for parsing a pattern joined from two others' texts (:func:`beneath`), besides
#: its length; it is matched through them and needs no translation of its own.
PARSE_STEPS = 160


class AnswerShelf(Protocol):
    """Where the algebra's answers outlive the process (:mod:`bgc.core.answer_cache`, which spells
    questions and answers out as text and checks what it reads back). A question is its name
    (a memoised function's, without the underscore) and its arguments: patterns, or terms
    ``(pattern, excepts)``."""

    def recall(self, name: str, args: tuple[object, ...]) -> tuple[object, int] | None:
        """The answer kept for this question and its cost in steps, or None (absent, or not an
        answer this question can have: a miss)."""

    def keep(self, name: str, args: tuple[object, ...], value: object, cost: int) -> None:
        """An answer just worked out, with its cost in steps."""


_MEMOISED: list[str] = []
"""The names of the memoised questions (filled by :func:`_memo`)."""
_SHELVES: dict[str, _ShelfView] = {}
"""The shelf's view for each memoised question while one is in use (:func:`answers_kept_on`)."""


@contextmanager
def answers_kept_on(shelf: AnswerShelf) -> Iterator[None]:
    """Within this ``with`` block, every memoised question that misses in memory asks ``shelf``
    first, and every answer worked out is given to it (with its cost, so a kept answer is
    charged exactly what working it out costs: plans stay byte-identical)."""
    previous = dict(_SHELVES)
    _SHELVES.update({name: _ShelfView(name, shelf) for name in _MEMOISED})
    try:
        yield
    finally:
        _SHELVES.clear()
        _SHELVES.update(previous)


class _ShelfView:
    """One question's view of a shelf (a :class:`~bgc.core.patterns.budget.Recall` keyed by its arguments)."""

    __slots__ = ("name", "shelf")

    def __init__(self, name: str, shelf: AnswerShelf) -> None:
        self.name, self.shelf = name, shelf

    def recall(self, args: tuple[object, ...]) -> tuple[object, int] | None:
        return self.shelf.recall(self.name, args)

    def keep(self, args: tuple[object, ...], value: object, cost: int) -> None:
        self.shelf.keep(self.name, args, value, cost)


class _Spelled:
    """A shelf's view for one question: the memo knows it by its digest, the shelf by its patterns."""

    __slots__ = ("args", "view")

    def __init__(self, args: tuple[object, ...], view: _ShelfView) -> None:
        self.args, self.view = args, view

    def recall(self, key: object) -> tuple[object, int] | None:
        return self.view.recall(self.args)

    def keep(self, key: object, value: object, cost: int) -> None:
        self.view.keep(self.args, value, cost)


MEMO_BYTES = 32 * 1024 * 1024
"""What each memoised question's answers may hold at most (:func:`~bgc.core.patterns.budget.weight`)."""


def question_key(name: str, args: tuple[object, ...]) -> bytes:
    """A question's digest: its name and its patterns' texts, each length-prefixed, nested as
    asked. The memo keeps this, not the patterns (which carry their automata)."""
    digest = hashlib.blake2b(name.encode(), digest_size=20)

    def spell(item: object) -> None:
        if isinstance(item, Pattern):
            data = item.text.encode("utf-8", "surrogatepass")
            digest.update(b"p%d:" % len(data) + data)
        else:
            items = tuple(item)  # type: ignore[call-overload]
            digest.update(b"(%d:" % len(items))
            for part in items:
                spell(part)

    spell(args)
    return digest.digest()


def _memo(fn: Callable[..., _T]) -> Callable[..., _T]:
    """Cache answers *and* AlgebraLimit: a question that hit its bound is not worked again.

    The compiler asks the same questions many times; an undecidable one would otherwise
    spend its whole work bound on every asking. Answers are kept with their cost
    (:class:`~bgc.core.patterns.budget.CostMemo`), so a remembered answer charges the caller's budget what
    working it out would have: plans do not depend on what was asked before. The budget
    running out (:class:`~bgc.core.patterns.budget.BudgetExhausted`) is not an answer and is never kept.
    While a shelf is in use (:func:`answers_kept_on`), a miss asks it too.
    """
    memo: CostMemo[_T | Undecided] = CostMemo(65536, MEMO_BYTES)
    name = fn.__name__.lstrip("_")
    _MEMOISED.append(name)

    def wrapper(*args: object, budget: Budget) -> _T:
        def compute() -> _T | Undecided:
            budget.charge(QUESTION_STEPS)
            try:
                return fn(*args, budget)
            except BudgetExhausted:
                raise
            except AlgebraLimit as error:
                return Undecided.of(error)

        shelf = _SHELVES.get(name)
        hit = memo.get(question_key(name, args), budget, compute, None if shelf is None else _Spelled(args, shelf))
        if isinstance(hit, Undecided):
            raise hit.error()
        return hit

    wrapper.cache_clear = memo.clear  # type: ignore[attr-defined]
    wrapper.memo = memo  # type: ignore[attr-defined]
    wrapper.__doc__, wrapper.__name__ = fn.__doc__, fn.__name__
    return wrapper


def disjoint_ends(a: Pattern, b: Pattern) -> bool:
    """True when no text can match both: their literal prefixes or suffixes already disagree.

    The cheapest exact answer the algebra has (two string comparisons): most rule pairs of a
    large policy are told apart here (``/p1/**`` and ``/p2/**``; ``/**/*.key`` and ``/**/*.py``).
    """
    pa, pb, sa, sb = a.prefix, b.prefix, a.suffix, b.suffix
    return not (pa.startswith(pb) or pb.startswith(pa)) or not (sa.endswith(sb) or sb.endswith(sa))


PatternLike = Pattern | str
"""The algebra takes parsed patterns or pattern text (parsed, and so validated, on the way in)."""


def _p(pattern: PatternLike) -> Pattern:
    return pattern if isinstance(pattern, Pattern) else parse(pattern)


def _budget(budget: Budget | None) -> Budget:
    """The caller's budget, or one that only counts: each question still has its own bounds."""
    return Budget() if budget is None else budget


def intersect(a: PatternLike, b: PatternLike, *, budget: Budget | None = None) -> list[Pattern]:
    """Patterns whose union is exactly L(a) ∩ L(b), none covered by the others; [] if empty.

    When one pattern contains the other, the answer is that pattern as written. Every
    question of the algebra charges its work to ``budget`` (:mod:`bgc.core.patterns.budget`).
    """
    a, b = _p(a), _p(b)
    first, second = (a, b) if a.text <= b.text else (b, a)
    return list(_intersect(first, second, budget=_budget(budget)))


@_memo
def _intersect(a: Pattern, b: Pattern, budget: Budget) -> tuple[Pattern, ...]:
    if a == b:
        return (a,)
    if disjoint_ends(a, b):
        return ()
    for x, y in ((a, b), (b, a)):
        if x.literal is not None:
            return (x,) if y.matches(x.literal) else ()
    if is_subset(a, [b], budget=budget):
        return (a,)
    if is_subset(b, [a], budget=budget):
        return (b,)
    for x, y in ((a, b), (b, a)):
        below = beneath(x, y, budget)
        if below is not None:
            budget.charge(PARSE_STEPS + len(below.text))
            return (below,)
    from bgc.core.patterns._symbolic import intersect_elems  # here: deciding values (a gate, a hook) never intersects

    found: dict[str, Pattern] = {}
    empty_text = False  # the term matching only "": no pattern spells it (the empty pattern is an error)
    for elems in intersect_elems(a._elems, b._elems, budget):
        if elems == (Segment(()),):
            empty_text = True
            continue
        for pat in _patterns_of(elems):
            budget.charge(PATTERN_STEPS + len(pat.text))  # spelled out, parsed again, matched
            found[pat.text] = pat
    kept = sorted(found.values(), key=lambda p: (-len(p.text), p.text))
    for pat in list(kept):
        others = [q for q in kept if q is not pat]
        if others and is_subset(pat, others, budget=budget):
            kept.remove(pat)
    if empty_text and not any(p.matches("") for p in kept):
        raise AlgebraLimit(
            f"{a.text!r} and {b.text!r} both match the empty text, which no pattern can spell; "
            "the intersection cannot be written exactly"
        )
    return tuple(sorted(kept, key=lambda p: p.text))


def is_subset(a: PatternLike, bs: Sequence[PatternLike], *, budget: Budget | None = None) -> bool:
    """Is every text matching ``a`` matched by some pattern in ``bs``?"""
    a, bs, budget = _p(a), [_p(b) for b in bs], _budget(budget)
    if len(bs) == 1:
        a, only = _unbeneath(a, bs[0])
        bs = [only]
    if len(bs) == 1 and _starts(bs[0]) is not None:
        budget.charge(QUESTION_STEPS)
        return _inside_start(a, bs[0])
    return _covered(a, tuple((b, ()) for b in bs), budget=budget)


def _starts(p: Pattern) -> str | None:
    """``lit/`` when ``p`` is ``lit/**`` (matches exactly the texts that start with ``lit/``)."""
    return p._cache["startswith"]


def _inside_start(a: Pattern, b: Pattern) -> bool:
    """L(a) ⊆ L(b) for ``b`` = ``lit/**``: exactly when a's literal prefix starts with ``lit/``.

    If it does, every match of ``a`` does. If it does not, ``a`` either disagrees with ``lit/``
    in its literal prefix or, where that prefix ends, has a wildcard that can take a character
    other than the one ``lit/`` needs there (classes of one character count as literal); and
    every partial match of a pattern can be completed, so some match of ``a`` is outside ``b``.
    """
    return a.prefix.startswith(b._cache["startswith"])


def is_empty(a: PatternLike, excepts: Sequence[PatternLike] = (), *, budget: Budget | None = None) -> bool:
    """Is L(a) minus the union of L(e) for the excepts empty?"""
    a, budget = _p(a), _budget(budget)
    excepts = [_p(e) for e in excepts]
    if all(disjoint_ends(a, e) for e in excepts):
        budget.charge(QUESTION_STEPS)
        return False  # every pattern matches something, and no except can take it away
    return _covered(a, tuple((e, ()) for e in excepts), budget=budget)


def example(a: PatternLike, excepts: Sequence[PatternLike] = (), *, budget: Budget | None = None) -> str | None:
    """A shortest text matching ``a`` and none of ``excepts``; None when there is none."""
    return _counterexample(_p(a), tuple((_p(e), ()) for e in excepts), budget=_budget(budget))


def overlaps(a: PatternLike, b: PatternLike, *, budget: Budget | None = None) -> bool:
    """Does some text match both? (Cheaper than :func:`intersect` when only that matters.)"""
    a, b = _p(a), _p(b)
    first, second = (a, b) if a.text <= b.text else (b, a)
    return _overlaps(first, second, budget=_budget(budget))


@_memo
def _overlaps(a: Pattern, b: Pattern, budget: Budget) -> bool:
    # every pattern matches something (a class that matches nothing is refused when parsed)
    if a == b:
        return True
    if disjoint_ends(a, b):
        return False
    for x, y in ((a, b), (b, a)):
        if x.literal is not None:
            budget.charge(PROBE_STEPS + len(x.literal))
            return y.matches(x.literal)
        if x.is_universal():
            return True
    for x, y in ((a, b), (b, a)):
        start = _starts(x)
        if start is not None:
            # 'lit/**' meets y exactly when y's automaton is still alive after reading 'lit/':
            # every position of a pattern's automaton can go on to accept
            # (every element matches something), so a live state can be completed.
            budget.charge(PROBE_STEPS + len(start))
            if _starts(y) is not None:
                return True  # 'lit/**' both, their prefixes agreeing (disjoint_ends): the longer one is in both
            auto = y.automaton()
            return auto.mask(auto.state(start)) != 0
    for x, y in ((a, b), (b, a)):
        for text in x.probes():
            budget.charge(PROBE_STEPS + len(text))
            if y.matches(text):
                return True
    for x, y in ((a, b), (b, a)):
        for text in _spliced(x, y):
            budget.charge(PROBE_STEPS + len(text))
            if y.matches(text):
                return True
    autos = [a.automaton(), b.automaton()]
    acc = [x.accepting for x in autos]
    dead = [x.dead for x in autos]
    return search(
        autos,
        lambda st: acc[0][st[0]] and acc[1][st[1]],
        lambda st: st[0] == dead[0] or st[1] == dead[1],
        budget,
    ) is not None


def is_subset_terms(
    a: PatternLike, terms: Sequence[tuple[PatternLike, Sequence[PatternLike]]], *, budget: Budget | None = None
) -> bool:
    """Is L(a) inside the union of the terms, each ``(pattern, excepts)`` = pattern minus excepts?"""
    pieces = tuple((_p(p), tuple(_p(e) for e in es)) for p, es in terms)
    return _covered(_p(a), pieces, budget=_budget(budget))


#: Steps charged for matching one probe against one pattern (a few cached transitions), besides
#: one step per character of the probe.
PROBE_STEPS = 4

#: Steps charged for each pair :func:`plainly_outside` is asked about, besides its probes: the
#: call and its caller's loop cost more than matching a short probe.
PAIR_STEPS = 16

#: Pairs :func:`plainly_outside` remembers for one order (:attr:`Budget.answered`).
MAX_ANSWERED = 65_536


def plainly_outside(a: PatternLike, b: PatternLike, *, budget: Budget | None = None) -> bool:
    """True when a probe of ``a`` is not matched by ``b``, which proves L(a) ⊄ L(b); False proves
    nothing. For callers that ask "inside?" of many pairs most of which are not: a few matches,
    without the memo or a search."""
    a, b, budget = _unbeneath(_p(a), _p(b)) + (_budget(budget),)
    budget.charge(PAIR_STEPS)
    key = (a.text, b.text)
    known = budget.answered.get(key)
    if known is not None:
        return known
    answer = False
    for text in a.probes():
        budget.charge(PROBE_STEPS + len(text))
        if not b.matches(text):
            answer = True
            break
    if len(budget.answered) < MAX_ANSWERED:
        budget.answered[key] = answer
    return answer


def _unbeneath(a: Pattern, b: Pattern) -> tuple[Pattern, Pattern]:
    """``L/**/R`` and ``L/**/S`` written by :func:`beneath` compare as ``/**/R`` and ``/**/S`` do:
    each is ``L`` followed by a text of the other (:func:`beneath` proves it), so one lies inside
    the other exactly when theirs do. The policy's own patterns are parsed, probed and compiled
    once; the joined ones, one per directory a request names, need not be."""
    under_a, under_b = a._cache.get("beneath"), b._cache.get("beneath")
    if under_a is not None and under_b is not None and under_a[0] == under_b[0]:
        return under_a[1], under_b[1]
    return a, b


@_memo
def _covered(a: Pattern, terms: tuple[tuple[Pattern, tuple[Pattern, ...]], ...], budget: Budget) -> bool:
    """Is L(a) inside the union of the terms? A probe of ``a`` no term covers says no at once;
    otherwise the search decides (:func:`_counterexample`)."""
    for text in a.probes():
        budget.charge((PROBE_STEPS + len(text)) * (1 + sum(1 + len(es) for _, es in terms)))
        if not any(p.matches(text) and not any(e.matches(text) for e in es) for p, es in terms):
            return False
    return _counterexample(a, terms, budget=budget) is None


@lru_cache(maxsize=256)
def _union(patterns: tuple[Pattern, ...]) -> Automaton:
    """One automaton whose rows are ``patterns`` (a state accepts when one of them does)."""
    return Automaton([p._positions() for p in patterns])


def uncovered_example(
    a: PatternLike, terms: Sequence[tuple[PatternLike, Sequence[PatternLike]]], *, budget: Budget | None = None
) -> str | None:
    """A shortest text in L(a) that none of the terms covers, or None when they cover L(a):
    the counterexample that proves a claimed subset false (attenuating a capability token)."""
    pieces = tuple((_p(p), tuple(_p(e) for e in es)) for p, es in terms)
    return _counterexample(_p(a), pieces, budget=_budget(budget))


@_memo
def _counterexample(
    a: Pattern, terms: tuple[tuple[Pattern, tuple[Pattern, ...]], ...], budget: Budget
) -> str | None:
    """A shortest text in L(a) that no term covers, or None (the one decision procedure)."""
    live = []
    for p, es in terms:
        if disjoint_ends(a, p):
            continue
        es = tuple(e for e in es if not disjoint_ends(a, e))
        if not es and (p == a or p.is_universal() or (_starts(p) is not None and _inside_start(a, p))):
            return None
        live.append((p, es))
    if a.literal is not None:
        text = a.literal
        covered = any(p.matches(text) and not any(e.matches(text) for e in es) for p, es in live)
        return None if covered else text
    # Terms without excepts only need "some pattern matches": their rows go side by side in one
    # automaton (one step per character for all of them, where a tuple of automata takes one
    # each). The product states, and so the search's path and answer, are the same either way.
    plain = sorted({p for p, es in live if not es}, key=lambda p: p.text)
    autos: list[Automaton] = [a.automaton()]
    if plain:
        autos.append(plain[0].automaton() if len(plain) == 1 else _union(tuple(plain)))
    slot: dict[Pattern, int] = {a: 0}

    def index(p: Pattern) -> int:
        if p not in slot:
            slot[p] = len(autos)
            autos.append(p.automaton())
        return slot[p]

    plan = [(index(p), tuple(index(e) for e in es)) for p, es in live if es]
    acc = [x.accepting for x in autos]
    univ = [x.universal for x in autos]
    dead = [x.dead for x in autos]
    union = 1 if plain else None  # its state accepts (is universal) when one of its rows does

    def bad(st: tuple[int, ...]) -> bool:
        if not acc[0][st[0]] or (union and acc[1][st[1]]):
            return False
        return not any(acc[p][st[p]] and not any(acc[e][st[e]] for e in es) for p, es in plan)

    def hopeless(st: tuple[int, ...]) -> bool:
        if st[0] == dead[0] or (union and univ[1][st[1]]):
            return True
        return any(univ[p][st[p]] and all(st[e] == dead[e] for e in es) for p, es in plan)

    return search(autos, bad, hopeless, budget)

