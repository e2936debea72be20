"""Matching one pattern with Python's ``re``, written so that it cannot backtrack.

Internal to :mod:`bgc.core.patterns.glob`. The automaton (:mod:`bgc.core.patterns._automata`) matches any pattern in
linear time, but a Python loop costs tens of nanoseconds a character; ``re`` runs in C. A
glob translated naively (``*`` → ``[^/]*``) backtracks without end on near misses
(``*a*a*a*a*a*b`` against ``aaa…``), so the translation here commits to the *earliest* place
of every piece inside an atomic group, and is used only when that choice is provably the
right one and its work per character is small.

Why the earliest place is right. The text a pattern matches is its pieces separated by gaps:

* Inside one segment, pieces are runs of single characters (literals, ``?``, classes: fixed
  length, never ``/``) separated by ``*`` (any ``/``-free run). The first piece is anchored
  at the segment's start and the last at its end (a greedy ``[^/]*`` finds it from the end);
  every middle piece is placed at its earliest occurrence, found by skipping, possessively,
  the characters that cannot start it. Placing a piece earlier only lengthens the gap after
  it, which is ``/``-free like the rest of the segment, so any match can be moved to the
  earliest one (the classic argument for ``*``-only globs). The segment as a whole is one
  atomic group ending at its ``/`` (or the text's end): it matches at most one way.
* Between segments, ``**`` is a run of whole segments. What follows it, up to the next
  ``**``, is a *chunk*: a fixed number of whole segments, which at a given start matches in
  at most one way and needs nothing but the text there. A middle chunk is placed at its
  earliest start, ``(?>(?:[^/]*+/)*?CHUNK)`` (or ``+?`` when the ``**`` needs a segment):
  placing it earlier only lengthens the ``**`` after it, which takes any segments. The last
  chunk ends the text, so its place is fixed: ``(?:.*/)?CHUNK`` finds it from the end. A
  trailing ``**`` is ``.*``.

Nothing can backtrack into an atomic group, the skips are possessive, and the only
backtracking left (a greedy run giving back characters, the last chunk's ``.*`` giving back
to each ``/``) tries each place once. The work per character is bounded by the segments a
chunk spans (each character is read by at most that many attempts) times the longest piece
(the compare at each place): :func:`translate` refuses a pattern where that product exceeds
:data:`MAX_WORK`, and the automaton matches it instead. The agreement with the automaton, on
near misses of patterns with many pieces, is a property test (``tests/core/patterns/test_glob_props.py``).
"""

from __future__ import annotations

import re

from bgc.core.patterns._syntax import ANY, NOSLASH, CharSet, DStar, Elems, One, Segment, Star

#: The most characters compared per text character the regex may cost (segments in a chunk ×
#: longest piece) before the automaton, linear at one dict lookup a character, is the better
#: bound. Policy patterns are far below it (``/**/node_modules/**`` costs 12).
MAX_WORK = 24


def compile_matcher(elems: Elems) -> re.Pattern[str] | None:
    """A compiled ``fullmatch``-able regex for canonical ``elems``, or None past MAX_WORK."""
    source = translate(elems)
    return None if source is None else re.compile(source, re.DOTALL)


def translate(elems: Elems) -> str | None:
    """The regex source for canonical ``elems`` (see the module docstring), or None."""
    last = len(elems) - 1
    out: list[str] = []
    worst = 0
    k = 0
    while k <= last:
        e = elems[k]
        if isinstance(e, Segment):  # the head: anchored at the start, one way to match
            source, piece = _segment(e, "\\Z" if k == last else "/")
            out.append(source)
            worst = max(worst, piece)
            k += 1
            continue
        if k == last:
            out.append(".*")
            break
        end = next((j for j in range(k + 1, last + 1) if isinstance(elems[j], DStar)), last + 1)
        chunk = [_segment(elems[j], "\\Z" if j == last else "/") for j in range(k + 1, end)]
        body = "".join(source for source, _ in chunk)
        worst = max(worst, len(chunk) * max(piece for _, piece in chunk))
        if end > last:  # the last chunk ends the text: its place is fixed, found from the end
            out.append(("(?:.*/)?" if e.min == 0 else ".*/") + body)
        else:  # a middle chunk: the earliest place, committed
            out.append(("(?>(?:[^/]*+/)*?" if e.min == 0 else "(?>(?:[^/]*+/)+?") + body + ")")
        k = end
    return None if worst > MAX_WORK else "".join(out)


def _segment(segment: Segment, end: str) -> tuple[str, int]:
    """A segment's regex followed by ``end`` (``/`` or ``\\Z``), and its longest piece.

    A middle piece is found at its earliest place by skipping, possessively, what cannot start
    it (``re``'s lazy repeat would cost a loop turn per character); the last piece is anchored
    at the segment's end, which a greedy ``[^/]*`` finds from the end.
    """
    pieces: list[list[One]] = [[]]
    for item in segment.items:
        if isinstance(item, Star):
            pieces.append([])
        else:
            pieces[-1].append(item)
    longest = max(len(p) for p in pieces)
    spelled = ["".join(_one(item) for item in p) for p in pieces]
    if len(pieces) == 1:
        return spelled[0] + end, longest
    middle = []
    for piece, source in zip(pieces[1:-1], spelled[1:-1]):
        other = NOSLASH - piece[0].chars
        if len(piece) == 1 and other.spans:
            # starts wherever its character is: skip the others possessively, a C loop
            middle.append(f"{_class(other)}*+{source}")
        else:
            # a lazy scan, one turn of re's loop a character: about the automaton's cost, and
            # a skip loop with a look-ahead per candidate would cost twice that on 'aaa…'
            middle.append(f"(?>[^/]*?{source})")
    return f"(?>{spelled[0]}{''.join(middle)}[^/]*{spelled[-1]}{end})", longest


def _one(item: One) -> str:
    single = item.chars.single()
    if single is not None:
        return re.escape(chr(single))
    if item.chars == NOSLASH:
        return "[^/]"
    return _class(item.chars)


def _class(chars: CharSet) -> str:
    """A character class of ``chars``'s spans, every code point escaped (no class syntax leaks)."""
    if not chars.spans:
        return "(?!)"  # matches no character
    other = ANY - chars
    negated = len(other.spans) < len(chars.spans)
    spans = other.spans if negated else chars.spans
    body = "".join(_code(lo) if lo == hi else f"{_code(lo)}-{_code(hi)}" for lo, hi in spans)
    return f"[{'^' if negated else ''}{body}]"


def _code(cp: int) -> str:
    """One code point as an escape ``re`` reads inside a class."""
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"
