"""Inline ``expect`` lines: what a policy says about itself, run through the compiler.

``bgc check`` and ``bgc test`` both run expects through :func:`run_expect`, so a failing expect
is the same finding, hint included, in both. An expect is run against the whole policy it is
read in (includes spliced in): an expect written in a shared base runs in every policy that
includes it, since the base can hold under one policy and fail under another, and a failure
says which policy it failed in.
"""

from __future__ import annotations

import os

from bgc import codes
from dataclasses import dataclass, replace
from bgc.core import resources
from bgc.core.compiler import Compiler, Decision, decide, resolve_mode, rule_source
from bgc.core.nearest import Near
from bgc.errors import BgcError
from bgc.analysis.findings import Finding, Severity
from bgc.core.policy.ast import Expect, Policy


@dataclass(frozen=True, slots=True)
class ExpectResult:
    """One inline expect run against one policy: its failure (BGC201 or BGC202), ``None`` when it
    held, and the rules that decided it as (real path, line), which ``bgc test --coverage``
    counts as exercised."""

    expect: Expect
    finding: Finding | None
    exercised: frozenset[tuple[str, int]]


def run_expect(policy: Policy, expect: Expect, compiler: Compiler) -> ExpectResult:
    """Decide ``expect`` against the whole ``policy`` (includes spliced in) with ``compiler``
    (built once per policy by the caller). An error from the compiler (the pattern algebra's
    bound, say) is a BGC202 finding: unknown is not a pass, and one undecidable expect must not
    stop the others."""
    try:
        decision = decide(
            policy, expect.resource, expect.action, expect.value, dict(expect.context), expect.mode, compiler
        )
    except BgcError as error:
        return ExpectResult(expect, _undecided(expect, error, policy), frozenset())
    exercised = frozenset((os.path.realpath(rule_source(policy, ref)), ref.line) for ref in decision.rules)
    finding = None if decision.effect == expect.effect else _missed(expect, decision, policy, compiler)
    return ExpectResult(expect, finding, exercised)


def expect_findings(policy: Policy) -> list[Finding]:
    """Run every ``expect`` against the whole policy (includes spliced in); one finding per miss."""
    if not policy.expects:
        return []
    compiler = Compiler(policy)
    results = [run_expect(policy, expect, compiler) for expect in policy.expects]
    return [result.finding for result in results if result.finding is not None]


def _nearest(expect: Expect, policy: Policy, compiler: Compiler) -> Near | None:
    """The rule of the expected effect nearest to the expect's value (:mod:`bgc.core.nearest`)."""
    value = resources.normalise(expect.resource, expect.value, case_insensitive=policy.case_insensitive)
    if isinstance(value, resources.Rejection):
        return None
    mode = resolve_mode(policy, expect.mode)
    return compiler.nearest(expect.resource, expect.action, value, dict(expect.context), mode, (expect.effect,))


def _in_policy(expect: Expect, policy: Policy) -> str:
    """`` (in policy P)`` for an expect that came in through an include: the same line of a
    shared base can hold in one including policy and fail in another."""
    return "" if expect.span.file == policy.path else f" (in policy {policy.path})"


def _undecided(expect: Expect, error: BgcError, policy: Policy) -> Finding:
    message = f"could not decide this expect: {error.message}{_in_policy(expect, policy)}"
    return Finding(codes.EXPECT_UNDECIDED, Severity.ERROR, message, expect.span)


def _missed(expect: Expect, decision: Decision, policy: Policy, compiler: Compiler) -> Finding:
    """BGC201, its hint naming the deciding rules by their paths as seen from here (like every
    other finding), not as plans record them (relative to the root policy's directory), and the
    rule of the expected effect nearest to the value, with why it did not decide it."""
    atom = f"{expect.resource}:{expect.action}:{expect.value}"
    if decision.rules:
        where = [f"{ref.keyword} at {rule_source(policy, ref)}:{ref.line}" for ref in decision.rules]
        hint = "decided by " + ", ".join(where)
    else:
        hint = "no rule applies, so it is denied (fail closed)"
    near = _nearest(expect, policy, compiler)
    if near is not None:
        rule = replace(near.rule, file=rule_source(policy, near.rule))
        hint += f"; {replace(near, rule=rule)}"
    return Finding(
        codes.EXPECT_FAILED,
        Severity.ERROR,
        f"expected {expect.effect} for `{atom}`, got {decision.effect} ({decision.reason}){_in_policy(expect, policy)}",
        expect.span,
        hint,
    )
