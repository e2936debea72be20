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

from bgc.core.patterns._syntax import (
    D0,
    D1,
    STAR,
    DStar,
    Elems,
    Item,
    One,
    Segment,
    Star,
    canonical,
    literal_items,
    merge_stars,
    segment_matches,
)
from bgc.core.patterns.budget import AlgebraLimit, Budget

#: Alternatives one sub-problem may produce before the intersection is declared too large.
MAX_TERMS = 256

#: Steps charged for each sub-problem solved, besides the terms it builds: expanding it into
#: the sub-problems it needs and combining their answers costs about as much as a search
#: expanding one state (:mod:`bgc.core.patterns._automata`).
SUBPROBLEM_STEPS = 64

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

    Each solved sub-problem is charged to ``budget``: :data:`SUBPROBLEM_STEPS` for planning and
    combining it, and the elements of the terms it built (building and hashing a term costs
    about that); the root once more for the caller's normalising and sorting of the result.
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
        budget.charge(SUBPROBLEM_STEPS + _cost(terms))
        stack.pop()
    budget.charge(_cost(memo[root]))
    return memo[root]


def _cost(terms: Terms) -> int:
    """Steps charged for building ``terms``: one per term and per element (at least one)."""
    return 1 + len(terms) + sum(map(len, terms))


def _constant(terms: Terms) -> Step:
    return (), lambda: terms


def intersect_items(xs: tuple[Item, ...], ys: tuple[Item, ...], budget: Budget) -> list[tuple[Item, ...]]:
    """Simple segments whose union is exactly the intersection of segments ``xs`` and ``ys``.

    A segment of single characters (``src``, ``secrets``: most segments a policy writes) meets
    another exactly when the other matches its text, and the intersection is then that segment:
    one pass over the text, where the merge rules would build a term per pair of positions.
    """
    for one, other in ((xs, ys), (ys, xs)):
        text = literal_items(one)
        if text is not None:
            budget.charge(1 + len(text) * (1 + len(other)))
            return [one] if segment_matches(other, text) else []

    symbols = _Symbols()
    star, xk, yk = symbols(STAR), [symbols(x) for x in xs], [symbols(y) for y in ys]

    def expand(key: Key) -> Step:
        p, q = key
        if p == len(xs) or q == len(ys):
            rest = ys[q:] if p == len(xs) else xs[p:]
            return _constant(_UNIT if all(isinstance(it, Star) for it in rest) else _EMPTY)
        x, y = xs[p], ys[q]
        if isinstance(x, Star) and isinstance(y, Star):
            return ((p + 1, q), (p, q + 1)), lambda u, v: _pre(star, u | v)
        if isinstance(x, Star):
            return ((p + 1, q), (p, q + 1)), lambda u, v: u | _pre(yk[q], v)
        if isinstance(y, Star):
            return ((p, q + 1), (p + 1, q)), lambda u, v: u | _pre(xk[p], v)
        both = x.chars & y.chars
        if not both.spans:
            return _constant(_EMPTY)
        return ((p + 1, q + 1),), lambda u: _pre(symbols(One(both)), u)

    return sorted({merge_stars(symbols.spell(t)) for t in _solve((0, 0), expand, budget)}, key=repr)


class _Symbols:
    """Elements as small integers while terms are built: a term is a tuple of them, and hashing
    it (every union of terms does) then costs a few integer hashes instead of walking each
    element's segments, items and character sets."""

    def __init__(self) -> None:
        self._ids: dict[object, int] = {}
        self._table: list = []

    def __call__(self, element: object) -> int:
        k = self._ids.get(element)
        if k is None:
            k = self._ids[element] = len(self._table)
            self._table.append(element)
        return k

    def spell(self, term: tuple[int, ...]) -> tuple:
        """The elements of a term."""
        return tuple(self._table[k] for k in term)


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
    seg_memo: dict[tuple[int, int], list[int]] = {}
    symbols = _Symbols()
    d0, d1, ak, bk = symbols(D0), symbols(D1), [symbols(x) for x in a], [symbols(y) for y in b]

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
                return ((i + 1, na, j, mb), (i, ma, j + 1, nb)), lambda u, v: _pre(d0, u | v)
            if ma == 1 and mb == 1:
                return ((i + 1, na, j, 0), (i, 1, j + 1, nb)), lambda u, v: _pre(d1, u | v)
            if ma == 1:
                return ((i + 1, na, j, 0), (i, 1, j + 1, nb)), lambda u, v: _pre(d1, u) | _pre(d0, v)
            return ((i, 0, j + 1, nb), (i + 1, na, j, 1)), lambda u, v: _pre(d1, u) | _pre(d0, v)
        if isinstance(x, DStar):
            skip = ((i + 1, na, j, mb),) if ma == 0 else ()
            return ((i, 0, j + 1, nb), *skip), lambda u, *v: _pre(bk[j], u).union(*v)
        if isinstance(y, DStar):
            skip = ((i, ma, j + 1, nb),) if mb == 0 else ()
            return ((i + 1, na, j, 0), *skip), lambda u, *v: _pre(ak[i], u).union(*v)
        pair = (ak[i], bk[j])
        if pair not in seg_memo:
            seg_memo[pair] = [symbols(Segment(s)) for s in intersect_items(x.items, y.items, budget)]
        segments = seg_memo[pair]
        if not segments:
            return _constant(_EMPTY)
        return ((i + 1, na, j + 1, nb),), lambda rest: frozenset().union(*(_pre(s, rest) for s in segments))

    terms = _solve((0, dmin(a, 0), 0, dmin(b, 0)), expand, budget)
    return sorted({canonical(symbols.spell(t)) for t in terms}, key=repr)
