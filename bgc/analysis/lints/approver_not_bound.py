"""BGC541: an approver named in ``approvals N of [...]`` that no ``trust approver`` binds to a key.

Once a policy binds approvers to keys, its list is meant to be whole: an unbound name's approval
can never be checked, so a rule naming it may never be satisfiable. Policies that bind no
approver yet are not flagged: they predate signed approvals.
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context
from bgc.text import did_you_mean


def check(context: Context) -> Iterator[Finding]:
    policy = context.policy
    trusted = {entry.name for entry in policy.trust if entry.role == "approver"}
    if not trusted:
        return
    for rule in policy.rules:
        for name in rule.approvals.approvers if rule.approvals else ():
            if name not in trusted:
                yield Finding(
                    codes.APPROVER_NOT_BOUND,
                    Severity.WARNING,
                    f"approver `{name}` is not bound to a key by `trust approver`",
                    rule.approvals.span,  # type: ignore[union-attr]
                    did_you_mean(name, sorted(trusted)) or f"add: trust approver {name} ed25519:<public key>",
                )
