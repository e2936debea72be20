"""Findings as JSON: stable keys, sorted, the schema documented in docs/ci.md.

::

    {"version": 1,
     "findings": [{"rule": "BGC211", "severity": "error", "message": "...", "hint": null,
                   "file": "tests/policy/a.bgt.yaml", "line": 4, "col": 5,
                   "end_line": 0, "end_col": 0}, ...],
     "counts": {"error": 1, "warning": 0, "note": 0},
     "summary": {...}}          # only for commands that have more to say (``bgc test``)

A command that could not run at all (a bad configuration) writes the same document with no
findings and an ``error`` object: ``{"message", "hint", "file", "line", "col"}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bgc.errors import BgcError, Span
from bgc.analysis.findings import Finding, Severity
from bgc.app.render.locations import ordered, shown_path

SCHEMA_VERSION = 1


def finding_data(finding: Finding, root: Path) -> dict[str, Any]:
    span = finding.span
    return {
        "rule": finding.rule_id,
        "severity": finding.severity.value,
        "message": finding.message,
        "hint": finding.hint,
        "file": shown_path(span.file, root),
        "line": span.line,
        "col": span.col,
        "end_line": span.end_line,
        "end_col": span.end_col,
    }


def render_json(
    findings: Sequence[Finding],
    *,
    root: Path,
    summary: Mapping[str, Any] | None = None,
    error: BgcError | None = None,
) -> str:
    items = ordered(findings)
    document: dict[str, Any] = {
        "version": SCHEMA_VERSION,
        "findings": [finding_data(finding, root) for finding in items],
        "counts": {severity.value: sum(f.severity is severity for f in items) for severity in Severity},
    }
    if summary is not None:
        document["summary"] = dict(summary)
    if error is not None:
        span = error.span or Span("")
        document["error"] = {
            "message": error.message,
            "hint": error.hint,
            "file": shown_path(span.file, root) if span.file else None,
            "line": span.line,
            "col": span.col,
        }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
