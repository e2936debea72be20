"""Machine renderers of findings: JSON, SARIF 2.1.0 (against the official schema), GitHub
workflow annotations (escaping), JUnit XML."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.errors import Span
from bgc.analysis.findings import Finding, Severity
from bgc.app.render.github import escape_data, escape_property, render_github
from bgc.app.render.junit import Case, render_junit
from bgc.app.render.machine import render
from tests.samples import require_shared_input

ROOT = Path("/repo")


def finding(rule: str = "BGC101", severity: Severity = Severity.WARNING, message: str = "m", file: str = "/repo/policies/a.bgp",
            line: int = 3, col: int = 5, end_line: int = 0, end_col: int = 0, hint: str | None = None) -> Finding:
    return Finding(rule, severity, message, Span(file, line, col, end_line, end_col), hint)


FINDINGS = [
    finding("BGC101", Severity.WARNING, "shadowed rule", line=7, col=1, end_line=7, end_col=20, hint="remove it"),
    finding("BGC211", Severity.ERROR, "fs:write:/** expected granted, got narrowed", "/repo/tests/p.bgt.yaml", 4, 9),
    finding("BGC201", Severity.NOTE, "a note", "/repo/dir with space/o.yaml", 0, 0),
    finding("BGC211", Severity.ERROR, "outside", "/elsewhere/x.bgt.yaml", 2, 1),
]


def sarif_schema() -> dict:
    location = require_shared_input(
        os.environ.get("BGC_SARIF_SCHEMA"),
        "the SARIF 2.1.0 schema named by BGC_SARIF_SCHEMA (.ci/run fetches it with `npm pack @microsoft/jest-sarif`)",
    )
    return json.loads(location.read_text(encoding="utf-8"))


def validate_sarif(document: dict) -> None:
    import jsonschema

    schema = sarif_schema()
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


def test_sarif_validates_against_the_official_schema() -> None:
    document = json.loads(render(FINDINGS, "sarif", root=ROOT))
    validate_sarif(document)
    # and the schema is really enforced: a broken document is rejected
    document["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(AssertionError):
        validate_sarif(document)


def test_sarif_content_for_code_scanning() -> None:
    document = json.loads(render(FINDINGS, "sarif", root=ROOT))
    assert document["version"] == "2.1.0"
    (run,) = document["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == ["BGC101", "BGC201", "BGC211"]
    assert rules[2]["shortDescription"]["text"] == "a policy test's expected verdict did not hold"  # from bgc.codes
    assert rules[2]["defaultConfiguration"]["level"] == "error"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///repo/"
    results = run["results"]
    # most severe first
    assert [r["level"] for r in results] == ["error", "error", "warning", "note"]
    by_message = {r["message"]["text"]: r for r in results}
    test = by_message["fs:write:/** expected granted, got narrowed"]
    location = test["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "tests/p.bgt.yaml", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 4, "startColumn": 9}
    assert rules[test["ruleIndex"]]["id"] == test["ruleId"] == "BGC211"
    lint = by_message["shadowed rule (hint: remove it)"]["locations"][0]["physicalLocation"]
    assert lint["region"] == {"startLine": 7, "startColumn": 1, "endLine": 7, "endColumn": 20}
    spaced = by_message["a note"]["locations"][0]["physicalLocation"]
    assert spaced["artifactLocation"]["uri"] == "dir%20with%20space/o.yaml" and "region" not in spaced
    outside = by_message["outside"]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert outside == {"uri": "file:///elsewhere/x.bgt.yaml"}


def test_sarif_fingerprints_survive_moved_lines_and_tell_twins_apart() -> None:
    def prints(findings: list[Finding]) -> list[str]:
        document = json.loads(render(findings, "sarif", root=ROOT))
        return [r["partialFingerprints"]["bgcFindingHash/v1"] for r in document["runs"][0]["results"]]

    before = prints([finding(line=3), finding(line=9)])
    after = prints([finding(line=13), finding(line=19)])  # ten lines were inserted above
    assert before == after
    assert len(set(before)) == 2  # two identical findings in one file stay distinct
    assert prints([finding(message="other")])[0] not in before


def test_github_annotations_escaped_and_most_severe_first() -> None:
    text = render(
        [
            finding("BGC101", Severity.NOTE, "n", line=1, col=1),
            finding("BGC9", Severity.ERROR, "100% wrong\r\nsecond line", "/repo/a,b:c.bgp", 2, 3, 2, 8, hint="h"),
            finding("BGC5", Severity.WARNING, "w", "/repo/w.bgp", 0, 0),
        ],
        "github",
        root=ROOT,
    )
    assert text.splitlines() == [
        "::error file=a%2Cb%3Ac.bgp,line=2,endLine=2,col=3,endColumn=8,title=BGC9::100%25 wrong\\r\\nsecond line%0Ahint: h",
        "::warning file=w.bgp,title=BGC5::w",
        "::notice file=policies/a.bgp,line=1,col=1,title=BGC101::n",
    ]


def unescape_data(text: str) -> str:
    """What the Actions runner does with a command's message."""
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("%\r\n:,a%0A25D3C")))
def test_github_escaping_round_trips_and_never_breaks_the_line(text: str) -> None:
    data, prop = escape_data(text), escape_property(text)
    assert unescape_data(data) == text and unescape_property(prop) == text
    assert "\n" not in data + prop and "\r" not in data + prop
    assert ":" not in prop and "," not in prop


