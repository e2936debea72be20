"""What every lint shares while one policy is linted: its parsed patterns and the bounded
containment question, whose "could not decide" becomes a note (BGC109) instead of a guess."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterable

from bgc import codes
from bgc.core.patterns import glob
from dataclasses import dataclass, field
from bgc.errors import Span
from bgc.analysis.findings import Finding, Severity
from bgc.core.policy.ast import Policy, Rule


@dataclass
class Context:
    """One policy being linted. Not a value: it caches each pattern text's parse (rules share
    patterns, and several lints ask about the same one) and collects the notes of questions the
    pattern algebra could not answer within its bound."""

    policy: Policy
    parsed: dict[str, glob.Pattern] = field(default_factory=dict)
    undecided: list[Finding] = field(default_factory=list)
    groups: dict[Callable[[Rule], Hashable | None], dict[Hashable, PatternsByPrefix]] = field(default_factory=dict)
    """The policy's rules sorted into groups by a lint's key, each group's patterns indexed."""

    def pattern(self, text: str) -> glob.Pattern:
        if text not in self.parsed:
            self.parsed[text] = glob.parse(text)
        return self.parsed[text]

    def subset(self, text: str, others: Iterable[str], rule: Rule, index: int) -> bool:
        """Whether every text ``text`` matches is matched by one of ``others``; ``False`` (with a
        note at the rule's pattern) when the algebra's bound is hit: a lint never guesses."""
        try:
            return bool(glob.is_subset(self.pattern(text), [self.pattern(other) for other in others]))
        except glob.AlgebraLimit:
            self.undecided.append(
                Finding(codes.LINT_UNDECIDED, Severity.NOTE, f"could not decide whether `{text}` is covered: "
                        "pattern too complex for the lint's bound", pattern_span(rule, index))
            )  # fmt: skip
            return False


    def overlapping(self, group: Callable[[Rule], Hashable | None], keys: Iterable[Hashable], text: str) -> list[Placed]:
        """The patterns of the rules ``group`` keys under one of ``keys`` (a rule keyed None is
        in no group) that can match a text ``text`` matches, in the policy's order. A lint that
        asks whether other rules take a pattern asks about these alone: a pattern no text of
        ``text`` matches cannot change the answer."""
        pattern = self.pattern(text)
        groups = self._groups(group)
        return sorted(
            placed for key in dict.fromkeys(keys) if key in groups for placed in groups[key].overlapping(pattern)
        )

    def grouped(self, group: Callable[[Rule], Hashable | None], keys: Iterable[Hashable]) -> list[Rule]:
        """Every rule ``group`` keys under one of ``keys``, in the policy's order."""
        groups = self._groups(group)
        found = sorted({placed.position: placed.rule for key in dict.fromkeys(keys) if key in groups
                        for placed in groups[key].entries}.items())  # fmt: skip
        return [rule for _, rule in found]

    def _groups(self, group: Callable[[Rule], Hashable | None]) -> dict[Hashable, PatternsByPrefix]:
        if group not in self.groups:
            members: dict[Hashable, list[Placed]] = {}
            for position, rule in enumerate(self.policy.rules):
                key = group(rule)
                if key is not None:
                    members.setdefault(key, []).extend(
                        Placed(position, index, rule, text) for index, text in enumerate(rule.patterns)
                    )
            self.groups[group] = {key: PatternsByPrefix(self, entries) for key, entries in members.items()}
        return self.groups[group]


@dataclass(frozen=True, slots=True, order=True)
class Placed:
    """A rule's pattern and where it stands: the rule's place in the policy, the pattern's in the rule."""

    position: int
    index: int
    rule: Rule = field(compare=False)
    text: str = field(compare=False)


class PatternsByPrefix:
    """Patterns found by the literal prefix that lets them overlap another.

    Every pattern matches something, and every text it matches starts with its literal prefix
    and ends with its literal suffix; so two patterns share a text only when one prefix starts
    with the other and one suffix ends with the other. The patterns whose prefix is a prefix of
    the one asked about are looked up by length; those whose prefix extends it lie in one range
    of the sorted prefixes. A policy of many rules over distinct directories then costs its
    lints a few look-ups per pattern, not a comparison with every other rule."""

    def __init__(self, context: Context, entries: list[Placed]) -> None:
        self.entries = entries
        self.by_prefix: dict[str, list[tuple[Placed, str]]] = {}
        for placed in entries:
            pattern = context.pattern(placed.text)
            self.by_prefix.setdefault(pattern.prefix, []).append((placed, pattern.suffix))
        self.prefixes = sorted(self.by_prefix)
        self.lengths = sorted({len(prefix) for prefix in self.prefixes})

    def overlapping(self, pattern: glob.Pattern) -> Iterable[Placed]:
        prefix, suffix = pattern.prefix, pattern.suffix
        shorter = (prefix[:length] for length in self.lengths if length <= len(prefix))
        longer = []
        at = bisect.bisect_right(self.prefixes, prefix)
        while at < len(self.prefixes) and self.prefixes[at].startswith(prefix):
            longer.append(self.prefixes[at])
            at += 1
        for key in (*shorter, *longer):
            for placed, other in self.by_prefix.get(key, ()):
                if other.endswith(suffix) or suffix.endswith(other):
                    yield placed


def pattern_span(rule: Rule, index: int) -> Span:
    """Where a rule's ``index``-th pattern is written (the rule itself when not known)."""
    return rule.pattern_spans[index] if index < len(rule.pattern_spans) else rule.span
