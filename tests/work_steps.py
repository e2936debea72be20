"""Counting work without a clock: the Python steps (calls and lines) a function takes.

A bound on how work grows ("twice the input, at most about twice the work") is tested by counting
the interpreter's trace events, which are the same on every machine and every load, rather than
by timing (which would fail a correct test on a busy machine). Work done inside C (a regular
expression, a parser written in C) is one step: code whose growth is in question keeps that work
in Python or in operations linear in their input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def steps(work: Callable[[], Any]) -> int:
    """How many call and line events ``work()`` runs, in every Python frame it enters. ``work``
    is run once untraced first, so a cache it fills (compiled patterns, imports) is not counted."""
    work()
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Callable[..., Any]:
        nonlocal count
        count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        work()
    finally:
        sys.settrace(previous)
    return count


def growth(work: Callable[[int], Any], size: int) -> float:
    """How many times the steps of ``work(2 * size)`` are those of ``work(size)``: about 2 for
    work linear (or n log n) in the size, about 4 for work quadratic in it."""
    return steps(lambda: work(2 * size)) / steps(lambda: work(size))
