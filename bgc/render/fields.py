"""Escaping text output: the one function every text renderer passes untrusted text through.

Much of what bgc prints comes from a proposal (atoms, tool and server names, parameter values,
file names) or from files an agent may have written. Printed raw, a newline forges a line (a
``deny`` followed by something that reads as ``allow``, a fake ``✓ … covered``), an escape
sequence (ESC, or the one-character CSI U+009B) recolours or rewrites the terminal, and a bidi
override (U+202E) reorders what people read. :func:`escape_field` writes every character of
:data:`bgc.names.DISPLAY_CONTROLS` as a backslash escape, so each field stays on its line and
shows what it holds. Input bytes that were not UTF-8 arrive as lone surrogates (Python's
``surrogateescape``) and are written as the bytes they stand for (``\\xff``), never raw.

``bgc gate`` and ``bgc match`` print one tab-separated line per input, for programs to split;
there the backslash is escaped as well (``backslash=True``, the default), so the escaping can
be undone and an input can never forge a field. Text for people keeps backslashes
(``backslash=False``): they are pattern syntax (``/src/\\*`` is the file named ``*``), and
doubling them would change what a pattern reads as. Machine formats (JSON, YAML, CBOR, SARIF)
carry values raw: their encoders escape.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from bgc.names import DISPLAY_CONTROLS

if TYPE_CHECKING:
    from bgc.plan import GateDecision

_NAMED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escape_field(text: str, *, backslash: bool = True) -> str:
    """``text`` with display controls (and, unless ``backslash`` is false, ``\\``) escaped.

    TAB, LF, CR and the backslash have their usual names; every other character of
    :data:`~bgc.names.DISPLAY_CONTROLS` is ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` by code point,
    except a byte that was not UTF-8 (U+DC80–U+DCFF): ``\\xNN``, that byte.
    With ``backslash=False`` escaping twice is escaping once: text for people may pass through
    more than one renderer.
    """
    if text.isprintable() and not (backslash and "\\" in text):
        return text
    out = []
    for char in text:
        if char == "\\" and not backslash:
            out.append(char)
        elif char in _NAMED:
            out.append(_NAMED[char])
        elif unicodedata.category(char) in DISPLAY_CONTROLS:
            code = ord(char)
            if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, carried as a lone surrogate
                code -= 0xDC00
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(char)
    return "".join(out)


GATE_STYLES = {"allow": "green", "ask": "cyan", "deny": "red"}
"""The colour of each answer's first field when ``bgc gate`` writes to a terminal."""


def gate_line(decision: GateDecision, color: bool = False) -> str:
    """The tab-separated line ``bgc gate`` prints for a decision, every field escaped; with
    ``color``, the answer (the first field) painted (:func:`bgc.render.color.paint`)."""
    from bgc.plan import approvals_text  # not at the top: escaping must stay import-light
    from bgc.render.color import paint

    atom = escape_field(decision.atom)
    effect = paint(decision.effect, GATE_STYLES.get(decision.effect, "red")) if color else decision.effect
    if decision.effect == "allow":
        return f"{effect}\t{atom}"
    if decision.effect == "ask":
        return f"{effect}\t{atom}\t" + escape_field(approvals_text(decision.approvals))
    return f"{effect}\t{atom}\t{escape_field(decision.reason)}"
