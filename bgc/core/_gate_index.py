"""The gate's index of patterns: which of a plan's patterns match a value, found in one pass.

Internal to :mod:`bgc.core.plan`. Why not one pattern set (one automaton) over every pattern of a
resource and action: a plan compiled from a thousand-rule policy holds hundreds of patterns per
resource, nearly all a literal directory and a short tail (``/p7/src/**``, ``https://h/*``, a
literal file). One automaton over all of them has a state for every prefix of every literal —
thousands, each built on first use from bitmasks thousands of bits wide — so a new gate paid
for building states on its decisions until it had met them all, which every one-shot ``bgc gate``
process pays, and held megabytes of states.

Instead each pattern is filed under its *directory*: its literal text up to the last ``/``
before the first wildcard (``/p7/src/`` for ``/p7/src/*.py``; ``""`` when there is no such
``/``). Every text a pattern matches starts with its literal prefix, so a value can only match
patterns filed under one of its own ``/``-prefixes: deciding a value probes one dict entry per
``/`` in it. Under a directory ``D`` the commonest shapes need no automaton — ``D**`` matches
every value that reaches ``D`` (Pattern.matches' own ``startswith``), ``D*`` those with no
``/`` after ``D`` — and a literal pattern is one lookup in a dict of literals. The other
patterns of a directory form one :class:`~bgc.core.patterns.glob.PatternSet`, small because a directory
holds few, and linear in the value like every match.

An answer is a *lane mask*: bit ``i`` set when pattern ``i`` matches. Exact, not a filter: a
lane is set only when its pattern matches the value, by the same rules as
:meth:`bgc.core.patterns.glob.Pattern.matches` (tests compare the two on generated plans and values).

The warm path (:class:`WarmPath`) does the walk in one call of Python's ``re``, which
runs in C. Every directory ``D`` is a prefix of a value exactly when ``D`` is one of the value's
``/``-prefixes, so the directories that are prefixes of a value form a chain and the deepest one
names them all: each :class:`Directory` carries its ``D**`` masks ORed with those of every
directory above it. The regex is the directories as a character trie, so at most one branch can
follow at any character and the greedy choice is the deepest directory — linear, and never
backtracking past the one path (it is atomic). In front of it, a lookahead with the resource's
"already canonical" expression (:attr:`bgc.core.resources.ResourceKind.plain`): a raw value it accepts
is its own canonical form, so one regex call both checks the value and finds its directory; a
value it refuses takes the full reading and the segment walk, exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bgc.core.patterns import glob
from bgc.core import resources

#: Different answers (lane masks) a directory's pattern set remembers, per set.
MAX_REMEMBERED = 4096


class _Others:
    """The patterns of one directory that need an automaton, as one pattern set."""

    __slots__ = ("patterns", "lanes", "masks")

    def __init__(self, patterns: list[glob.Pattern], lanes: list[int]) -> None:
        self.patterns = glob.PatternSet(patterns)
        self.lanes = lanes
        self.masks: dict[frozenset[int], int] = {}  # the set's answer -> its lane mask

    def hits(self, value: str) -> int:
        found = self.patterns.matching(value)
        mask = self.masks.get(found)
        if mask is None:
            mask = 0
            for index in found:
                mask |= self.lanes[index]
            if len(self.masks) < MAX_REMEMBERED:
                self.masks[found] = mask
        return mask


class Directory:
    """A directory of a :class:`LaneIndex`, as :class:`WarmPath` finds it."""

    __slots__ = ("below", "last", "others", "outcomes")

    def __init__(self, below: int, last: int, others: tuple[_Others, ...]) -> None:
        self.below = below
        """The ``D**`` lanes of this directory and of every directory above it."""
        self.last = last
        """The ``D*`` lanes: they hold when no ``/`` follows the directory in the value."""
        self.others = others
        """The pattern sets of this directory and of those above it (each must see the value)."""
        self.outcomes: list = [None, None, None]
        """The index's user keeps its answer per place here (1: no ``/`` follows the directory in
        the value, 2: one does) where the lanes depend on nothing else (no pattern set)."""


#: Deepest nesting of groups in a directory trie regex: Python's regex compiler recurses per
#: group, and a plan whose directories branch deeper than this is walked segment by segment.
MAX_TRIE_NESTING = 200


class LaneIndex:
    """``hits(value)``: the mask of the patterns (given in lane order) that match ``value``."""

    def __init__(self, patterns: Sequence[glob.Pattern]) -> None:
        self.literals: dict[str, int] = {}
        shaped: dict[str, list[int]] = {}  # directory -> [below mask, last-segment mask]
        others: dict[str, tuple[list[glob.Pattern], list[int]]] = {}
        for lane, pattern in enumerate(patterns):
            bit = 1 << lane
            if pattern.literal is not None:
                self.literals[pattern.literal] = self.literals.get(pattern.literal, 0) | bit
                continue
            prefix = pattern.prefix
            directory = prefix[: prefix.rfind("/") + 1]
            masks = shaped.setdefault(directory, [0, 0])
            shape = _shape(pattern, directory) if directory == prefix else None
            if shape is not None:
                masks[shape] |= bit
            else:
                listed = others.setdefault(directory, ([], []))
                listed[0].append(pattern)
                listed[1].append(bit)
        # the directories as a tree of segments: node = [below, last segment, others, children by segment]
        self._root: list = [0, 0, None, {}]
        for directory, (below, last) in shaped.items():
            node = self._root
            for segment in directory.split("/")[:-1] if directory else ():
                node = node[3].setdefault(segment, [0, 0, None, {}])
            node[:3] = below, last, _Others(*others[directory]) if directory in others else None
        self.directories = _directories(self._root)
        """Every directory of the tree by its text."""
        self._top = self.directories[""]
        self._by_head = {text[:-1]: directory for text, directory in self.directories.items() if text}
        """Every directory but the top one by its text without its last ``/``: what ``rpartition`` leaves."""
        self._longest = max(map(len, self.directories))

    def located_hits(self, directory: Directory, place: int, value: str) -> int:
        """The lane mask of ``value``, whose deepest directory is ``directory`` at ``place``."""
        hits = self.literals.get(value, 0) | directory.below
        if place == 1:
            hits |= directory.last
        for others in directory.others:
            hits |= others.hits(value)
        return hits

    def locate(self, value: str) -> tuple[Directory, int]:
        """The deepest directory of ``value`` (the longest of its ``/``-prefixes that is a
        directory, ``""`` when none is) and its place: 1 when no ``/`` follows it, 2 when one does.

        Found by dict probes, no automaton, from the deepest ``/`` a directory could end at up
        towards the root. Directories are prefix-closed along ``/`` (every directory's parent is
        one), so this is the directory the segment walk from the root reaches. Only the first
        probe reads the whole value; every later one a prefix no longer than the plan's longest
        directory: the work is bounded by the value's length plus the plan, whatever the value.
        (``rpartition`` rather than ``rfind``: it takes its argument without parsing a format,
        which is most of what a probe costs.)
        """
        head, place = value, 1
        while True:
            head, slash, _ = head.rpartition("/")
            if not slash:
                return self._top, place
            directory = self._by_head.get(head)
            if directory is not None:
                return directory, place
            if place == 1:  # not the value's own directory: a shorter one, within the longest
                head, place = head[: self._longest], 2

    def hits(self, value: str) -> int:
        """The lane mask of ``value`` (a canonical value of the index's resource)."""
        return self.located_hits(*self.locate(value), value)


_BELOW, _LAST_SEGMENT = 0, 1


def _directories(root: list) -> dict[str, Directory]:
    """Every directory of the tree (the root is ``""``), by its text."""
    out: dict[str, Directory] = {}
    stack = [("", root, 0, ())]
    while stack:
        text, (below, last, others, children), above, sets = stack.pop()
        below |= above
        sets = (*sets, others) if others is not None else sets
        out[text] = Directory(below, last, sets)
        stack += [(text + segment + "/", child, below, sets) for segment, child in children.items()]
    root = out[""]
    out.setdefault("/", Directory(root.below, 0, root.others))  # so that every absolute value has a directory below ""
    return out


class WarmPath:
    """One regex over whole atoms ``resource:action:value`` for every index given, which checks
    that the value is already canonical and finds its deepest directory in one call.

    ``match(atom)`` is None when the atom must take the full path (an unknown resource/action, a
    value not plainly canonical); else ``places[match.lastindex]`` is ``(outcomes, group,
    payload)``: the value's deepest directory is ``match[group]``, the value starts at
    ``match.start(group)``, and its place is ``match.lastindex - group + 1`` (1 when no ``/``
    follows the directory, 2 when one does); ``outcomes`` maps the directory to what it holds at
    that place (:attr:`Directory.outcomes`) where that is all there is to know — not when the
    directory has pattern sets, and never when the index has literal patterns (a value may be one).
    An index whose trie nests too deeply is left out (its atoms take the full path).
    """

    def __init__(self, indices: Sequence[tuple[str, str, LaneIndex, Any]]) -> None:
        alternatives: list[str] = []
        places: list[tuple[dict[str, Any], int, Any] | None] = [None]
        for resource, action, index, payload in indices:
            ways = _alternatives(resource, index.directories)
            if not ways:
                continue
            # names hold no ':', so no key's 'resource:action:' starts another's: one key at most applies
            alternatives.append(f"{re.escape(resource)}:{re.escape(action)}:(?:{'|'.join(ways)})")
            by_place = [
                {} if index.literals else {text: d.outcomes[place] for text, d in index.directories.items() if d.outcomes[place] is not None}
                for place in (1, 2)
            ]  # fmt: skip
            for _ in ways:
                group = len(places)
                places += [(outcomes, group, payload) for outcomes in by_place]
        self.places = places
        self.match: Callable[[str], re.Match[str] | None] = _NEVER
        if alternatives:
            try:
                self.match = re.compile("|".join(alternatives)).match
            except (RecursionError, re.error, OverflowError):
                self.places = [None]


_NEVER = re.compile("(?!)").match


def _alternatives(resource: str, directories: Mapping[str, Directory]) -> list[str]:
    """Regexes for values of ``resource`` (after ``resource:action:``), two groups each: the
    deepest directory, and a ``/`` after it; none when the resource has no plain form or a trie
    nests too deeply.

    With :attr:`~bgc.core.resources.ResourceKind.plain_split`, a trie of the directories that are plain heads, then
    the rest: the deepest head that starts a plain value is its deepest directory, since a longer
    ``/``-prefix of it is a head too. A value no head starts (a URL whose host no directory
    names) is checked whole by a lookahead before a trie of every directory; fs needs no such
    second way, as ``/`` starts every plain path and is always a head and a directory.
    """
    out = []
    kind = resources.kind_of(resource)
    if kind.plain_split is not None:
        head, rest = kind.plain_split
        plain_head = re.compile(head).fullmatch
        heads = sorted(text for text in directories if plain_head(text))
        trie = _trie(heads) if heads else None  # no head: no value can be read this way
        if heads and trie is None:
            return []
        if trie is not None:
            out.append(f"(?>({trie}))(?:{rest})\\Z")
        if plain_head("/"):
            return out
    if kind.plain is not None:
        trie = _trie(sorted(directories))
        if trie is None:
            return []
        out.append(f"(?=(?:{kind.plain})\\Z)(?>({trie}))[^/]*(/)?")
    return out


def _trie(words: list[str]) -> str | None:
    """A regex matching the longest of ``words`` that starts the text: a path-compressed
    character trie, each branch opening with its own character, each word's end an empty last
    alternative (tried after going deeper). None when it nests deeper than MAX_TRIE_NESTING.

    Branches that go on alike are written once (``[ab]/src/`` for ``/a/src/`` and ``/b/src/``,
    ``(?:api|web)/`` for runs): their openings still differ, so at most one can go on, and the
    regex grows with the shapes of the directories, not their number. Its size is what a match
    walks through: a node's branches are tried in turn, each a jump away, so a smaller regex
    touches less memory (a plan of a thousand projects laid out alike is one project's regex).
    """
    root: dict = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # the end of a word

    if not words:
        return "(?!)"  # no word starts any text (an empty trie would match the empty start of every one)

    def written(node: dict, depth: int) -> str | None:
        if depth > MAX_TRIE_NESTING:
            return None
        openings: dict[str, list[str]] = {}  # the regex a branch goes on with -> the runs that open it
        for char, child in node.items():
            if char == "":
                continue
            run = char
            while len(child) == 1 and "" not in child:  # one way on: a literal run, no group
                [(char, child)] = child.items()
                run += char
            rest = written(child, depth + 1)
            if rest is None:
                return None
            openings.setdefault(rest, []).append(run)
        branches = []
        for rest, runs in openings.items():
            singles = [re.escape(run) for run in runs if len(run) == 1]
            ways = [f"[{''.join(singles)}]"] if len(singles) > 1 else singles
            ways += [re.escape(run) for run in runs if len(run) > 1]
            branches.append((f"(?:{'|'.join(ways)})" if len(ways) > 1 else ways[0]) + rest)
        body = "|".join(branches)
        if "" in node:  # an empty alternative, not '?': a repeat costs Python's regex engine far more
            return f"(?:{body}|)" if body else ""
        return f"(?:{body})" if len(branches) > 1 else body

    return written(root, 0)


def _shape(pattern: glob.Pattern, directory: str) -> int | None:
    """:data:`_BELOW` for ``D**``, :data:`_LAST_SEGMENT` for ``D*``, else None (``directory`` is
    ``D``, the pattern's whole literal prefix). Decided by comparing with the pattern text written
    from ``D``: a pattern spelt another way (needless escapes) is matched by its automaton."""
    written = glob.escape(directory)  # NFC, as pattern texts are: equal texts are equal patterns
    for shape, tail in ((_BELOW, "**"), (_LAST_SEGMENT, "*")):
        if pattern.text == written + tail:
            return shape
    return None
