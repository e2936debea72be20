"""Credentials in what an MCP server sends back, replaced before the model reads them.

A tool's result goes into the model's context, and from there anywhere the model writes: a
server that returns a file, a log or an API answer may return a credential with it. With
``bgc mcp-proxy --redact``, every string of every message from the server is searched for the
known credential formats below, and each one found is replaced by ``[redacted by bgc: KIND]``.
A redaction is never silent: the proxy says it on stderr and records it in the ledger (the kinds
and how many, never the values).

The formats are those whose shape is the credential's own (a fixed prefix and a length, or a
PEM block), so that ordinary text is not taken for one: a value that only looks random (a
password, a hex digest) is not found, and the policy's denies are what keep an agent from
reading secret files in the first place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("private key", r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----[\s\S]{0,20000}?-----END [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----"),
        ("private key", r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----[\s\S]*"),  # cut short: to the end
        ("AWS access key id", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
        ("GitHub token", r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
        ("GitLab token", r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}"),
        ("Slack token", r"(?<![A-Za-z0-9-])xox[abposr]-[A-Za-z0-9-]{10,}"),
        ("Google API key", r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
        ("Stripe key", r"(?<![A-Za-z0-9_])(?:sk|rk)_live_[0-9A-Za-z]{24,}"),
        ("Anthropic key", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"),
        ("OpenAI key", r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
        ("JSON web token", r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    )
)
"""Each credential format: its name and the shape only it has."""


def redact_text(text: str, found: dict[str, int]) -> str:
    """``text`` with every credential replaced; ``found`` counts them by kind."""
    if len(text) < 16:
        return text  # shorter than any credential these formats find
    for name, pattern in FORMATS:
        text, count = pattern.subn(f"[redacted by bgc: {name}]", text)
        if count:
            found[name] = found.get(name, 0) + count
    return text


def redact(value: Any, found: dict[str, int]) -> Any:
    """``value`` (plain JSON data) with every credential in its strings (keys too) replaced."""
    if isinstance(value, str):
        return redact_text(value, found)
    if isinstance(value, Mapping):
        return {redact_text(key, found): redact(item, found) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item, found) for item in value]
    return value
