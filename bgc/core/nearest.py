"""The rule nearest to a value no rule took, and why it did not take it: a hint for people.

"No rule allows it" is true and no help: the author wrote ``allow proc:exec:pytest/**`` and
cannot see why ``pytest`` is denied. So where bgc says it — ``bgc explain``, a gate's or a hook's
reason, a failing ``expect`` — it also names the rule that came closest and says what kept it
from matching, in the terms of the pattern dialect:

* ``X/**`` matches what lies below (or, for a command, after) ``X``, never ``X`` itself:
  ``pytest/**`` needs a word after ``pytest`` (write ``pytest, pytest/**``);
* a pattern without ``/**`` matches that many segments or words and no more: ``npm/publish``
  is not ``npm publish --access public`` (write ``npm/publish, npm/publish/**``), ``/src/*`` is
  not ``/src/a/b.py`` (``*`` stays within one segment: ``/src/**``);
* an ``fs`` path is absolute: ``src/**`` matches no path (``/src/**``);
* a command run by its path is another first word: ``/usr/bin/pytest`` is not ``pytest``;
* matching is case-sensitive;
* otherwise, where the rule and the value part, when that part is a near miss in spelling
  (``/sr/**`` has ``sr`` where the value has ``src``; ``/src/secrets/**`` is nothing like
  ``/src/b.py``).

Nearest is judged on the patterns' literal prefixes, which a sorted list answers by bisection:
among sorted texts, those sharing the longest prefix with a value lie next to where it would be
inserted, so a few neighbours on each side are the only candidates, however many rules a policy
has (:data:`NEIGHBOURS`). Each candidate costs a few linear matches. A candidate that shares
not even the first segment or word with the value is no hint (``/docs/**`` says nothing about
``/src/a.py``), unless one of the specific reasons above holds.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from typing import Any

from dataclasses import dataclass
from bgc.core.patterns import glob
from bgc.core.plan import RuleRef
from bgc.core.resources import ARGV_RESOURCES
from bgc.core.resources.proc import WORD_SLASH, decode_argv
from bgc.text import did_you_mean

NEIGHBOURS = 8
"""Candidates looked at on each side of where a value sorts among the rules' literal prefixes."""
LONGER_TRIES = 32
"""Shorter heads of a value tried at most, to say which words follow what a pattern matches."""


