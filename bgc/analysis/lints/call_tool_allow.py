"""BGC106: an allow conditioned on ``call.tool``.

Requests are compiled without a call (a grant in a plan may serve any call), so ``call.tool``
is unknown then, and an allow whose condition can only hold through it never grants anything.
Conditions on ``call.tool`` belong in deny and ask rules, where unknown applies (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.conditions import can_hold_without_a_call
from bgc.analysis.lints.context import Context


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if rule.effect == "allow" and rule.when is not None and not can_hold_without_a_call(rule.when):
            yield Finding(
                codes.ALLOW_ON_CALL_TOOL,
                Severity.WARNING,
                "this allow depends on `call.tool`, which is unknown while requests are compiled "
                "(a grant may serve any call), so it never grants anything",
                rule.when.span,
                "condition allows on intent.kind or origin.model; use call.tool in deny/ask",
            )
