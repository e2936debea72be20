"""``bgc test``'s report: the pytest-style text people read, the counts the machine formats
carry, and the cases as JUnit sees them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bgc.text import escape_field

if TYPE_CHECKING:
    from bgc.app.render.junit import Case
    from bgc.analysis.testing.results import CaseResult, PolicyTestRun


def report(run: PolicyTestRun, *, coverage: bool = False, quiet: bool = False, color: bool = False) -> str:
    """The pytest-style report: a progress line per file, failures, summary, coverage; with
    ``color``, painted as pytest paints it (passes green, failures red). ``quiet``: only each
    failure's findings and, with ``coverage``, each rule not exercised (empty when all passed)."""
    from bgc.app.render.color import paint
    from bgc.app.render.findings_text import finding_line

    def plain(text: str, style: str = "") -> str:
        # names, messages and paths come from test files, orders and policies: escaped, then painted
        escaped = escape_field(text, backslash=False)
        return paint(escaped, style) if color else escaped

    def failure(case: CaseResult) -> list[str]:
        return [
            line
            for finding in case.findings
            for line in [finding_line(finding, color), *([plain(f"  hint: {finding.hint}")] if finding.hint else [])]
        ]

    failed = [case for case in run.cases if not case.passed]
    missing = run.unexercised() if coverage else []
    unexercised = [plain(f"  not exercised: {rule.file}:{rule.line}  {rule.text}") for rule in missing]
    if quiet:
        return "".join(line + "\n" for case in failed for line in failure(case)) + "".join(line + "\n" for line in unexercised)
    lines: list[str] = []
    by_file: dict[str, list[CaseResult]] = {}
    for case in run.cases:
        by_file.setdefault(case.file, []).append(case)
    for file, cases in by_file.items():
        lines.append(plain(f"{file} ") + "".join(plain(".", "green") if case.passed else plain("F", "red") for case in cases))
    if failed:
        lines += ["", plain(" FAILURES ".center(72, "="), "red")]
        for case in failed:
            lines.append(plain(f" {case.id} ".center(72, "_"), "red"))
            lines += failure(case)
        lines += ["", plain(" short test summary info ".center(72, "="), "cyan")]
        lines += [plain("FAILED", "red") + plain(f" {case.id} - {case.findings[0].message}") for case in failed]
    if coverage:
        total = len(run.rules)
        lines += ["", plain(f"rule coverage: {total - len(missing)} of {total} rules exercised", "yellow" if missing else "green")]
        lines += unexercised
    lines.append(plain(f"{run.passed} passed, {run.failed} failed", "red" if run.failed else "green"))
    return "".join(line + "\n" for line in lines)


def summary(run: PolicyTestRun, *, coverage: bool = False) -> dict[str, Any]:
    """Counts for the machine formats (``summary`` in the JSON output)."""
    data: dict[str, Any] = {"passed": run.passed, "failed": run.failed}
    if coverage:
        missing = run.unexercised()
        data["coverage"] = {
            "rules": len(run.rules),
            "exercised": len(run.rules) - len(missing),
            "not_exercised": [{"file": r.file, "line": r.line, "rule": r.text} for r in missing],
        }
    return data


def junit_cases(run: PolicyTestRun) -> list[Case]:
    from bgc.app.render.junit import Case

    return [Case(case.file, case.name, case.seconds, case.findings) for case in run.cases]
