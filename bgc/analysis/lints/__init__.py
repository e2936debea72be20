"""Lints: what is legal in a policy but almost certainly not what its author meant.

One module per rule, in the shape of ruff's rules: each owns its code (from :mod:`bgc.codes`),
its messages and hints, and a docstring saying why it exists. Every rule is a function
``check(context) -> Iterable[Finding]`` over one loaded policy (includes spliced in), deciding
containment exactly with the pattern algebra (:mod:`bgc.core.patterns.glob`), never by comparing strings;
when the algebra's bound is hit a lint says so as a note (BGC109) instead of guessing.

Lints sit above the compiler (DESIGN §5, "analysis"): the policy front end (:mod:`bgc.core.policy`)
never imports them.
"""

from __future__ import annotations

from bgc.analysis.findings import Finding
from bgc.analysis.lints import (
    approver_not_bound,
    atom_as_pattern,
    call_tool_allow,
    directory_itself,
    fallback_shadowed,
    host_label_wildcard,
    never_matches,
    proposer_chosen_grant,
    shadowed,
    suppressions,
    unknown_target,
    write_everywhere,
)
from bgc.analysis.lints.context import Context
from bgc.analysis.selection import LINT_CODES
from bgc.core.policy.ast import Policy

RULES = (
    shadowed,
    directory_itself,
    write_everywhere,
    atom_as_pattern,
    call_tool_allow,
    never_matches,
    unknown_target,
    proposer_chosen_grant,
    host_label_wildcard,
    fallback_shadowed,
    approver_not_bound,
)
"""Every lint rule module, in code order."""


def lint(policy: Policy) -> list[Finding]:
    """Every lint over one policy, then the notes of what could not be decided, less what a
    ``# bgc: ignore[...]`` on the finding's line silences (:mod:`.suppressions`)."""
    context = Context(policy)
    findings = [finding for rule in RULES for finding in rule.check(context)]
    return suppressions.suppress([*findings, *context.undecided], policy.comments, LINT_CODES)
