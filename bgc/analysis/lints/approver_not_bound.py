"""BGC541: an approver named in ``approvals N of [...]`` (of an ``ask`` rule, or of a mode block:
who may switch a session to it) that no ``trust approver`` binds to a key.

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
    lists = [rule.approvals for rule in policy.rules if rule.approvals] + [rule for _, rule in policy.mode_approvals]
    for approvals in lists:
        for name in approvals.approvers:
            if name not in trusted:
                yield Finding(
                    codes.APPROVER_NOT_BOUND,
                    Severity.WARNING,
                    f"approver `{name}` is not bound to a key by `trust approver`",
                    approvals.span,
                    did_you_mean(name, sorted(trusted)) or f"add: trust approver {name} ed25519:<public key>",
                )
