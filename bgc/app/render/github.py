"""Findings as GitHub Actions workflow commands (annotations on the pull request diff).

``::error file=policies/a.bgp,line=3,col=7,title=BGC101::message`` — one line per finding,
most severe first. Workflow commands are a line protocol, so data and properties are escaped
exactly as the runner unescapes them: ``%``, CR and LF everywhere, and additionally ``:`` and
``,`` inside properties (where they would end a value). Before that, the message, the hint and
the file name are escaped like all text for people (:func:`bgc.text.escape_field`):
the runner's log shows ANSI escapes and the annotation shows bidi overrides, and only the
line break between message and hint is the finding's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bgc.errors import BgcError
from bgc.analysis.findings import Finding, Severity
from bgc.text import escape_field
from bgc.app.render.locations import ordered, shown_path

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, root: Path, title: bool = True) -> str:
    span = finding.span
    properties = [("file", shown_path(span.file, root))]
    if span.line:
        properties.append(("line", str(span.line)))
        if span.end_line:
            properties.append(("endLine", str(span.end_line)))
        if span.col:
            properties.append(("col", str(span.col)))
            if span.end_col and span.end_line in (0, span.line):
                properties.append(("endColumn", str(span.end_col)))
    if title:
        properties.append(("title", finding.rule_id))
    lines = [finding.message] if finding.hint is None else [finding.message, f"hint: {finding.hint}"]
    message = "\n".join(escape_field(line, backslash=False) for line in lines)
    props = ",".join(f"{key}={escape_property(escape_field(value, backslash=False))}" for key, value in properties)
    return f"::{_COMMAND[finding.severity]} {props}::{escape_data(message)}"


def render_github(findings: Sequence[Finding], *, root: Path) -> str:
    return "".join(annotation(finding, root) + "\n" for finding in ordered(findings))


def render_github_error(error: BgcError, *, root: Path) -> str:
    """A command that could not run: one ``::error`` annotation at the error's place (the whole
    file, or no file at all, when that is all that is known), so the workflow shows why."""
    if error.span is None:
        message = error.message if error.hint is None else f"{error.message}\nhint: {error.hint}"
        text = "\n".join(escape_field(line, backslash=False) for line in message.split("\n"))
        return f"::error::{escape_data(text)}\n"
    return annotation(Finding("", Severity.ERROR, error.message, error.span, error.hint), root, title=False) + "\n"
