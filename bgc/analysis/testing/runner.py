"""Running policy tests: each test file's cases compiled and compared with what they expect,
and the policies' inline expects, each a case; coverage counts the rules that decided."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bgc import codes
from dataclasses import dataclass, field
from bgc.errors import UsageError
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.testing.results import CaseResult, PolicyTestRun, RuleSite
from bgc.analysis.testing.schema import TestCase, order_of, read_test_file

if TYPE_CHECKING:
    from bgc.core.compiler import Compiler
    from bgc.analysis.config import Config
    from bgc.core.values.documents import Document
    from bgc.core.plan import Plan, RuleRef
    from bgc.core.policy.ast import Expect, Policy


@dataclass
class _Policies:
    """Policies loaded once per run (by real path), each with its compiler."""

    loaded: dict[str, tuple[Policy, Compiler]] = field(default_factory=dict)

    def get(self, path: str) -> tuple[Policy, Compiler]:
        key = _real(path)
        if key not in self.loaded:
            from bgc.core.compiler import Compiler
            from bgc.core.policy.loader import cached_policy

            policy = cached_policy(path)
            self.loaded[key] = (policy, Compiler(policy))
        return self.loaded[key]


def run_tests(
    test_files: Sequence[str | Path],
    policy_files: Sequence[str | Path] = (),
    *,
    config: Config | None = None,
    select: Callable[[str], bool] = lambda name: True,
    expects: bool = True,
) -> PolicyTestRun:
    """Run every test in ``test_files`` and the inline expects of every policy involved
    (``policy_files`` plus those the tests use); ``expects=False`` when the caller checks the
    policies itself (``bgc check``). Raises :class:`BgcError` on bad input.

    Files are named as they are opened, in ids, headers and findings alike (the commands open
    them by their repository-relative paths: :func:`bgc.analysis.config.at_root`)."""
    policies = _Policies()
    cases: list[CaseResult] = []
    involved: list[str] = [str(path) for path in policy_files]
    for test_file in test_files:
        cases.extend(_run_file(str(test_file), policies, config, select, involved))
    unique: dict[str, str] = {}  # each policy once, by its real path, named as first given
    for path in involved:
        unique.setdefault(_real(path), path)
    loaded = [policies.get(path) for path in unique.values()]
    if expects:
        cases.extend(_run_expects(loaded, select))
    rules: dict[tuple[str, int], RuleSite] = {}
    for policy, _ in loaded:
        for rule in policy.rules:
            real = _real(rule.span.file)
            rules.setdefault((real, rule.span.line), RuleSite(rule.span.file, rule.span.line, _rule_text(rule), real))
    return PolicyTestRun(tuple(cases), tuple(sorted(rules.values(), key=lambda r: (r.file, r.line))))


def _run_file(
    path: str,
    policies: _Policies,
    config: Config | None,
    select: Callable[[str], bool],
    used: list[str],
) -> list[CaseResult]:
    test_file = read_test_file(path, config)
    document = test_file.document
    used.append(test_file.policy)
    results = []
    for case in test_file.cases:
        if not select(f"{path}::{case.name}"):
            continue
        started = time.perf_counter()
        policy, compiler = policies.get(test_file.policy)
        try:
            plan = compiler.compile(order_of(case), case.mode)
        except UsageError as error:  # an unknown mode: the test file is wrong, point at it
            raise document.error_at(case.mode_at, error.message) from None
        findings = [
            *_check_verdicts(document, case, plan),
            *_check_calls(document, case, plan),
            *_check_excerpt(document, case, plan),
        ]
        results.append(
            CaseResult(
                path,
                case.name,
                document.span(case.at),
                time.perf_counter() - started,
                tuple(findings),
                _plan_rules(plan, policy),
            )
        )
    return results


def _run_expects(loaded: Sequence[tuple[Policy, Compiler]], select: Callable[[str], bool]) -> list[CaseResult]:
    """Each selected inline expect line as one case, run by ``bgc check``'s own
    :func:`~bgc.analysis.expects.run_expect`, so both commands report the same finding.

    A shared base's expect is run in every policy of this run that includes it (the base can
    hold under one policy and fail under another) but is one case, reported once: it fails
    when it fails in any of them, with one finding per policy it failed in."""
    from bgc.analysis.expects import run_expect

    by_line: dict[tuple[str, int, int], list[tuple[Policy, Compiler, Expect]]] = {}
    for policy, compiler in loaded:
        for expect in policy.expects:
            key = (_real(expect.span.file), expect.span.line, expect.span.col)
            by_line.setdefault(key, []).append((policy, compiler, expect))
    results = []
    for runs in by_line.values():
        expect = runs[0][2]
        name = f"line {expect.span.line}: expect {expect.effect} {expect.resource}:{expect.action}:{expect.value}"
        if not select(f"{expect.span.file}::{name}"):
            continue
        started = time.perf_counter()
        ran = [run_expect(policy, each, compiler) for policy, compiler, each in runs]
        findings = tuple(result.finding for result in ran if result.finding is not None)
        seconds = time.perf_counter() - started
        exercised = frozenset().union(*(result.exercised for result in ran))
        results.append(CaseResult(expect.span.file, name, expect.span, seconds, findings, exercised))
    return results


def _check_verdicts(document: Document, case: TestCase, plan: Plan) -> list[Finding]:
    by_atom = {request.atom: request for request in plan.requests}
    findings = []
    for expected in case.verdicts or ():
        request = by_atom.get(expected.atom)
        if request is None:
            message = f"{expected.atom}: the order does not request it (it requests: {', '.join(by_atom) or 'nothing'})"
        elif request.verdict != expected.verdict:
            message = f"{expected.atom}: expected {expected.verdict}, got {request.verdict}" + _parts_summary(request)
        else:
            continue
        findings.append(Finding(codes.TEST_VERDICT, Severity.ERROR, message, document.span(expected.at)))
    return findings


def _parts_summary(request: Any) -> str:
    pieces = [f"{kind} {', '.join(str(part) for part in parts)}" for kind, parts in
              (("granted", request.granted), ("ask", request.ask), ("denied", request.denied)) if parts]
    return f" ({'; '.join(pieces)})" if pieces else ""


def _check_calls(document: Document, case: TestCase, plan: Plan) -> list[Finding]:
    if case.calls is None:
        return []
    if len(case.calls) != len(plan.calls):
        message = f"expected {len(case.calls)} call statuses, the order has {len(plan.calls)} calls"
        return [Finding(codes.TEST_CALLS, Severity.ERROR, message, document.span((*case.at, "calls")))]
    findings = []
    for index, (status, call) in enumerate(zip(case.calls, plan.calls)):
        if status != call.status:
            message = f"call {index + 1} ({call.tool}): expected {status}, got {call.status} ({call.reason})"
            findings.append(Finding(codes.TEST_CALLS, Severity.ERROR, message, document.span((*case.at, "calls", index))))
    return findings


def _check_excerpt(document: Document, case: TestCase, plan: Plan) -> list[Finding]:
    if case.plan is None:
        return []
    from bgc.core.values.canonical import format_path

    findings = []
    for path, message in mismatches(case.plan, plan.to_data()):
        at = (*case.at, "plan", *path)
        findings.append(Finding(codes.TEST_PLAN, Severity.ERROR, f"plan.{format_path(path)}: {message}", document.span(at)))
    return findings


def mismatches(expected: Any, actual: Any, path: tuple[str | int, ...] = ()) -> Iterable[tuple[tuple[str | int, ...], str]]:
    """Where ``actual`` fails to match the excerpt ``expected`` (jest ``toMatchObject`` rules)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            yield path, f"expected a map, got {actual!r}"
            return
        for key, value in expected.items():
            if key not in actual:
                yield (*path, key), f"the plan has no field {key!r} here (it has: {', '.join(sorted(actual))})"
            else:
                yield from mismatches(value, actual[key], (*path, key))
    elif isinstance(expected, list):
        if not isinstance(actual, list):
            yield path, f"expected a list, got {actual!r}"
        elif len(expected) != len(actual):
            yield path, f"expected {len(expected)} items, got {len(actual)}: {_brief(actual)}"
        else:
            for index, (item, got) in enumerate(zip(expected, actual)):
                yield from mismatches(item, got, (*path, index))
    elif expected != actual or type(expected) is not type(actual):
        yield path, f"expected {expected!r}, got {actual!r}"


def _brief(items: list[Any]) -> str:
    shown = [item.get("atom", item) if isinstance(item, dict) else item for item in items]
    return repr(shown)


def _plan_rules(plan: Plan, policy: Policy) -> frozenset[tuple[str, int]]:
    from bgc.core.compiler import rule_source

    refs: list[RuleRef] = [rule for request in plan.requests for rule in request.rules]
    return frozenset((_real(rule_source(policy, rule)), rule.line) for rule in refs)


def _rule_text(rule: Any) -> str:
    return f"{rule.keyword} {rule.resource}:{rule.action}:{', '.join(rule.patterns)}"


def _real(path: str) -> str:
    return os.path.realpath(path)
