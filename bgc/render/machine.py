"""Machine outputs of findings: one entry point that commands call with ``--format``.

Every finding-producing command (``check``, ``test``, ``compile``, ``fmt --check``) converts
its result to a list of :class:`bgc.findings.Finding` and hands it here; the renderers never
see a command's own result types, so the four formats mean the same thing for every command.
Paths in every format are relative to the repository root (what GitHub code scanning and
workflow annotations expect), with ``/`` separators.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bgc.findings import Finding

FORMATS = ("json", "sarif", "github")
"""The finding formats every finding-producing command accepts (``junit`` is ``test``-only)."""


def relative_path(file: str, root: Path) -> str | None:
    """``file`` relative to ``root`` with ``/`` separators, or ``None`` when it lies outside."""
    absolute = Path(os.path.abspath(file))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return None
    return relative.as_posix()


def shown_path(file: str, root: Path) -> str:
    """The path to print: relative to ``root`` when inside it, else as given."""
    relative = relative_path(file, root)
    return file if relative is None else relative


def ordered(findings: Sequence[Finding]) -> list[Finding]:
    """Most severe first, then by place: the order every renderer emits."""
    return sorted(findings, key=Finding.sort_key)


def render(
    findings: Sequence[Finding],
    fmt: str,
    *,
    root: Path,
    descriptions: Mapping[str, str] | None = None,
    summary: Mapping[str, Any] | None = None,
) -> str:
    """Render ``findings`` as ``fmt`` (one of :data:`FORMATS`); the text ends with a newline.

    ``descriptions`` gives rule ids their one-line meaning (SARIF rule metadata); ``summary``
    is extra, command-specific counts for the JSON form (e.g. tests passed and failed).
    """
    root = Path(os.path.abspath(root))
    if fmt == "json":
        from bgc.render.findings_json import render_json

        return render_json(findings, root=root, summary=summary)
    if fmt == "sarif":
        from bgc.render.sarif import render_sarif

        return render_sarif(findings, root=root, descriptions=descriptions)
    if fmt == "github":
        from bgc.render.github import render_github

        return render_github(findings, root=root)
    raise ValueError(f"unknown finding format {fmt!r}")
