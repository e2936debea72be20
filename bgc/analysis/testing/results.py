"""What ``bgc test`` found: the cases run, in order, and the rules of the policies involved
(for ``--coverage``). Values only: the runner makes them, the reports read them."""

from __future__ import annotations

from dataclasses import dataclass
from bgc.errors import Span
from bgc.analysis.findings import Finding


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One executed case: its id (``file::name``), where it is defined, and what it found."""

    file: str
    name: str
    span: Span
    seconds: float
    findings: tuple[Finding, ...]
    exercised: frozenset[tuple[str, int]]

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"

    @property
    def passed(self) -> bool:
        return not self.findings


@dataclass(frozen=True, slots=True)
class RuleSite:
    """A rule of a tested policy, for the coverage report: where people find it (``file``, as
    opened) and the real path that identifies it."""

    file: str
    line: int
    text: str
    real: str


@dataclass(frozen=True, slots=True)
class PolicyTestRun:
    """Everything ``bgc test`` found: the cases in run order and every rule of every policy."""

    cases: tuple[CaseResult, ...]
    rules: tuple[RuleSite, ...]

    @property
    def passed(self) -> int:
        return sum(case.passed for case in self.cases)

    @property
    def failed(self) -> int:
        return len(self.cases) - self.passed

    @property
    def findings(self) -> list[Finding]:
        return [finding for case in self.cases for finding in case.findings]

    def unexercised(self) -> list[RuleSite]:
        """The rules no selected case exercised, in file and line order."""
        hit = set().union(*(case.exercised for case in self.cases))
        return [rule for rule in self.rules if (rule.real, rule.line) not in hit]
