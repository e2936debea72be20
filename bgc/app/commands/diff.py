"""``bgc diff OLD NEW``: what NEW allows that OLD did not, exactly, with counterexamples.

OLD and NEW are policy files or ``git:REV:path`` (read from git history, includes from the same
revision). ``--against REV`` compares each given policy (by default every configured one) with
its own version at REV: the pre-commit hook (``HEAD``), ``bgc check --baseline`` and CI (the merge
base) use it. The exit code says whether NEW grants anything new (1) or not (0); ``--fail-on
removed`` fails on removals too, ``--equivalent`` on any difference in effect; bad input is 2.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bgc import codes
from dataclasses import dataclass
from bgc.app.commands.io import Result
from bgc.errors import BgcError, ExitCode, Span, UsageError
from bgc.analysis.findings import Finding, Severity

if TYPE_CHECKING:
    from bgc.analysis.diff import Change, PolicyDiff, ToolChange
    from bgc.core.policy.ast import Policy

FAIL_ON = ("new", "removed", "never")


@dataclass(frozen=True, slots=True)
class Comparison:
    """One OLD → NEW pair: their labels as given, and the diff (None: OLD is not in the baseline)."""

    old: str
    new: str
    diff: PolicyDiff | None

    @property
    def grants_new(self) -> bool:
        return self.diff is not None and self.diff.grants_new

    @property
    def removes(self) -> bool:
        return self.diff is not None and self.diff.removes


def load(spec: str, *, missing_ok: bool = False) -> Policy | None:
    """A policy file, or ``git:REV:path`` from history (None when missing there and ``missing_ok``)."""
    from bgc.core.policy.history import is_revision_path, load_revision
    from bgc.core.policy.loader import load_policy

    if is_revision_path(spec):
        return load_revision(spec, missing_ok=missing_ok)
    return load_policy(spec)


def compare(old_spec: str, new_spec: str, mode: str | None = None, *, missing_ok: bool = False) -> Comparison:
    from bgc.analysis.diff import diff_policies

    new = load(new_spec)
    old = load(old_spec, missing_ok=missing_ok)
    assert new is not None
    return Comparison(old_spec, new_spec, None if old is None else diff_policies(old, new, mode))


def against(revision: str, policies: Sequence[str], mode: str | None = None) -> list[Comparison]:
    """Each policy file compared with its version at ``revision`` (a policy new since then is
    reported (codes.NO_BASELINE) and compared with nothing)."""
    from bgc.core.policy.history import PREFIX

    if not policies:
        raise UsageError("no policies to compare: pass them, or configure `policy`/`policies` in [tool.bgc]")
    comparisons = []
    for path in policies:
        local = os.path.relpath(path).replace(os.sep, "/")
        old = f"{PREFIX}{revision}:" + (local if local.startswith("../") else "./" + local)
        comparisons.append(compare(old, path, mode, missing_ok=True))
    return comparisons


def configured_policies() -> list[str]:
    """The configured policies (``policy`` and the ``policies`` globs), as local paths."""
    from bgc.analysis.config import find_config, local_path

    config = find_config(".")
    if config is None:
        return []
    return [local_path(path) for path in config.policy_files()]


def exit_code(comparisons: Sequence[Comparison], fail_on: str, equivalent: bool) -> ExitCode:
    if equivalent:
        same = all(c.diff is not None and c.diff.equivalent for c in comparisons)
        return ExitCode.OK if same else ExitCode.FINDINGS
    if fail_on == "never":
        return ExitCode.OK
    fails = any(c.grants_new or (fail_on == "removed" and c.removes) for c in comparisons)
    return ExitCode.FINDINGS if fails else ExitCode.OK


def run(
    policies: Sequence[str],
    *,
    against_revision: str | None = None,
    mode: str | None = None,
    output_format: str = "text",
    fail_on: str = "new",
    equivalent: bool = False,
    output: str | None = None,
    quiet: bool = False,
    color_choice: str = "auto",
) -> Result:
    """Compare and render (``quiet``: the text keeps only the differences); bad input raises
    (exit 2) before anything is written or printed."""
    from bgc.app.render.color import use_color

    if fail_on not in FAIL_ON:
        raise UsageError(f"--fail-on {fail_on!r}: expected one of {', '.join(FAIL_ON)}")
    if against_revision is not None:
        comparisons = against(against_revision, list(policies) or configured_policies(), mode)
    elif len(policies) == 2:
        comparisons = [compare(policies[0], policies[1], mode)]
    else:
        raise UsageError(f"expected OLD and NEW (two policies), got {len(policies)}; or --against REV [POLICY...]")
    strict = equivalent or fail_on == "removed"
    if output_format == "text":
        data = render_text(comparisons, quiet=quiet, color=output is None and use_color(color_choice, sys.stdout))
    elif output_format == "json":
        data = render_json(comparisons)
    elif output_format in ("sarif", "github"):
        from bgc.analysis.config import repository_root
        from bgc.app.render.machine import render

        findings = [f for c in comparisons for f in findings_of(c, strict)]
        data = render(findings, output_format, root=repository_root())
    else:
        raise UsageError(f"unknown --format {output_format!r} (expected text, json, sarif or github)")
    code = exit_code(comparisons, fail_on, equivalent)
    encoded = data.encode("utf-8")
    return Result(code, files=((output, encoded),)) if output is not None else Result(code, encoded)


# ---- rendering ---------------------------------------------------------------------------------


def _rule(ref: Any) -> str:
    reason = f" “{ref.reason}”" if ref.reason else ""
    return f"{ref.keyword} {ref.file}:{ref.line}{reason}"


def _rules(refs: Sequence[Any]) -> str:
    return "; ".join(_rule(ref) for ref in refs) if refs else "no rule (default deny)"


_REFUSED = "refused as a value (filesystem case-insensitive: Windows or HFS+ read it as another name)"


def _transition(change: Change) -> str:
    if change.approvals is None:
        return f"{change.before} → {change.after}"
    return f"ask → ask, approvals {change.approvals[0]} → {change.approvals[1]}"


def _term(change: Change) -> str:
    excepts = f" except {', '.join(change.excepts)}" if change.excepts else ""
    return f"{change.atom}{excepts}"


def _where(change: Change) -> str:
    parts = []
    if change.modes:
        parts.append("in " + ", ".join(change.modes))
    if change.conditions:
        parts.append("when " + " or ".join(change.conditions))
    if change.any_resource or change.any_action:
        names = [w for w, flag in (("resource", change.any_resource), ("action", change.any_action)) if flag]
        parts.append(f"for any {' and '.join(names)} the policies do not name")
    return " · ".join(parts)


def change_lines(change: Change) -> list[str]:
    """A change for people: the term and transition, then the counterexample, rules and scope."""
    from bgc.text import escape_field

    def esc(text: str) -> str:
        return escape_field(text, backslash=False)

    if change.undecided:
        return [f"  ? undecided ({change.kind})  {esc(_term(change))}", f"      {esc(change.undecided)}"]
    sign = "+" if change.kind == "new" else "-"
    lines = [f"  {sign} {esc(_term(change))}  {_transition(change)}"]
    lines.append(f"      e.g. {esc(change.example_atom or '')}")
    for side, refs in (("old", change.old_rules), ("new", change.new_rules)):
        said = _REFUSED if side in change.refused else _rules(refs)
        lines.append(f"      {side}: {esc(said)}")
    where = _where(change)
    if where:
        lines.append(f"      {esc(where)}")
    if change.calls:
        lines.append(f"      calls: {esc(', '.join(change.calls))}")
    return lines


def _tool_line(tool: ToolChange) -> str:
    from bgc.text import escape_field

    sign = "+" if tool.kind == "new" else "-"
    needs = tool.new_needs if tool.new_needs is not None else tool.old_needs
    needed = ", ".join(needs or ()) or "nothing"
    return escape_field(f"  {sign} tool {tool.tool}: {tool.reason} (needs {needed})", backslash=False)


def render_text(comparisons: Sequence[Comparison], quiet: bool = False, color: bool = False) -> str:
    """People's report: per pair, its label, each difference under its title and a summary line.
    ``quiet``: only the pairs that differ, each label followed by its differences."""
    from bgc.text import escape_field
    from bgc.text import count

    out: list[str] = []
    for comparison in comparisons:
        diff = comparison.diff
        if quiet and (diff is None or diff.equivalent):
            continue
        out.append(escape_field(f"{comparison.old} → {comparison.new}", backslash=False))
        if diff is None:
            out.append("  not in the baseline revision: a new policy, nothing to compare it with")
            continue
        if diff.equivalent:
            out.append("  no difference in effect")
            continue
        for kind, title in (("new", "new access"), ("removed", "removed access")):
            changes, tools = diff.of_kind(kind), diff.tool_changes(kind)
            if (changes or tools) and not quiet:
                out.append(f"  {title}")
            for change in changes:
                out.extend(change_lines(change))
            out.extend(_tool_line(tool) for tool in tools)
        new_n = len(diff.of_kind("new")) + len(diff.tool_changes("new"))
        removed_n = len(diff.of_kind("removed")) + len(diff.tool_changes("removed"))
        if not quiet:
            out.append(f"  summary: {count(new_n, 'new access change')}, {count(removed_n, 'removal')}")
    text = "".join(line + "\n" for line in out)
    if color:
        from bgc.app.render.color import paint

        text = text.replace("\n  + ", f"\n  {paint('+', 'red')} ").replace("\n  - ", f"\n  {paint('-', 'green')} ")
    return text


def render_json(comparisons: Sequence[Comparison]) -> str:
    import json

    document = {
        "version": 1,
        "comparisons": [
            {
                "old": c.old,
                "new": c.new,
                "in_baseline": c.diff is not None,
                "equivalent": c.diff is not None and c.diff.equivalent,
                "grants_new": c.grants_new,
                "removes": c.removes,
                "scenarios": list(c.diff.scenarios) if c.diff else [],
                "changes": [change.to_data() for change in c.diff.changes] if c.diff else [],
                "tools": [tool.to_data() for tool in c.diff.tools] if c.diff else [],
            }
            for c in comparisons
        ],
    }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def findings_of(comparison: Comparison, strict: bool = False) -> list[Finding]:
    """Findings located at the NEW rules responsible (the NEW policy file when none is).

    New access and undecided differences are errors; removals are notes unless ``strict``
    (``--fail-on removed``, ``--equivalent``) makes them errors.
    """
    whole = Span(comparison.new)
    diff = comparison.diff
    if diff is None:
        message = f"{comparison.new} is not in {comparison.old}: nothing to compare"
        return [Finding(codes.NO_BASELINE, Severity.NOTE, message, whole)]
    removed = Severity.ERROR if strict else Severity.NOTE
    findings = []
    for change in diff.changes:
        span = change.new_spans[0] if change.new_spans else whole
        if change.undecided:
            message = f"undecided difference in {_term(change)}: {change.undecided}"
            findings.append(
                Finding(codes.DIFF_UNDECIDED, Severity.ERROR if change.kind == "new" else removed, message, span)
            )
            continue
        was = _REFUSED if "old" in change.refused else _rules(change.old_rules)
        where = _where(change)
        message = (
            f"{'new' if change.kind == 'new' else 'removed'} access: {_term(change)} ({_transition(change)}), "
            f"e.g. {change.example_atom}; was {was}" + (f"; {where}" if where else "")
        )
        findings.append(
            Finding(
                codes.NEW_ACCESS if change.kind == "new" else codes.REMOVED_ACCESS,
                Severity.ERROR if change.kind == "new" else removed,
                message,
                span,
            )
        )
    for tool in diff.tools:
        message = f"tool {tool.tool}: {tool.reason}"
        span = tool.span if tool.new_needs is not None else whole
        severity = Severity.ERROR if tool.kind == "new" else removed
        findings.append(
            Finding(codes.TOOL_NEEDS_LESS if tool.kind == "new" else codes.TOOL_NEEDS_MORE, severity, message, span)
        )  # type: ignore[arg-type]
    return findings


def check_section(revision: str, policies: Sequence[str], findings: list[Finding], errors: list[BgcError]) -> str:
    """``bgc check --baseline REV``: diff each policy against REV, adding findings; the text part.

    New access is an error (the check fails), removals are notes.
    """
    try:
        comparisons = against(revision, policies)
    except BgcError as error:
        errors.append(error)
        return error.render()
    for comparison in comparisons:
        findings.extend(findings_of(comparison))
    return f"baseline {revision}\n" + render_text(comparisons).rstrip("\n")