@dataclass(frozen=True, slots=True)
class Near:
    """The nearest rule: its effect, its pattern as written, the rule, why it does not decide
    the value, and patterns that would match it (as ``bgc fmt`` writes them), or None."""

    effect: str
    text: str
    rule: RuleRef
    why: str
    fix: str | None = None

    def __str__(self) -> str:
        fix = f" (write `{self.fix}`)" if self.fix else ""
        return f"nearest rule: {self.effect} `{self.text}` at {self.rule}: {self.why}{fix}"

    def to_data(self) -> dict[str, Any]:
        return {"pattern": self.text, "rule": self.rule.to_data(), "why": self.why, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class _Entry:
    effect: str
    text: str
    pattern: glob.Pattern
    rule: RuleRef
    order: int


class NearestIndex:
    """The patterns of one resource and action (of the effects a hint may name), sorted by
    literal prefix: ``entries`` are ``(effect, pattern text, pattern, rule)`` in policy order."""

    def __init__(self, resource: str, entries: Iterable[tuple[str, str, glob.Pattern, RuleRef]]) -> None:
        self.resource = resource
        self.words = resource in ARGV_RESOURCES
        items = sorted(
            ((pattern.prefix, _Entry(effect, text, pattern, rule, order))
             for order, (effect, text, pattern, rule) in enumerate(entries)),
            key=lambda item: (item[0], item[1].order),
        )  # fmt: skip
        self.prefixes = [prefix for prefix, _ in items]
        self.entries = [entry for _, entry in items]

    def nearest(self, value: str) -> Near | None:
        """The rule nearest to the canonical ``value`` that does not match it, and why; None when
        no rule is near (or one matches)."""
        best: tuple[tuple[int, int, int], Near] | None = None
        for entry in self._candidates(value):
            if entry.pattern.matches(value):
                return None  # a rule matches: whatever decided the value, it was not "no rule"
            found = self._why(entry, value)
            if found is None:
                continue
            specific, why, fix = found
            score = (specific, _common(entry.pattern.prefix, value), -entry.order)
            if best is None or score > best[0]:
                best = score, Near(entry.effect, entry.text, entry.rule, why, fix)
        return best[1] if best is not None else None

    def _candidates(self, value: str) -> list[_Entry]:
        probes = [value]
        if self.resource == "fs" and value.startswith("/"):
            probes.append(value[1:])  # a relative pattern, written as a new user might
        program = _program(value) if self.words else None
        if program is not None:
            probes.append(program)  # the program by its name, where the command gives its path
        found: dict[int, _Entry] = {}
        for probe in probes:
            at = bisect.bisect_left(self.prefixes, probe)
            for index in range(max(0, at - NEIGHBOURS), min(len(self.entries), at + NEIGHBOURS)):
                found[index] = self.entries[index]
        return list(found.values())

    def _why(self, entry: _Entry, value: str) -> tuple[int, str, str | None] | None:
        """Why ``entry`` does not match ``value``: (1 for a specific reason, else 0; the words; a
        fix), or None when the rule is not near at all."""
        text, shown = entry.text, self._shown(value)
        unit = "word" if self.words else "segment"
        if text.endswith("/**") and not text.endswith("\\/**") and len(text) > 3:
            stem = text[:-3]
            whole = _parsed(stem)
            if whole is not None and whole.matches(value):
                if self.words:
                    why = f"`**` at the end needs at least one more word: it does not match `{shown}` alone"
                else:
                    why = f"it matches what lies below `{stem}`, not `{stem}` itself"
                return 1, why, f"{_word(stem)}, {_word(text)}"
        longer = _parsed(text + "/**")
        if longer is not None and longer.matches(value):
            extra = self._after(entry.pattern, value)
            if self.words:
                rest = f" (`{extra}`)" if extra else ""
                why = f"it matches the command with nothing after it; `{shown}` has more words{rest}"
                return 1, why, f"{_word(text)}, {_word(text + '/**')}"
            if text.endswith("/*") and not text.endswith("\\/*"):
                why = f"`*` stays within one {unit}: it does not match `{shown}`, which lies deeper"
                return 1, why, _word(text + "*")
            return 1, f"it matches no {unit} below `{text}`; `{shown}` lies below it", f"{_word(text)}, {_word(text + '/**')}"
        if self.resource == "fs" and not text.startswith("/"):
            absolute = _parsed("/" + text)
            if absolute is not None and absolute.matches(value):
                return 1, "an fs path is absolute, from the workspace root: this pattern matches no path", _word("/" + text)
        if self.words:
            named = _program(value)
            if named is not None and entry.pattern.matches(named):
                first = value.partition("/")[0]
                why = f"bgc matches the program as the command names it: `{first.replace(WORD_SLASH, '/')}` is not `{named.partition('/')[0]}`"
                return 1, why, None
        elif "/" in text.rstrip("/"):
            head, _, last = text.rpartition("/")
            deeper = _parsed(f"{head}/**/{last}") if last != "**" else None
            if deeper is not None and deeper.matches(value):
                why = f"`{last}` matches in `{head}` itself; `{shown}` lies deeper"
                return 1, why, _word(f"{head}/**/{last}")
        if glob.fold_case(entry.pattern).matches(value):
            return 1, f"patterns are case-sensitive: it does not match `{shown}`", None
        return self._differs(entry, value)

    def _differs(self, entry: _Entry, value: str) -> tuple[int, str, str | None] | None:
        """Where the rule's literal start parts from the value, when they share a first segment or word."""
        prefix = entry.pattern.prefix
        common = _common(prefix, value)
        segments = value.split("/")
        index = value[:common].count("/")
        shared = "/".join(segments[:index])
        if not shared.strip("/") or index >= len(segments):
            return None  # not even the first segment or word in common: not near
        written = entry.text.split("/")
        if index >= len(written) or did_you_mean(segments[index], [written[index]]) is None:
            return None  # the part that differs is not a near miss either (`secrets` is no `b.py`)
        if self.words:
            where = f"`{self._shown(value)}` has `{self._shown(segments[index])}` (word {index + 1})"
        else:
            where = f"`{value}` has `{segments[index]}`"
        return 0, f"it has `{written[index]}` where {where}", None

    def _after(self, pattern: glob.Pattern, value: str) -> str:
        """The segments (words) of ``value`` after the longest head ``pattern`` matches, as shown."""
        segments = value.split("/")
        if pattern.literal is not None:
            cut = pattern.literal.count("/") + 1
        else:
            cut = next((k for k in range(len(segments) - 1, max(0, len(segments) - 1 - LONGER_TRIES), -1)
                        if pattern.matches("/".join(segments[:k]))), 0)  # fmt: skip
        if not 0 < cut < len(segments):
            return ""
        rest = "/".join(segments[cut:])
        return self._shown(rest) if self.words else rest

    def _shown(self, value: str) -> str:
        """A value as people write it: a command's words with spaces, anything else as it is."""
        return " ".join(decode_argv(value)) if self.words else value


def _program(value: str) -> str | None:
    """A command whose first word is a path (``/usr/bin/pytest -x``) with the program's bare name
    instead (``pytest -x``), or None."""
    first, slash, rest = value.partition("/")
    if WORD_SLASH not in first:
        return None
    return first.rsplit(WORD_SLASH, 1)[1] + slash + rest


def _parsed(text: str) -> glob.Pattern | None:
    try:
        return glob.parse(text)
    except glob.PatternError:
        return None


def _word(text: str) -> str:
    from bgc.core.policy.format import pattern_word

    return pattern_word(text)


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of two texts."""
    length = min(len(a), len(b))
    for index in range(length):
        if a[index] != b[index]:
            return index
    return length
