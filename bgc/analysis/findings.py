"""Findings: what a check-like command reports about otherwise valid input.

A finding is not an error: the input was understood, and something about it deserves
attention (a lint, a failing expectation, an unformatted file, a denied request). Every
finding-producing command (``check``, ``test``, ``compile``, ``fmt --check``) yields these, and
the machine renderers (json, sarif, github) consume only this type.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum

from dataclasses import dataclass
from bgc.errors import ExitCode, Span


class Severity(str, Enum):
    """How much a finding matters; ordered most severe first by :attr:`rank`."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "note": 2}[self.value]


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding: a stable ``rule_id`` (e.g. ``BGC101``), a severity, a message and a place."""

    rule_id: str
    severity: Severity
    message: str
    span: Span
    hint: str | None = None

    def sort_key(self) -> tuple[int, str, int, int, str]:
        return (self.severity.rank, self.span.file, self.span.line, self.span.col, self.rule_id)


def exit_code(findings: Iterable[Finding], errors: Sequence[object] = ()) -> ExitCode:
    """The exit code of a finding-producing run: 2 on any error, 1 on a non-note finding, else 0."""
    if errors:
        return ExitCode.BAD_INPUT
    if any(finding.severity is not Severity.NOTE for finding in findings):
        return ExitCode.FINDINGS
    return ExitCode.OK
