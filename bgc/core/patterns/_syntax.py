"""The pattern dialect's syntax: character sets, the typed form, the parser and the renderer.

Internal to :mod:`bgc.core.patterns.glob` (which re-exports :class:`PatternError`). A pattern is parsed into
a tuple of *elements*, one per ``/``-separated segment:

* :class:`Segment` — a simple segment, a sequence of :class:`One` (exactly one character from
  a :class:`CharSet`, never ``/``) and :data:`STAR` (any run of characters except ``/``);
* :class:`DStar` — a run of whole segments: ``DStar(0)`` is zero or more segments (git's
  ``**/`` in the middle or at the start), ``DStar(1)`` one or more (a trailing ``**``, or
  ``*/**``).

Runs of ``**`` and ``*`` segments are kept in one canonical form (:func:`canonical`) so that
the same language has the same elements, which the symbolic intersection relies on to produce
short results. The renderer turns elements back into pattern text that parses to the very
same elements (checked by the caller), so results shown to people are ordinary globs.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterable

from dataclasses import dataclass
from bgc.errors import BgcError, Span

MAX_CP = 0x10FFFF
SLASH = 0x2F


class PatternError(BgcError):
    """A malformed pattern: ``.column`` is 1-based within the (NFC-normalised) pattern text.

    The error carries the pattern as ``source`` and a span on line 1 at that column, so
    ``render()`` draws a caret under the offending character; a caller that knows where the
    pattern sits in a file can re-anchor it with ``.column``.
    """

    def __init__(self, message: str, pattern: str, column: int, *, hint: str | None = None) -> None:
        super().__init__(
            f"{message} at column {column}",
            Span("<pattern>", 1, column),
            hint=hint,
            source=pattern,
        )
        self.column = column
        self.pattern = pattern


@dataclass(frozen=True, slots=True)
class CharSet:
    """A set of code points as sorted, disjoint, non-adjacent inclusive spans."""

    spans: tuple[tuple[int, int], ...]

    @staticmethod
    def of(spans: Iterable[tuple[int, int]]) -> CharSet:
        merged: list[list[int]] = []
        for lo, hi in sorted(spans):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        return CharSet(tuple((lo, hi) for lo, hi in merged))

    @staticmethod
    def char(c: str) -> CharSet:
        return CharSet(((ord(c), ord(c)),))

    def __contains__(self, cp: int) -> bool:
        i = bisect_right(self.spans, (cp, MAX_CP + 1)) - 1
        return i >= 0 and self.spans[i][1] >= cp

    def __or__(self, other: CharSet) -> CharSet:
        return CharSet.of(self.spans + other.spans)

    def __and__(self, other: CharSet) -> CharSet:
        out = []
        i = j = 0
        a, b = self.spans, other.spans
        while i < len(a) and j < len(b):
            lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if lo <= hi:
                out.append((lo, hi))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return CharSet(tuple(out))

    def complement(self) -> CharSet:
        out, nxt = [], 0
        for lo, hi in self.spans:
            if lo > nxt:
                out.append((nxt, lo - 1))
            nxt = hi + 1
        if nxt <= MAX_CP:
            out.append((nxt, MAX_CP))
        return CharSet(tuple(out))

    def __sub__(self, other: CharSet) -> CharSet:
        return self & other.complement()

    def single(self) -> int | None:
        """The only member, if there is exactly one."""
        if len(self.spans) == 1 and self.spans[0][0] == self.spans[0][1]:
            return self.spans[0][0]
        return None

    def cuts(self) -> Iterable[int]:
        """Boundaries at which membership may change (the alphabet reduction uses these)."""
        for lo, hi in self.spans:
            yield lo
            if hi < MAX_CP:
                yield hi + 1

    def fold(self) -> CharSet:
        """This set closed under case: every member's upper/lower-case partners added."""
        keys, comps = _case_table()
        extra = []
        for lo, hi in self.spans:
            for k in range(bisect_left(keys, lo), bisect_right(keys, hi)):
                extra.extend((cp, cp) for cp in comps[k])
        return CharSet.of(self.spans + tuple(extra))


ANY = CharSet(((0, MAX_CP),))
SLASH_SET = CharSet(((SLASH, SLASH),))
NOSLASH = ANY - SLASH_SET

