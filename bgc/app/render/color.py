"""Whether a command colours its output, and how a styled piece of text is written.

One decision for every command (``--color auto|always|never``, then ``NO_COLOR``, then
``FORCE_COLOR``, then whether the stream is a terminal), so ``compile``, ``explain``, ``gate``,
``match``, ``fmt``, ``check`` and ``test`` never disagree about it. Styles are a handful of SGR
codes written directly: the hot commands colour without importing rich. Standard library only.
"""

from __future__ import annotations

import os
from typing import TextIO

CHOICES = ("auto", "always", "never")
"""The values of ``--color``: ``auto`` decides from the environment and the stream."""

_SGR = {"bold": "1", "dim": "2", "italic": "3", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
"""The styles renderers name, as ANSI SGR parameters (the 8 standard colours: every terminal has them)."""


def use_color(choice: str, stream: TextIO) -> bool:
    """Whether to colour what goes to ``stream``.

    A flag beats the environment (https://no-color.org: "command-line arguments should override
    NO_COLOR"): ``always`` and ``never`` are final. Under ``auto``, a non-empty ``NO_COLOR`` turns
    colour off, else a non-empty ``FORCE_COLOR`` turns it on (https://force-color.org), else only
    a terminal gets colour (a pipe, a file and CI logs read plain text).
    """
    if choice not in CHOICES:
        raise ValueError(f"--color {choice!r}: expected one of {', '.join(CHOICES)}")
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str) -> str:
    """``text`` in ``style`` (one of :data:`_SGR`, or ``""`` for none), reset after it.

    ``text`` must already be escaped (:func:`bgc.text.escape_field`): painting adds the
    only escape sequences the output holds.
    """
    if not style or not text:
        return text
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m"
