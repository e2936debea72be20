"""BGC105: a second pattern that looks like an atom.

``allow fs:write:/a, fs:read:/b`` reads as two patterns of ``fs:write`` — ``/a`` and the
relative path ``fs:read:/b`` — not as a grant of ``fs:read:/b``. A rule has one
resource:action; the author meant a second rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context, pattern_span

ATOM_LIKE = re.compile(r"[a-z][a-z0-9_.-]*:[a-z*][a-z0-9_.-]*:")
"""The start of a text that reads as ``resource:action:``."""


def looks_like_an_atom(rule_patterns: tuple[str, ...], index: int) -> bool:
    """Whether the ``index``-th pattern is a second one that reads as an atom."""
    return index > 0 and ATOM_LIKE.match(rule_patterns[index]) is not None


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        for index, text in enumerate(rule.patterns):
            if looks_like_an_atom(rule.patterns, index):
                yield Finding(
                    codes.ATOM_AS_PATTERN,
                    Severity.WARNING,
                    f"`{text}` is read as a pattern of `{rule.resource}:{rule.action}`, not as an atom",
                    pattern_span(rule, index),
                    "a rule has one resource:action; write a second rule",
                )