_CASE_TABLE: tuple[list[int], list[tuple[int, ...]]] | None = None


def _case_table() -> tuple[list[int], list[tuple[int, ...]]]:
    """Sorted cased code points and, for each, its case-equivalence class (built once, lazily).

    Two characters are equivalent when one is the single-character upper or lower case of the
    other (closed transitively, so ``s``, ``S`` and ``ſ`` form one class). Characters that NFC
    replaces (the Kelvin, Ohm and Angstrom signs) are left out: no pattern text can hold them
    and no accepted value contains them. Cased letters all lie below U+20000, which keeps the
    one-time scan short.
    """
    global _CASE_TABLE
    if _CASE_TABLE is None:
        parent: dict[int, int] = {}

        def find(x: int) -> int:
            while parent.setdefault(x, x) != x:
                x = parent[x]
            return x

        for cp in range(0x20000):
            ch = chr(cp)
            for other in (ch.lower(), ch.upper()):
                if len(other) == 1 and other != ch and nfc(ch) == ch and nfc(other) == other:
                    parent[find(cp)] = find(ord(other))
        groups: dict[int, list[int]] = {}
        for cp in parent:
            groups.setdefault(find(cp), []).append(cp)
        keys = sorted(parent)
        _CASE_TABLE = (keys, [tuple(groups[find(cp)]) for cp in keys])
    return _CASE_TABLE


def _ascii(*ranges: str) -> CharSet:
    return CharSet.of((ord(r[0]), ord(r[-1])) for r in ranges)


#: POSIX classes in the C locale, as git's wildmatch has them: ASCII only.
POSIX: dict[str, CharSet] = {
    "alnum": _ascii("AZ", "az", "09"),
    "alpha": _ascii("AZ", "az"),
    "blank": _ascii(" ", "\t"),
    "cntrl": CharSet(((0, 0x1F), (0x7F, 0x7F))),
    "digit": _ascii("09"),
    "graph": CharSet(((0x21, 0x7E),)),
    "lower": _ascii("az"),
    "print": CharSet(((0x20, 0x7E),)),
    "punct": CharSet(((0x21, 0x7E),)) - _ascii("AZ", "az", "09"),
    "space": _ascii(" ", "\t\r"),
    "upper": _ascii("AZ"),
    "xdigit": _ascii("09", "af", "AF"),
}


@dataclass(frozen=True, slots=True)
class One:
    """Exactly one character from ``chars`` (which never contains ``/``)."""

    chars: CharSet


@dataclass(frozen=True, slots=True)
class Star:
    """Any run of characters except ``/`` (``*``)."""


STAR = Star()
Item = One | Star


@dataclass(frozen=True, slots=True)
class Segment:
    """A simple segment: matches exactly one ``/``-free piece of the text."""

    items: tuple[Item, ...]

    def is_star(self) -> bool:
        """True for ``*``: the segment matches any one segment."""
        return self.items == (STAR,)


@dataclass(frozen=True, slots=True)
class DStar:
    """``min`` or more whole segments (``min`` is 0 or 1)."""

    min: int


D0, D1 = DStar(0), DStar(1)
Elem = Segment | DStar
Elems = tuple[Elem, ...]
ANY_SEGMENT = Segment((STAR,))


def literal_items(items: tuple[Item, ...]) -> tuple[int, ...] | None:
    """The code points of a segment of single characters, or None."""
    text = []
    for item in items:
        single = None if isinstance(item, Star) else item.chars.single()
        if single is None:
            return None
        text.append(single)
    return tuple(text)


def segment_matches(items: tuple[Item, ...], text: tuple[int, ...]) -> bool:
    """Does the simple segment ``items`` match ``text`` (code points, no ``/``)? The positions
    the items may have reached, one character at a time: linear in the text times the items."""
    reached = _closure(items, {0})
    for char in text:
        moved = set()
        for k in reached:
            if k == len(items):
                continue
            item = items[k]
            if isinstance(item, Star):
                moved.add(k)  # a star takes the character and stays
            elif char in item.chars:
                moved.add(k + 1)
        reached = _closure(items, moved)
        if not reached:
            return False
    return len(items) in reached


