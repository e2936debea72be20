"""Findings for people: ``file:line:col: warning[BGC103]: message``, the source line with a
caret under the place, and the hint — the one text form every finding-producing command prints
(``check``, ``test``), like the located errors of :mod:`bgc.errors`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bgc.errors import InputError, Span, caret_lines
from bgc.findings import Finding
from bgc.render.fields import escape_field

if TYPE_CHECKING:
    from bgc.checks import CheckResult


def render_finding(finding: Finding, source: str | None) -> str:
    """``file:line:col: warning[BGC103]: message``, the source line with a caret, the hint;
    escaped, since a message quotes atoms, names and paths that a proposal may have written."""
    span = finding.span
    lines = [f"{span}: {finding.severity.value}[{finding.rule_id}]: {finding.message}"]
    lines += [f"  hint: {finding.hint}"] if finding.hint else []
    lines = [escape_field(line, backslash=False) for line in lines]
    return "\n".join([lines[0], *caret_lines(span, source), *lines[1:]])


def findings_text(result: CheckResult) -> str:
    """People's view of checked policies: each finding with its source line, then one summary
    line per policy."""
    from bgc.render.words import count

    cache: dict[str, list[str] | None] = {}
    blocks = [render_finding(finding, source_line(finding.span, cache)) for finding in result.findings]
    for policy, failing in zip(result.policies, result.failed_expects, strict=True):
        expects = len(policy.expects)
        blocks.append(
            f"{escape_field(policy.path, backslash=False)}: {count(len(policy.rules), 'rule')}, "
            f"{count(len(policy.tools), 'tool')}, {expects - failing}/{count(expects, 'expect')} "
            + ("holds" if expects == 1 else "hold")
        )
    return "\n".join(blocks)


def source_line(span: Span, cache: dict[str, list[str] | None]) -> str | None:
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
