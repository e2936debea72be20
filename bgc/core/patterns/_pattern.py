"""A parsed pattern of the dialect: its literal shapes, its matching, its probes, and the
operations on one pattern (parse, escape, fold case, size bounds); :class:`PatternSet` for many.

Internal to :mod:`bgc.core.patterns.glob`, which re-exports what is public here and adds the set algebra.
A pattern keeps what matching it needs with it: its literal prefix and suffix (the commonest
policy shapes, ``lit/**`` and ``lit/*.py``, are matched by them alone), the ``re`` translation
(:mod:`bgc.core.patterns._regex`) or its automaton (:mod:`bgc.core.patterns._automata`), and the probes the
algebra tries before it searches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from dataclasses import dataclass, field
from bgc.core.patterns._automata import Automaton, Matcher, Position, positions
from bgc.core.patterns._regex import compile_matcher
from bgc.core.patterns._syntax import (
    CharSet,
    DStar,
    Elems,
    One,
    PatternError,
    Segment,
    Star,
    literal_items,
    nfc,
    parse_elems,
    render,
    segment_matches,
)
from bgc.core.patterns.budget import AlgebraLimit, Budget, CostMemo, text_key
from bgc.core.values.limits import MAX_PATTERN_LENGTH, MAX_PATTERN_SEGMENTS, MAX_PATTERN_WILDCARDS

#: "Not worked out yet" in a pattern's cache, where None is an answer.
_UNSET = object()


@dataclass(frozen=True, slots=True)
class Pattern:
    """A parsed pattern. ``text`` is the NFC-normalised source; equality and hash use only it.

    Build one with :func:`parse` (cached); ``Pattern(text)`` parses too. The automaton is
    built on first use and kept with the pattern.
    """

    text: str
    _elems: Elems = field(default=(), compare=False, repr=False)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"a pattern is text, not {type(self.text).__name__}")
        text = nfc(self.text)
        object.__setattr__(self, "text", text)
        if not self._elems:
            object.__setattr__(self, "_elems", parse_elems(text))
        prefix, literal = _literal_prefix(self._elems)
        self._cache["prefix"] = prefix
        self._cache["literal"] = literal
        self._cache["suffix"] = literal if literal is not None else _literal_suffix(self._elems)
        # 'lit/**' is "starts with 'lit/'": the commonest policy shape, matched without automata.
        tail = self._elems[-1]
        self._cache["startswith"] = (
            prefix if isinstance(tail, DStar) and len(prefix) == _literal_length(self._elems[:-1]) else None
        )
        # 'lit/*.py': literal but for one '*' in the last segment, the next commonest: matched by its ends.
        self._cache["ends"] = (prefix, self._cache["suffix"]) if _one_last_star(self._elems) else None

    @property
    def prefix(self) -> str:
        """The literal text every match starts with."""
        return self._cache["prefix"]

    @property
    def suffix(self) -> str:
        """The literal text every match ends with (``.key`` for ``/**/*.key``)."""
        return self._cache["suffix"]

    @property
    def literal(self) -> str | None:
        """The one text this pattern matches, when it has no wildcards."""
        return self._cache["literal"]

    def automaton(self) -> Automaton:
        auto = self._cache.get("auto")
        if auto is None:
            auto = self._cache["auto"] = Automaton([self._positions()])
        return auto

    def _positions(self) -> tuple[Position, ...]:
        """The position automaton's row, kept with the pattern: every pattern set reuses it."""
        row = self._cache.get("positions")
        if row is None:
            row = self._cache["positions"] = tuple(positions(self._elems))
        return row

    def probes(self) -> tuple[str, ...]:
        """A few texts this pattern matches, found without any search (see :func:`_probes`)."""
        found = self._cache.get("probes")
        if found is None:
            found = self._cache["probes"] = _probes(self)
        return found

    def is_universal(self) -> bool:
        """True when the pattern plainly matches every text (``**``, ``**/**``).

        A fast path only: ``False`` is not a proof (``**/*`` matches everything too, which
        the decision procedures find out).
        """
        universal = self._cache.get("universal")
        if universal is None and (self._cache["prefix"] or self._cache["suffix"]):
            universal = self._cache["universal"] = False  # no match of it is the empty text
        if universal is None:
            auto = self.automaton()
            universal = self._cache["universal"] = auto.universal[auto.init]
        return universal

    def matches(self, text: str) -> bool:
        """Does ``text`` match, exactly as given? Linear in ``len(text)``."""
        literal = self._cache["literal"]
        if literal is not None:
            return text == literal
        start = self._cache["startswith"]
        if start is not None:
            return text.startswith(start)
        ends = self._cache["ends"]
        if ends is not None:
            head, tail = ends
            return (
                len(text) >= len(head) + len(tail)
                and text.startswith(head)
                and text.endswith(tail)
                and "/" not in text[len(head) : len(text) - len(tail)]
            )
        beneath = self._cache.get("beneath")
        if beneath is not None:
            start, floating = beneath
            return text.startswith(start) and floating.matches(text[len(start) - 1 :])
        regex = self._cache.get("regex", _UNSET)
        if regex is _UNSET:
            regex = self._cache["regex"] = compile_matcher(self._elems)
        if regex is not None:
            return regex.fullmatch(text) is not None
        return self.automaton().accepts(text)

    def __str__(self) -> str:
        return self.text