def _closure(items: tuple[Item, ...], reached: set[int]) -> set[int]:
    """``reached`` with every position a run of stars (which may match nothing) leads to."""
    out = set(reached)
    for k in reached:
        while k < len(items) and isinstance(items[k], Star):
            k += 1
            out.add(k)
    return out


def merge_stars(items: Iterable[Item]) -> tuple[Item, ...]:
    out: list[Item] = []
    for it in items:
        if not (it is STAR and out and out[-1] is STAR):
            out.append(it)
    return tuple(out)


def canonical(elems: Iterable[Elem]) -> Elems:
    """One spelling per language for runs of ``*`` and ``**`` segments.

    A maximal run of whole-segment wildcards that contains a ``DStar`` means "at least k
    segments", k being the number of ``*`` segments plus the ``DStar(1)`` count; it is written
    ``DStar(0)`` when k is 0 and ``*``·…·``*``·``DStar(1)`` (k-1 stars) otherwise. Runs
    without a ``DStar`` stay as they are (``*/*`` is exactly two segments).
    """
    out: list[Elem] = []
    run: list[Elem] = []

    def flush() -> None:
        if any(isinstance(e, DStar) for e in run):
            k = sum(1 for e in run if isinstance(e, Segment) or e.min == 1)
            out.extend([D0] if k == 0 else [ANY_SEGMENT] * (k - 1) + [D1])
        else:
            out.extend(run)
        run.clear()

    for e in elems:
        if isinstance(e, DStar) or e.is_star():
            run.append(e)
        else:
            flush()
            out.append(e)
    flush()
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Parsing


def parse_elems(text: str) -> Elems:
    """Parse NFC text into canonical elements; raises :class:`PatternError`."""
    if not text:
        raise PatternError("empty pattern", text, 1, hint="use '**' to mean every value")
    _refuse_controls(text)
    raw: list[Elem] = []
    items: list[Item] = []
    stars = 0  # unescaped '*' in the current segment
    only_stars = True
    i, n = 0, len(text)

    def end_segment() -> None:
        nonlocal stars, only_stars
        if only_stars and stars >= 2:
            # git: a segment of two or more stars is '**'; trailing it means "one or more".
            raw.append(D0)
        else:
            raw.append(Segment(merge_stars(items)))
        items.clear()
        stars, only_stars = 0, True

    while i < n:
        c = text[i]
        if c == "/" or (c == "\\" and text[i + 1 : i + 2] == "/"):  # git: an escaped slash is a slash
            end_segment()
            i += 1 if c == "/" else 2
            continue
        if c == "*":
            items.append(STAR)
            stars += 1
            i += 1
            continue
        only_stars = False
        if c == "\\":
            if i + 1 == n:
                raise PatternError("trailing \\ escapes nothing", text, i + 1, hint="write \\\\ for a backslash")
            items.append(One(CharSet.char(text[i + 1])))
            i += 2
        elif c == "?":
            items.append(One(NOSLASH))
            i += 1
        elif c == "[":
            chars, i = _parse_class(text, i)
            items.append(One(chars))
        else:
            items.append(One(CharSet.char(c)))
            i += 1
    end_segment()
    if isinstance(raw[-1], DStar):
        raw[-1] = D1  # a trailing '**' matches one or more segments: 'a/**' never matches 'a'
    return canonical(raw)


def _refuse_controls(text: str) -> None:
    """No pattern may contain a control character or a lone surrogate, escaped or not.

    Values with them are refused before matching, so a pattern that holds one matches nothing:
    a deny of ``/.git\x00/**`` would protect nothing, silently. Refusing it here makes that an
    error with its column wherever patterns come from (policies, requests, plans).
    """
    if text.isascii() and text.isprintable():
        return
    for index, char in enumerate(text):
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF or unicodedata.category(char) == "Cc":
            raise PatternError(
                f"control character U+{code:04X} in a pattern",
                text,
                index + 1,
                hint="values with control characters are refused before matching, so this pattern could match nothing",
            )


