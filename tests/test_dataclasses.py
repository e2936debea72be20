"""bgc.core.values._dataclasses against the standard library's dataclasses: the same class, made by each from
the same generated definition, must behave the same wherever bgc (or a test of it) could tell:
construction and its errors, repr, equality, hashing, ordering, freezing, slots, pickling,
``__match_args__``, the generated ``__doc__``, and the standard functions (``fields``,
``replace``, ``asdict``, ``is_dataclass``, ``__dataclass_params__``)."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.values import _dataclasses

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("a", "b", "name", "value", "other", "self", "cls", "items")
FACTORIES: dict[str, Any] = {}
"""One factory per value, shared by both classes made from a definition (their fields show it)."""
VALUES = st.one_of(st.integers(-3, 3), st.text("xy", max_size=2), st.tuples(st.integers(0, 2)), st.none())


@st.composite
def class_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A class definition: its fields (name, annotation, default kind, repr, compare) and options."""
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=5))
    fields = [
        {
            "name": name,
            "type": draw(st.sampled_from(["int", "str | None", "tuple[int, ...]", int, "Any"])),
            "default": draw(st.sampled_from(["none", "value", "factory", "field-value"])),
            "value": draw(VALUES),
            "repr": draw(st.booleans()),
            "compare": draw(st.booleans()),
        }
        for name in names
    ]
    return {
        "fields": fields,
        "frozen": draw(st.booleans()),
        "slots": draw(st.booleans()),
        "order": draw(st.booleans()),
        "doc": draw(st.sampled_from([None, "Says why."])),
        "post_init": draw(st.booleans()),
        "explicit_eq": draw(st.booleans()),
        "explicit_hash": draw(st.booleans()),
        "base": draw(st.sampled_from([None, "slots", "empty slots"])),
    }


class _HoldsSlots:
    """A plain base holding two of the fields' slots (a slotted dataclass makes only the others)."""

    __slots__ = ("a", "name")


class _NoSlots:
    """A plain base with no slots of its own (a slotted dataclass below it has no ``__dict__``)."""

    __slots__ = ()


_BASES = {None: (), "slots": (_HoldsSlots,), "empty slots": (_NoSlots,)}


def make(module: Any, spec: dict[str, Any]) -> type:
    """The class ``spec`` describes, made by ``module``'s decorator and ``field``."""
    namespace: dict[str, Any] = {"__annotations__": {}, "__module__": __name__, "__qualname__": "Made"}
    if spec["doc"] is not None:
        namespace["__doc__"] = spec["doc"]
    for item in spec["fields"]:
        namespace["__annotations__"][item["name"]] = item["type"]
        value = item["value"]
        if item["default"] == "value":
            namespace[item["name"]] = value
        elif item["default"] == "factory":
            namespace[item["name"]] = module.field(
                default_factory=FACTORIES.setdefault(repr(value), lambda value=value: [value]),
                repr=item["repr"],
                compare=item["compare"],
            )
        elif item["default"] == "field-value":
            namespace[item["name"]] = module.field(default=value, repr=item["repr"], compare=item["compare"])
        else:
            namespace[item["name"]] = module.field(repr=item["repr"], compare=item["compare"])
    if spec["post_init"]:
        namespace["__post_init__"] = lambda self: None
    if spec["explicit_eq"]:
        namespace["__eq__"] = lambda self, other: self is other
    if spec["explicit_hash"]:
        namespace["__hash__"] = lambda self: 7
    cls = type("Made", _BASES[spec["base"]], namespace)
    return module.dataclass(frozen=spec["frozen"], slots=spec["slots"], order=spec["order"])(cls)


