"""``bgc match PATTERN [TEXT...]``: does a pattern cover a path (or any resource's value)?"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bgc.errors import ExitCode, UsageError

MATCH_STYLES = {"match": "green", "no-match": "yellow", "rejected": "red"}
"""The colour of each answer's first field on a terminal."""


def run(
    pattern: str,
    texts: Sequence[str],
    *,
    raw: bool = False,
    resource: str | None = None,
    quiet: bool = False,
    color_choice: str = "auto",
) -> ExitCode:
    """Test ``pattern`` against each text (``texts``, else stdin's lines), one tab-separated line
    each, written as soon as it is decided (``git ls-files | bgc match …`` streams).

    Texts are normalised as values of ``resource`` (default ``fs``) first, as the gate does, or
    matched as given with ``raw``. Exit 0 when every text matched, 1 otherwise; a malformed
    pattern, conflicting flags or no text at all raise (exit 2). ``quiet`` prints nothing, like
    ``grep -q``.
    """
    from bgc.core.patterns import glob
    from bgc.core import resources
    from bgc.app.commands import io
    from bgc.names import ATOM_NAME
    from bgc.app.render.color import paint, use_color
    from bgc.text import escape_field

    if raw and resource is not None:
        raise UsageError("--raw matches texts as given; it cannot be combined with --resource")
    if resource is not None and not ATOM_NAME.fullmatch(resource):
        raise UsageError(f"--resource {resource!r}: a resource name matches [a-z][a-z0-9_.-]*")
    compiled = glob.parse(pattern)
    color = use_color(color_choice, sys.stdout)
    seen = 0
    all_matched = True
    for text in texts if texts else io.stdin_lines():
        seen += 1
        verdict = resources.match_value(compiled, text, None if raw else resource or "fs")
        if isinstance(verdict, resources.Rejection):
            answer, fields = "rejected", [escape_field(text), verdict.reason]
        else:
            answer, fields = ("match" if verdict else "no-match"), [escape_field(text)]
        all_matched &= verdict is True
        if not quiet:
            io.write_line("\t".join([paint(answer, MATCH_STYLES[answer]) if color else answer, *fields]))
    if not seen:
        raise UsageError("no texts to match: give TEXT arguments or lines on stdin")
    return ExitCode.OK if all_matched else ExitCode.FINDINGS
