"""BGC111: an allow whose condition can hold on fields the proposal writes itself.

``intent.kind`` and ``origin.model`` are written by the agent that proposes the order: an allow
that depends on them lets the agent declare whatever intent or model earns the grant. A grant
should follow from a person's choice (a mode, ``--mode``); such conditions belong on denies and
asks, to narrow them.
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.conditions import PROPOSER_FIELDS, can_hold_without_a_call, leaves
from bgc.analysis.lints.context import Context


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if rule.effect != "allow" or rule.when is None or not can_hold_without_a_call(rule.when):
            continue
        fields = sorted({leaf.field for leaf in leaves(rule.when)} & PROPOSER_FIELDS)
        yield Finding(
            codes.PROPOSER_CHOSEN_GRANT,
            Severity.WARNING,
            f"this allow can hold on fields the proposal writes itself ({', '.join(fields)}): an agent can "
            "choose them to choose its own grant",
            rule.when.span,
            "grant through a mode a person chooses (`mode NAME {...}`, `--mode`), or use the condition to "
            "narrow a deny or ask instead",
        )
