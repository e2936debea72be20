"""Findings for people: ``file:line:col: warning[BGC103]: message``, the source line with a
caret under the place, and the hint — the one text form every finding-producing command prints
(``check``, ``test``), like the located errors of :mod:`bgc.errors`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from bgc.errors import InputError, Span, caret_lines
from bgc.analysis.findings import Finding
from bgc.text import escape_field

if TYPE_CHECKING:
    from bgc.analysis.checks import CheckResult


SEVERITY_STYLES = {"error": "red", "warning": "yellow", "note": "cyan"}
"""How ``--color`` paints a finding's ``severity[code]``, as compilers and linters do."""


def finding_line(finding: Finding, color: bool = False) -> str:
    """``file:line:col: warning[BGC103]: message``, escaped, since a message quotes atoms,
    names and paths that a proposal may have written; with ``color``, the place bold and the
    severity in its colour (:func:`bgc.app.render.color.paint`, after escaping)."""
    place = escape_field(f"{finding.span}:", backslash=False)
    label = escape_field(f"{finding.severity.value}[{finding.rule_id}]", backslash=False)
    message = escape_field(f": {finding.message}", backslash=False)
    if not color:
        return f"{place} {label}{message}"
    from bgc.app.render.color import paint

    return f"{paint(place, 'bold')} {paint(label, SEVERITY_STYLES[finding.severity.value])}{message}"


def render_finding(finding: Finding, source: str | None, color: bool = False) -> str:
    """:func:`finding_line`, the source line with a caret under the place, and the hint."""
    hint = [escape_field(f"  hint: {finding.hint}", backslash=False)] if finding.hint else []
    return "\n".join([finding_line(finding, color), *caret_lines(finding.span, source), *hint])


def findings_only(findings: Iterable[Finding], color: bool = False) -> str:
    """What ``--quiet`` prints of a ``check`` or ``test``: each finding as :func:`render_finding`
    shows it, and nothing else (no per-file counts, no closing verdict); empty when clean."""
    cache: dict[str, list[str] | None] = {}
    return "".join(render_finding(finding, source_line(finding.span, cache), color) + "\n" for finding in findings)


def findings_text(result: CheckResult, color: bool = False) -> str:
    """People's view of checked policies: each finding with its source line, then one summary
    line per policy."""
    from bgc.text import count

    cache: dict[str, list[str] | None] = {}
    blocks = [render_finding(finding, source_line(finding.span, cache), color) for finding in result.findings]
    for policy, failing in zip(result.policies, result.failed_expects, strict=True):
        blocks.append(
            f"{escape_field(policy.path, backslash=False)}: {count(policy.rules, 'rule')}, "
            f"{count(policy.tools, 'tool')}, {policy.expects - failing}/{count(policy.expects, 'expect')} "
            + ("holds" if policy.expects == 1 else "hold")
        )
    return "\n".join(blocks)


def source_line(span: Span, cache: dict[str, list[str] | None]) -> str | None:
    """The line a finding points at; ``None`` for a finding about a whole file (one too large
    to read, say) or a file that is gone. Reading is bounded like every policy read."""
    from bgc.core.values.files import read_bounded

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
