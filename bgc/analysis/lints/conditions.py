"""What the condition lints (BGC106, BGC111) need to know about a ``when`` condition: which
comparisons it is built from, and whether it can hold while requests are compiled."""

from __future__ import annotations

from bgc.core.patterns import glob
from bgc.core.policy.ast import And, Compare, Condition, InList, Matches, Not, Or

PROPOSER_FIELDS = frozenset({"intent.kind", "origin.model"})
"""Condition fields whose values the proposal itself writes: an agent can pick them to pick its grant.
While requests are compiled these are the only known fields (``call.tool`` is unknown), so an allow
whose condition can hold then (BGC106 flags the others) is one the proposer can switch on."""


def leaves(condition: Condition) -> list[Compare | InList | Matches]:
    """The comparisons a condition is built from."""
    if isinstance(condition, (And, Or)):
        return [leaf for item in condition.items for leaf in leaves(item)]
    if isinstance(condition, Not):
        return leaves(condition.item)
    return [condition]


def can_hold_without_a_call(condition: Condition) -> bool:
    """Can the condition be *true* for some order while ``call.tool`` is unknown (compiling)?

    Exact for bgc's conditions: a comparison only distinguishes the values it names, so trying,
    for each field, every value the condition mentions (a matching example for ``matches``) plus
    one it does not mention covers every case. Only a condition that reads ``call.tool`` can fail
    this, so the search runs just for those.
    """
    compared = leaves(condition)
    if all(leaf.field != "call.tool" for leaf in compared):
        return True
    values: dict[str, set[str]] = {"intent.kind": {"\0other"}, "origin.model": {"\0other"}}
    for leaf in compared:
        if leaf.field == "call.tool":
            continue
        if isinstance(leaf, Compare):
            values[leaf.field].add(leaf.value)
        elif isinstance(leaf, InList):
            values[leaf.field].update(leaf.values)
        else:
            found = glob.example(leaf.pattern)
            if found is not None:
                values[leaf.field].add(found)
    kinds, models = sorted(values["intent.kind"]), sorted(values["origin.model"])
    return any(
        condition.evaluate({"intent.kind": kind, "origin.model": model}) is True for kind in kinds for model in models
    )
