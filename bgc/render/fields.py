"""Fields of line-oriented output that an enforcer or a pipe will split.

``bgc gate`` and ``bgc match`` print one tab-separated line per input. An input may contain a
TAB, a newline or a Unicode line separator; printed raw, it would forge extra fields or extra
lines (a `deny` line followed by something that reads as `allow`). Every echoed field goes
through :func:`escape_field`, which writes such characters, and the backslash itself, as
backslash escapes, so each input yields exactly one line with a fixed number of fields. Input
bytes that are not UTF-8 arrive as lone surrogates and are escaped too (never echoed raw).
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bgc.plan import GateDecision

_NAMED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escape_field(text: str) -> str:
    """``text`` with backslash, control characters and line/paragraph separators escaped."""
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for char in text:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp"):  # Cs: bytes that were not UTF-8
            out.append(f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def gate_line(decision: GateDecision) -> str:
    """The tab-separated line ``bgc gate`` prints for a decision, every field escaped."""
    from bgc.plan import approvals_text  # not at the top: escaping must stay import-light

    atom = escape_field(decision.atom)
    if decision.effect == "allow":
        return f"allow\t{atom}"
    if decision.effect == "ask":
        return f"ask\t{atom}\t" + escape_field(approvals_text(decision.approvals))
    return f"deny\t{atom}\t{escape_field(decision.reason)}"
