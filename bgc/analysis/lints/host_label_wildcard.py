"""BGC112: an allow whose URL host has a wildcard inside a label.

``https://*example.com/**`` also matches ``https://evilexample.com/``, and ``a?b.com`` crosses
a ``.``: a wildcard inside a host label reaches other domains. A ``*`` that is a whole label
(``*.example.com``) stands for whole labels and stays inside the domain.
"""

from __future__ import annotations

from collections.abc import Iterator

from bgc import codes
from bgc.core.resources import URL_RESOURCES
from bgc.core.resources.net import url_host_wildcard_problem
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints.context import Context, pattern_span


def check(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if rule.effect != "allow" or rule.resource not in URL_RESOURCES:
            continue
        for index, text in enumerate(rule.patterns):
            wide = url_host_wildcard_problem(text)
            if wide:
                yield Finding(
                    codes.HOST_LABEL_WILDCARD,
                    Severity.WARNING,
                    f"{wide}: it matches across label boundaries, so this allow may reach other domains",
                    pattern_span(rule, index),
                    "a `*` in a host stands for whole labels: write `*.example.com`",
                )