def _literal_length(elems: Elems) -> int:
    """Characters spelled by ``elems`` if all are literal segments joined by '/', else -1."""
    total = 0
    for e in elems:
        if not isinstance(e, Segment) or any(not isinstance(it, One) or it.chars.single() is None for it in e.items):
            return -1
        total += len(e.items) + 1
    return total


def _one_last_star(elems: Elems) -> bool:
    """Whether ``elems`` are literal segments but for one ``*`` in the last: such a pattern
    matches exactly the texts that start with its literal prefix, end with its literal suffix and
    have no ``/`` between them."""
    if not all(isinstance(e, Segment) for e in elems) or not any(isinstance(it, Star) for it in elems[-1].items):
        return False
    items = [it for e in elems for it in e.items]  # type: ignore[union-attr]
    stars = sum(isinstance(it, Star) for it in items)
    return stars == 1 and all(isinstance(it, Star) or it.chars.single() is not None for it in items)


def _literal_prefix(elems: Elems) -> tuple[str, str | None]:
    out: list[str] = []
    for k, e in enumerate(elems):
        if not isinstance(e, Segment):
            return "".join(out), None
        for it in e.items:
            cp = it.chars.single() if isinstance(it, One) else None
            if cp is None:
                return "".join(out), None
            out.append(chr(cp))
        if k < len(elems) - 1:
            out.append("/")
    text = "".join(out)
    return text, text


#: The character a probe puts where a pattern lets anything be (a private-use code point: no
#: literal a person writes, so a probe with it falls outside every literal-only rule).
_PROBE_CHAR = "\ue000"


def _probes(p: Pattern) -> tuple[str, ...]:
    """Texts ``p`` matches, spelled from its elements: every wildcard as short as it may be, then
    every wildcard as one unusual character.

    The algebra tries these before it searches: one probe matched by one side and not by the
    other already answers most questions a policy asks ("is ``/p1/src/**`` inside
    ``/p1/src/a/*.py``?" — no: ``/p1/src/``), at the cost of a few matches instead of a
    breadth-first search over automata. A probe is in L(p) by construction (each element is
    spelled with text it matches; tests hold this against a reference matcher), and even a
    wrong one could only make an answer more cautious: probes only ever say "not inside",
    "not empty" or "they meet", which keep a cut, keep a part or refuse a fold.
    """
    return tuple(dict.fromkeys(_spell(p, fill, lambda k: fill or None) for fill in ("", _PROBE_CHAR)))


def _spliced(p: Pattern, other: Pattern) -> Iterator[str]:
    """Texts ``p`` matches with one of ``other``'s probes put where ``p`` spans segments, or
    the probe's last segment put in each of ``p``'s ``*`` (the caller checks ``other``).

    ``/p1/**/tests/**`` and ``/**/secrets/**`` share ``/p1/secrets/tests/``: a deny that floats
    anywhere meets a directory's pattern where the directory's ``**`` takes the deny's
    segments; ``*.py`` and ``id_rsa.*`` share ``id_rsa..py``.
    """
    slots = [k for k, e in enumerate(p._elems) if isinstance(e, DStar)]
    for probe in other.probes():
        inner = probe.strip("/")
        for chosen in [{k} for k in slots] + ([set(slots)] if len(slots) > 1 else []):
            yield _spell(p, "", lambda k: inner if k in chosen else None)
        yield _spell(p, probe.rsplit("/", 1)[-1], lambda k: None)


