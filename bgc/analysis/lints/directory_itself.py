"""BGC103: ``deny X/**`` without ``X`` itself.

``X/**`` matches everything *below* ``X``, not ``X``: ``deny fs:write:/.git/**`` leaves
``/.git`` itself writable (replace the directory, or a file named like it), which is rarely
what a deny meant. The hint writes the rule that denies both, as ``bgc fmt`` would write it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context, pattern_span
from bgc.analysis.lints.never_matches import NOT_FS_PATHS
from bgc.core.policy.ast import Rule
from bgc.core.policy.format import atom_word, pattern_word


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if rule.effect == "deny" and not rule.fallback:  # what an `otherwise deny` leaves out is denied anyway
            yield from _directory_itself(context, rule)


def _deny_group(rule: Rule) -> Hashable | None:
    return (rule.resource, rule.action, rule.mode, rule.when) if rule.effect == "deny" and not rule.fallback else None


def _directory_itself(context: Context, rule: Rule) -> Iterator[Finding]:
    """The denies that apply whenever ``rule`` does are its scope: the same condition or none."""
    scope = [(resource, action, mode, when) for resource in ("*", rule.resource) for action in ("*", rule.action)
             for mode in (None, rule.mode) for when in (None, rule.when)]  # fmt: skip
    for index, text in enumerate(rule.patterns):
        if not text.endswith("/**") or text.endswith("\\/**") or "://" in text:
            continue  # a URL's `X/**` covers `X/` already, and `X` itself is no canonical URL
        base = text[:-3]
        if base in ("", "*", "**") or base.endswith("/"):
            continue
        if rule.resource == "fs" and context.subset(base, NOT_FS_PATHS, rule, index):
            continue  # `X` matches no fs path (and `X/**` none either: BGC107), so suggest nothing
        takers = context.overlapping(_deny_group, scope, base)
        if takers and context.subset(base, [taker.text for taker in takers], rule, index):
            continue
        what = "writable" if rule.action in ("write", "*") else f"open to `{rule.action}`"
        yield Finding(
            codes.DIRECTORY_ITSELF,
            Severity.WARNING,
            f"`{text}` does not match `{base}` itself: the directory itself stays {what}",
            pattern_span(rule, index),
            f"deny both: {rule.effect} {atom_word(rule.resource, rule.action, base)}, {pattern_word(text)}",
        )
