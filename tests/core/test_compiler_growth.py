"""The compiler's work on an order past its budget grows with the rules and the requests, not
their squares: once the budget is spent every question is unknown at once, and what is left
(collecting the rules that cut each request) is one step per rule and request. Steps are
counted (tests/work_steps.py), never timed."""

from __future__ import annotations

import itertools

from bgc.core.compiler import Compiler
from bgc.core.policy.loader import parse_policy
from tests.core.test_compiler import order
from tests.work_steps import growth

_fresh = itertools.count()
"""A new name space per policy: the pattern algebra remembers answers between compilations."""

TINY_BUDGET = 2_000
"""Spent within the first request: the rest of the order is decided past the budget."""


def floating(rules: int) -> str:
    """``rules`` allows and as many denies that float over every path (each meets every request)."""
    tag = next(_fresh)
    lines = [f"allow fs:write:/**/a{tag}x{i}/**" for i in range(rules)]
    lines += [f"deny fs:write:/**/d{tag}x{i}/**" for i in range(rules)]
    return "\n".join(lines) + "\n"


def over_budget(rules: int, requests: int) -> None:
    compiler = Compiler(parse_policy(floating(rules), "p.bgp"), order_budget=TINY_BUDGET)
    plan = compiler.compile(order(*(f"fs:write:/**/x{i}/**" for i in range(requests))))
    assert all(request.unknown for request in plan.requests)


def test_an_order_past_its_budget_grows_linearly_with_the_rules() -> None:
    assert growth(lambda n: over_budget(n, 10), 200) <= 2.5


def test_an_order_past_its_budget_grows_linearly_with_the_requests() -> None:
    assert growth(lambda n: over_budget(100, n), 100) <= 2.5
