"""BGC120: ``# bgc: ignore[BGC101]`` — a lint suppressed on one line, and suppressions that do nothing.

A lint is a judgement, and an author may know better on one line (a deliberate shadowed allow
kept for documentation, a relative pattern on purpose). Ruff's ``# noqa: CODE`` is the model:
the directive sits in a comment at the end of the line it silences, names the codes it silences
(``# bgc: ignore[BGC101, BGC103]``), and silences nothing else. Three things make a suppression
itself a finding, as ruff's RUF100 does, so that suppressions cannot rot into a blanket:

* one that names no code (``# bgc: ignore``): a bare directive would hide every lint the line
  ever gets, including the ones nobody has seen yet;
* a code that is not a lint (an expect that fails, a policy that does not load: those are facts
  about the policy, never opinions) or is no code at all;
* a code with no such finding on its line (the rule was fixed, or the comment sits on the line
  above the rule).

A suppression that names ``BGC120`` silences these findings about its own line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from bgc import codes
from dataclasses import dataclass
from bgc.errors import Span
from bgc.analysis.findings import Finding, Severity
from bgc.core.policy.ast import Comment

DIRECTIVE = re.compile(r"#\s*bgc:\s*ignore(?![\w-])(?:\[(?P<codes>[^\]]*)\])?")
"""``# bgc: ignore[CODE, ...]`` anywhere in a comment (after other text too: ``# why  # bgc: ignore[...]``)."""
_CODE = re.compile(r"BGC\d{3}")


@dataclass(frozen=True, slots=True)
class Directive:
    """One ``# bgc: ignore[...]`` as written: where, and the codes it names (as written)."""

    span: Span
    names: tuple[str, ...]
    bare: bool


def directives(comments: Iterable[Comment]) -> dict[tuple[str, int], Directive]:
    """Every directive by the (file, line) it silences; the first one of a line counts."""
    found: dict[tuple[str, int], Directive] = {}
    for comment in comments:
        match = DIRECTIVE.search(comment.text)
        if match is None:
            continue
        start = comment.span.col + match.start()
        span = Span(comment.span.file, comment.span.line, start, comment.span.line, start + len(match.group(0)))
        listed = match.group("codes")
        names = tuple(name.strip() for name in listed.split(",") if name.strip()) if listed is not None else ()
        found.setdefault((span.file, span.line), Directive(span, names, not names))
    return found


def suppress(findings: Sequence[Finding], comments: Iterable[Comment], lints: Iterable[str]) -> list[Finding]:
    """``findings`` without those a directive on their line names, plus a BGC120 finding for each
    directive, or code in one, that suppresses nothing. ``lints`` are the codes a directive may name."""
    found = directives(comments)
    if not found:
        return list(findings)
    lint_codes = set(lints)
    used: dict[tuple[str, int], set[str]] = {}
    kept: list[Finding] = []
    for finding in findings:
        where = (finding.span.file, finding.span.line)
        directive = found.get(where)
        if directive is not None and finding.rule_id in directive.names:
            used.setdefault(where, set()).add(finding.rule_id)
        else:
            kept.append(finding)
    for where, directive in found.items():
        for message, hint in _problems(directive, used.get(where, set()), lint_codes):
            if codes.UNUSED_SUPPRESSION in directive.names:
                continue
            kept.append(Finding(codes.UNUSED_SUPPRESSION, Severity.WARNING, message, directive.span, hint))
    return kept


def _problems(directive: Directive, used: set[str], lint_codes: set[str]) -> Iterable[tuple[str, str | None]]:
    if directive.bare:
        yield (
            "`# bgc: ignore` names no code: it would hide every lint this line ever gets",
            "name what it silences: `# bgc: ignore[BGC101]`",
        )
        return
    for name in dict.fromkeys(directive.names):
        if name == codes.UNUSED_SUPPRESSION:
            continue
        if not _CODE.fullmatch(name) or name not in codes.CODES:
            yield f"`{name}` is not a finding code", "codes are written BGC and three digits, as findings show them"
        elif name not in lint_codes:
            yield (
                f"`{name}` is not a lint and cannot be suppressed",
                "only lints (BGC1xx, BGC541) are opinions; fix or remove what the finding is about",
            )
        elif name not in used:
            yield (
                f"unused suppression: no {name} finding on this line",
                "remove it, or put it at the end of the line the finding points at",
            )
