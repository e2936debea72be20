"""Policies checked: loaded, linted and their inline expects run — ``bgc check``'s work on
policies, as findings; nothing is printed.

:func:`check_paths` is the library entry point every output format shares: the text view
(:mod:`bgc.app.render.findings_text`), json, sarif and github (:mod:`bgc.app.render.machine`), all from
the same Finding list. A policy that cannot be loaded becomes one error finding with its BGC0xx
id and makes the exit code 2; lints (BGC1xx) and failing expects (BGC2xx) are findings, exit 1;
notes never fail a check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bgc import codes
from dataclasses import dataclass
from bgc.errors import BgcError, ExitCode, Span
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.findings import exit_code as findings_exit_code

if TYPE_CHECKING:
    from bgc.core.policy.ast import Policy

EXPECT_CODES = (codes.EXPECT_FAILED, codes.EXPECT_UNDECIDED)
"""The ids of a failed inline expect (every other id a policy check reports is a lint or a load error)."""


@dataclass(frozen=True, slots=True)
class CheckedPolicy:
    """What a check keeps of a policy that loaded: its summary line's counts and the files it was
    read from. A cached result holds this, not the policy, so reading it back builds no AST."""

    path: str
    rules: int
    tools: int
    expects: int
    files: tuple[tuple[str, str], ...]
    """``(path, digest)`` of every file the policy was read from (:meth:`Policy.file_digests`)."""

    @staticmethod
    def of(policy: Policy) -> CheckedPolicy:
        return CheckedPolicy(policy.path, len(policy.rules), len(policy.tools), len(policy.expects), policy.file_digests())


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What checking policies found: findings (sorted), the policies that loaded, how many of each
    policy's expects failed (parallel to ``policies``: a shared file's expect can hold in one
    including policy and fail in another, so the count is taken per policy as its expects run),
    and the load errors (kept as errors too, so a renderer can show their source line)."""

    findings: tuple[Finding, ...]
    policies: tuple[CheckedPolicy, ...]
    failed_expects: tuple[int, ...]
    errors: tuple[BgcError, ...]

    @property
    def exit_code(self) -> ExitCode:
        return findings_exit_code(self.findings, self.errors)

    @staticmethod
    def merged(results: Sequence[CheckResult]) -> CheckResult:
        """Several results as one (findings deduplicated and sorted again)."""
        return CheckResult(
            tuple(sorted({f for r in results for f in r.findings}, key=Finding.sort_key)),
            tuple(p for r in results for p in r.policies),
            tuple(n for r in results for n in r.failed_expects),
            tuple(e for r in results for e in r.errors),
        )


def check_paths(paths: Sequence[str]) -> CheckResult:
    """Load each policy (with its includes), lint it and run its expects."""
    from bgc.core.policy.loader import load_policy

    findings: list[Finding] = []
    policies: list[CheckedPolicy] = []
    failed_expects: list[int] = []
    errors: list[BgcError] = []
    for path in paths:
        try:
            policy = load_policy(path)
        except BgcError as error:
            errors.append(error)
            findings.append(error_finding(error, path, codes.UNREADABLE_POLICY))
            continue
        policies.append(CheckedPolicy.of(policy))
        found = check_policy(policy)
        findings.extend(found)
        failed_expects.append(sum(finding.rule_id in EXPECT_CODES for finding in found))
    return CheckResult(
        tuple(sorted(set(findings), key=Finding.sort_key)), tuple(policies), tuple(failed_expects), tuple(errors)
    )


def cached_check(path: str) -> CheckResult:
    """:func:`check_paths` for one policy, reusing the result for unchanged files (lints and
    expects are pure functions of the files). Failures are never cached."""
    from bgc.core import cache

    keyed = cache.policy_key(path, "check")
    if keyed is not None:
        entry = cache.load_object("check", keyed[0])
        if entry is not None and all(cache.unchanged(path, keyed[1], policy.files) for policy in entry.policies):
            return entry  # type: ignore[no-any-return]
    result = check_paths([path])
    if keyed is not None and not result.errors:
        cache.store_object("check", keyed[0], result)
    return result


def error_finding(error: BgcError, path: str, default_code: str) -> Finding:
    """A file that could not be loaded as an error finding: the error's own id when it has one
    (a policy's BGC0xx), else ``default_code`` (the caller knows what kind of file it read:
    BGC015 for a policy, BGC099 for a test file, order or recording). Located at the error, or
    at ``path`` when the error is about the whole file."""
    code = getattr(error, "code", default_code)
    return Finding(code, Severity.ERROR, error.message, error.span or Span(path), error.hint)


def check_policy(policy: Policy) -> list[Finding]:
    """Lint findings, then the failing expects, of one loaded policy.

    Lints and the compiler are imported here, not above: a cached ``bgc check`` of unchanged
    files (the pre-commit hook) never needs them, and never pays for importing them."""
    from bgc.analysis.expects import expect_findings
    from bgc.analysis.lints import lint

    return [*lint(policy), *expect_findings(policy)]
