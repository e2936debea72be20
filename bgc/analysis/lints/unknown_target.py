"""BGC110: a deny, ask or fallback on a resource:action that nothing else in the policy knows.

``deny fs:wrtie:/.git/**`` parses, and protects nothing: no tool needs ``fs:wrtie`` and no
allow grants it, so no value is ever decided against it. What is known is what the policy
itself names (tool needs, allows, asks); a typo is told with the nearest known word. A fallback
(``otherwise ask``/``otherwise deny``) is judged like a deny and makes nothing known: it decides
only values the others name. A policy that names nothing of the kind (a file of denies meant to
be included) is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context
from bgc.text import did_you_mean


def check(context: Context) -> Iterator[Finding]:
    policy = context.policy
    known = {(need.resource, need.action) for decl in policy.tools for need in decl.needs}
    known |= {(rule.resource, rule.action) for rule in policy.rules if rule.effect != "deny" and not rule.fallback}
    if not known:
        return
    resources = {resource for resource, _ in known} - {"*"}
    for rule in policy.rules:
        if rule.effect == "allow" or rule.resource == "*" and rule.action == "*":
            continue
        if any(_names_match(rule.resource, resource) and _names_match(rule.action, action) for resource, action in known):
            continue
        if rule.resource != "*" and rule.resource not in resources and "*" not in {r for r, _ in known}:
            word, hint = rule.resource, did_you_mean(rule.resource, sorted(resources))
            what = "resource"
        else:
            word = rule.action
            actions = sorted({a for r, a in known if _names_match(rule.resource, r)} - {"*"})
            hint, what = did_you_mean(rule.action, actions), "action"
        yield Finding(
            codes.UNKNOWN_TARGET, Severity.WARNING,
            f"no tool needs and no allow or ask mentions `{rule.resource}:{rule.action}`, so this {rule.keyword} "
            f"never takes effect (unknown {what} `{word}`)",
            rule.span, hint or "deny what a tool needs or an allow grants, e.g. `fs:write`",
        )  # fmt: skip


def _names_match(pattern: str, name: str) -> bool:
    return pattern == "*" or name == "*" or pattern == name
