"""``bgc test -k EXPR``: which cases run, chosen the way pytest's ``-k`` chooses."""

from __future__ import annotations

import re
from collections.abc import Callable

from bgc.errors import UsageError

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


def keyword_filter(expression: str) -> Callable[[str], bool]:
    """pytest's ``-k``: case-insensitive substrings joined by ``and``, ``or``, ``not``, ``( )``."""
    tokens = [match.group(1) for match in _TOKEN.finditer(expression)]
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        token = peek()
        if token is None:
            raise UsageError(f"-k {expression!r}: the expression ends too early")
        position += 1
        return token

    def disjunction() -> Callable[[str], bool]:
        terms = [conjunction()]
        while peek() == "or":
            take()
            terms.append(conjunction())
        return lambda name: any(term(name) for term in terms)

    def conjunction() -> Callable[[str], bool]:
        terms = [negation()]
        while peek() == "and":
            take()
            terms.append(negation())
        return lambda name: all(term(name) for term in terms)

    def negation() -> Callable[[str], bool]:
        if peek() == "not":
            take()
            inner = negation()
            return lambda name: not inner(name)
        token = take()
        if token == "(":
            inner = disjunction()
            if take() != ")":
                raise UsageError(f"-k {expression!r}: expected `)`")
            return inner
        if token in (")", "and", "or"):
            raise UsageError(f"-k {expression!r}: unexpected `{token}`")
        word = token.lower()
        return lambda name: word in name.lower()

    if not tokens:
        return lambda name: True
    selected = disjunction()
    if peek() is not None:
        raise UsageError(f"-k {expression!r}: unexpected `{peek()}`")
    return selected
