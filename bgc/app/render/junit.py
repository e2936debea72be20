"""Test results as JUnit XML, the report format CI systems (GitLab, Jenkins, GitHub test
reporters) display per test case.

JUnit needs the passing cases too, so the input is one :class:`Case` per executed test with
the findings it produced (none when it passed); a case's findings become its ``<failure>``.
XML 1.0 cannot carry most control characters even escaped, so they are written as ``\\xNN``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from xml.etree import ElementTree

from dataclasses import dataclass
from bgc.analysis.findings import Finding
from bgc.app.render.locations import shown_path

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True, slots=True)
class Case:
    """One executed test: where it is defined, its name, how long it took, what it found."""

    file: str
    name: str
    seconds: float
    findings: tuple[Finding, ...] = ()


def _clean(text: str) -> str:
    return _NOT_XML.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def render_junit(cases: Sequence[Case], *, root: Path, suite: str = "bgc test") -> str:
    failures = sum(bool(case.findings) for case in cases)
    suites = ElementTree.Element("testsuites", name=suite, tests=str(len(cases)), failures=str(failures))
    testsuite = ElementTree.SubElement(
        suites,
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=f"{sum(case.seconds for case in cases):.3f}",
    )
    for case in cases:
        element = ElementTree.SubElement(
            testsuite,
            "testcase",
            classname=_clean(shown_path(case.file, root)),
            name=_clean(case.name),
            time=f"{case.seconds:.3f}",
        )
        if case.findings:
            first = case.findings[0]
            failure = ElementTree.SubElement(
                element, "failure", message=_clean(first.message), type=_clean(first.rule_id)
            )
            failure.text = _clean(
                "\n".join(f"{shown_path(f.span.file, root)}:{f.span.line}:{f.span.col}: {f.message}" for f in case.findings)
            )
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"
