"""Findings as SARIF 2.1.0, the format GitHub code scanning (and most CI dashboards) ingest.

Choices that matter for code scanning:

- **Stable rule ids**: a finding's ``rule_id`` (``BGC101``) is the SARIF ``ruleId``; every rule
  used appears once in ``tool.driver.rules`` with its one-line summary from :mod:`bgc.codes`.
- **Relative paths**: artifact URIs are relative to the repository root and carry
  ``uriBaseId: "%SRCROOT%"``, whose absolute value is given once in ``originalUriBaseIds``;
  a file outside the root keeps an absolute ``file://`` URI.
- **Regions**: 1-based ``startLine``/``startColumn`` (and ends when known); columns count Unicode
  code points (``columnKind``), as the policy parser and YAML reader do.
- **partialFingerprints**: ``bgcFindingHash/v1`` hashes the rule, the path, the message and the
  occurrence number of that triple — not the line — so a finding keeps its identity (and its
  dismissal on GitHub) when lines above it move.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bgc import __version__, codes
from bgc.errors import BgcError
from bgc.analysis.findings import Finding, Severity
from bgc.app.render.locations import ordered, relative_path

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT = "bgcFindingHash/v1"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def artifact_location(file: str, root: Path) -> dict[str, str]:
    relative = relative_path(file, root)
    if relative is None:
        return {"uri": Path(file).resolve().as_uri()}
    return {"uri": quote(relative), "uriBaseId": SRCROOT}


def region(finding: Finding) -> dict[str, int] | None:
    span = finding.span
    if not span.line:
        return None
    result = {"startLine": span.line}
    if span.col:
        result["startColumn"] = span.col
    if span.end_line >= span.line:
        result["endLine"] = span.end_line
        if span.end_col and (span.end_line > span.line or span.end_col > span.col):
            result["endColumn"] = span.end_col
    return result


def finding_location(finding: Finding, root: Path) -> dict[str, Any]:
    """A SARIF ``physicalLocation``: the artifact and, when known, the region."""
    location: dict[str, Any] = {"artifactLocation": artifact_location(finding.span.file, root)}
    where = region(finding)
    if where is not None:
        location["region"] = where
    return location


def render_sarif(findings: Sequence[Finding], *, root: Path) -> str:
    items = ordered(findings)
    rule_ids = sorted({finding.rule_id for finding in items})
    rule_index = {rule_id: index for index, rule_id in enumerate(rule_ids)}
    worst = {rule_id: min((f.severity for f in items if f.rule_id == rule_id), key=lambda s: s.rank) for rule_id in rule_ids}
    rules = [
        {
            "id": rule_id,
            "shortDescription": {"text": codes.summary(rule_id)},
            "defaultConfiguration": {"level": _LEVEL[worst[rule_id]]},
        }
        for rule_id in rule_ids
    ]
    seen: Counter[tuple[str, str, str]] = Counter()
    results = []
    for finding in items:
        location = finding_location(finding, root)
        path = relative_path(finding.span.file, root) or finding.span.file
        triple = (finding.rule_id, path, finding.message)
        seen[triple] += 1
        fingerprint = hashlib.sha256("\0".join((*triple, str(seen[triple]))).encode()).hexdigest()
        text = finding.message if finding.hint is None else f"{finding.message} (hint: {finding.hint})"
        results.append(
            {
                "ruleId": finding.rule_id,
                "ruleIndex": rule_index[finding.rule_id],
                "level": _LEVEL[finding.severity],
                "message": {"text": text},
                "locations": [{"physicalLocation": location}],
                "partialFingerprints": {FINGERPRINT: fingerprint},
            }
        )
    return _document(rules, results, root)


def render_sarif_error(error: BgcError, *, root: Path) -> str:
    """A run that could not check anything: no results, and an invocation that failed with the
    error as a tool execution notification (what code scanning shows as a failed analysis)."""
    notification: dict[str, Any] = {"level": "error", "message": {"text": _error_text(error)}}
    if error.span is not None:
        location = finding_location(Finding("", Severity.ERROR, error.message, error.span), root)
        notification["locations"] = [{"physicalLocation": location}]
    invocation = {"executionSuccessful": False, "toolExecutionNotifications": [notification]}
    return _document([], [], root, invocation)


def _error_text(error: BgcError) -> str:
    return error.message if error.hint is None else f"{error.message} (hint: {error.hint})"


def _document(
    rules: list[dict[str, Any]], results: list[dict[str, Any]], root: Path, invocation: dict[str, Any] | None = None
) -> str:
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "bgc",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if invocation is not None:
        run["invocations"] = [invocation]
    document = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
