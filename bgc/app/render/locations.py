"""Where findings are, as the machine formats show them: paths relative to the repository root
(what GitHub code scanning and workflow annotations expect), with ``/`` separators, and the one
order every format lists findings in."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from bgc.analysis.findings import Finding


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