def test_render_github_one_line_per_finding() -> None:
    lines = render_github([finding(message="a\nb"), finding(message="c")], root=ROOT).splitlines()
    assert len(lines) == 2 and all(line.startswith("::warning ") for line in lines)


def test_json_shape_stable_and_sorted() -> None:
    text = render(FINDINGS, "json", root=ROOT, summary={"passed": 3, "failed": 1})
    document = json.loads(text)
    assert list(document) == sorted(document)
    assert document["version"] == 1
    assert document["counts"] == {"error": 2, "warning": 1, "note": 1}
    assert document["summary"] == {"passed": 3, "failed": 1}
    assert [f["severity"] for f in document["findings"]] == ["error", "error", "warning", "note"]
    first = next(f for f in document["findings"] if f["file"] == "tests/p.bgt.yaml")
    assert first == {
        "rule": "BGC211", "severity": "error", "message": "fs:write:/** expected granted, got narrowed",
        "hint": None, "file": "tests/p.bgt.yaml", "line": 4, "col": 9, "end_line": 0, "end_col": 0,
    }
    assert document["findings"][-1]["severity"] == "note"
    assert render(list(reversed(FINDINGS)), "json", root=ROOT, summary={"passed": 3, "failed": 1}) == text


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown finding format"):
        render(FINDINGS, "xml", root=ROOT)


def test_junit_lists_every_case_and_its_failure() -> None:
    failure = finding("BGC211", Severity.ERROR, "expected <granted> & got \x01 narrowed", "/repo/t.bgt.yaml", 4, 9)
    xml = render_junit(
        [Case("/repo/t.bgt.yaml", "passes", 0.25), Case("/repo/t.bgt.yaml", "fails", 0.5, (failure,))], root=ROOT
    )
    suites = ElementTree.fromstring(xml.split("\n", 1)[1])  # parses: valid XML despite the control char
    suite = suites.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("time")) == ("2", "1", "0.750")
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [("t.bgt.yaml", "passes"), ("t.bgt.yaml", "fails")]
    assert cases[0].find("failure") is None
    element = cases[1].find("failure")
    assert element is not None and element.get("type") == "BGC211"
    assert element.get("message") == "expected <granted> & got \\x01 narrowed"
    assert element.text == "t.bgt.yaml:4:9: expected <granted> & got \\x01 narrowed"
