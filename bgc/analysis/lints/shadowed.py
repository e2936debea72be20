"""BGC101 / BGC102: an allow (or ask) pattern that can never take effect.

Deny beats ask beats allow. An allow pattern whose every match lies inside unconditional ask or
deny rules that apply whenever it does (same or ``*`` resource and action, same mode or every
mode) never grants anything; an ask inside such denies never asks. The author meant something,
and the policy does not say it: usually the stronger rule is wider than intended, or the weaker
one is dead text that misleads its readers. Decided exactly, with the pattern algebra.

The common case is "allow these, ask about the rest" written as an allow beside a catch-all
``ask``: the ask takes the allow. The hint then names the fallback that says it,
``otherwise ask`` (which asks only where no other rule matches). Fallbacks neither take from
these rules nor are judged here (BGC113 is their lint).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

from bgc import codes
from bgc.core.patterns import glob
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context, Placed, pattern_span
from bgc.core.policy.ast import Rule
from bgc.core.policy.format import atom_word

STRONGER = {"allow": ("ask", "deny"), "ask": ("deny",)}
"""The effects that take what a weaker effect matches."""


def _group(rule: Rule) -> Hashable | None:
    """What a rule may take from weaker ones: unconditional, by effect, resource, action, mode.
    A fallback takes nothing from any rule (it decides only what none of them matches)."""
    return (rule.effect, rule.resource, rule.action, rule.mode) if rule.when is None and not rule.fallback else None


def _stronger_covering(rule: Rule) -> list[Hashable]:
    """The groups of the rules that take from ``rule`` (:func:`covers`, with a stronger effect)."""
    return [(effect, resource, action, mode) for effect in STRONGER[rule.effect] for resource in ("*", rule.resource)
            for action in ("*", rule.action) for mode in (None, rule.mode)]  # fmt: skip


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if rule.effect not in STRONGER or rule.fallback:  # a fallback's own lint: fallback_shadowed (BGC113)
            continue
        groups = _stronger_covering(rule)
        for index, text in enumerate(rule.patterns):
            takers = context.overlapping(_group, groups, text)
            if takers and context.subset(text, [taker.text for taker in takers], rule, index):
                yield _shadowed(context, rule, index, text, takers, groups)


def _shadowed(context: Context, rule: Rule, index: int, text: str, takers: list[Placed], groups: list[Hashable]) -> Finding:
    """The finding names one rule that takes the pattern alone when there is one, else every
    rule that covers it. Only a rule with a pattern overlapping it can take it alone."""
    single = None
    for other in dict.fromkeys(taker.rule for taker in takers):
        try:
            if glob.is_subset(context.pattern(text), [context.pattern(p) for p in other.patterns]):
                single = other
                break
        except glob.AlgebraLimit:
            continue
    culprits = [single] if single is not None else context.grouped(_group, groups)
    where = ", ".join(f"{other.effect} at {other.span.file}:{other.span.line}" for other in culprits)
    code = codes.ALLOW_SHADOWED if rule.effect == "allow" else codes.ASK_SHADOWED
    never = "granted" if rule.effect == "allow" else "asked for"
    hint = "remove the pattern, or narrow the rule that takes it"
    asks = [other for other in culprits if other.effect == "ask"]
    if rule.effect == "allow" and asks:  # `allow X` beside a catch-all `ask`: "ask about the rest" was meant
        first = asks[0]
        hint += (
            f"; to ask only about what no allow names, make the ask at line {first.span.line} a fallback: "
            f"`otherwise ask {atom_word(first.resource, first.action, first.patterns[0])}`"
            + (", ..." if len(first.patterns) > 1 else "")
        )
    return Finding(code, Severity.WARNING, f"`{text}` can never be {never}: everything it matches is taken by {where}",
                   pattern_span(rule, index), hint)  # fmt: skip
