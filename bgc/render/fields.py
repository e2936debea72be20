"""Fields of line-oriented output that an enforcer or a pipe will split.

``bgc gate`` and ``bgc match`` print one tab-separated line per input. An input may contain a
TAB, a newline or a Unicode line separator; printed raw, it would forge extra fields or extra
lines (a `deny` line followed by something that reads as `allow`). Every echoed field goes
through :func:`escape_field`, which writes such characters, and the backslash itself, as
backslash escapes, so each input yields exactly one line with a fixed number of fields.
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escape_field(text: str) -> str:
    """``text`` with backslash, control characters and line/paragraph separators escaped."""
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for char in text:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            out.append(f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)
