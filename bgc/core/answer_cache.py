"""The pattern algebra's answers, kept between processes in bgc's verified cache (bgc.core.cache).

Compiling orders against a large policy asks thousands of pairwise questions ("do these two
patterns overlap?", "is this one inside those?"), and a fresh ``bgc compile`` used to work every
one out again: the answers lived only in the process's memory. Here they outlive it.

- **Exact.** An answer is kept under a digest of its question *as text*: the question's name
  and its patterns' texts (:func:`_question`, :func:`_key`; the algebra asks through
  :func:`bgc.core.patterns.glob.answers_kept_on`). The entry holds the digest, not the patterns'
  texts. A pattern's text determines the pattern —
  it is NFC-normalised when parsed, and a case-folded deny or ask is a different text (its
  letters spelled as classes, ``[Ss]ecrets``) — so a kept answer is served only for the very
  question it answers, whatever policy or order asks it. The cache key of the whole entry also
  holds bgc's code digest (:func:`bgc.core.cache.entry_key`): other code, or an edited checkout,
  never reads these answers.
- **Charged like work.** Every answer is kept with the steps working it out cost, and a
  recalled answer charges exactly those to the order's budget (:class:`bgc.core.patterns.budget.CostMemo`):
  an order runs out of budget at the same question with or without the cache, so its plan is
  byte-identical.
- **Grouped by policy.** The answers a policy's compiles asked are one cache entry, named by
  the root policy file's real path (not its content: after an edit most questions, and their
  answers, are the same). The grouping is only where answers are looked for; it never decides
  whether one is served.
- **No messages.** A question the algebra could not decide is kept as the code of the limit it
  hit (:func:`_limits`), which maps back to that limit's words; a limit whose words name
  patterns (or any other) is not kept, and is worked out again when asked.
- **Bounded.** An entry holds at most :data:`MAX_ANSWERS` answers and :data:`MAX_CHARS`
  characters, and is read only up to :data:`MAX_BYTES` (a larger file is a miss, unread); a
  question naming more than :data:`bgc.core.values.limits.MAX_KEPT_QUESTION` patterns is not kept. When a
  run's answers and the kept ones exceed the bound, the run's own come first.
- **Free when nothing is kept.** Answers are spelled out only when the entry is written, and no
  question is spelled out to be looked up while the entry holds none.
- **Verified.** The entry is the cache's envelope (a SHA-256 of the payload, checked before
  anything is read), a JSON object naming its group; each answer's shape is checked when it is
  recalled (a cost must be a whole number of steps, an answer one its question can have). A
  truncated, corrupt or foreign entry, or one answer of the wrong shape, is a miss — the answer
  is worked out again — never an error. The envelope proves the bytes are the ones bgc wrote,
  not who wrote them: like every cache entry, these are only as trustworthy as the cache
  directory, which bgc uses only when the user alone may write to it (bgc.core.cache).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from bgc.core import cache
from bgc.core.patterns import _automata, _symbolic, glob
from bgc.core.patterns.budget import Undecided, text_key
from bgc.core.values.limits import MAX_KEPT_QUESTION

NAMESPACE = "algebra-answers"
MAX_ANSWERS = 131_072
"""Answers one policy's entry keeps (the pathological 600-rule policy of docs/performance.md asks
about 92,000)."""
MAX_CHARS = 16 * 1024 * 1024
"""Characters of questions and answers one entry keeps (roughly its size in bytes)."""
MAX_BYTES = 4 * MAX_CHARS
"""Bytes of an entry that are read at all (a character is at most four bytes of UTF-8)."""


def _limits() -> dict[str, Undecided]:
    """The limits an undecided answer is kept as, by code: the algebra's own bounds, whose words
    name no pattern (the code, not the words, is kept; the words are the bounds' as they are now)."""
    return {
        "steps": Undecided.of(_automata.work_limit(True)),
        "states": Undecided.of(_automata.work_limit(False)),
        "terms": Undecided.of(_symbolic._limit()),
    }


class AnswerCache:
    """One policy's kept answers (a :class:`bgc.core.patterns.glob.AnswerShelf`): read on the first question
    that misses in memory, written back (merged, bounded) by :meth:`save` when new answers were
    worked out."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._kept: dict[str, object] | None = None
        self._new: list[tuple[str, tuple[object, ...], object, int]] = []

    def _answers(self) -> dict[str, object]:
        if self._kept is None:
            self._kept = _read(self.group)
        return self._kept

    def recall(self, name: str, args: tuple[object, ...]) -> tuple[object, int] | None:
        """The answer kept for the question and its cost, read back as the algebra's value;
        None when none is kept or what is kept is not an answer this question can have. No
        question is spelled out while the entry holds no answer at all."""
        if not self._answers():
            return None
        question = _question(name, args)
        found = None if question is None else self.lookup(_key(question))
        if found is None:
            return None
        answer, cost = found
        try:
            return _decoded(name, answer), cost
        except (_Unreadable, glob.PatternError):
            return None

    def lookup(self, key: str) -> tuple[object, int] | None:
        """The encoded answer kept under a question's ``key`` (:func:`_key`) and its cost, when the
        entry reads as one."""
        entry = self._answers().get(key)
        if type(entry) is not list or len(entry) != 2:
            return None
        answer, cost = entry
        if type(cost) is not int or cost < 0:
            return None
        return answer, cost

    def keep(self, name: str, args: tuple[object, ...], value: object, cost: int) -> None:
        """Remember an answer just worked out; it is spelled out only when the entry is written,
        so a run that keeps nothing pays nothing."""
        if len(self._new) < MAX_ANSWERS:
            self._new.append((name, args, value, cost))

    def new_answers(self) -> dict[str, list[object]]:
        """The answers worked out in this run, as they are kept (question's key → [answer, cost])."""
        found: dict[str, list[object]] = {}
        for name, args, value, cost in self._new:
            entry = _entry(name, args, value)
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
        for key, entry in (*self.new_answers().items(), *self._answers().items()):
            if len(merged) >= MAX_ANSWERS:
                break
            if key in merged or type(entry) is not list or len(entry) != 2:
                continue
            size = _size(key, entry[0])
            if chars + size > MAX_CHARS:
                break
            merged[key] = entry
            chars += size
        payload = json.dumps({"group": self.group, "answers": merged}, ensure_ascii=False, separators=(",", ":"))
        cache.store_bytes(NAMESPACE, self.group, payload.encode("utf-8", "surrogatepass"))


def _entry(name: str, args: tuple[object, ...], value: object) -> tuple[str, object] | None:
    """An answer as the entry keeps it — its question's key and the answer as JSON-shaped data
    (patterns as their texts, a limit as its code) — or None when it is not kept: its question
    names too many patterns, or it is a limit with no code (:func:`_limits`)."""
    if isinstance(value, Undecided):
        code = next((code for code, limit in _limits().items() if limit == value), None)
        if code is None:
            return None
        encoded: object = {"limit": code}
    else:
        encoded = [pattern.text for pattern in value] if isinstance(value, tuple) else value
    question = _question(name, args)
    return None if question is None else (_key(question), encoded)


def _key(question: str) -> str:
    """What an entry keeps a question under: a digest of its text, in hex (a JSON key)."""
    return text_key(question).hex()


def _question(name: str, args: tuple[object, ...]) -> str | None:
    """A question as text: its name, then its arguments with every pattern as its text; None
    when it names more than :data:`~bgc.core.values.limits.MAX_KEPT_QUESTION` patterns (it is not kept).

    The questions have two shapes: two patterns (``intersect``, ``overlaps``), or a pattern and
    terms ``(pattern, excepts)`` (``covered``, ``counterexample``). A pattern's text determines
    it (NFC-normalised, case folding spelled out as classes) and never holds a control
    character, so control characters separate the parts, one per level (a pattern, terms, a
    term's pattern and its excepts): no pattern is empty, so the text is this question's only.
    """
    first, second = args
    if type(second) is glob.Pattern:
        return f"{name}\n{first.text}\x1f{second.text}"  # type: ignore[attr-defined]
    terms: tuple[tuple[glob.Pattern, tuple[glob.Pattern, ...]], ...] = second  # type: ignore[assignment]
    count = 1 + len(terms)
    if count > MAX_KEPT_QUESTION:
        return None
    parts = []
    for pattern, excepts in terms:
        count += len(excepts)
        if count > MAX_KEPT_QUESTION:
            return None
        parts.append("\x1c".join((pattern.text, *(e.text for e in excepts))))
    return f"{name}\n{first.text}\x1f" + "\x1e".join(parts)  # type: ignore[attr-defined]


class _Unreadable(Exception):
    """A kept answer that is not an answer of its question: a miss."""


def _decoded(name: str, answer: object) -> object:
    """A kept answer as the algebra's value, checked for the type its question answers with;
    ``_Unreadable`` otherwise (an unknown question too)."""
    if isinstance(answer, dict):  # the algebra's own limit: this question is undecidable here
        limit = _limits().get(answer.get("limit"))  # type: ignore[arg-type]
        if len(answer) != 1 or limit is None:
            raise _Unreadable
        return limit
    if name in ("overlaps", "covered"):
        if not isinstance(answer, bool):
            raise _Unreadable
        return answer
    if name == "counterexample":
        if answer is not None and not isinstance(answer, str):
            raise _Unreadable
        return answer
    if name == "intersect":  # patterns from their texts, each the very text it parses to (NFC, canonical)
        if not isinstance(answer, list) or not all(isinstance(text, str) for text in answer):
            raise _Unreadable
        found = tuple(glob.parse(text) for text in answer)
        if any(pattern.text != text for pattern, text in zip(found, answer)):
            raise _Unreadable
        return found
    raise _Unreadable


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
    shelf = AnswerCache(os.path.realpath(policy_path))
    with glob.answers_kept_on(shelf):
        yield
    shelf.save()
