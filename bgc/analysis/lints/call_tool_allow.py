"""BGC106: an allow (or an ``otherwise ask``) conditioned on ``call.tool``.

Requests are compiled without a call (a grant in a plan may serve any call), so ``call.tool``
is unknown then, and an allow whose condition can only hold through it never grants anything.
An ``otherwise ask`` gives access too (a question where there would be a deny), so it applies
only when its condition is true, and likewise never asks. Conditions on ``call.tool`` belong in
deny and ask rules, where unknown applies (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.conditions import can_hold_without_a_call
from bgc.analysis.lints.context import Context
from bgc.core.compiler import narrows


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if not narrows(rule) and rule.when is not None and not can_hold_without_a_call(rule.when):
            does = "asks for anything" if rule.fallback else "grants anything"
            yield Finding(
                codes.ALLOW_ON_CALL_TOOL,
                Severity.WARNING,
                f"this {rule.keyword} depends on `call.tool`, which is unknown while requests are compiled "
                f"(a grant may serve any call), so it never {does}",
                rule.when.span,
                f"condition {rule.keyword} rules on intent.kind or origin.model; use call.tool in deny/ask",
            )
