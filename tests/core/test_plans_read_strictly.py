"""Plans are read strictly, at every level, and can be pinned (issue 9, item 7).

A plan is what the gate trusts, so reading one back must refuse anything that is not exactly
what ``bgc compile`` writes: a field it does not know (which the plan id would not cover), a
value outside an enumeration, a pattern that does not parse, a value of the wrong kind, a
missing field. The cases are not listed by hand: a real compiled plan is walked alongside its
documented JSON schema (``docs/plan.schema.json``), and every object, enumerated field, pattern
and typed value in it is broken in turn. An id is no signature (anyone can recompute one), so
broken plans are also re-signed with a correct id: the refusal must come from reading, not
from the id check. Pinning (``--policy``, ``--expect-plan``) is what stops a well-formed plan
compiled from another policy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bgc.core.values import canonical
from bgc.core.values.canonical import format_path
from bgc.core.values.documents import DocumentError, parse_document
from bgc.core.gate import Gate
from bgc.core.values.model import Digest
from bgc.core.plan import PLAN_TAG, PLAN_VERSION, PlanError, plans_from_data
from bgc.core.policy.loader import parse_policy
from tests.samples import PROMPT, bgc, replaced

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "plan.schema.json").read_text(encoding="utf-8"))

POLICY = """\
tool fs.write needs fs:write:{path}
tool net.fetch needs net:connect:{url}
allow fs:write:/src/** because "source"
deny fs:write:/src/secrets/** because "secrets"
ask fs:write:/src/db/** approvals 2 of [alice, bob, carol] because "schema"
ask net:connect:https://api.example.com/**
otherwise ask fs:write:/docs/** because "the rest of the docs"
otherwise deny fs:write:/docs/private/**
allow proc:exec:pytest/** in sandbox because "tests run confined"
"""

ORDER = {
    "intent": {"kind": "patch.apply", "payload": "x"},
    "calls": [
        {"tool": "fs.write", "server": "local", "params": {"path": "/src/a.py"}},
        {"tool": "fs.write", "params": {"path": "/src/db/m.sql"}},
        {"tool": "net.fetch", "server": "local", "params": {"url": "https://api.example.com/v1"}},
        {"tool": "fs.write", "params": {"path": "/etc/passwd"}},
    ],
    "requests": ["fs:write:/**", "net:connect:https://api.example.com/**", "proc:exec:pytest/**"],
    "origin": {"model": "m", "parents": [], "prompt": PROMPT},
}


def compiled(policy_text: str = POLICY, order: dict[str, Any] = ORDER) -> dict[str, Any]:
    from bgc.core.compiler import Compiler
    from bgc.core.values.model import WorkOrder

    return Compiler(parse_policy(policy_text, "p.bgp")).compile(WorkOrder.from_data(order)).to_data()


PLAN = compiled()


def resign(data: dict[str, Any]) -> dict[str, Any]:
    """Give ``data`` the id of its content, as anyone can: ids are digests, not signatures (a
    plan whose id itself was broken keeps it)."""
    if data.get("id") != PLAN["id"]:
        return data
    body = {key: value for key, value in data.items() if key not in ("type", "version", "id")}
    return {**data, "id": str(Digest.of(canonical.envelope(PLAN_TAG, PLAN_VERSION, body)))}


def _resolve(schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    name = None
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = SCHEMA["$defs"][name]
    return schema, name


def nodes(data: Any, schema: dict[str, Any] = SCHEMA, path: tuple[str | int, ...] = ()) -> Iterator[
    tuple[tuple[str | int, ...], Any, dict[str, Any], str | None]
]:
    """Every value in a plan with its path, its schema and the name of the definition it uses."""
    resolved, name = _resolve(schema)
    yield path, data, resolved, name
    if isinstance(data, dict):
        for key, value in data.items():
            yield from nodes(value, resolved["properties"][key], (*path, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from nodes(item, resolved["items"], (*path, index))


def refusal(data: Any) -> PlanError:
    """The library's refusal of ``data``, which must also be a located error at the plan file."""
    with pytest.raises(PlanError) as caught:
        plans_from_data(data)
    with pytest.raises(DocumentError) as located:
        parse_document(json.dumps(data).encode(), "plan.json", "json").build(plans_from_data)
    assert located.value.span is not None and located.value.span.file == "plan.json" and located.value.span.line
    assert located.value.message.startswith(format_path(caught.value.path))
    return caught.value


NODES = list(nodes(PLAN))


def test_the_sample_plan_has_every_kind_of_node() -> None:
    """Otherwise the generated cases below would quietly test less than they claim."""
    names = {name for _, _, _, name in NODES}
    assert {"part", "askPart", "rule", "pattern", "atom", "digest"} <= names
    assert {value["effect"] for _, value, _, name in NODES if name == "rule" and value.get("fallback")} == {"ask", "deny"}
    assert {value["effect"] for _, value, _, name in NODES if name == "rule" and value.get("sandbox")} == {"allow"}
    statuses = {value for path, value, _, _ in NODES if path[-1:] == ("status",)}
    assert statuses == {"covered", "pending", "uncovered"}
    assert {value for path, value, _, _ in NODES if path[-1:] == ("verdict",)} >= {"narrowed", "ask"}
    assert any(path[-2:-1] == ("except",) for path, *_ in NODES)


def test_every_object_of_the_schema_is_closed() -> None:
    def objects(schema: Any) -> Iterator[dict[str, Any]]:
        if isinstance(schema, dict):
            if schema.get("type") == "object":
                yield schema
            for value in schema.values():
                yield from objects(value)

    found = list(objects(SCHEMA))
    assert len(found) >= 8 and all(schema.get("additionalProperties") is False for schema in found)


@pytest.mark.parametrize("signed", [False, True], ids=["original id", "re-signed"])
def test_an_unknown_field_is_refused_at_every_level(signed: bool) -> None:
    objects = [(path, value) for path, value, _, _ in NODES if isinstance(value, dict)]
    assert len(objects) > 20
    for path, value in objects:
        for key, meant in (("x-extra", None), *((name[:-1], name) for name in value)):
            broken = replaced(PLAN, (*path, key), lambda target, last: target.__setitem__(last, 1))
            error = refusal(resign(broken) if signed else broken)
            assert error.path == (*path, key), (path, key, error.message)
            assert f"unknown field {key!r}" in error.message
            if meant is not None:
                assert f"did you mean {meant!r}?" in error.message, error.message


def test_every_enumerated_field_is_checked() -> None:
    enumerated = [(path, value, schema) for path, value, schema, _ in NODES if "enum" in schema]
    assert {path[-1] for path, _, _ in enumerated} == {"verdict", "status", "effect"}
    for path, value, schema in enumerated:
        for bad in ("bogus", value[:-1], value.upper()):
            error = refusal(resign(replaced(PLAN, path, lambda target, last: target.__setitem__(last, bad))))
            assert error.path == path, (path, error.message)
            assert "expected one of: " + ", ".join(schema["enum"]) in error.message
            if bad == value[:-1]:
                assert f"did you mean {value!r}?" in error.message


def test_every_pattern_must_parse_and_is_reported_at_the_plan_file() -> None:
    patterns = [(path, value, name) for path, value, _, name in NODES if name in ("pattern", "atom")]
    assert len(patterns) > 10
    for path, value, name in patterns:
        for bad in ("/src/[", "", "/src/a\\"):
            text = bad if name == "pattern" else ":".join([*value.split(":", 2)[:2], bad])
            error = refusal(resign(replaced(PLAN, path, lambda target, last: target.__setitem__(last, text))))
            assert error.path == path, (path, text, error.message)
            assert "<pattern>" not in error.message


def test_atoms_need_a_resource_and_an_action() -> None:
    atoms = [path for path, _, _, name in NODES if name == "atom"]
    for path in atoms:
        for bad in ("/src/**", "FS:write:/src/**", "fs::/src/**"):
            error = refusal(resign(replaced(PLAN, path, lambda target, last: target.__setitem__(last, bad))))
            assert error.path == path, (path, bad, error.message)


_KINDS: dict[str, Any] = {"object": {}, "array": [], "string": "x", "integer": 7, "boolean": True, "null": None}


def _allowed(schema: dict[str, Any]) -> set[str]:
    if "enum" in schema or "const" in schema:
        first = (schema.get("enum") or [schema.get("const")])[0]
        return {"string"} if isinstance(first, str) else {"boolean"} if isinstance(first, bool) else {"integer"}
    kinds = schema.get("type")
    return set(kinds) if isinstance(kinds, list) else {kinds}


def test_a_value_of_the_wrong_kind_is_refused_where_it_is() -> None:
    """Each value is replaced by one of another kind (a container for a scalar and the other
    container for a container), and every integer also by ``true``, which Python counts as 1."""
    for path, _, schema, _ in NODES:
        if not path or path[0] in ("type", "version"):
            continue  # not a plan at all: refused before any field is read
        allowed = _allowed(schema)
        wrong = [next(kind for kind in ("array", "object", "string") if kind not in allowed)]
        wrong += ["boolean"] if "integer" in allowed else []
        for kind in wrong:
            bad = _KINDS[kind]
            error = refusal(resign(replaced(PLAN, path, lambda target, last: target.__setitem__(last, bad))))
            assert error.path == path, (path, kind, error.message)


def test_only_a_plan_of_this_version_is_read() -> None:
    for field, bad in (("version", True), ("version", 1.0), ("version", 2), ("type", "bgc.WorkOrder"), ("type", None)):
        with pytest.raises(PlanError, match="not a bgc plan|unsupported plan version"):
            plans_from_data(resign({**PLAN, field: bad}))


def test_bounds_and_duplicates_of_the_schema_are_checked() -> None:
    bounded = [(path, schema) for path, _, schema, _ in NODES if "minimum" in schema]
    unique = [(path, value) for path, value, schema, _ in NODES if schema.get("uniqueItems") and value]
    assert {path[-1] for path, _ in bounded} == {"line", "count"} and unique
    for path, schema in bounded:
        error = refusal(resign(replaced(PLAN, path, lambda target, last: target.__setitem__(last, schema["minimum"] - 1))))
        assert error.path == path, error.message
    for path, value in unique:
        error = refusal(resign(replaced(PLAN, path, lambda target, last: target[last].append(value[0]))))
        assert error.path[: len(path)] == path, error.message
    for path, value, _, name in NODES:
        if path[-1:] == ("approvals",) and value["of"]:
            too_many = {"count": len(value["of"]) + 1, "of": value["of"]}
            error = refusal(resign(replaced(PLAN, path, lambda target, last: target.__setitem__(last, too_many))))
            assert error.path == (*path, "count"), error.message


def test_every_required_field_is_required() -> None:
    for path, value, schema, _ in NODES:
        if not isinstance(value, dict):
            continue
        for key in schema["required"]:
            broken = replaced(PLAN, (*path, key), lambda target, last: target.__delitem__(last))
            if not path and key in ("type", "version"):
                with pytest.raises(PlanError):
                    plans_from_data(broken)
                continue
            error = refusal(resign(broken))
            assert error.path == path and f"missing required field {key!r}" in error.message, (path, key, error.message)


def test_a_fallback_is_marked_true_on_an_ask_or_deny_or_not_at_all() -> None:
    """One spelling per content (an id covers the bytes): ``fallback`` is absent or ``true``, and
    never on an allow, since no fallback allows."""
    marked = [path for path, value, _, name in NODES if name == "rule" and value.get("fallback") is True]
    assert {value_at(path)["effect"] for path in marked} == {"ask", "deny"}
    for path in marked:
        for bad in (False, 1, "true", None):
            broken = resign(replaced(PLAN, (*path, "fallback"), lambda target, last: target.__setitem__(last, bad)))
            assert refusal(broken).path == (*path, "fallback")
        allowing = resign(replaced(PLAN, (*path, "effect"), lambda target, last: target.__setitem__(last, "allow")))
        assert refusal(allowing).path == (*path, "fallback")


def test_a_confining_rule_is_marked_true_on_an_allow_or_not_at_all() -> None:
    """``sandbox`` likewise: absent or ``true``, and only on an allow (what confines is a grant)."""
    marked = [path for path, value, _, name in NODES if name == "rule" and value.get("sandbox") is True]
    assert marked
    for path in marked:
        for bad in (False, 1, "true", None):
            broken = resign(replaced(PLAN, (*path, "sandbox"), lambda target, last: target.__setitem__(last, bad)))
            assert refusal(broken).path == (*path, "sandbox")
        asking = resign(replaced(PLAN, (*path, "effect"), lambda target, last: target.__setitem__(last, "ask")))
        assert refusal(asking).path == (*path, "sandbox")
    (read,) = plans_from_data(PLAN)
    granted = [rule for request in read.requests for part in request.granted for rule in part.rules]
    assert [(rule.line, rule.sandbox) for rule in granted] == [(3, False), (9, True)]


def value_at(path: tuple[str | int, ...]) -> Any:
    """The value of the sample plan at ``path``."""
    value: Any = PLAN
    for key in path:
        value = value[key]
    return value


def test_approvals_are_on_ask_parts_only() -> None:
    for path, value, _, name in NODES:
        if name == "part":
            extra = {"count": 1, "of": []}
            error = refusal(resign(replaced(PLAN, (*path, "approvals"), lambda target, last: target.__setitem__(last, extra))))
            assert error.path == (*path, "approvals")


def test_calls_are_read_as_orders_write_them() -> None:
    """A call's tool and server obey the order's rules: a plan cannot smuggle what an order cannot."""
    for path, value, _, _ in NODES:
        if path[:1] == ("calls",) and len(path) == 2:
            for field, bad in (("tool", "fs write"), ("server", ""), ("server", "local\nallow")):
                error = refusal(resign(replaced(PLAN, (*path, field), lambda target, last: target.__setitem__(last, bad))))
                assert error.path == (*path, field), error.message


def test_the_round_trip_still_holds() -> None:
    (plan,) = plans_from_data(PLAN)
    assert plan.to_data() == PLAN
    assert plans_from_data([PLAN, PLAN]) == (plan, plan)


# --- pinning -------------------------------------------------------------------------------------

ROGUE_POLICY = POLICY + "allow fs:write:/** because \"rogue\"\n"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    """A policy, a plan compiled against it, a rogue policy and a plan compiled against that."""
    tmp_path = tmp_path_factory.mktemp("plans")
    (tmp_path / "p.bgp").write_text(POLICY)
    (tmp_path / "rogue.bgp").write_text(ROGUE_POLICY)
    (tmp_path / "order.json").write_text(json.dumps(ORDER))
    for name in ("p", "rogue"):
        result = bgc("compile", str(tmp_path / "order.json"), "-p", str(tmp_path / f"{name}.bgp"), "--format", "json",
                     "-o", str(tmp_path / f"{name}.plan.json"), "--fail-on", "never")
        assert result.exit_code == 0, result.output
    return tmp_path / "p.bgp", tmp_path / "p.plan.json", tmp_path / "rogue.bgp", tmp_path / "rogue.plan.json"


def test_gate_refuses_a_plan_compiled_against_another_policy(written: tuple[Path, Path, Path, Path]) -> None:
    policy, plan, rogue_policy, rogue_plan = written
    ours = parse_policy(POLICY, str(policy)).id()
    theirs = json.loads(rogue_plan.read_text())["policy"]
    assert ours != theirs
    assert bgc("gate", str(plan), "--policy", str(policy), "fs:write:/src/a").exit_code == 0
    refused = bgc("gate", str(rogue_plan), "--policy", str(policy), "fs:write:/etc/passwd")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert ours in refused.stderr and theirs in refused.stderr and str(rogue_plan) in refused.stderr
    assert bgc("gate", str(rogue_plan), "-p", str(rogue_policy), "fs:write:/etc/passwd").exit_code == 0


def test_gate_pins_exact_plan_ids(written: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    _, plan, _, rogue_plan = written
    ours, theirs = (json.loads(path.read_text())["id"] for path in (plan, rogue_plan))
    assert bgc("gate", str(plan), "--expect-plan", ours, "fs:write:/src/a").exit_code == 0
    refused = bgc("gate", str(rogue_plan), "--expect-plan", ours, "fs:write:/etc/passwd")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert ours in refused.stderr and theirs in refused.stderr
    both = tmp_path / "both.json"
    both.write_text(json.dumps([json.loads(plan.read_text()), json.loads(rogue_plan.read_text())]))
    assert bgc("gate", str(both), "--expect-plan", ours, "--expect-plan", theirs, "fs:write:/src/a").exit_code == 0
    one_missing = bgc("gate", str(plan), "--expect-plan", ours, "--expect-plan", theirs, "fs:write:/src/a")
    assert one_missing.exit_code == 2 and theirs in one_missing.stderr and one_missing.stdout == ""
    not_a_digest = bgc("gate", str(plan), "--expect-plan", "sha256:nope", "fs:write:/src/a")
    assert not_a_digest.exit_code == 2 and "--expect-plan" in not_a_digest.stderr


def test_pins_in_the_library() -> None:
    rogue = compiled(ROGUE_POLICY)
    ours = Digest(parse_policy(POLICY, "p.bgp").id())
    (plan,) = plans_from_data(PLAN, expect_policy=ours, expect_plans=[Digest(PLAN["id"])])
    assert Gate([plan]).decide("fs:write:/src/a").effect == "allow"
    with pytest.raises(PlanError) as caught:
        plans_from_data([PLAN, rogue], expect_policy=ours)
    assert caught.value.path == (1, "policy") and str(ours) in caught.value.message and rogue["policy"] in caught.value.message
    with pytest.raises(PlanError) as caught:
        plans_from_data(rogue, expect_plans=[Digest(PLAN["id"])])
    assert caught.value.path == ("id",) and PLAN["id"] in caught.value.message and rogue["id"] in caught.value.message


def test_a_broken_plan_decides_nothing_on_the_command_line(tmp_path: Path) -> None:
    """One case of each class through ``bgc gate``: exit 2, located at the plan file, no output."""
    cases = {
        "unknown field": replaced(PLAN, ("calls", 0, "needs", 0, "x"), lambda t, k: t.__setitem__(k, 1)),
        "enumeration": resign(replaced(PLAN, ("calls", 0, "status"), lambda t, k: t.__setitem__(k, "bogus"))),
        "pattern": resign(replaced(PLAN, ("requests", 0, "granted", 0, "except", 0), lambda t, k: t.__setitem__(k, "/["))),
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data, indent=2))
        result = bgc("gate", str(path), "fs:write:/src/a")
        assert result.exit_code == 2 and result.stdout == "", name
        assert result.stderr.startswith(f"{path}:"), (name, result.stderr)