def _parse_class(text: str, start: int) -> tuple[CharSet, int]:
    """Parse ``[...]`` at ``start`` exactly as git's wildmatch reads it; return set and end."""
    n = len(text)
    j = start + 1
    negated = j < n and text[j] in "!^"
    if negated:
        j += 1
    spans: list[tuple[int, int]] = []
    prev: int | None = None  # git's prev_ch: the last single member, None after a range/class
    first = True

    def unclosed() -> PatternError:
        return PatternError("unclosed [", text, start + 1, hint="write \\[ for a literal [")

    def member(pos: int) -> int:
        if text[pos] == "/":
            raise PatternError(
                "a class cannot contain '/'", text, pos + 1, hint="'/' separates segments; a class never matches it"
            )
        return ord(text[pos])

    while True:
        if j >= n:
            raise unclosed()
        c = text[j]
        if c == "]" and not first:
            break
        first = False
        if c == "\\":
            j += 1
            if j >= n:
                raise unclosed()
            prev = member(j)
            spans.append((prev, prev))
        elif c == "-" and prev is not None and j + 1 < n and text[j + 1] != "]":
            j += 1
            if text[j] == "\\":
                j += 1
                if j >= n:
                    raise unclosed()
            hi = member(j)
            if hi < prev:
                raise PatternError(
                    f"empty range {chr(prev)}-{chr(hi)} (its start is after its end)", text, j, hint="swap the ends"
                )
            spans.append((prev, hi))
            prev = None
        elif c == "[" and j + 1 < n and text[j + 1] == ":":
            close = text.find("]", j + 2)
            if close == -1:
                raise unclosed()
            if close - (j + 2) - 1 < 0 or text[close - 1] != ":":
                prev = ord("[")  # no ':]' before the next ']': a literal '['
                spans.append((prev, prev))
            else:
                name = text[j + 2 : close - 1]
                if name not in POSIX:
                    raise PatternError(
                        f"unknown character class [:{name}:]", text, j + 1, hint="known: " + ", ".join(sorted(POSIX))
                    )
                spans.extend(POSIX[name].spans)
                prev = None
                j = close
        else:
            prev = member(j)
            spans.append((prev, prev))
        j += 1
    chars = CharSet.of(spans)
    chars = (chars.complement() if negated else chars) - SLASH_SET
    if not chars.spans:
        raise PatternError("this class matches no character", text, start + 1)
    return chars, j + 1


# ---------------------------------------------------------------------------------------------
# Rendering


def render(elems: Elems, *, escape_all: bool = False) -> list[tuple[str, Elems]]:
    """Pattern text for canonical ``elems``, with the elements each text stands for.

    Usually one text. A trailing ``DStar(0)`` after other segments ("``P`` or anything below
    ``P/``") has no single git spelling, so it comes out as two patterns, ``P`` and ``P/**``.
    ``escape_all`` backslash-escapes every non-ASCII literal (keeps NFC from recomposing).
    """
    if len(elems) > 1 and elems[-1] == D0:
        head = canonical(elems[:-1])
        return render(head, escape_all=escape_all) + render(canonical(head + (D1,)), escape_all=escape_all)
    parts = []
    for k, e in enumerate(elems):
        if isinstance(e, Segment):
            parts.append("".join(_render_item(it, escape_all) for it in e.items))
        elif e.min == 0 or k == len(elems) - 1:
            parts.append("**")
        else:
            parts.append("*/**")
    return [("/".join(parts), elems)]


_LIT_SPECIAL = set("\\*?[")
_CLASS_SPECIAL = set("\\]-[!^")


def _lit(cp: int, special: set[str], escape_all: bool) -> str:
    c = chr(cp)
    return "\\" + c if c in special or (escape_all and cp > 0x7E) else c


def _render_item(item: Item, escape_all: bool) -> str:
    if isinstance(item, Star):
        return "*"
    chars = item.chars
    if chars == NOSLASH:
        return "?"
    single = chars.single()
    if single is not None:
        return _lit(single, _LIT_SPECIAL, escape_all)
    negative = chars.complement() - SLASH_SET
    use_neg = len(negative.spans) < len(chars.spans) or (
        len(negative.spans) == len(chars.spans) and (0 in chars or MAX_CP in chars)
    )
    body = []
    for lo, hi in (negative if use_neg else chars).spans:
        body.append(_lit(lo, _CLASS_SPECIAL, escape_all))
        if hi > lo + 1:
            body.append("-")
        if hi > lo:
            body.append(_lit(hi, _CLASS_SPECIAL, escape_all))
    return "[" + ("!" if use_neg else "") + "".join(body) + "]"


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)
