"""What a reader sees in a policy file, and why a character that shows differently is refused.

A policy is reviewed by people before bgc enforces it; the parser refuses (BGC017) any character
for which what the reviewer reads and what bgc reads can differ. This module says which
characters those are and why, in words; the parser only finds them.
"""

from __future__ import annotations

import unicodedata

_BIDI_CONTROLS = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})
"""Bidirectional classes of the embedding, override and isolate characters (U+202A–U+202E,
U+2066–U+2069)."""
_BIDI_MARKS = "\u200e\u200f\u061c"
"""LRM, RLM and ALM: with the characters of :data:`_BIDI_CONTROLS`, Unicode's Bidi_Control
property, which :mod:`unicodedata` does not expose."""


def hidden_reason(char: str) -> str:
    """Why ``char``, a display control (:data:`bgc.names.DISPLAY_CONTROLS`) other than TAB and the
    newline, may not stand anywhere in a policy.

    A policy is reviewed by people, in an editor, a terminal or a diff. A lone carriage return in
    a comment shows the rule after it on a line of its own while bgc reads it as part of the
    comment; a right-to-left override reorders how a line is displayed ("Trojan Source"); a
    zero-width space makes a pattern differ from the one on the screen; an escape sequence
    redraws a terminal. The classes come from Unicode, not from a list of examples, and the
    reason names the kind, most specific first: a line break is any character ``str.splitlines``
    breaks on (a lone CR, VT, FF, FS, GS, RS, NEL) or a line/paragraph separator (Zl, Zp); a
    bidirectional control is an embedding, override or isolate, or a directional mark; any other
    format character (Cf) is invisible; any other control (Cc) may be hidden or acted on by a
    terminal; a lone surrogate (Cs, only in text handed to :func:`parse_source`) is no character.
    """
    category = unicodedata.category(char)
    name = f"U+{ord(char):04X}" + (f" {unicodedata.name(char)}" if category in ("Cf", "Zl", "Zp") else "")
    if category in ("Zl", "Zp") or len(f"a{char}a".splitlines()) == 2:
        return (
            f"{name} is a line break to editors and terminals but not to bgc: what follows it looks "
            "like a line of its own, yet bgc reads it as part of this line (a rule after it in a comment "
            "is ignored)"
        )
    if unicodedata.bidirectional(char) in _BIDI_CONTROLS or char in _BIDI_MARKS:
        return (
            f"{name} is a bidirectional control character: it reorders how the line is displayed, "
            "so what a reviewer reads differs from what bgc reads"
        )
    if category == "Cf":
        return (
            f"{name} is an invisible format character: a reviewer cannot see it, but bgc reads it "
            "(a pattern, name or string holding it is not the one on the screen)"
        )
    if category == "Cs":
        return f"{name} is a lone surrogate: not a character, and no UTF-8 file can hold it"
    return (
        f"{name} is a control character: editors and terminals hide it or act on it, so what a "
        "reviewer reads differs from what bgc reads"
    )
