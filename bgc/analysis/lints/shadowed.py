"""BGC101 / BGC102: an allow (or ask) pattern that can never take effect.

Deny beats ask beats allow. An allow pattern whose every match lies inside unconditional ask or
deny rules that apply whenever it does (same or ``*`` resource and action, same mode or every
mode) never grants anything; an ask inside such denies never asks. The author meant something,
and the policy does not say it: usually the stronger rule is wider than intended, or the weaker
one is dead text that misleads its readers. Decided exactly, with the pattern algebra.
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.core.patterns import glob
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context, pattern_span
from bgc.core.policy.ast import Rule

STRONGER = {"allow": ("ask", "deny"), "ask": ("deny",)}
"""The effects that take what a weaker effect matches."""


def covers(outer: Rule, inner: Rule) -> bool:
    """Whether ``outer`` applies whenever ``inner`` does (resource, action, mode; no condition)."""
    return (
        outer.when is None
        and outer.resource in ("*", inner.resource)
        and outer.action in ("*", inner.action)
        and outer.mode in (None, inner.mode)
    )


def check(context: Context) -> Iterator[Finding]:
    rules = context.policy.rules
    for rule in rules:
        if rule.effect not in STRONGER:
            continue
        cover = [other for other in rules if other.effect in STRONGER[rule.effect] and covers(other, rule)]
        if not cover:
            continue
        for index, text in enumerate(rule.patterns):
            if context.subset(text, [p for other in cover for p in other.patterns], rule, index):
                yield _shadowed(context, rule, index, text, cover)


def _shadowed(context: Context, rule: Rule, index: int, text: str, cover: list[Rule]) -> Finding:
    """The finding names one rule that takes the pattern alone when there is one, else them all."""
    single = []
    for other in cover:
        try:
            if glob.is_subset(context.pattern(text), [context.pattern(p) for p in other.patterns]):
                single.append(other)
        except glob.AlgebraLimit:
            continue
    culprits = single[:1] or cover
    where = ", ".join(f"{other.effect} at {other.span.file}:{other.span.line}" for other in culprits)
    code = codes.ALLOW_SHADOWED if rule.effect == "allow" else codes.ASK_SHADOWED
    never = "granted" if rule.effect == "allow" else "asked for"
    return Finding(
        code,
        Severity.WARNING,
        f"`{text}` can never be {never}: everything it matches is taken by {where}",
        pattern_span(rule, index),
        "remove the pattern, or narrow the rule that takes it",
    )
