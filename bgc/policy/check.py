"""``bgc check``: load policies, lint them, run their inline expects; produce Findings, print nothing.

:func:`check_paths` is the library entry point every output format shares: the text view here,
json, sarif and github through bgc.render.machine, all from the same Finding list. A policy
that cannot be loaded becomes one error finding with its BGC0xx id and makes the exit code 2;
lints (BGC1xx) and failing expects (BGC2xx) are findings, exit 1; notes never fail a check.

Lints decide containment exactly with bgc.glob (no heuristics); when the algebra hits its bound
the lint says so as a note instead of guessing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bgc.errors import BgcError, ExitCode, InputError, Span, caret_lines
from bgc.findings import Finding, Severity
from bgc.findings import exit_code as findings_exit_code
from bgc.policy.ast import And, Compare, Condition, Expect, InList, Matches, Not, Or, Policy, Rule
from bgc.argv import ARGV_RESOURCES
from bgc.render.words import did_you_mean
from bgc.render.fields import escape_field

if TYPE_CHECKING:
    from bgc.compiler import Compiler, Decision

LINT_CODES: dict[str, str] = {
    "BGC101": "an allow pattern that can never take effect: it lies entirely inside ask/deny rules",
    "BGC102": "an ask pattern that can never take effect: it lies entirely inside deny rules",
    "BGC103": "`deny X/**` without `X` itself: the directory itself stays writable",
    "BGC104": "an allow of `/**` on write: everything becomes writable",
    "BGC105": "a second pattern that looks like an atom (`fs:read:/x` after a `,`)",
    "BGC106": "an allow conditioned on `call.tool`: requests are compiled without a call, so it grants nothing",
    "BGC107": "a pattern that can never match a normalised value (fs: relative, `//`, trailing `/`; "
    "net: not a canonical URL; others: a segment a URL parser reads as `.`/`..`)",
    "BGC109": "a lint could not decide (pattern algebra bound hit); the rule was not checked",
    "BGC110": "a deny or ask on a resource:action that no tool needs and no allow or ask mentions: it never takes effect",
    "BGC111": "an allow whose condition can hold on fields the proposer writes (intent.kind, origin.model)",
    "BGC112": "an allow whose URL host has a wildcard inside a label (`*example.com` also matches `evilexample.com`)",
    "BGC541": "an approver named in `approvals N of [...]` that no `trust approver` binds to a key",
    "BGC201": "an inline expect gave a different effect",
    "BGC202": "an inline expect could not be decided (the compiler reported an error)",
}
"""The finding ids ``bgc check`` reports with exit 1 (documented in docs/policy-language.md)."""


def __getattr__(name: str) -> dict[str, str]:
    """``CODES``: every id ``bgc check`` can report, with its one-line meaning (SARIF rule
    metadata). Computed on first use: it needs the parser module, which a cached ``bgc check``
    otherwise never imports (start-up time of the pre-commit hook)."""
    if name != "CODES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from bgc.policy.parser import ERROR_CODES

    return {**ERROR_CODES, **LINT_CODES}

_ATOM_LIKE = re.compile(r"[a-z][a-z0-9_.-]*:[a-z*][a-z0-9_.-]*:")

NOT_FS_PATHS = ("*", "?*/**", "//**", "**/?*//**", "**/?*/")
"""Patterns that together match exactly the texts no normalised fs path looks like: relative ones
(a first segment that is not empty: ``*``, ``?*/**``), those with an empty segment (``//`` at the
start: ``//**``, or after a segment: ``**/?*//**``) and those ending in ``/`` other than ``/``
itself (``**/?*/``). The gate normalises every fs value to an absolute path without empty
segments or a trailing ``/`` before any rule sees it, so an fs pattern inside these matches
nothing (BGC107). ``.``/``..`` segments are parse errors already."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What ``bgc check`` found: findings (sorted), the policies that loaded, how many of each
    policy's expects failed (parallel to ``policies``: a shared file's expect can hold in one
    including policy and fail in another, so the count is taken per policy as its expects run),
    and the load errors (kept as errors too, so a renderer can show their source line)."""

    findings: tuple[Finding, ...]
    policies: tuple[Policy, ...]
    failed_expects: tuple[int, ...]
    errors: tuple[BgcError, ...]

    @property
    def exit_code(self) -> ExitCode:
        return findings_exit_code(self.findings, self.errors)


def check_paths(paths: Sequence[str]) -> CheckResult:
    """Load each policy (with its includes), lint it and run its expects."""
    from bgc.policy.loader import load_policy

    findings: list[Finding] = []
    policies: list[Policy] = []
    failed_expects: list[int] = []
    errors: list[BgcError] = []
    for path in paths:
        try:
            policy = load_policy(path)
        except BgcError as error:
            errors.append(error)
            findings.append(error_finding(error, path, "BGC015"))
            continue
        policies.append(policy)
        found = check_policy(policy)
        findings.extend(found)
        failed_expects.append(sum(finding.rule_id in EXPECT_CODES for finding in found))
    return CheckResult(
        tuple(sorted(set(findings), key=Finding.sort_key)), tuple(policies), tuple(failed_expects), tuple(errors)
    )


def error_finding(error: BgcError, path: str, default_code: str) -> Finding:
    """A file that could not be loaded as an error finding: the error's own id when it has one
    (a policy's BGC0xx), else ``default_code`` (the caller knows what kind of file it read:
    BGC015 for a policy, BGC099 for a test file, order or recording). Located at the error, or
    at ``path`` when the error is about the whole file."""
    code = getattr(error, "code", default_code)
    return Finding(code, Severity.ERROR, error.message, error.span or Span(path), error.hint)


def check_policy(policy: Policy) -> list[Finding]:
    """Lint findings, then the failing expects, of one loaded policy."""
    return [*lint(policy), *expect_findings(policy)]


# ---- lints --------------------------------------------------------------------------------


def _covers(outer: Rule, inner: Rule) -> bool:
    """Whether ``outer`` applies whenever ``inner`` does (resource, action, mode; no condition)."""
    return (
        outer.when is None
        and outer.resource in ("*", inner.resource)
        and outer.action in ("*", inner.action)
        and outer.mode in (None, inner.mode)
    )


PROPOSER_FIELDS = frozenset({"intent.kind", "origin.model"})
"""Condition fields whose values the proposal itself writes: an agent can pick them to pick its grant.
While requests are compiled these are the only known fields (``call.tool`` is unknown), so an allow
whose condition can hold then (BGC106 flags the others) is one the proposer can switch on."""


def lint(policy: Policy) -> list[Finding]:
    """Every lint over one policy (BGC101-BGC107, BGC109-BGC112)."""
    from bgc import glob, values

    findings: list[Finding] = []
    parsed: dict[str, glob.Pattern] = {}

    def pattern(text: str) -> glob.Pattern:
        if text not in parsed:
            parsed[text] = glob.parse(text)
        return parsed[text]

    def subset(text: str, others: Iterable[str], rule: Rule, index: int) -> bool:
        try:
            return bool(glob.is_subset(pattern(text), [pattern(other) for other in others]))
        except glob.AlgebraLimit:
            findings.append(
                Finding("BGC109", Severity.NOTE, f"could not decide whether `{text}` is covered: "
                        "pattern too complex for the lint's bound", _pattern_span(rule, index))
            )  # fmt: skip
            return False

    for rule in policy.rules:
        if rule.effect != "deny":
            shadows = ("ask", "deny") if rule.effect == "allow" else ("deny",)
            cover = [other for other in policy.rules if other.effect in shadows and _covers(other, rule)]
            for index, text in enumerate(rule.patterns):
                if cover and subset(text, [p for other in cover for p in other.patterns], rule, index):
                    findings.append(_shadowed(rule, index, text, cover, pattern))
        else:
            findings.extend(_directory_itself(policy, rule, subset))
        if rule.resource == "fs":
            for index, text in enumerate(rule.patterns):
                if index and _ATOM_LIKE.match(text):
                    continue  # BGC105 says what went wrong with `, fs:read:/x`
                if subset(text, NOT_FS_PATHS, rule, index):
                    findings.append(
                        Finding("BGC107", Severity.WARNING,
                                f"`{text}` can never match a normalised fs path, so this {rule.effect} has no effect",
                                _pattern_span(rule, index),
                                "fs values are absolute and normalised before they are matched (`//` collapses, "
                                "a trailing `/` drops): write the pattern that way, e.g. `/src/**`")
                    )  # fmt: skip
        if rule.resource != "fs" and rule.resource not in ARGV_RESOURCES:  # argv words may be `.` (bgc.argv)
            for index, text in enumerate(rule.patterns):
                if values.decoded_dot_segment(text) is not None:
                    findings.append(
                        Finding("BGC107", Severity.WARNING,
                                f"`{text}` has a segment a URL parser reads as `.` or `..` (percent-encoded, or "
                                f"cut by `\\`, `?`, `#`, `;`); the gate refuses such values, so this {rule.effect} "
                                "has no effect",
                                _pattern_span(rule, index), "write the path the pattern means, without dot segments")
                    )  # fmt: skip
                elif rule.resource in values.URL_RESOURCES and (problem := values.url_pattern_problem(text)):
                    findings.append(
                        Finding("BGC107", Severity.WARNING,
                                f"`{text}` can never match a {rule.resource} value, so this {rule.effect} has no effect: "
                                f"{problem}",
                                _pattern_span(rule, index), "write URLs as the gate reads them: `bgc match -r net` shows it")
                    )  # fmt: skip
                if rule.effect == "allow" and rule.resource in values.URL_RESOURCES:
                    wide = values.url_host_wildcard_problem(text)
                    if wide:
                        findings.append(
                            Finding("BGC112", Severity.WARNING,
                                    f"{wide}: it matches across label boundaries, so this allow may reach other domains",
                                    _pattern_span(rule, index),
                                    "a `*` in a host stands for whole labels: write `*.example.com`")
                        )  # fmt: skip
        if rule.effect == "allow" and rule.action in ("write", "*"):
            for index, text in enumerate(rule.patterns):
                if subset("/**", [text], rule, index):
                    findings.append(
                        Finding("BGC104", Severity.WARNING,
                                f"`allow {rule.resource}:{rule.action}:{text}` makes every path writable",
                                _pattern_span(rule, index), "allow the directories the agent works in, e.g. /src/**")
                    )  # fmt: skip
        if rule.effect == "allow" and rule.when is not None and not _can_hold_without_a_call(rule.when):
            findings.append(
                Finding("BGC106", Severity.WARNING,
                        "this allow depends on `call.tool`, which is unknown while requests are compiled "
                        "(a grant may serve any call), so it never grants anything",
                        rule.when.span, "condition allows on intent.kind or origin.model; use call.tool in deny/ask")
            )  # fmt: skip
        if rule.effect == "allow" and rule.when is not None and _can_hold_without_a_call(rule.when):
            fields = sorted({leaf.field for leaf in _leaves(rule.when)} & PROPOSER_FIELDS)
            findings.append(
                Finding("BGC111", Severity.WARNING,
                        f"this allow can hold on fields the proposal writes itself ({', '.join(fields)}): an agent can "
                        "choose them to choose its own grant",
                        rule.when.span,
                        "grant through a mode a person chooses (`mode NAME {...}`, `--mode`), or use the condition to "
                        "narrow a deny or ask instead")
            )  # fmt: skip
        for index, text in enumerate(rule.patterns[1:], start=1):
            if _ATOM_LIKE.match(text):
                findings.append(
                    Finding("BGC105", Severity.WARNING,
                            f"`{text}` is read as a pattern of `{rule.resource}:{rule.action}`, not as an atom",
                            _pattern_span(rule, index), "a rule has one resource:action; write a second rule")
                )  # fmt: skip
    findings.extend(_unknown_targets(policy))
    findings.extend(_untrusted_approvers(policy))
    return findings


def _untrusted_approvers(policy: Policy) -> list[Finding]:
    """BGC541: an approver named in ``approvals N of [...]`` that no ``trust approver`` binds to
    a key, in a policy that binds approvers (once one is bound, the list is meant to be whole:
    an unbound name's approval can never be checked, so the rule may never be satisfiable).
    Policies that bind no approver yet are not flagged: they predate signed approvals."""
    trusted = {entry.name for entry in policy.trust if entry.role == "approver"}
    if not trusted:
        return []
    findings = []
    for rule in policy.rules:
        for name in rule.approvals.approvers if rule.approvals else ():
            if name not in trusted:
                findings.append(
                    Finding("BGC541", Severity.WARNING, f"approver `{name}` is not bound to a key by `trust approver`",
                            rule.approvals.span,  # type: ignore[union-attr]
                            did_you_mean(name, sorted(trusted)) or f"add: trust approver {name} ed25519:<public key>")
                )  # fmt: skip
    return findings


def _unknown_targets(policy: Policy) -> list[Finding]:
    """BGC110: a deny or ask whose resource or action nothing else in the policy knows.

    ``deny fs:wrtie:/.git/**`` parses, and protects nothing: no tool needs ``fs:wrtie`` and no
    allow grants it, so no value is ever decided against it. What is known is what the policy
    itself names (tool needs, allows, asks); a typo is told with the nearest known word. A policy
    that names nothing of the kind (a file of denies meant to be included) is not judged.
    """
    from bgc.render.words import did_you_mean

    known = {(need.resource, need.action) for decl in policy.tools for need in decl.needs}
    known |= {(rule.resource, rule.action) for rule in policy.rules if rule.effect != "deny"}
    if not known:
        return []
    resources = {resource for resource, _ in known} - {"*"}
    findings = []
    for rule in policy.rules:
        if rule.effect == "allow" or rule.resource == "*" and rule.action == "*":
            continue
        if any(_names_match(rule.resource, resource) and _names_match(rule.action, action) for resource, action in known):
            continue
        if rule.resource != "*" and rule.resource not in resources and "*" not in {r for r, _ in known}:
            word, hint = rule.resource, did_you_mean(rule.resource, sorted(resources))
            what = "resource"
        else:
            word = rule.action
            actions = sorted({a for r, a in known if _names_match(rule.resource, r)} - {"*"})
            hint, what = did_you_mean(rule.action, actions), "action"
        findings.append(
            Finding("BGC110", Severity.WARNING,
                    f"no tool needs and no allow or ask mentions `{rule.resource}:{rule.action}`, so this {rule.effect} "
                    f"never takes effect (unknown {what} `{word}`)",
                    rule.span, hint or "deny what a tool needs or an allow grants, e.g. `fs:write`")
        )  # fmt: skip
    return findings


def _names_match(pattern: str, name: str) -> bool:
    return pattern == "*" or name == "*" or pattern == name


def _leaves(condition: Condition) -> list[Compare | InList | Matches]:
    """The comparisons a condition is built from."""
    if isinstance(condition, (And, Or)):
        return [leaf for item in condition.items for leaf in _leaves(item)]
    if isinstance(condition, Not):
        return _leaves(condition.item)
    return [condition]


def _can_hold_without_a_call(condition: Condition) -> bool:
    """Can the condition be *true* for some order while ``call.tool`` is unknown (compiling)?

    Exact for bgc's conditions: a comparison only distinguishes the values it names, so trying,
    for each field, every value the condition mentions (a matching example for ``matches``) plus
    one it does not mention covers every case. Only a condition that reads ``call.tool`` can fail
    this, so the search runs just for those.
    """
    from bgc import glob

    leaves = _leaves(condition)
    if all(leaf.field != "call.tool" for leaf in leaves):
        return True
    values: dict[str, set[str]] = {"intent.kind": {"\0other"}, "origin.model": {"\0other"}}
    for leaf in leaves:
        if leaf.field == "call.tool":
            continue
        if isinstance(leaf, Compare):
            values[leaf.field].add(leaf.value)
        elif isinstance(leaf, InList):
            values[leaf.field].update(leaf.values)
        else:
            found = glob.example(leaf.pattern)
            if found is not None:
                values[leaf.field].add(found)
    kinds, models = sorted(values["intent.kind"]), sorted(values["origin.model"])
    return any(
        condition.evaluate({"intent.kind": kind, "origin.model": model}) is True for kind in kinds for model in models
    )


def _pattern_span(rule: Rule, index: int) -> Span:
    return rule.pattern_spans[index] if index < len(rule.pattern_spans) else rule.span


def _shadowed(rule: Rule, index: int, text: str, cover: list[Rule], pattern) -> Finding:  # type: ignore[no-untyped-def]
    from bgc import glob

    single = []
    for other in cover:
        try:
            if glob.is_subset(pattern(text), [pattern(p) for p in other.patterns]):
                single.append(other)
        except glob.AlgebraLimit:
            continue
    culprits = single[:1] or cover
    where = ", ".join(f"{other.effect} at {other.span.file}:{other.span.line}" for other in culprits)
    code = "BGC101" if rule.effect == "allow" else "BGC102"
    never = "granted" if rule.effect == "allow" else "asked for"
    return Finding(
        code,
        Severity.WARNING,
        f"`{text}` can never be {never}: everything it matches is taken by {where}",
        _pattern_span(rule, index),
        "remove the pattern, or narrow the rule that takes it",
    )


def _directory_itself(policy: Policy, rule: Rule, subset) -> list[Finding]:  # type: ignore[no-untyped-def]
    from bgc.policy.format import atom_word, pattern_word  # the hint is written as `bgc fmt` writes rules

    findings = []
    scope = [other for other in policy.rules if other.effect == "deny" and (other.when is None or other.when == rule.when)
             and other.resource in ("*", rule.resource) and other.action in ("*", rule.action)
             and other.mode in (None, rule.mode)]  # fmt: skip
    for index, text in enumerate(rule.patterns):
        if not text.endswith("/**") or text.endswith("\\/**") or "://" in text:
            continue  # a URL's `X/**` covers `X/` already, and `X` itself is no canonical URL
        base = text[:-3]
        if base in ("", "*", "**") or base.endswith("/"):
            continue
        if rule.resource == "fs" and subset(base, NOT_FS_PATHS, rule, index):
            continue  # `X` matches no fs path (and `X/**` none either: BGC107), so suggest nothing
        if subset(base, [p for other in scope for p in other.patterns], rule, index):
            continue
        what = "writable" if rule.action in ("write", "*") else f"open to `{rule.action}`"
        findings.append(
            Finding(
                "BGC103",
                Severity.WARNING,
                f"`{text}` does not match `{base}` itself: the directory itself stays {what}",
                _pattern_span(rule, index),
                f"deny both: {rule.effect} {atom_word(rule.resource, rule.action, base)}, {pattern_word(text)}",
            )
        )
    return findings


# ---- inline expects -----------------------------------------------------------------------


EXPECT_CODES = ("BGC201", "BGC202")
"""The ids of a failed inline expect (every other id ``bgc check`` reports is a lint or a load error)."""


@dataclass(frozen=True, slots=True)
class ExpectResult:
    """One inline expect run against one policy: its failure (BGC201 or BGC202), ``None`` when it
    held, and the rules that decided it as (real path, line), which ``bgc test --coverage``
    counts as exercised. ``bgc check`` and ``bgc test`` both run expects through
    :func:`run_expect`, so a failing expect is the same finding, hint included, in both."""

    expect: Expect
    finding: Finding | None
    exercised: frozenset[tuple[str, int]]


def run_expect(policy: Policy, expect: Expect, compiler: Compiler) -> ExpectResult:
    """Decide ``expect`` against the whole ``policy`` (includes spliced in) with ``compiler``
    (built once per policy by the caller). An error from the compiler (the pattern algebra's
    bound, say) is a BGC202 finding: unknown is not a pass, and one undecidable expect must not
    stop the others."""
    from bgc.compiler import decide, rule_source

    try:
        decision = decide(
            policy, expect.resource, expect.action, expect.value, dict(expect.context), expect.mode, compiler
        )
    except BgcError as error:
        return ExpectResult(expect, _undecided(expect, error, policy), frozenset())
    exercised = frozenset((os.path.realpath(rule_source(policy, ref)), ref.line) for ref in decision.rules)
    finding = None if decision.effect == expect.effect else _missed(expect, decision, policy)
    return ExpectResult(expect, finding, exercised)


def expect_findings(policy: Policy) -> list[Finding]:
    """Run every ``expect`` against the whole policy (includes spliced in); one finding per miss."""
    if not policy.expects:
        return []
    from bgc.compiler import Compiler

    compiler = Compiler(policy)
    results = [run_expect(policy, expect, compiler) for expect in policy.expects]
    return [result.finding for result in results if result.finding is not None]


def _in_policy(expect: Expect, policy: Policy) -> str:
    """`` (in policy P)`` for an expect that came in through an include: the same line of a
    shared base can hold in one including policy and fail in another."""
    return "" if expect.span.file == policy.path else f" (in policy {policy.path})"


def _undecided(expect: Expect, error: BgcError, policy: Policy) -> Finding:
    message = f"could not decide this expect: {error.message}{_in_policy(expect, policy)}"
    return Finding("BGC202", Severity.ERROR, message, expect.span)


def _missed(expect: Expect, decision: Decision, policy: Policy) -> Finding:
    """BGC201, its hint naming the deciding rules by their paths as seen from here (like every
    other finding), not as plans record them (relative to the root policy's directory)."""
    from bgc.compiler import rule_source

    atom = f"{expect.resource}:{expect.action}:{expect.value}"
    if decision.rules:
        where = [f"{ref.effect} at {rule_source(policy, ref)}:{ref.line}" for ref in decision.rules]
        hint = "decided by " + ", ".join(where)
    else:
        hint = "no rule applies, so it is denied (fail closed)"
    return Finding(
        "BGC201",
        Severity.ERROR,
        f"expected {expect.effect} for `{atom}`, got {decision.effect} ({decision.reason}){_in_policy(expect, policy)}",
        expect.span,
        hint,
    )


# ---- output -------------------------------------------------------------------------------


def render_finding(finding: Finding, source: str | None) -> str:
    """``file:line:col: warning[BGC103]: message``, the source line with a caret, the hint;
    escaped, since a message quotes atoms, names and paths that a proposal may have written."""
    span = finding.span
    lines = [f"{span}: {finding.severity.value}[{finding.rule_id}]: {finding.message}"]
    lines += [f"  hint: {finding.hint}"] if finding.hint else []
    lines = [escape_field(line, backslash=False) for line in lines]
    return "\n".join([lines[0], *caret_lines(span, source), *lines[1:]])


def findings_text(result: CheckResult) -> str:
    """People's view: each finding with its source line, then one summary line per policy."""
    from bgc.render.words import count

    cache: dict[str, list[str] | None] = {}
    blocks = [render_finding(finding, _source_line(finding.span, cache)) for finding in result.findings]
    for policy, failing in zip(result.policies, result.failed_expects, strict=True):
        expects = len(policy.expects)
        blocks.append(
            f"{escape_field(policy.path, backslash=False)}: {count(len(policy.rules), 'rule')}, "
            f"{count(len(policy.tools), 'tool')}, {expects - failing}/{count(expects, 'expect')} "
            + ("holds" if expects == 1 else "hold")
        )
    return "\n".join(blocks)


def _source_line(span: Span, cache: dict[str, list[str] | None]) -> str | None:
    """The line a finding points at; ``None`` for a finding about a whole file (one too large
    to read, say) or a file that is gone. Reading is bounded like every policy read."""
    from bgc.files import read_bounded

    if not span.line:
        return None
    if span.file not in cache:
        try:
            text: str | None = read_bounded(span.file).decode("utf-8", errors="replace")
        except InputError:
            text = None
        cache[span.file] = text.removeprefix("\ufeff").split("\n") if text is not None else None
    lines = cache[span.file]
    return lines[span.line - 1].rstrip("\r") if lines and 0 < span.line <= len(lines) else None
