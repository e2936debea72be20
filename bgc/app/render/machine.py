"""Machine outputs of findings: one entry point that commands call with ``--format``.

Every finding-producing command (``check``, ``test``, ``compile``, ``fmt --check``) converts
its result to a list of :class:`bgc.analysis.findings.Finding` and hands it here; the renderers never
see a command's own result types, so the four formats mean the same thing for every command.
Paths in every format are relative to the repository root (what GitHub code scanning and
workflow annotations expect), with ``/`` separators (:mod:`bgc.app.render.locations`). A command
that could not run at all is reported in the same format (:func:`render_error`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bgc.errors import BgcError
from bgc.analysis.findings import Finding

FORMATS = ("json", "sarif", "github")
"""The finding formats every finding-producing command accepts (``junit`` is ``test``-only)."""


def render(
    findings: Sequence[Finding],
    fmt: str,
    *,
    root: Path,
    summary: Mapping[str, Any] | None = None,
) -> str:
    """Render ``findings`` as ``fmt`` (one of :data:`FORMATS`); the text ends with a newline.

    ``summary`` is extra, command-specific counts for the JSON form (e.g. tests passed and
    failed). Rule metadata (SARIF) comes from the one registry, :mod:`bgc.codes`.
    """
    root = Path(os.path.abspath(root))
    if fmt == "json":
        from bgc.app.render.findings_json import render_json

        return render_json(findings, root=root, summary=summary)
    if fmt == "sarif":
        from bgc.app.render.sarif import render_sarif

        return render_sarif(findings, root=root)
    if fmt == "github":
        from bgc.app.render.github import render_github

        return render_github(findings, root=root)
    raise ValueError(f"unknown finding format {fmt!r}")


def render_error(error: BgcError, fmt: str, *, root: Path) -> str:
    """A command that could not run at all (a bad configuration, nothing to check) as ``fmt``
    carries such an error, so CI shows it instead of an empty report: a SARIF run whose
    invocation failed with a tool execution notification, a GitHub ``::error`` annotation, a
    JSON document with an ``error`` object and no findings."""
    root = Path(os.path.abspath(root))
    if fmt == "json":
        from bgc.app.render.findings_json import render_json

        return render_json([], root=root, error=error)
    if fmt == "sarif":
        from bgc.app.render.sarif import render_sarif_error

        return render_sarif_error(error, root=root)
    if fmt == "github":
        from bgc.app.render.github import render_github_error

        return render_github_error(error, root=root)
    raise ValueError(f"unknown finding format {fmt!r}")
