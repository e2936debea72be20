"""What every lint shares while one policy is linted: its parsed patterns and the bounded
containment question, whose "could not decide" becomes a note (BGC109) instead of a guess."""

from __future__ import annotations

from collections.abc import Iterable

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


def pattern_span(rule: Rule, index: int) -> Span:
    """Where a rule's ``index``-th pattern is written (the rule itself when not known)."""
    return rule.pattern_spans[index] if index < len(rule.pattern_spans) else rule.span