def outcome(function: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """What calling ``function`` did: its value, or its exception's type and message."""
    try:
        return "value", function(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the very thing compared
        return type(error).__name__, str(error)


def arguments(spec: dict[str, Any], shift: int) -> dict[str, Any]:
    return {item["name"]: (shift, item["name"]) for item in spec["fields"] if item["default"] == "none" or shift % 2}


def behaviour(cls: type, spec: dict[str, Any]) -> list[Any]:
    """Everything observable about ``cls`` and a few instances of it, as comparable values."""
    seen: list[Any] = [
        cls.__doc__, cls.__match_args__, getattr(cls, "__slots__", None), "__dict__" in dir(cls), cls.__hash__ is None,
        [repr(f) for f in dataclasses.fields(cls)], repr(cls.__dataclass_params__), dataclasses.is_dataclass(cls),
        cls.__init__.__annotations__, cls.__init__.__qualname__, cls.__repr__.__qualname__,
    ]  # fmt: skip
    made = [outcome(cls, **arguments(spec, shift)) for shift in range(3)]
    seen.append([(kind, repr(value) if kind == "value" else value) for kind, value in made])
    seen.append(outcome(cls, *range(len(spec["fields"]) + 1)))  # one argument too many
    instances = [value for kind, value in made if kind == "value"]
    globals()["Made"] = cls  # where pickle looks the class up
    for x in instances:
        seen += [dataclasses.asdict(x), repr(dataclasses.replace(x)), outcome(hash, x)]
        if spec["frozen"] or not spec["slots"]:  # a refusal too (both refuse a frozen class's inherited slot)
            kind, copy = outcome(lambda x=x: pickle.loads(pickle.dumps(x)))
            seen += [kind, copy] if kind != "value" else [repr(copy), dataclasses.asdict(copy) == dataclasses.asdict(x)]
        for y in instances:
            seen += [x == y, x != y]
            if spec["order"]:
                seen += [outcome(lambda a, b: (a < b, a <= b, a > b, a >= b), x, y)]
    for x in instances:  # last: these change an unfrozen instance
        seen += [outcome(setattr, x, name, 1) for name in (*(item["name"] for item in spec["fields"]), "unknown")]
        seen += [outcome(delattr, x, item["name"]) for item in spec["fields"]]
    return seen


@settings(max_examples=300, deadline=None)
@given(class_specs())
def test_a_class_made_here_behaves_as_the_standard_decorator_makes_it(spec: dict[str, Any]) -> None:
    standard = outcome(make, dataclasses, spec)
    ours = outcome(make, _dataclasses, spec)
    assert standard[0] == ours[0], (standard, ours)
    if standard[0] != "value":
        # the same refusal, in the same words as Python 3.11 and 3.12 (3.13 words a default that
        # comes first differently: its type is what is compared there)
        assert standard == ours or sys.version_info >= (3, 13), (standard, ours)
        return
    assert behaviour(ours[1], spec) == behaviour(standard[1], spec)


@settings(max_examples=200, deadline=None)
@given(class_specs(), st.data())
def test_replace_here_is_the_standard_replace(spec: dict[str, Any], data: st.DataObject) -> None:
    made = outcome(make, _dataclasses, spec)
    if made[0] != "value":
        return
    cls = made[1]
    built = outcome(cls, **arguments(spec, 1))
    if built[0] != "value":
        return
    names = [item["name"] for item in spec["fields"]]
    changes = data.draw(st.dictionaries(st.sampled_from([*names, "unknown"]), VALUES, max_size=3))
    for x in (built[1], cls):  # an instance, and a class (refused by both)
        before = outcome(_dataclasses.replace, x, **changes)  # the standard fields not made yet
        standard = outcome(dataclasses.replace, x, **changes)  # which makes them
        after = outcome(_dataclasses.replace, x, **changes)
        assert (before[0], repr(before[1])) == (standard[0], repr(standard[1])) == (after[0], repr(after[1]))
    if not spec["explicit_eq"]:
        assert _dataclasses.replace(built[1]) == built[1]


def test_a_mutable_default_and_an_unannotated_field_are_refused_as_the_standard_decorator_refuses_them() -> None:
    for module in (dataclasses, _dataclasses):
        with pytest.raises(ValueError, match="mutable default"):
            module.dataclass(type("Mutable", (), {"__annotations__": {"a": "list"}, "a": [], "__module__": __name__}))
        with pytest.raises(TypeError, match="is a field but has no type annotation"):
            module.dataclass(type("Bare", (), {"__annotations__": {}, "a": module.field(), "__module__": __name__}))


def test_what_it_does_not_support_is_refused_not_half_made() -> None:
    with pytest.raises(TypeError, match="ClassVar"):
        _dataclasses.dataclass(type("C", (), {"__annotations__": {"a": "ClassVar[int]"}, "__module__": __name__}))
    base = _dataclasses.dataclass(type("Base", (), {"__annotations__": {"a": "int"}, "__module__": __name__}))
    with pytest.raises(TypeError, match="inheriting from a dataclass"):
        _dataclasses.dataclass(type("Child", (base,), {"__annotations__": {"b": "int"}, "__module__": __name__}))


def test_making_a_class_imports_no_dataclasses_or_inspect_until_a_standard_function_asks() -> None:
    probe = (
        "import sys\nfrom bgc.core.values._dataclasses import dataclass\n"
        "@dataclass(frozen=True, slots=True)\nclass C:\n    a: int\n    b: str = 'x'\n"
        "import pickle\nassert pickle.loads(pickle.dumps(C(1))) == C(1) and repr(C(1)) == \"C(a=1, b='x')\"\n"
        "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))\n"
        "import dataclasses\nprint([f.name for f in dataclasses.fields(C)], dataclasses.is_dataclass(C(1)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.splitlines() == ["[]", "['a', 'b'] True"]


def test_the_ahead_compiled_methods_hold_every_class_of_bgc() -> None:
    """bgc/core/values/_dataclass_methods*.py are current, each tier holding what its cold commands make
    (else a cold process compiles the missing classes, or loads a later tier: correct, but
    slower). Rewrite them with ``python tests/dataclass_methods.py``."""
    probe = ("import sys; sys.path.insert(0, 'tests'); import dataclass_methods as d; "
             "print(all(path.read_text() == text for path, text in d.texts()))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "True", (
        "bgc/core/values/_dataclass_methods*.py are out of date: run python tests/dataclass_methods.py"
    )


def test_a_cold_gate_loads_only_the_first_tier_of_methods(tmp_path: Path) -> None:
    """The point of the tiers: a cold ``bgc gate`` finds every class it makes in the first file
    and never imports the others (which hold four fifths of bgc's classes)."""
    plan = tmp_path / "plan.json"
    env = {**os.environ, "BGC_CACHE_DIR": ""}
    subprocess.run([sys.executable, "-m", "bgc", "compile", "examples/orders/overreach.yaml", "-p", "policies/default.bgp",
                    "--format", "json", "-o", str(plan), "--fail-on", "never"], env=env, cwd=ROOT, check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    probe = ("import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', *sys.argv[1:]]\ntry:\n    main()\nfinally:\n"
             "    print('LOADED', sorted(m for m in sys.modules if m.startswith('bgc.core.values._dataclass_methods')), file=sys.stderr)\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe, "gate", str(plan), "fs:write:/src/parse.py"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.stdout.startswith("allow"), done
    assert "LOADED ['bgc.core.values._dataclass_methods']" in done.stderr, done.stderr


def test_an_entry_is_used_only_for_the_key_it_was_compiled_from() -> None:
    """Each entry's function is what the text written from its key compiles to, so the entry a
    class's key finds is the class's own methods (and a key no entry has is compiled at import)."""
    from bgc.core.values import _dataclass_methods, _dataclass_methods_hook, _dataclass_methods_rest

    tables = (_dataclass_methods.METHODS, _dataclass_methods_hook.METHODS, _dataclass_methods_rest.METHODS)
    keys = [key for table in tables for key in table]
    assert len(keys) == len(set(keys))  # no class in two tiers
    for table in tables:
        for key, create in table.items():
            namespace: dict[str, Any] = {}
            exec(_dataclasses.methods_source(key), namespace)  # noqa: S102 - the generated file's own keys
            assert _shape(create.__code__) == _shape(namespace["__create_fn__"].__code__)


def _shape(code: Any) -> tuple[Any, ...]:
    """A code object as what it does: its bytecode, names and constants, nested functions
    included (line numbers and the file name aside: the entry was compiled in another file)."""
    consts = tuple(_shape(const) if hasattr(const, "co_code") else const for const in code.co_consts)
    return code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, consts
