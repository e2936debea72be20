"""Symbolic intersection of two patterns, segment by segment: the result is readable globs.

Internal to :mod:`bgc.core.patterns.glob`. Intersecting automata would give an exact answer nobody can read;
policies and plans need patterns (``/src/**`` ∩ ``/**/*.py`` is ``/src/**/*.py``). Patterns
are words over two alphabets at once, so the intersection is computed on both levels with
the same merge rules:

* segments: a simple segment is one letter, ``DStar(0)`` is "any word" and ``DStar(1)``
  "any non-empty word" over the alphabet of segments;
* characters inside a simple segment: ``One(set)`` is one letter, ``STAR`` any word.

For "any word" ``*`` the rules follow from where the two prefixes end: with ``*P`` and ``*Q``
either ``P``'s start lies within ``Q``'s star or the other way round, so
``*P ∩ *Q = *(P ∩ *Q) ∪ *(*P ∩ Q)``; and ``*P ∩ xQ = (P ∩ xQ) ∪ x(*P ∩ Q)`` (the star is
empty, or it takes the ``x``). The non-empty star ``+`` has the variants written out in
:func:`intersect_elems`. Every rule is an exact equality, so the union of the results is
exactly the intersection; subsumed members are pruned afterwards with the automata.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from bgc.core.patterns._syntax import D0, D1, STAR, DStar, Elems, Item, One, Segment, Star, canonical, merge_stars
from bgc.core.patterns.budget import AlgebraLimit, Budget

#: Alternatives one sub-problem may produce before the intersection is declared too large.
MAX_TERMS = 256

Terms = frozenset[tuple]


def _limit() -> AlgebraLimit:
    return AlgebraLimit(
        f"the intersection has more than {MAX_TERMS} alternatives; the answer is unknown",
        hint="split the rule into narrower patterns",
    )


def _pre(head: object, tails: Terms) -> Terms:
    return frozenset((head,) + t for t in tails)


def _checked(terms: Terms) -> Terms:
    if len(terms) > MAX_TERMS:
        raise _limit()
    return terms


_EMPTY: Terms = frozenset()
_UNIT: Terms = frozenset({()})

Key = Hashable
#: A sub-problem's plan: the sub-problems it needs, and how their answers make its own.
Step = tuple[tuple[Key, ...], Callable[..., Terms]]


def _solve(root: Key, expand: Callable[[Key], Step], budget: Budget) -> Terms:
    """The answer to ``root`` of a memoised recursion, evaluated with an explicit stack.

    Patterns may be thousands of segments or characters long: written as Python recursion, the
    merge rules would need a call per element and raise RecursionError. Every rule moves at
    least one cursor forward, so sub-problems form a DAG and a depth-first walk that solves a
    sub-problem once all it needs is solved visits each one once, as the memo did.

    Each solved sub-problem is charged to ``budget`` by the elements of the terms it built
    (building and hashing a term costs about that), and the root once more for the caller's
    normalising and sorting of the result.
    """
    memo: dict[Key, Terms] = {}
    waiting: dict[Key, Step] = {}
    stack = [root]
    while stack:
        key = stack[-1]
        if key in memo:
            stack.pop()
            continue
        step = waiting.get(key)
        if step is None:
            step = waiting[key] = expand(key)
            missing = [dep for dep in step[0] if dep not in memo]
            if missing:
                stack.extend(missing)
                continue
        deps, combine = waiting.pop(key)
        terms = memo[key] = _checked(combine(*(memo[dep] for dep in deps)))
        budget.charge(_cost(terms))
        stack.pop()
    budget.charge(_cost(memo[root]))
    return memo[root]


def _cost(terms: Terms) -> int:
    """Steps charged for building ``terms``: one per term and per element (at least one)."""
    return 1 + len(terms) + sum(map(len, terms))


def _constant(terms: Terms) -> Step:
    return (), lambda: terms


def intersect_items(xs: tuple[Item, ...], ys: tuple[Item, ...], budget: Budget) -> list[tuple[Item, ...]]:
    """Simple segments whose union is exactly the intersection of segments ``xs`` and ``ys``."""

    def expand(key: Key) -> Step:
        p, q = key
        if p == len(xs) or q == len(ys):
            rest = ys[q:] if p == len(xs) else xs[p:]
            return _constant(_UNIT if all(isinstance(it, Star) for it in rest) else _EMPTY)
        x, y = xs[p], ys[q]
        if isinstance(x, Star) and isinstance(y, Star):
            return ((p + 1, q), (p, q + 1)), lambda u, v: _pre(STAR, u | v)
        if isinstance(x, Star):
            return ((p + 1, q), (p, q + 1)), lambda u, v: u | _pre(y, v)
        if isinstance(y, Star):
            return ((p, q + 1), (p + 1, q)), lambda u, v: u | _pre(x, v)
        both = x.chars & y.chars
        if not both.spans:
            return _constant(_EMPTY)
        return ((p + 1, q + 1),), lambda u: _pre(One(both), u)

    return sorted({merge_stars(t) for t in _solve((0, 0), expand, budget)}, key=repr)


def intersect_elems(a: Elems, b: Elems, budget: Budget) -> list[Elems]:
    """Canonical element tuples whose union is exactly L(a) ∩ L(b).

    ``DStar(1)`` is kept whole rather than expanded to ``*`` then ``DStar(0)``: with
    ``+ = one or more`` and ``* = zero or more`` (over segments),
    ``+P ∩ +Q = +(P ∩ *Q) ∪ +(+P ∩ Q)``, ``+P ∩ *Q = +(P ∩ *Q) ∪ *(+P ∩ Q)`` and
    ``+P ∩ sQ = s(*P ∩ Q)``. That is what makes ``/src/**`` ∩ ``/**/*.py`` come out as the one
    pattern ``/src/**/*.py`` instead of ``/src/*.py`` plus ``/src/*/**/*.py``. A sub-problem
    carries the current minimum of the ``DStar`` under each cursor, because these rules lower a
    ``+`` to a ``*`` in place.
    """
    seg_memo: dict[tuple[Segment, Segment], list[tuple[Item, ...]]] = {}

    def dmin(seq: Elems, i: int) -> int:
        e = seq[i] if i < len(seq) else None
        return e.min if isinstance(e, DStar) else 0

    def only_d0(seq: Elems, i: int, m: int) -> bool:
        return all(isinstance(e, DStar) and (m if k == i else e.min) == 0 for k, e in enumerate(seq) if k >= i)

    def expand(key: Key) -> Step:
        i, ma, j, mb = key
        x = a[i] if i < len(a) else None
        y = b[j] if j < len(b) else None
        na, nb = dmin(a, i + 1), dmin(b, j + 1)
        if x is None or y is None:
            return _constant(_UNIT if only_d0(b, j, mb) and only_d0(a, i, ma) else _EMPTY)
        if isinstance(x, DStar) and isinstance(y, DStar):
            if ma == 0 and mb == 0:
                return ((i + 1, na, j, mb), (i, ma, j + 1, nb)), lambda u, v: _pre(D0, u | v)
            if ma == 1 and mb == 1:
                return ((i + 1, na, j, 0), (i, 1, j + 1, nb)), lambda u, v: _pre(D1, u | v)
            if ma == 1:
                return ((i + 1, na, j, 0), (i, 1, j + 1, nb)), lambda u, v: _pre(D1, u) | _pre(D0, v)
            return ((i, 0, j + 1, nb), (i + 1, na, j, 1)), lambda u, v: _pre(D1, u) | _pre(D0, v)
        if isinstance(x, DStar):
            skip = ((i + 1, na, j, mb),) if ma == 0 else ()
            return ((i, 0, j + 1, nb), *skip), lambda u, *v: _pre(y, u).union(*v)
        if isinstance(y, DStar):
            skip = ((i, ma, j + 1, nb),) if mb == 0 else ()
            return ((i + 1, na, j, 0), *skip), lambda u, *v: _pre(x, u).union(*v)
        pair = (x, y)
        if pair not in seg_memo:
            seg_memo[pair] = intersect_items(x.items, y.items, budget)
        segments = seg_memo[pair]
        if not segments:
            return _constant(_EMPTY)
        return ((i + 1, na, j + 1, nb),), lambda rest: frozenset().union(*(_pre(Segment(s), rest) for s in segments))

    return sorted({canonical(t) for t in _solve((0, dmin(a, 0), 0, dmin(b, 0)), expand, budget)}, key=repr)
