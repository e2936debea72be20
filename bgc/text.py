"""Text people read: untrusted fields escaped, and one spelling of counts and "did you mean".

Escaping: :func:`escape_field` is the one function every text renderer passes untrusted text through.

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

Words: the policy parser, the configuration and the test-file reader all phrase their "did you
mean" from here, so a typo is caught the same way everywhere. Only the standard library is
imported: this is a leaf every layer uses.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable

from bgc.names import DISPLAY_CONTROLS

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


def count(number: int, noun: str) -> str:
    """``1 rule``, ``0 rules``, ``3 rules``: the noun agrees with the number (regular plurals)."""
    return f"{number} {noun}" + ("" if number == 1 else "s")


def did_you_mean(word: str, choices: Iterable[str], quote: Callable[[str], str] = "`{}`".format) -> str | None:
    """``did you mean `allow`?`` when ``word`` is a near miss (case aside) of one obvious choice.

    One judgement of "near" for every message, so a typo is caught the same way in a policy, a
    configuration file and a test file. ``quote`` spells the choice as the message around it
    does: backticks for policy words, ``repr`` for keys of TOML and YAML files.
    """
    import difflib  # here: only a typo pays for it; the hot commands import this module

    close = difflib.get_close_matches(word.lower(), list(choices), n=1, cutoff=0.6)
    return f"did you mean {quote(close[0])}?" if close else None
