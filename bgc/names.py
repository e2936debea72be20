"""The words of atoms and calls, shared by work orders, policies, plans and the gate.

Kept in a module of their own (no bgc imports) so the policy parser, the gate's fast paths and
the renderers can use the very same definitions as :mod:`bgc.core.values.model` without importing the
model's machinery.
"""

import re
import unicodedata

ATOM_NAME = re.compile(r"[a-z][a-z0-9_.-]*")
"""A resource or action of an atom (``fs``, ``write``); a policy may also write ``*``."""

DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
"""An intent kind or a tool name (``patch.apply``, ``fs.write``)."""

DISPLAY_CONTROLS = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories of characters that steer a terminal or a text view instead of showing as
themselves: controls (C0 with TAB and newline, DEL, C1 with NEL and CSI: line breaks and
terminal escapes), format characters (bidi overrides and isolates, zero-width characters),
lone surrogates, and the line and paragraph separators. A name may not contain them, and text
output escapes them (:func:`bgc.text.escape_field`)."""


def display_control(text: str) -> str | None:
    """The first character of ``text`` in :data:`DISPLAY_CONTROLS`, or ``None``."""
    if text.isprintable():  # False for every character of those categories
        return None
    return next((char for char in text if unicodedata.category(char) in DISPLAY_CONTROLS), None)
