"""BGC104: an allow of ``/**`` on write.

An allow whose pattern covers ``/**`` with the ``write`` (or ``*``) action makes every path
writable, the agent's own configuration and the repository's internals included; only the
denies stand between the agent and everything. Allow the directories the agent works in.
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context, pattern_span


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if rule.effect != "allow" or rule.action not in ("write", "*"):
            continue
        for index, text in enumerate(rule.patterns):
            if context.subset("/**", [text], rule, index):
                yield Finding(
                    codes.WRITE_EVERYWHERE,
                    Severity.WARNING,
                    f"`allow {rule.resource}:{rule.action}:{text}` makes every path writable",
                    pattern_span(rule, index),
                    "allow the directories the agent works in, e.g. /src/**",
                )
