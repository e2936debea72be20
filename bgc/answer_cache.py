"""The pattern algebra's answers, kept between processes in bgc's verified cache (bgc.cache).

Compiling orders against a large policy asks thousands of pairwise questions ("do these two
patterns overlap?", "is this one inside those?"), and a fresh ``bgc compile`` used to work every
one out again: the answers lived only in the process's memory. Here they outlive it.

- **Exact.** An answer is kept under its question *as text*: the question's name and its
  patterns' texts (:func:`bgc.glob.answers_kept_on`). A pattern's text determines the pattern —
  it is NFC-normalised when parsed, and a case-folded deny or ask is a different text (its
  letters spelled as classes, ``[Ss]ecrets``) — so a kept answer is served only for the very
  question it answers, whatever policy or order asks it. The cache key of the whole entry also
  holds bgc's code digest (:func:`bgc.cache.entry_key`): other code, or an edited checkout,
  never reads these answers.
- **Charged like work.** Every answer is kept with the steps working it out cost, and a
  recalled answer charges exactly those to the order's budget (:class:`bgc.budget.CostMemo`):
  an order runs out of budget at the same question with or without the cache, so its plan is
  byte-identical.
- **Grouped by policy.** The answers a policy's compiles asked are one cache entry, named by
  the root policy file's real path (not its content: after an edit most questions, and their
  answers, are the same). The grouping is only where answers are looked for; it never decides
  whether one is served.
- **Bounded.** An entry holds at most :data:`MAX_ANSWERS` answers and :data:`MAX_CHARS`
  characters, and is read only up to :data:`MAX_BYTES` (a larger file is a miss, unread); a
  question naming more than :data:`bgc.limits.MAX_KEPT_QUESTION` patterns is not kept. When a
  run's answers and the kept ones exceed the bound, the run's own come first.
- **Free when nothing is kept.** Answers are spelled out only when the entry is written, and no
  question is spelled out to be looked up while the entry holds none.
- **Verified.** The entry is the cache's envelope (a SHA-256 of the payload, checked before
  anything is read), a JSON object naming its group; each answer's shape is checked when it is
  recalled (a cost must be a whole number of steps, an answer one its question can have). A
  truncated, corrupt or foreign entry, or one answer of the wrong shape, is a miss — the answer
  is worked out again — never an error. The envelope proves the bytes are the ones bgc wrote,
  not who wrote them: like every cache entry, these are only as trustworthy as the cache
  directory, which bgc uses only when the user alone may write to it (bgc.cache).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from bgc import cache

NAMESPACE = "algebra-answers"
MAX_ANSWERS = 131_072
"""Answers one policy's entry keeps (the pathological 600-rule policy of docs/performance.md asks
about 92,000)."""
MAX_CHARS = 16 * 1024 * 1024
"""Characters of questions and answers one entry keeps (roughly its size in bytes)."""
MAX_BYTES = 4 * MAX_CHARS
"""Bytes of an entry that are read at all (a character is at most four bytes of UTF-8)."""


class AnswerCache:
    """One policy's kept answers: read on the first question that misses in memory, written
    back (merged, bounded) by :meth:`save` when new answers were worked out."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._kept: dict[str, object] | None = None
        self._new: list[tuple[str, tuple[object, ...], object, int]] = []

    def _answers(self) -> dict[str, object]:
        if self._kept is None:
            self._kept = _read(self.group)
        return self._kept

    def holds_answers(self) -> bool:
        return bool(self._answers())

    def recall(self, question: str) -> tuple[object, int] | None:
        entry = self._answers().get(question)
        if type(entry) is not list or len(entry) != 2:
            return None
        answer, cost = entry
        if type(cost) is not int or cost < 0:
            return None
        return answer, cost

    def keep(self, name: str, args: tuple[object, ...], value: object, cost: int) -> None:
        if len(self._new) < MAX_ANSWERS:
            self._new.append((name, args, value, cost))

    def new_answers(self) -> dict[str, list[object]]:
        """The answers worked out in this run, as they are kept (question text → [answer, cost])."""
        from bgc import glob

        found: dict[str, list[object]] = {}
        for name, args, value, cost in self._new:
            entry = glob.kept_entry(name, args, value)
            if entry is not None:
                found[entry[0]] = [entry[1], cost]
        return found

    def save(self) -> None:
        """Write the new answers and as many kept ones as the bounds allow; nothing when no
        answer is new. A failure to write (no cache, a full disk) is silently skipped."""
        if not self._new:
            return
        with _bulk():
            self._write()

    def _write(self) -> None:
        merged: dict[str, object] = {}
        chars = 0
        for question, entry in (*self.new_answers().items(), *self._answers().items()):
            if len(merged) >= MAX_ANSWERS:
                break
            if question in merged or type(entry) is not list or len(entry) != 2:
                continue
            size = _size(question, entry[0])
            if chars + size > MAX_CHARS:
                break
            merged[question] = entry
            chars += size
        payload = json.dumps({"group": self.group, "answers": merged}, ensure_ascii=False, separators=(",", ":"))
        cache.store_bytes(NAMESPACE, self.group, payload.encode("utf-8", "surrogatepass"))


def _size(question: str, answer: object) -> int:
    """About the characters an answer takes in the entry (its question, its answer, the syntax)."""
    if isinstance(answer, list):
        return len(question) + sum(len(text) + 3 for text in answer) + 8  # type: ignore[arg-type]
    if isinstance(answer, dict):
        return len(question) + sum(len(str(value)) for value in answer.values()) + 32
    return len(question) + (len(answer) if isinstance(answer, str) else 0) + 16


def _read(group: str) -> dict[str, object]:
    """The answers kept for ``group``; empty when there are none or the entry does not read as
    this group's answers."""
    payload = cache.load_bytes(NAMESPACE, group, limit=MAX_BYTES)
    if payload is None:
        return {}
    try:
        with _bulk():
            data = json.loads(payload.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("group") != group or not isinstance(data.get("answers"), dict):
        return {}
    answers: dict[str, object] = data["answers"]
    return answers


@contextmanager
def _bulk() -> Iterator[None]:
    """Tens of thousands of small acyclic objects (an entry's questions and answers) made at once,
    with the cyclic garbage collector paused: otherwise it walks the whole heap — a large compile's
    plans — several times while they are made, for nothing (it more than doubled a save's time)."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def kept_answers(policy_path: str) -> Iterator[None]:
    """Within this block the algebra recalls and keeps answers in the entry of the policy at
    ``policy_path``, written back when the block ends without an error. Nothing at all when
    the cache is disabled (``BGC_CACHE_DIR=""``)."""
    if cache.cache_dir() is None:
        yield
        return
    from bgc import glob

    shelf = AnswerCache(os.path.realpath(policy_path))
    with glob.answers_kept_on(shelf):
        yield
    shelf.save()
