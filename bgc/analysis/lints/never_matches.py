"""BGC107: a pattern that can never match a value the gate decides.

Every value is canonicalised per resource before any rule sees it (DESIGN §2): fs paths are
absolute and normalised, URLs are read as a WHATWG parser reads them, and values with a
segment a URL parser reads as ``.`` or ``..`` are refused. A pattern whose every match is a
text no canonical value looks like protects (or grants) nothing — a deny written
``.git/**`` (relative) guards no path at all.
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.core.resources import ARGV_RESOURCES, URL_RESOURCES
from bgc.core.resources.kind import decoded_dot_segment
from bgc.core.resources.net import url_pattern_problem
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.atom_as_pattern import looks_like_an_atom
from bgc.analysis.lints.context import Context, pattern_span

NOT_FS_PATHS = ("*", "?*/**", "//**", "**/?*//**", "**/?*/")
"""Patterns that together match exactly the texts no normalised fs path looks like: relative ones
(a first segment that is not empty: ``*``, ``?*/**``), those with an empty segment (``//`` at the
start: ``//**``, or after a segment: ``**/?*//**``) and those ending in ``/`` other than ``/``
itself (``**/?*/``). The gate normalises every fs value to an absolute path without empty
segments or a trailing ``/`` before any rule sees it, so an fs pattern inside these matches
nothing. ``.``/``..`` segments are parse errors already."""


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        for index, text in enumerate(rule.patterns):
            if rule.resource == "fs":
                if looks_like_an_atom(rule.patterns, index):
                    continue  # BGC105 says what went wrong with `, fs:read:/x`
                if context.subset(text, NOT_FS_PATHS, rule, index):
                    yield Finding(
                        codes.NEVER_MATCHES, Severity.WARNING,
                        f"`{text}` can never match a normalised fs path, so this {rule.keyword} has no effect",
                        pattern_span(rule, index),
                        "fs values are absolute and normalised before they are matched (`//` collapses, "
                        "a trailing `/` drops): write the pattern that way, e.g. `/src/**`",
                    )  # fmt: skip
            elif rule.resource in ARGV_RESOURCES:
                continue  # argv words may be `.` or `..` (bgc.core.resources.proc): they are words, not paths
            elif decoded_dot_segment(text) is not None:
                yield Finding(
                    codes.NEVER_MATCHES, Severity.WARNING,
                    f"`{text}` has a segment a URL parser reads as `.` or `..` (percent-encoded, or "
                    f"cut by `\\`, `?`, `#`, `;`); the gate refuses such values, so this {rule.keyword} has no effect",
                    pattern_span(rule, index), "write the path the pattern means, without dot segments",
                )  # fmt: skip
            elif rule.resource in URL_RESOURCES and (problem := url_pattern_problem(text)):
                yield Finding(
                    codes.NEVER_MATCHES, Severity.WARNING,
                    f"`{text}` can never match a {rule.resource} value, so this {rule.keyword} has no effect: {problem}",
                    pattern_span(rule, index), "write URLs as the gate reads them: `bgc match -r net` shows it",
                )  # fmt: skip