def _spell(p: Pattern, star: str, dstar: Callable[[int], str | None]) -> str:
    """Text ``p`` matches: each ``*`` as ``star`` (no ``/`` in it), the ``**`` at element ``k`` as
    the segments ``dstar(k)``, or when that is None as short as it may be: nothing for a ``**``
    that may match no segment, an empty segment for one that must match one (``/**/`` between
    segments is ``(.*/)?``, ``*/**`` there ends in ``.*/``, a last ``**`` is ``.*``)."""
    skeleton = p._cache.get("skeleton")
    if skeleton is None:
        skeleton = p._cache["skeleton"] = [
            [None if isinstance(it, Star) else chr(_nice_member(it.chars)) for it in e.items]
            if isinstance(e, Segment)
            else e.min
            for e in p._elems
        ]
    parts: list[str] = []
    last = len(skeleton) - 1
    for k, items in enumerate(skeleton):
        if isinstance(items, list):
            parts.append("".join(star if it is None else it for it in items))
            continue
        fill = dstar(k)
        if fill is not None:
            parts.append(fill)
        elif k == last or items == 1:
            parts.append("")
    return "/".join(parts)


def _nice_member(chars: CharSet) -> int:
    """A readable member of a character set: a letter or digit if it has one, else its first."""
    single = chars.single()
    if single is not None:
        return single
    for cand in "a0A_-.":
        if ord(cand) in chars:
            return ord(cand)
    return chars.spans[0][0]


def _literal_suffix(elems: Elems) -> str:
    """The literal text at the end of every match: the last segment's trailing literal characters,
    and the segments before it while they are wholly literal (joined by the ``/`` between them)."""
    out: list[str] = []
    for k in range(len(elems) - 1, -1, -1):
        e = elems[k]
        if not isinstance(e, Segment):
            break
        for it in reversed(e.items):
            cp = it.chars.single() if isinstance(it, One) else None
            if cp is None:
                return "".join(reversed(out))
            out.append(chr(cp))
        if k == 0 or not isinstance(elems[k - 1], Segment):
            break  # what comes before may be nothing at all ('**/x' matches 'x'): no '/' is certain
        out.append("/")
    return "".join(reversed(out))


PARSE_CACHE_BYTES = 8 * 1024 * 1024
"""What the parsed patterns :func:`parse` remembers may hold at most, counted as their texts and
keys (:func:`~bgc.core.patterns.budget.weight`); at most :data:`PARSE_CACHE_ENTRIES` of them,
as each may also carry its automaton once the algebra has built it (bounded by the pattern
limits). All are dropped when either bound is reached."""

PARSE_CACHE_ENTRIES = 65536

_parsed: CostMemo[Pattern] = CostMemo(PARSE_CACHE_ENTRIES, PARSE_CACHE_BYTES)


def parse(text: str) -> Pattern:
    """Parse pattern text (NFC-normalised first); raises :class:`PatternError` with the column.

    Remembered by a digest of the text (a text that does not parse is not remembered: its error
    is raised afresh each time)."""
    return _parsed.get(text_key(text), Budget(), lambda: Pattern(text))


parse.cache_clear = _parsed.clear  # type: ignore[attr-defined]


def size_problem(pattern: Pattern) -> str | None:
    """Why ``pattern`` is too large to be requested or written in a rule, or None.

    Parsing and matching are linear in any pattern; the bounds (bgc.core.values.limits) are for the
    algebra, whose every step grows with the pattern's length and whose worst cases grow with
    its wildcards. Wildcards are counted as the algebra sees them: each ``*`` run, ``?``,
    class and ``**`` once (``**/**`` is one).
    """
    text = pattern.text
    if len(text) > MAX_PATTERN_LENGTH:
        return f"is {len(text):,} characters long (at most {MAX_PATTERN_LENGTH:,})"
    segments = len(text.split("/")) - text.startswith("/")
    if segments > MAX_PATTERN_SEGMENTS:
        return f"has {segments} segments (at most {MAX_PATTERN_SEGMENTS})"
    wildcards = sum(
        sum(1 for it in e.items if isinstance(it, Star) or it.chars.single() is None) if isinstance(e, Segment) else 1
        for e in pattern._elems
    )
    if wildcards > MAX_PATTERN_WILDCARDS:
        return f"has {wildcards} wildcards (at most {MAX_PATTERN_WILDCARDS}; each `*`, `?`, `[...]` and `**` counts)"
    return None


