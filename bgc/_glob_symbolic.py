"""Symbolic intersection of two patterns, segment by segment: the result is readable globs.

Internal to :mod:`bgc.glob`. Intersecting automata would give an exact answer nobody can read;
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

from bgc._glob_automata import AlgebraLimit
from bgc._glob_syntax import D0, D1, STAR, DStar, Elems, Item, One, Segment, Star, canonical, merge_stars

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


def intersect_items(xs: tuple[Item, ...], ys: tuple[Item, ...]) -> list[tuple[Item, ...]]:
    """Simple segments whose union is exactly the intersection of segments ``xs`` and ``ys``."""
    memo: dict[tuple[int, int], Terms] = {}

    def go(p: int, q: int) -> Terms:
        key = (p, q)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if p == len(xs) or q == len(ys):
            rest = ys[q:] if p == len(xs) else xs[p:]
            res = _UNIT if all(isinstance(it, Star) for it in rest) else _EMPTY
        else:
            x, y = xs[p], ys[q]
            if isinstance(x, Star) and isinstance(y, Star):
                res = _pre(STAR, go(p + 1, q) | go(p, q + 1))
            elif isinstance(x, Star):
                res = go(p + 1, q) | _pre(y, go(p, q + 1))
            elif isinstance(y, Star):
                res = go(p, q + 1) | _pre(x, go(p + 1, q))
            else:
                both = x.chars & y.chars
                res = _pre(One(both), go(p + 1, q + 1)) if both.spans else _EMPTY
        memo[key] = res = _checked(res)
        return res

    return sorted({merge_stars(t) for t in go(0, 0)}, key=repr)


def intersect_elems(a: Elems, b: Elems) -> list[Elems]:
    """Canonical element tuples whose union is exactly L(a) ∩ L(b).

    ``DStar(1)`` is kept whole rather than expanded to ``*`` then ``DStar(0)``: with
    ``+ = one or more`` and ``* = zero or more`` (over segments),
    ``+P ∩ +Q = +(P ∩ *Q) ∪ +(+P ∩ Q)``, ``+P ∩ *Q = +(P ∩ *Q) ∪ *(+P ∩ Q)`` and
    ``+P ∩ sQ = s(*P ∩ Q)``. That is what makes ``/src/**`` ∩ ``/**/*.py`` come out as the one
    pattern ``/src/**/*.py`` instead of ``/src/*.py`` plus ``/src/*/**/*.py``. The recursion
    state carries the current minimum of the ``DStar`` under each cursor, because these rules
    lower a ``+`` to a ``*`` in place.
    """
    memo: dict[tuple[int, int, int, int], Terms] = {}
    seg_memo: dict[tuple[Segment, Segment], list[tuple[Item, ...]]] = {}

    def dmin(seq: Elems, i: int) -> int:
        e = seq[i] if i < len(seq) else None
        return e.min if isinstance(e, DStar) else 0

    def only_d0(seq: Elems, i: int, m: int) -> bool:
        return all(isinstance(e, DStar) and (m if k == i else e.min) == 0 for k, e in enumerate(seq) if k >= i)

    def go(i: int, ma: int, j: int, mb: int) -> Terms:
        key = (i, ma, j, mb)
        hit = memo.get(key)
        if hit is not None:
            return hit
        x = a[i] if i < len(a) else None
        y = b[j] if j < len(b) else None
        na, nb = dmin(a, i + 1), dmin(b, j + 1)
        if x is None or y is None:
            res = _UNIT if only_d0(b, j, mb) and only_d0(a, i, ma) else _EMPTY
        elif isinstance(x, DStar) and isinstance(y, DStar):
            if ma == 0 and mb == 0:
                res = _pre(D0, go(i + 1, na, j, mb) | go(i, ma, j + 1, nb))
            elif ma == 1 and mb == 1:
                res = _pre(D1, go(i + 1, na, j, 0) | go(i, 1, j + 1, nb))
            elif ma == 1:
                res = _pre(D1, go(i + 1, na, j, 0)) | _pre(D0, go(i, 1, j + 1, nb))
            else:
                res = _pre(D1, go(i, 0, j + 1, nb)) | _pre(D0, go(i + 1, na, j, 1))
        elif isinstance(x, DStar):
            res = _pre(y, go(i, 0, j + 1, nb))
            if ma == 0:
                res |= go(i + 1, na, j, mb)
        elif isinstance(y, DStar):
            res = _pre(x, go(i + 1, na, j, 0))
            if mb == 0:
                res |= go(i, ma, j + 1, nb)
        else:
            pair = (x, y)
            if pair not in seg_memo:
                seg_memo[pair] = intersect_items(x.items, y.items)
            rest = go(i + 1, na, j + 1, nb)
            res = frozenset()
            for items in seg_memo[pair]:
                res |= _pre(Segment(items), rest)
        memo[key] = res = _checked(res)
        return res

    return sorted({canonical(t) for t in go(0, dmin(a, 0), 0, dmin(b, 0))}, key=repr)

