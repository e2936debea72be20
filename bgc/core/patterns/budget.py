"""The work budget of one order: algebra steps, counted the same way on every run and machine.

Deciding questions about patterns can cost exponential time in theory, and an order may ask
thousands of them (requests × rules, then every part against every other). Each question has
its own bound (:data:`bgc.core.patterns._automata.MAX_WORK` and friends), but an order's *total* work
needs one too, or a thousand questions just under their bound take hours. A :class:`Budget`
is threaded through the compiler for one order and charged by every question's work; once it
is spent, every further question that needs work is unknown (:class:`BudgetExhausted`, an
:class:`AlgebraLimit`), which the compiler treats as not granted.

The budget counts steps, not seconds: a plan must be byte-identical across runs and machines,
and a wall-clock deadline would stop at a different question on a busy machine. The price is
that a step is only roughly a unit of time; the charges are set so that a whole budget is a
second of work at most (docs/semantics.md, "Bounds").

Memoised answers must cost what computing them costs (:class:`CostMemo`): were a hit free, the
point where an order runs out would depend on what the process compiled before, and so would
its plan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from bgc.errors import BgcError

V = TypeVar("V")


class AlgebraLimit(BgcError):
    """A work bound was hit while deciding a question about patterns: the answer is unknown.

    Callers treat it as "not granted" (fail closed).
    """


class BudgetExhausted(AlgebraLimit):
    """The order's work budget is spent: this question is unknown, and so is every later one.

    An :class:`AlgebraLimit`, so every caller already treats it as "not granted"; a memo must
    not keep it as the question's answer (the question itself may be easy).
    """


@dataclass(slots=True)
class Budget:
    """Steps one order may spend on pattern questions; ``limit=None`` counts without a bound.

    Mutable on purpose (it is a counter) and owned by one compilation: never share one between
    orders, or one order's plan would depend on another's.
    """

    limit: int | None = None
    spent: int = 0
    answered: dict[Hashable, bool] = field(default_factory=dict, repr=False, compare=False)
    """Answers to questions this order already asked, for the algebra's cheapest questions (the
    order asks one per pair of parts, and its requests repeat the same pairs): owned by the
    order, so what a hit saves depends on nothing else (:func:`bgc.core.patterns.glob.plainly_outside`)."""

    def charge(self, steps: int) -> None:
        """Spend ``steps`` (> 0); raise :class:`BudgetExhausted` once more than the limit is spent."""
        self.spent += steps
        if self.limit is not None and self.spent > self.limit:
            raise BudgetExhausted(
                f"the order's work budget of {self.limit:,} steps is spent; the answer is unknown",
                hint="ask for fewer or narrower atoms (fewer '*', '?' and '**'), or split the order",
            )

    def note(self, steps: int) -> None:
        """Count ``steps`` of work already done, without raising: the next :meth:`charge` finds
        the budget spent if these spent it. For loops that must finish what they started (the
        compiler's folding of parts asks no question once the budget is spent)."""
        self.spent += steps

    def affords(self, steps: int) -> bool:
        """Would charging ``steps`` stay within the limit?"""
        return self.limit is None or self.spent + steps <= self.limit

    @property
    def remaining(self) -> int | None:
        """Steps left before the limit (negative once exhausted); None without a limit."""
        return None if self.limit is None else self.limit - self.spent

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.spent > self.limit


class Recall(Protocol[V]):
    """Answers kept outside a memo (bgc's verified on-disk cache: :mod:`bgc.core.answer_cache`),
    each with the steps it took: consulted when the memo misses, told every answer it keeps."""

    def recall(self, key: Hashable) -> tuple[V, int] | None:
        """The answer kept for ``key`` and its cost, or None (absent, or unreadable: a miss)."""

    def keep(self, key: Hashable, value: V, cost: int) -> None:
        """An answer just worked out, with its cost."""


@dataclass(frozen=True, slots=True)
class Undecided:
    """A question the algebra could not decide within its bound, as a memo keeps the answer: what
    the limit said, never the exception itself, whose traceback holds every frame of the work
    that hit it (and the automata those frames built). :meth:`error` raises it afresh."""

    message: str
    hint: str | None = None
    span: Any = None

    @classmethod
    def of(cls, error: AlgebraLimit) -> Undecided:
        return cls(error.message, error.hint, error.span)

    def error(self) -> AlgebraLimit:
        return AlgebraLimit(self.message, self.span, hint=self.hint)


def text_key(*texts: str) -> bytes:
    """A memo key for a question asked in words: a digest of ``texts``, each length-prefixed (so
    ``("ab", "c")`` and ``("a", "bc")`` differ). A memo keeps this, not the texts."""
    digest = hashlib.blake2b(digest_size=20)
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(b"%d:" % len(data) + data)
    return digest.digest()


def weight(value: object) -> int:
    """Roughly the bytes a remembered answer holds: its text, a pattern's text, the sum of its
    parts'; a few bytes for a flag or a number. What a memo's byte bound counts."""
    if isinstance(value, (str, bytes)):
        return 16 + len(value)
    if isinstance(value, (tuple, list, frozenset, set)):
        return 16 + sum(weight(item) for item in value)
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return 16 + len(text)
    if isinstance(value, Undecided):
        return 16 + len(value.message) + len(value.hint or "")
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return 16 + sum(weight(getattr(value, name)) for name in fields)
    return 16


class CostMemo(Generic[V]):
    """Answers remembered with the steps they took; a hit charges exactly those steps.

    So an answer costs the same whether it was computed now or remembered, and a plan does not
    depend on what was computed before. An answer computed while the budget ran out is not
    kept (it is the budget's answer, not the question's); a hit the budget cannot afford is
    computed again and runs out exactly as a first computation would. ``capacity`` bounds the
    entries and ``max_bytes`` their :func:`weight` with their keys' (all are dropped when either
    is reached: the answers stay the same, only slower). Keys should be digests of the question
    (a memo keyed by the question's objects keeps them, and all they hold, alive).
    A :class:`Recall` given to :meth:`get` is consulted on a miss and told what is computed:
    its answers are charged their recorded cost like any other hit.
    """

    def __init__(self, capacity: int | None = None, max_bytes: int | None = None) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: dict[Hashable, tuple[V, int]] = {}

    def get(self, key: Hashable, budget: Budget, compute: Callable[[], V], recall: Recall[V] | None = None) -> V:
        hit = self._entries.get(key)
        if hit is None and recall is not None:
            hit = recall.recall(key)
            if hit is not None:
                self._put(key, hit)
        if hit is not None and budget.affords(hit[1]):
            if hit[1]:
                budget.charge(hit[1])
            return hit[0]
        start = budget.spent
        value = compute()
        if not budget.exhausted:
            cost = budget.spent - start
            self._put(key, (value, cost))
            if recall is not None:
                recall.keep(key, value, cost)
        return value

    def _put(self, key: Hashable, entry: tuple[V, int]) -> None:
        size = weight(key) + weight(entry[0])
        if self.max_bytes is not None and size > self.max_bytes:
            return  # larger than the whole memo: worked out again when asked again
        kept = self._entries.pop(key, None)
        if kept is not None:
            self.bytes -= weight(key) + weight(kept[0])
        full = self.capacity is not None and len(self._entries) >= self.capacity
        if full or (self.max_bytes is not None and self.bytes + size > self.max_bytes):
            self.clear()
        self._entries[key] = entry
        self.bytes += size

    def __len__(self) -> int:
        return len(self._entries)

    def values(self) -> list[V]:
        """The answers remembered (for tests that look at what a memo holds)."""
        return [value for value, _ in self._entries.values()]

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0
