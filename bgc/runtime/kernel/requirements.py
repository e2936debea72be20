"""Whether several approval requirements, all met at once, guarantee another one.

A value inside several ask parts (overlapping ask rules) needs every part's requirement met by
one set of people, each person counting towards every requirement that admits them. Proving a
child token narrower than its parent therefore asks, for each part of an overlap: does every
set of people that meets *all* the child's requirements there also meet each of the parent's?
:meth:`bgc.core.plan.Approvals.implies` answers it for one requirement against one; a
conjunction can imply what none of its members implies alone (``1 of [lead]`` and ``1 of
[qa]`` together guarantee ``2 of [lead, qa]``).

The question is a set cover: the fewest people inside the wanted list ``T`` that can meet every
requirement (people outside ``T`` cost nothing, and unnamed people meet any requirement that
names nobody). The conjunction implies ``k of T`` exactly when no choice of ``k - 1`` people of
``T`` (with everyone outside ``T`` added) meets it. The choices are enumerated; past
:data:`MAX_CHOICES` the answer is "not proven", which the caller treats as "does not imply".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from bgc.core.plan import Approvals

MAX_CHOICES = 4096
"""Sets of people examined for one question before it is answered "not proven"."""


class NotProven(Exception):
    """The question needs more than :data:`MAX_CHOICES` sets of people examined."""


def conjunction_implies(requirements: Sequence[Approvals], other: Approvals) -> bool:
    """Whether every set of people meeting all of ``requirements`` meets ``other``.

    Raises :class:`NotProven` past the bound. An empty ``requirements`` is met by nobody at
    all, so it implies nothing.
    """
    named = [requirement for requirement in requirements if requirement.approvers]
    anyone = max((requirement.count for requirement in requirements if not requirement.approvers), default=0)
    if not other.approvers:
        # everyone costs: the fewest people meeting the named requirements, or the largest
        # unnamed count, whichever is more (unnamed people fill an unnamed requirement)
        if anyone >= other.count:
            return True
        wanted = sorted({name for requirement in named for name in requirement.approvers})
        residual = [(requirement.count, frozenset(requirement.approvers)) for requirement in named]
        return not _met_by_fewer(wanted, residual, other.count)
    wanted_set = frozenset(other.approvers)
    # people outside the wanted list are free: every one of them is taken
    residual = [
        (
            requirement.count - len(set(requirement.approvers) - wanted_set),
            frozenset(requirement.approvers) & wanted_set,
        )
        for requirement in named
    ]
    candidates = sorted({name for count, names in residual if count > 0 for name in names})
    return not _met_by_fewer(candidates, residual, other.count)


def _met_by_fewer(candidates: Sequence[str], residual: Sequence[tuple[int, frozenset[str]]], count: int) -> bool:
    """Whether some ``count - 1`` of ``candidates`` (or all of them, when fewer) meet every
    ``(needed, among)`` pair. Adding people never unmeets a requirement, so checking the one
    size is enough."""
    size = min(count - 1, len(candidates))
    if math.comb(len(candidates), size) > MAX_CHOICES:
        raise NotProven(f"{len(candidates)} approvers to choose {size} from")
    for chosen in itertools.combinations(candidates, size):
        people = frozenset(chosen)
        if all(len(people & among) >= needed for needed, among in residual):
            return True
    return False
