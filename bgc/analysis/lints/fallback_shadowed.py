"""BGC113: a fallback pattern that can never take effect.

A fallback (``otherwise ask X``, ``otherwise deny X``) decides only the values of ``X`` that no
other rule matches. When every value ``X`` matches is matched by unconditional rules that apply
whenever the fallback does (any effect; the same or ``*`` resource and action; the same mode or
every mode), or, for an ``otherwise ask``, by such ``otherwise deny`` fallbacks (the strictest
fallback wins), nothing is left for it: the line reads as a question or a refusal that never
happens. Usually the fallback was meant to be wider, or the allows already say everything.
Decided exactly, with the pattern algebra.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context, Placed, pattern_span
from bgc.core.patterns import glob
from bgc.core.policy.ast import Rule


def _group(rule: Rule) -> Hashable | None:
    """What may leave a fallback nothing: an unconditional rule, or an unconditional ``otherwise deny``."""
    if rule.when is not None:
        return None
    if rule.fallback:
        return ("otherwise deny", rule.resource, rule.action, rule.mode) if rule.effect == "deny" else None
    return ("rule", rule.resource, rule.action, rule.mode)


def _deciding(rule: Rule) -> list[Hashable]:
    kinds = ("rule", "otherwise deny") if rule.effect == "ask" else ("rule",)
    return [(kind, resource, action, mode) for kind in kinds for resource in ("*", rule.resource)
            for action in ("*", rule.action) for mode in (None, rule.mode)]  # fmt: skip


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if not rule.fallback:
            continue
        groups = _deciding(rule)
        for index, text in enumerate(rule.patterns):
            takers = context.overlapping(_group, groups, text)
            if takers and context.subset(text, [taker.text for taker in takers], rule, index):
                yield _without_effect(context, rule, index, text, takers)


def _meets(context: Context, text: str, other: str) -> bool:
    try:
        return glob.overlaps(context.pattern(text), context.pattern(other))
    except glob.AlgebraLimit:
        return True  # named rather than left out: the finding itself is decided


def _without_effect(context: Context, rule: Rule, index: int, text: str, takers: list[Placed]) -> Finding:
    """The finding names the rules that really meet the pattern (the index only finds those that may)."""
    # by place: two rules written alike are equal values, and each is named
    deciding = list({taker.position: taker.rule for taker in takers if _meets(context, text, taker.text)}.values())
    where = ", ".join(f"{other.keyword} at {other.span.file}:{other.span.line}" for other in deciding)
    return Finding(
        codes.FALLBACK_WITHOUT_EFFECT,
        Severity.WARNING,
        f"`{text}` never reaches this {rule.keyword}: every value it matches is decided by {where}",
        pattern_span(rule, index),
        "remove the pattern, or widen it to what no rule names (a fallback decides only that)",
    )
