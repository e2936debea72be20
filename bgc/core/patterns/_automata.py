"""Finite automata for patterns: linear-time matching, many-pattern sets, bounded decisions.

Internal to :mod:`bgc.core.patterns.glob`. A pattern's elements become a *position automaton*: a row of
positions, each with an optional self-loop set, an optional step set (move to the next
position) and an optional empty move to the next position. A set of positions is a Python
int used as a bitmask, so one text character costs a handful of integer operations however
the pattern is written (``*a*a*a*b`` included), and the subset states are cached lazily as a
DFA (the RE2 approach: build only the states a text or a question actually visits).
Matching a text then costs one dict lookup per character: each cached state keeps a row from
the characters it has seen to the next state's row (bounded; past the bound the atom table
below serves, still linear).

The alphabet is reduced to *atoms*: the intervals of code points between the boundaries the
patterns' character sets draw. Two characters in one atom behave identically in every
pattern involved, so a question over all of Unicode becomes a question over a few dozen
symbols. Questions (emptiness, inclusion, examples) are breadth-first searches over tuples of
lazily built DFA states; every search has a work bound and raises :class:`AlgebraLimit`
rather than run long, and charges its work to the order's budget (:mod:`bgc.core.patterns.budget`).

Hand-written rather than a library (automata-lib, interegular, greenery were measured, see
docs/patterns.md): the bitmask automaton is what gives linear matching anyway, and searching
the product lazily answers most questions after a few states instead of building and
minimising whole automata.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from itertools import chain

from bgc.core.patterns._syntax import ANY, NOSLASH, SLASH, SLASH_SET, CharSet, Elems, Segment, Star
from bgc.core.patterns.budget import AlgebraLimit, Budget

#: Cached DFA states per automaton; a matcher that needs more goes on without caching. A decision
#: may build more while it runs (it has its own bound, MAX_VISITED) and trims the cache after.
MAX_STATES = 20_000
#: Cached character transitions per automaton; past it matching goes on through the atom table.
MAX_ROW_ENTRIES = 65_536
#: Different answers (sets of matching patterns) a pattern set remembers.
MAX_ANSWERS = 4096
#: Automaton steps (product states × atoms × automata) one decision may take before it gives
#: up, so that no single question can stall an order.
MAX_WORK = 2_000_000
#: Automaton states (summed over the automata) one decision may visit before it gives up.
MAX_VISITED = 20_000
#: What a decision is charged, in steps (each about the work of a cached automaton transition):
#: to start, per atom of its alphabet to set it up (a readable representative, a column per
#: automaton), per automaton state it visits to build that state, and per atom of that
#: automaton to compute the state's move.
SEARCH_STEPS = 64
#: Bits of an automaton's state that one step's charge covers (see Automaton.weight).
WEIGHT_BITS = 256
SETUP_STEPS_PER_ATOM = 16
STATE_STEPS = 16
MOVE_STEPS = 8


class _Overflow(Exception):
    """The DFA cache is full (internal; matching goes on without caching)."""


#: (self-loop set, step set, empty moves: 0 none, 1 to the next position, 3 to the next two)
Position = tuple[CharSet | None, CharSet | None, int]


def positions(elems: Elems) -> list[Position]:
    """The position automaton of canonical elements, ending with the (inert) accept position.

    Segments are joined by ``/``; a ``DStar`` that is not last absorbs the ``/`` after it:
    ``DStar(0)`` is ``(.*/)?`` (an empty-move fork that skips or enters ``.*/``) and
    ``DStar(1)`` is ``.*/`` (``.`` meaning any character, ``/`` included); a last ``DStar``
    is ``.*`` (the ``/`` before it belongs to the segment before it, and canonical elements
    never end in ``DStar(0)`` after other segments). A self-loop with an empty move onward is
    ``X*``; that is why ``(.*/)?`` needs its own fork position.
    """
    out: list[Position] = []
    last = len(elems) - 1
    for k, e in enumerate(elems):
        if isinstance(e, Segment):
            for it in e.items:
                out.append((NOSLASH, None, 1) if isinstance(it, Star) else (None, it.chars, 0))
            if k < last:
                out.append((None, SLASH_SET, 0))
        elif k == last:
            out.append((ANY, None, 1))
        else:
            if e.min == 0:
                out.append((None, None, 3))
            out.append((ANY, SLASH_SET, 0))
    out.append((None, None, 0))
    return out


class Automaton:
    """A lazily determinised automaton over one or more position rows laid side by side.

    One row is one pattern; a :class:`Matcher` lays many rows in one bitmask so that a text is
    scanned once for all of them.
    """

    def __init__(self, rows: Sequence[Sequence[Position]]) -> None:
        cuts = {0, SLASH, SLASH + 1}
        by_set: dict[tuple[CharSet, int], list[int]] = {}  # (set, 0 loop / 1 step) -> bits
        eps_bits: list[int] = []
        skip_bits: list[int] = []
        init_bits: list[int] = []
        self.accept_bits: list[int] = []
        base = 0
        for row in rows:
            init_bits.append(base)
            for p, (loop, step, eps) in enumerate(row):
                for kind, cs in ((0, loop), (1, step)):
                    if cs is not None:
                        by_set.setdefault((cs, kind), []).append(base + p)
                if eps:
                    eps_bits.append(base + p)
                if eps == 3:
                    skip_bits.append(base + p)
            base += len(row)
            self.accept_bits.append(base - 1)
        self.width = base
        #: What one step costs relative to a one-pattern automaton's (a step is a few operations
        #: on integers ``width`` bits wide): the budget charges a union of many rows by its width.
        self.weight = 1 + base // WEIGHT_BITS
        for cs, _ in by_set:
            cuts.update(cs.cuts())
        self.cuts = sorted(cuts)
        self._sets = [(cs, kind, _mask(bits, base)) for (cs, kind), bits in by_set.items()]
        self.eps = _mask(eps_bits, base)
        self.skip = _mask(skip_bits, base)
        self.accept = _mask(self.accept_bits, base)
        self._atoms: list[tuple[int, int] | None] = [None] * len(self.cuts)
        self._char_atom: dict[str, int] = {}
        universal = 0
        for cs, kind, m in self._sets:
            if kind == 0 and cs == ANY:
                for p in _bits(m):
                    if self.close(1 << p) & self.accept:
                        universal |= 1 << p
        self.universal_mask = universal
        self._init_mask = self.close(_mask(init_bits, base))
        self._forget_states()

    def _forget_states(self) -> None:
        """Start the state cache afresh: only the dead state (id 0) and the initial one (id 1)."""
        self.masks: list[int] = []
        self.index: dict[int, int] = {}
        self.trans: list[list[int]] = []
        self._char_rows: list[dict[str | None, object]] = []  # see state()
        self._row_entries = 0
        self.accepting: list[bool] = []
        self.universal: list[bool] = []
        self.dead = self.intern(0)
        self._dead_row = self._char_rows[self.dead]
        self.init = self.intern(self._init_mask)

    def trim(self) -> None:
        """Forget the cached states once there are more than MAX_STATES.

        A decision may build more states than matching keeps (it is bounded by its own count,
        which does not depend on what earlier questions cached); this keeps the cache's memory
        bounded between decisions. Only a decision's own state ids are held across its steps.
        """
        if len(self.masks) > MAX_STATES:
            self._forget_states()

    def close(self, m: int) -> int:
        """Add the positions reachable by empty moves."""
        eps, skip = self.eps, self.skip
        while True:
            grown = m | ((m & eps) << 1) | ((m & skip) << 2)
            if grown == m:
                return m
            m = grown

    def atom(self, cp: int) -> int:
        return bisect_right(self.cuts, cp) - 1

    def char_atom(self, ch: str) -> int:
        k = self._char_atom.get(ch)
        if k is None:
            k = self.atom(ord(ch))
            if len(self._char_atom) < 4096:
                self._char_atom[ch] = k
        return k

    def _atom_masks(self, k: int) -> tuple[int, int]:
        masks = self._atoms[k]
        if masks is None:
            rep = self.cuts[k]
            loop = step = 0
            for cs, kind, m in self._sets:
                if rep in cs:
                    if kind:
                        step |= m
                    else:
                        loop |= m
            masks = self._atoms[k] = (loop, step)
        return masks

    def move(self, m: int, k: int) -> int:
        """Positions after reading one character of atom ``k`` from positions ``m``."""
        loop, step = self._atom_masks(k)
        return self.close((m & loop) | ((m & step) << 1))

    def intern(self, m: int, bounded: bool = True) -> int:
        sid = self.index.get(m)
        if sid is None:
            if bounded and len(self.masks) >= MAX_STATES:
                raise _Overflow
            sid = len(self.masks)
            self.index[m] = sid
            self.masks.append(m)
            self.trans.append([-1] * len(self.cuts))
            self._char_rows.append({None: sid})
            self.accepting.append(bool(m & self.accept))
            self.universal.append(bool(m & self.universal_mask))
        return sid

    def step(self, sid: int, k: int, bounded: bool = True) -> int:
        """The state after atom ``k`` from state ``sid``; ``bounded`` raises _Overflow on a full cache."""
        t = self.trans[sid][k]
        if t < 0:
            t = self.trans[sid][k] = self.intern(self.move(self.masks[sid], k), bounded)
        return t

    def state(self, text: str) -> int:
        """The state after reading ``text``, in linear time.

        A state id (>= 0) while the state cache has room; past MAX_STATES the rest of the
        text is read without caching and the result is ``~mask`` (< 0) of the positions
        reached: :meth:`mask` reads both.

        The hot loop is one dict lookup per character: each state's row maps a character
        straight to the next state's row (``None`` maps to the state's id), and the dead
        state ends the scan early. A character a row has not seen yet raises KeyError once
        and is learned through the atom table; once the automaton holds MAX_ROW_ENTRIES
        learned characters, the rest of the text goes through the atom table instead.
        """
        row, dead = self._char_rows[self.init], self._dead_row
        chars = iter(text)
        while True:
            try:
                for ch in chars:
                    row = row[ch]
                    if row is dead:
                        return self.dead
                return row[None]
            except KeyError:
                sid = row[None]
                if self._row_entries >= MAX_ROW_ENTRIES:
                    return self._state_by_atoms(sid, chain((ch,), chars))
                try:
                    t = self.step(sid, self.char_atom(ch))
                except _Overflow:
                    return self._uncached(self.masks[sid], chain((ch,), chars))
                nxt = self._char_rows[t]
                row[ch] = nxt
                row = nxt
                self._row_entries += 1
                if row is dead:
                    return self.dead

    def _state_by_atoms(self, sid: int, chars: Iterator[str]) -> int:
        """Go on from state ``sid`` through the atom table (see :meth:`state`)."""
        trans, dead, char_atom = self.trans, self.dead, self.char_atom
        for ch in chars:
            k = char_atom(ch)
            t = trans[sid][k]
            if t < 0:
                try:
                    t = self.step(sid, k)
                except _Overflow:
                    return self._uncached(self.masks[sid], chain((ch,), chars))
            if t == dead:
                return dead
            sid = t
        return sid

    def _uncached(self, m: int, chars: Iterable[str]) -> int:
        """Go on from positions ``m`` without caching states: ``~mask``, or the dead state."""
        for ch in chars:
            m = self.move(m, self.char_atom(ch))
            if not m:
                return self.dead
        return ~m

    def mask(self, state: int) -> int:
        """The positions of a result of :meth:`state`."""
        return self.masks[state] if state >= 0 else ~state

    def accepts(self, text: str) -> bool:
        """Does the automaton (of one pattern) accept ``text``? Linear time."""
        sid = self.state(text)
        return self.accepting[sid] if sid >= 0 else bool(~sid & self.accept)


def _mask(bits: Sequence[int], width: int) -> int:
    buf = bytearray((width + 8) // 8)
    for b in bits:
        buf[b >> 3] |= 1 << (b & 7)
    return int.from_bytes(buf, "little")


def _bits(m: int):
    while m:
        low = m & -m
        yield low.bit_length() - 1
        m ^= low


class Matcher:
    """Many patterns in one automaton: ``matching(text)`` scans the text once for all of them.

    ``keys`` name the rows (equal keys promise equal rows): rows with equal keys share one
    lane of the bitmask, since a gate's plans repeat the same patterns many times and every
    extra lane makes each new state dearer to build.
    """

    def __init__(self, rows: Sequence[Sequence[Position]], keys: Sequence[Hashable]) -> None:
        lane: dict[Hashable, int] = {}
        distinct: list[Sequence[Position]] = []
        owners: list[list[int]] = []
        for i, (row, key) in enumerate(zip(rows, keys, strict=True)):
            j = lane.setdefault(key, len(distinct))
            if j == len(distinct):
                distinct.append(row)
                owners.append([])
            owners[j].append(i)
        self.auto = Automaton(distinct)
        self._owners = dict(zip(self.auto.accept_bits, owners))
        self._found: dict[int, frozenset[int]] = {}  # final state -> answer
        self._answers: dict[int, frozenset[int]] = {}  # accepted lanes -> answer, shared by states

    def matching(self, text: str) -> frozenset[int]:
        """Indices (into the rows given) of the patterns that match ``text``. Linear time.

        The answer is remembered per final state, so a cached scan ends in one dict lookup;
        states that accept the same lanes share one answer, and at most MAX_ANSWERS
        different answers are kept.
        """
        auto = self.auto
        sid = auto.state(text)
        found = self._found.get(sid)
        if found is None:
            hits = auto.mask(sid) & auto.accept
            found = self._answers.get(hits)
            if found is None:
                found = frozenset(i for b in _bits(hits) for i in self._owners[b])
                if len(self._answers) >= MAX_ANSWERS:
                    return found
                self._answers[hits] = found
            if sid >= 0:
                self._found[sid] = found
        return found


# ---------------------------------------------------------------------------------------------
# Decisions


def _nice_rank(cp: int) -> tuple[int, int]:
    """Order atoms so that examples read well: letters, digits, then other printable text."""
    c = chr(cp)
    if "a" <= c <= "z":
        return (0, cp)
    if "0" <= c <= "9":
        return (1, cp)
    if "A" <= c <= "Z":
        return (2, cp)
    if c in "_-.":
        return (3, cp)
    if c.isprintable() and not 0xD800 <= cp <= 0xDFFF:
        return (4, cp)
    return (5, cp)


def _representative(lo: int, hi: int) -> int:
    """A readable character in ``[lo, hi]``."""
    for cand in (ord("a"), ord("0"), ord("A"), ord("_"), ord("-"), ord("."), 0x21, 0xA1, 0x100):
        if lo <= cand <= hi:
            return cand
    return min(range(lo, min(hi, lo + 64) + 1), key=_nice_rank)


def search(
    autos: Sequence[Automaton],
    bad: Callable[[tuple[int, ...]], bool],
    hopeless: Callable[[tuple[int, ...]], bool],
    budget: Budget,
) -> str | None:
    """A shortest text whose state tuple is ``bad``, or None when there is none.

    Breadth-first over the product of the automata, on the atoms all of them distinguish;
    ``hopeless`` prunes tuples from which no bad tuple can be reached. Raises
    :class:`AlgebraLimit` past the question's own bounds (MAX_WORK steps, MAX_VISITED states)
    and the budget's :class:`~bgc.core.patterns.budget.BudgetExhausted` past the order's.

    The work charged is a function of the question alone, never of what earlier questions left
    in the automata's caches (or plans would depend on them): the setup, one step per
    automaton and atom of each tuple expanded, and for every automaton state the question
    visits the price of building it and its moves cold, whether or not it was cached already.
    For the same reason the state cache's bound does not apply here: the search counts the
    states it visits itself, and trims the caches afterwards.
    """
    cuts = sorted(set().union(*(a.cuts for a in autos)))
    budget.charge(SEARCH_STEPS + len(cuts) * (sum(a.weight for a in autos) + SETUP_STEPS_PER_ATOM))
    reps = [_representative(lo, hi - 1) for lo, hi in zip(cuts, cuts[1:] + [0x110000])]
    order = sorted(range(len(cuts)), key=lambda g: _nice_rank(reps[g]))
    local = [[a.atom(cuts[g]) for g in order] for a in autos]
    start = tuple(a.init for a in autos)
    if bad(start):
        return ""
    if hopeless(start):
        return None
    parent: dict[tuple[int, ...], tuple[tuple[int, ...], int] | None] = {start: None}
    seen: list[set[int]] = [{sid} for sid in start]  # per automaton: what a cold cache would build
    price = [STATE_STEPS + len(a.cuts) * MOVE_STEPS * a.weight for a in autos]
    visited, cold = len(autos), sum(price)
    queue = deque([start])
    work = 0
    room = budget.remaining
    steps = [a.step for a in autos]
    width = range(len(autos))
    per_tuple = len(order) * (1 + sum(a.weight for a in autos))  # one for the tuple of next states
    try:
        while queue:
            state = queue.popleft()
            work += per_tuple
            if work > MAX_WORK or visited > MAX_VISITED or (room is not None and work + cold > room):
                budget.charge(work + cold)  # raises when the order's budget is what ran out
                raise work_limit(work > MAX_WORK)
            for g in range(len(order)):
                nxt = tuple(steps[i](state[i], local[i][g], False) for i in width)
                if nxt in parent:
                    continue
                parent[nxt] = (state, g)
                for i in width:
                    if nxt[i] not in seen[i]:
                        seen[i].add(nxt[i])
                        visited += 1
                        cold += price[i]
                if hopeless(nxt):
                    continue
                if bad(nxt):
                    budget.charge(work + cold)
                    out = []
                    cur: tuple[int, ...] | None = nxt
                    while parent[cur] is not None:
                        cur, gg = parent[cur]  # type: ignore[misc]
                        out.append(chr(reps[order[gg]]))
                    return "".join(reversed(out))
                queue.append(nxt)
    finally:
        for auto in autos:
            auto.trim()
    budget.charge(work + cold)
    return None


def work_limit(steps: bool) -> AlgebraLimit:
    """The limit a search hits: too many automaton steps (``steps``), else too many states."""
    too_much = f"{MAX_WORK} automaton steps" if steps else f"{MAX_VISITED} automaton states"
    return AlgebraLimit(
        f"deciding this needs more than {too_much}; the answer is unknown",
        hint="simplify the patterns involved (fewer '*' and '**')",
    )
