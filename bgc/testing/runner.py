"""Running policy tests: each test file's cases compiled and compared with what they expect,
and the policies' inline expects, each a case; coverage counts the rules that decided."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bgc import codes
from bgc.errors import UsageError
from bgc.findings import Finding, Severity
from bgc.testing.results import CaseResult, PolicyTestRun, RuleSite
from bgc.testing.schema import CASE_KEYS, FILE_KEYS, only, optional_text, read_order, read_policy_path

if TYPE_CHECKING:
    from bgc.compiler import Compiler
    from bgc.config import Config
    from bgc.documents import Document
    from bgc.plan import Plan, RuleRef
    from bgc.policy.ast import Expect, Policy


@dataclass
class _Policies:
    """Policies loaded once per run (by real path), each with its compiler."""

    loaded: dict[str, tuple[Policy, Compiler]] = field(default_factory=dict)

    def get(self, path: str) -> tuple[Policy, Compiler]:
        key = _real(path)
        if key not in self.loaded:
            from bgc.compiler import Compiler
            from bgc.policy.loader import cached_policy

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
    them by their repository-relative paths: :func:`bgc.config.at_root`)."""
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
    from bgc.documents import read_document

    document = read_document(path)
    data = document.data
    if not isinstance(data, dict):
        raise document.error_at((), "a test file is a map with `tests` (and optionally `policy`, `mode`)")
    only(document, (), data, FILE_KEYS)
    policy_path = read_policy_path(document, data, config)
    used.append(policy_path)
    file_mode = optional_text(document, ("mode",), data.get("mode"))
    tests = data.get("tests")
    if not isinstance(tests, list) or not tests:
        raise document.error_at(("tests",), "expected a non-empty list of tests")
    results = []
    names: dict[str, int] = {}
    for index, case in enumerate(tests):
        where: tuple[str | int, ...] = ("tests", index)
        if not isinstance(case, dict):
            raise document.error_at(where, "a test is a map with `order` and at least one of `verdicts`, `calls`, `plan`")
        only(document, where, case, CASE_KEYS)
        name = optional_text(document, (*where, "name"), case.get("name")) or f"test {index + 1}"
        if name in names:
            raise document.error_at((*where, "name"), f"the name {name!r} is already used by test {names[name] + 1}")
        names[name] = index
        if not any(key in case for key in ("verdicts", "calls", "plan")):
            raise document.error_at(where, "a test needs at least one of `verdicts`, `calls`, `plan`")
        if not select(f"{path}::{name}"):
            continue
        started = time.perf_counter()
        policy, compiler = policies.get(policy_path)
        order = read_order(document, (*where, "order"), case.get("order"), path)
        mode = optional_text(document, (*where, "mode"), case.get("mode")) or file_mode
        try:
            plan = compiler.compile(order, mode)
        except UsageError as error:  # an unknown mode: the test file is wrong, point at it
            mode_at = (*where, "mode") if "mode" in case else ("mode",)
            raise document.error_at(mode_at, error.message) from None
        findings = [
            *_check_verdicts(document, where, case, plan),
            *_check_calls(document, where, case, plan),
            *_check_excerpt(document, where, case, plan),
        ]
        results.append(
            CaseResult(
                path,
                name,
                document.span(where),
                time.perf_counter() - started,
                tuple(findings),
                _plan_rules(plan, policy),
            )
        )
    return results


def _run_expects(loaded: Sequence[tuple[Policy, Compiler]], select: Callable[[str], bool]) -> list[CaseResult]:
    """Each selected inline expect line as one case, run by ``bgc check``'s own
    :func:`~bgc.expects.run_expect`, so both commands report the same finding.

    A shared base's expect is run in every policy of this run that includes it (the base can
    hold under one policy and fail under another) but is one case, reported once: it fails
    when it fails in any of them, with one finding per policy it failed in."""
    from bgc.expects import run_expect

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


def _check_verdicts(document: Document, where: tuple[str | int, ...], case: dict[str, Any], plan: Plan) -> list[Finding]:
    from bgc.model import GrantAtom, ModelError
    from bgc.plan import VERDICTS

    expected = case.get("verdicts")
    if expected is None:
        return []
    if not isinstance(expected, dict) or not expected:
        raise document.error_at((*where, "verdicts"), "expected a map of requested atom → verdict")
    by_atom = {request.atom: request for request in plan.requests}
    findings = []
    for text, verdict in expected.items():
        at = (*where, "verdicts", text)
        if verdict not in VERDICTS:
            raise document.error_at(at, f"unknown verdict {verdict!r} (expected one of: {', '.join(VERDICTS)})")
        try:
            atom = str(GrantAtom.parse(text))
        except ModelError as error:
            raise document.error_at(at, error.message) from None
        request = by_atom.get(atom)
        if request is None:
            message = f"{atom}: the order does not request it (it requests: {', '.join(by_atom) or 'nothing'})"
        elif request.verdict != verdict:
            message = f"{atom}: expected {verdict}, got {request.verdict}" + _parts_summary(request)
        else:
            continue
        findings.append(Finding(codes.TEST_VERDICT, Severity.ERROR, message, document.span(at)))
    return findings


def _parts_summary(request: Any) -> str:
    pieces = [f"{kind} {', '.join(str(part) for part in parts)}" for kind, parts in
              (("granted", request.granted), ("ask", request.ask), ("denied", request.denied)) if parts]
    return f" ({'; '.join(pieces)})" if pieces else ""


def _check_calls(document: Document, where: tuple[str | int, ...], case: dict[str, Any], plan: Plan) -> list[Finding]:
    expected = case.get("calls")
    if expected is None:
        return []
    statuses = ("covered", "pending", "uncovered")
    if not isinstance(expected, list) or not all(item in statuses for item in expected):
        raise document.error_at((*where, "calls"), f"expected a list with one of {', '.join(statuses)} per call")
    if len(expected) != len(plan.calls):
        message = f"expected {len(expected)} call statuses, the order has {len(plan.calls)} calls"
        return [Finding(codes.TEST_CALLS, Severity.ERROR, message, document.span((*where, "calls")))]
    findings = []
    for index, (status, call) in enumerate(zip(expected, plan.calls)):
        if status != call.status:
            message = f"call {index + 1} ({call.tool}): expected {status}, got {call.status} ({call.reason})"
            findings.append(Finding(codes.TEST_CALLS, Severity.ERROR, message, document.span((*where, "calls", index))))
    return findings


def _check_excerpt(document: Document, where: tuple[str | int, ...], case: dict[str, Any], plan: Plan) -> list[Finding]:
    expected = case.get("plan")
    if expected is None:
        return []
    if not isinstance(expected, dict):
        raise document.error_at((*where, "plan"), "expected a map: an excerpt of the plan data")
    from bgc.canonical import format_path

    findings = []
    for path, message in mismatches(expected, plan.to_data()):
        at = (*where, "plan", *path)
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
    from bgc.compiler import rule_source

    refs: list[RuleRef] = [rule for request in plan.requests for rule in request.rules]
    return frozenset((_real(rule_source(policy, rule)), rule.line) for rule in refs)


def _rule_text(rule: Any) -> str:
    return f"{rule.effect} {rule.resource}:{rule.action}:{', '.join(rule.patterns)}"


def _real(path: str) -> str:
    return os.path.realpath(path)
