"""The gate's index of patterns: which of a plan's patterns match a value, found in one pass.

Internal to :mod:`bgc.plan`. Why not one pattern set (one automaton) over every pattern of a
resource and action: a plan compiled from a thousand-rule policy holds hundreds of patterns per
resource, nearly all a literal directory and a short tail (``/p7/src/**``, ``https://h/*``, a
literal file). One automaton over all of them has a state for every prefix of every literal —
thousands, each built on first use from bitmasks thousands of bits wide — so a new gate paid
tens of microseconds a decision until it had met them all, which every one-shot ``bgc gate``
process pays, and held megabytes of states.

Instead each pattern is filed under its *directory*: its literal text up to the last ``/``
before the first wildcard (``/p7/src/`` for ``/p7/src/*.py``; ``""`` when there is no such
``/``). Every text a pattern matches starts with its literal prefix, so a value can only match
patterns filed under one of its own ``/``-prefixes: deciding a value probes one dict entry per
``/`` in it. Under a directory ``D`` the commonest shapes need no automaton — ``D**`` matches
every value that reaches ``D`` (Pattern.matches' own ``startswith``), ``D*`` those with no
``/`` after ``D`` — and a literal pattern is one lookup in a dict of literals. The other
patterns of a directory form one :class:`~bgc.glob.PatternSet`, small because a directory
holds few, and linear in the value like every match.

An answer is a *lane mask*: bit ``i`` set when pattern ``i`` matches. Exact, not a filter: a
lane is set only when its pattern matches the value, by the same rules as
:meth:`bgc.glob.Pattern.matches` (tests compare the two on generated plans and values).
"""

from __future__ import annotations

from collections.abc import Sequence

from bgc import glob

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


class LaneIndex:
    """``hits(value)``: the mask of the patterns (given in lane order) that match ``value``."""

    def __init__(self, patterns: Sequence[glob.Pattern]) -> None:
        self._literals: dict[str, int] = {}
        shaped: dict[str, list[int]] = {}  # directory -> [below mask, last-segment mask]
        others: dict[str, tuple[list[glob.Pattern], list[int]]] = {}
        for lane, pattern in enumerate(patterns):
            bit = 1 << lane
            if pattern.literal is not None:
                self._literals[pattern.literal] = self._literals.get(pattern.literal, 0) | bit
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

    def hits(self, value: str) -> int:
        """The lane mask of ``value`` (a canonical value of the index's resource).

        The value's segments walk the tree from the root (directory ``""``); the node reached
        after ``n`` segments is the directory of the value's first ``n`` segments and their
        ``/``s, and its ``D*`` patterns apply when no ``/`` follows.
        """
        hits = self._literals.get(value, 0)
        segments = value.split("/")
        slashes = len(segments) - 1
        below, last_segment, others, children = self._root
        depth = 0
        while True:
            hits |= below
            if others is not None:
                hits |= others.hits(value)
            if depth == slashes:
                return hits | last_segment
            node = children.get(segments[depth])
            if node is None:
                return hits
            below, last_segment, others, children = node
            depth += 1


_BELOW, _LAST_SEGMENT = 0, 1


def _shape(pattern: glob.Pattern, directory: str) -> int | None:
    """:data:`_BELOW` for ``D**``, :data:`_LAST_SEGMENT` for ``D*``, else None (``directory`` is
    ``D``, the pattern's whole literal prefix). Decided by comparing with the pattern text written
    from ``D``: a pattern spelt another way (needless escapes) is matched by its automaton."""
    written = glob.escape(directory)  # NFC, as pattern texts are: equal texts are equal patterns
    for shape, tail in ((_BELOW, "**"), (_LAST_SEGMENT, "*")):
        if pattern.text == written + tail:
            return shape
    return None
