"""The resource registry is the one place a resource kind is added (bgc.core.resources).

- Every resource that bgc's code treats by name (compares a resource with, normalises a value
  of) has a row in ``RESOURCES``, and every kind a kind module defines is a row: a kind cannot be
  special-cased somewhere without its module and its row.
- A kind made up here, registered by one row and no edit of bgc, has its values canonicalised
  and refused by its own reading, by ``normalise`` and by a compiled policy's gate alike, while
  the checks every value takes still apply; without the row the same resource takes the
  generic rule.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from bgc.core import resources
from bgc.core.gate import Gate
from bgc.core.patterns import glob
from bgc.core.resources import RESOURCES, Rejection, ResourceKind
from tests.core.test_compiler import plan_for

PACKAGE = Path(__file__).resolve().parents[3] / "bgc"

NAMED_BY = ("normalise", "plain_form", "kind_of", "decide_value", "need_value")
"""Functions whose first argument is a resource: a literal one names the resource."""


def _strings(node: ast.expr, constants: dict[str, str]) -> list[str]:
    """The string literals ``node`` is (a constant, a module-level constant's name, or a tuple, set
    or list of them)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.Set, ast.List)) else [node]
    out = []
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        elif isinstance(item, ast.Name) and item.id in constants:
            out.append(constants[item.id])
    return out


def resources_named_in_code() -> dict[str, list[str]]:
    """Each resource bgc's code names, with where: a string a ``resource`` is compared with, or
    the literal first argument of a function of :data:`NAMED_BY`. ``*`` (any resource) is none."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            named: list[str] = []
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(ast.unparse(side).endswith("resource") for side in sides):
                    named = [text for side in sides for text in _strings(side, constants)]
            elif isinstance(node, ast.Call) and node.args and ast.unparse(node.func).split(".")[-1] in NAMED_BY:
                named = _strings(node.args[0], constants)
            for name in named:
                if name != "*":
                    found.setdefault(name, []).append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_every_resource_the_code_names_is_a_row() -> None:
    named = resources_named_in_code()
    assert {"fs", "host", "net", "proc"} <= set(named), named  # the scan sees the gate's, the compiler's, the lints'
    assert {name: where for name, where in named.items() if name not in RESOURCES} == {}


def test_every_kind_a_kind_module_defines_is_a_row() -> None:
    stems = sorted({path.stem for path in (PACKAGE / "core" / "resources").glob("*.py")} - {"__init__", "kind"})
    assert {"fs", "net", "proc"} <= set(stems)
    defined = {
        f"{module.__name__}.{name}": kind
        for module in (importlib.import_module(f"bgc.core.resources.{stem}") for stem in stems)
        for name, kind in vars(module).items()
        if isinstance(kind, ResourceKind)
    }
    rows = list(RESOURCES.values())
    assert sorted(name for name, kind in defined.items() if not any(kind is row for row in rows)) == []


def test_rows_say_which_resources_are_argvs_and_urls() -> None:
    assert resources.ARGV_RESOURCES == {"proc"}
    assert resources.URL_RESOURCES == {"net"}
    assert resources.kind_of("unknown.thing") is resources.OTHER


def _read_table(value: str, case_insensitive: bool) -> str | Rejection:
    """A made-up kind: a table name, read the way the database reads it (case-insensitively)."""
    if not value.replace("_", "").isalnum():
        return Rejection(value, "is not a table name (letters, digits and '_')")
    return value.lower()


TABLE = ResourceKind(read=_read_table, plain="[a-z][a-z0-9_]*")


@pytest.fixture
def table_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RESOURCES, "table", TABLE)


def test_a_made_up_kind_reads_its_values_through_its_row(table_row: None) -> None:
    assert resources.normalise("table", "Orders") == "orders"
    assert resources.normalise("table", "orders") == "orders"
    assert resources.plain_form("table") is TABLE.plain_match
    refused = resources.normalise("table", "orders;drop")
    assert isinstance(refused, Rejection) and refused.reason == "is not a table name (letters, digits and '_')"
    decomposed = resources.normalise("table", "Orde\u0301rs")  # the checks every value takes come first
    assert isinstance(decomposed, Rejection) and decomposed.reason.startswith("is not in Unicode NFC form")
    assert resources.match_value(glob.parse("orders*"), "ORDERS_2024", "table") is True


def test_without_its_row_the_resource_takes_the_generic_rule() -> None:
    assert "table" not in RESOURCES
    assert resources.normalise("table", "Orders") == "Orders"
    assert resources.normalise("table", "orders;drop") == "orders;drop"
    assert resources.normalise("table", "a/../b") == Rejection("a/../b", "has a '..' segment")


def test_a_gate_decides_a_made_up_kind_by_its_row(table_row: None) -> None:
    gate = Gate([plan_for("allow table:read:orders*\ndeny table:read:orders_secret\n", "table:read:**")])
    assert gate.decide("table:read:ORDERS_2024").effect == "allow"
    assert gate.decide("table:read:orders_2024").effect == "allow"
    assert gate.decide("table:read:Orders_Secret").effect == "deny"
    refused = gate.decide("table:read:orders;drop")
    assert refused.effect == "deny" and "is not a table name" in refused.reason
