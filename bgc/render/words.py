"""Words in the reports people read: one spelling of a counted noun for every command."""

from __future__ import annotations


def count(number: int, noun: str) -> str:
    """``1 rule``, ``0 rules``, ``3 rules``: the noun agrees with the number (regular plurals)."""
    return f"{number} {noun}" + ("" if number == 1 else "s")