def escape(text: str) -> str:
    """Pattern text that matches exactly ``text`` (for tool-call parameters).

    ``\\``, ``*``, ``?`` and ``[`` are backslash-escaped; nothing else is special outside a
    class. Total on every string. Patterns are NFC-normalised when parsed, so for a text that
    is not NFC the pattern matches its NFC form instead; such a value is rejected by
    :func:`normalise` before it is ever matched (normalise first, then escape). An empty text
    gives an empty pattern, which :func:`parse` rejects.
    """
    return text.translate(_ESCAPES)


_ESCAPES = str.maketrans({c: "\\" + c for c in "\\*?["})


def fold_case(p: Pattern) -> Pattern:
    """The same pattern with letters case-insensitive (``a`` → ``[Aa]``).

    A text matches the result when some case variant of it matches ``p``, so a folded deny
    or ask rule catches every spelling a case-insensitive filesystem treats as the same name.
    Never fold an allow rule: that widens it.
    """
    folded = tuple(
        Segment(tuple(One(it.chars.fold()) if isinstance(it, One) else it for it in e.items))
        if isinstance(e, Segment)
        else e
        for e in p._elems
    )
    if folded == p._elems:
        return p
    (only,) = _patterns_of(folded)
    return only


def beneath(start: Pattern, floating: Pattern, budget: Budget) -> Pattern | None:
    """``L/**`` ∩ ``/**/R`` as the one pattern ``L/**/R``, when R's first segment matches none of
    L's; None when the shapes differ (the general intersection answers those).

    The commonest intersection a policy asks for: a directory (``/docs/**``) against a name
    denied anywhere (``/**/.env*``, ``/**/secrets/**``). A match of ``/**/R`` has R begin at some
    segment boundary; one inside L would need R's first segment to match a segment of L, so
    every match in both begins R after ``L/``, which is ``L/**/R`` exactly. The pattern is matched
    the same way, without a translation of its own: ``L/`` then ``/**/R`` on the rest.
    """
    head = start._cache["startswith"]
    elems, tail = start._elems, floating._elems
    if (
        head is None
        or elems[0] != Segment(())
        or tail[:2] != (Segment(()), DStar(0))
        or len(tail) < 3
        or not isinstance(tail[2], Segment)
        or not start.text.endswith("/**")
        or not floating.text.startswith("/**/")
    ):
        return None
    first = tail[2].items
    literals = [literal_items(segment.items) for segment in elems[1:-1]]  # type: ignore[union-attr]
    if None in literals:
        return None
    budget.charge(sum(len(text) for text in literals) * len(first))  # type: ignore[arg-type]
    if any(segment_matches(first, text) for text in literals):  # type: ignore[arg-type]
        return None
    joined = parse(start.text + floating.text[3:])
    if joined._elems != elems[:-1] + tail[1:]:
        return None
    joined._cache["beneath"] = (head, floating)
    return joined


def _patterns_of(elems: Elems) -> list[Pattern]:
    """Patterns for canonical elements, each checked to parse back to the same elements."""
    out = []
    for text, part in render(elems):
        for candidate in (text, render(part, escape_all=True)[0][0]):
            if nfc(candidate) == candidate:
                try:
                    pat = parse(candidate)
                except PatternError:
                    continue
                if pat._elems == part:
                    out.append(pat)
                    break
        else:
            raise AlgebraLimit(f"a result cannot be written as a pattern ({text!r} changes under NFC)")
    return out


class PatternSet(Matcher):
    """Many patterns compiled into one automaton: a text is scanned once for all of them.

    ``matching(text)`` gives the indices (into the patterns given) of the patterns that
    match; a pattern given twice is one lane of the automaton.
    """

    def __init__(self, patterns: Sequence[Pattern]) -> None:
        self.patterns = tuple(patterns)
        super().__init__([p._positions() for p in self.patterns], self.patterns)

    def __len__(self) -> int:
        return len(self.patterns)


# ---------------------------------------------------------------------------------------------
# Patterns and concrete values (the values themselves: bgc.core.resources)


def has_dot_segment(pattern_text: str) -> bool:
    """Does the pattern have a ``.`` or ``..`` segment (escaped or as ``[.]`` too)?

    Such a pattern is malformed in a request: no normalised value has those segments, and
    ``/src/../etc`` must not read as if it were under ``/src``. Raises :class:`PatternError`
    when the text is not a pattern at all.
    """
    dot = CharSet.char(".")
    return any(
        isinstance(e, Segment) and 1 <= len(e.items) <= 2 and all(it == One(dot) for it in e.items)
        for e in parse(pattern_text)._elems
    )
