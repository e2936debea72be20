"""bgc's value classes: the classes :func:`dataclasses.dataclass` makes, without its start-up cost.

Why: a hook runs in a fresh process before every tool call an agent makes, and the modules it
needs define some thirty frozen dataclasses. On Python 3.11 the standard decorator compiles each
generated method with its own ``exec`` (about 0.7 ms a class) and ``import dataclasses`` loads
``inspect`` (with ``ast``, ``dis``, ``tokenize``): together about a third of a cold hook on a
plain install. This decorator writes a class's methods as one source text and imports nothing;
the text of every class of bgc is compiled ahead (bgc/core/values/_dataclass_methods*.py, whose bytecode
Python caches), so a cold process compiles none of them.

What a class gets is what the standard decorator gives it for the options bgc uses (``order``,
``frozen``, ``slots``; :func:`field` with ``default``, ``default_factory``, ``repr``,
``compare``): the same ``__init__`` (with ``__post_init__``), ``__repr__`` (recursion-safe),
``__eq__``, ordering, ``__hash__`` (by the standard table), ``__setattr__``/``__delattr__``
raising :class:`dataclasses.FrozenInstanceError`, ``__match_args__``, ``__slots__``, the
pickled state of a frozen slotted class, and the generated ``__doc__``. ``dataclasses.fields``,
``replace``, ``is_dataclass`` and ``asdict`` work on it: its ``__dataclass_fields__`` and
``__dataclass_params__`` are the standard objects, made (importing :mod:`dataclasses`) the first
time anything asks for them; :func:`replace` here is the standard one without that import.
Anything else (``ClassVar``, ``InitVar``, ``KW_ONLY``, inheriting
from a dataclass) is refused when the class is made, not half-supported.
tests/test_dataclasses.py compares the two decorators on generated classes.
"""

from __future__ import annotations

import abc
import sys
from _thread import get_ident

TYPE_CHECKING = False  # not typing's: the point of this module is to import nothing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""No default (bgc's own marker; the standard ``dataclasses.MISSING`` stands in for it in the
standard field objects)."""


class _Factory:
    """The ``__init__`` default that means "call the field's factory" (shown as ``<factory>``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_HAS_DEFAULT_FACTORY = _Factory()

_UNSUPPORTED_TYPES = ("ClassVar", "InitVar", "KW_ONLY")


class FieldSpec:
    """What ``name: type = field(...)`` asks of one field (:func:`field`)."""

    __slots__ = ("compare", "default", "default_factory", "name", "repr", "type")

    def __init__(self, default: Any, default_factory: Any, repr: bool, compare: bool) -> None:
        self.default, self.default_factory, self.repr, self.compare = default, default_factory, repr, compare
        self.name: str = ""
        self.type: Any = None


def field(*, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True, compare: bool = True) -> Any:
    """A field's default, default factory, and whether it is shown in ``repr`` and compared
    (and hashed), as :func:`dataclasses.field`."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return FieldSpec(default, default_factory, repr, compare)


def dataclass(cls: type | None = None, /, *, order: bool = False, frozen: bool = False, slots: bool = False) -> Any:
    """A class decorator making what ``dataclasses.dataclass`` with the same options makes."""

    def wrap(cls: type) -> type:
        return _process_class(cls, order, frozen, slots)

    return wrap if cls is None else wrap(cls)


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of ``obj`` with ``changes``, as :func:`dataclasses.replace` makes it for a class of
    this module (every field is an ``__init__`` argument), without importing :mod:`dataclasses`."""
    for klass in type(obj).__mro__:
        declared = klass.__dict__.get("__dataclass_fields__")
        if declared is not None:
            break
    else:
        raise TypeError("replace() should be called on dataclass instances")
    names = [spec.name for spec in declared.specs] if isinstance(declared, _StandardView) else list(declared)
    return obj.__class__(**{**{name: getattr(obj, name) for name in names}, **changes})


def _fields_of(cls: type) -> list[FieldSpec]:
    """The class's fields, in order, from its own annotations (and the defaults beside them)."""
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"{cls.__name__}: bgc.core.values._dataclasses does not support inheriting from a dataclass")
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - inspect is what this module avoids
    specs: list[FieldSpec] = []
    for name, annotation in annotations.items():
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
        if any(word in text for word in _UNSUPPORTED_TYPES):
            raise TypeError(f"{cls.__name__}.{name}: bgc.core.values._dataclasses does not support {text}")
        value = cls.__dict__.get(name, MISSING)
        spec = value if isinstance(value, FieldSpec) else FieldSpec(value, MISSING, True, True)
        spec.name, spec.type = name, annotation
        if spec.default is not MISSING and type(spec.default).__hash__ is None:
            raise ValueError(
                f"mutable default {type(spec.default)} for field {name} is not allowed: use default_factory"
            )
        specs.append(spec)
    for name, value in cls.__dict__.items():
        if isinstance(value, FieldSpec) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    return specs


def _tuple(owner: str, names: list[str]) -> str:
    """``(owner.a,owner.b,)``: the fields a method compares or hashes, as the standard one writes them."""
    return "(" + "".join(f"{owner}.{name}," for name in names) + ")"


REQUIRED, DEFAULT, FACTORY = 0, 1, 2
"""How a field gets its value when ``__init__`` is not given one (a field of a :data:`MethodsKey`)."""

if TYPE_CHECKING:
    MethodsKey = tuple[tuple[tuple[str, int, bool, bool], ...], bool, bool, bool, bool]
    """``((name, REQUIRED|DEFAULT|FACTORY, repr, compare) per field, order, frozen, post_init, hashed)``."""


def _methods_key(specs: list[FieldSpec], order: bool, frozen: bool, post_init: bool, hashed: bool) -> MethodsKey:
    """Everything a class's generated methods depend on, as one hashable value: the methods'
    source is a function of it (:func:`methods_source`), so it keys the methods compiled ahead
    exactly as that text would, and it is several times cheaper to make than the text (a
    cold hook makes some seventy classes)."""
    fields = []
    seen_default = False
    for spec in specs:
        if spec.default is MISSING and spec.default_factory is MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {spec.name!r} follows default argument")
            kind = REQUIRED
        else:
            seen_default = True
            kind = DEFAULT if spec.default_factory is MISSING else FACTORY
        fields.append((spec.name, kind, spec.repr, spec.compare))
    return tuple(fields), order, frozen, post_init, hashed


def method_names(key: MethodsKey) -> list[str]:
    """The names of the methods :func:`methods_source`'s function returns, in order."""
    _, order, _, _, hashed = key
    return ["__init__", "__repr__", "__eq__", *(("__lt__", "__le__", "__gt__", "__ge__") if order else ()),
            *(("__hash__",) if hashed else ())]  # fmt: skip


def methods_source(key: MethodsKey) -> str:
    """The source of one function returning the generated methods of a class with ``key``."""
    fields, order, frozen, post_init, hashed = key
    names = [name for name, _, _, _ in fields]
    self_name = "__dataclass_self__" if "self" in names else "self"
    params, body = [self_name], []
    for name, kind, _, _ in fields:
        if kind == REQUIRED:
            params.append(name)
            value = name
        elif kind == DEFAULT:
            params.append(f"{name}=_dflt_{name}")
            value = name
        else:
            params.append(f"{name}=_HAS_DEFAULT_FACTORY")
            value = f"_dflt_{name}() if {name} is _HAS_DEFAULT_FACTORY else {name}"
        body.append(
            f"  __dataclass_builtins_object__.__setattr__({self_name},{name!r},{value})"
            if frozen else f"  {self_name}.{name}={value}"
        )  # fmt: skip
    if post_init:
        body.append(f"  {self_name}.__post_init__()")
    shown = ", ".join(f"{name}={{self.{name}!r}}" for name, _, shown, _ in fields if shown)
    lines = [f" def __init__({', '.join(params)}):", *(body or ["  pass"]),
             " def __repr__(self):", f'  return self.__class__.__qualname__ + f"({shown})"']  # fmt: skip
    compared = [name for name, _, _, compare in fields if compare]
    mine, theirs = _tuple("self", compared), _tuple("other", compared)
    comparisons = [("__eq__", "==")] + (
        [("__lt__", "<"), ("__le__", "<="), ("__gt__", ">"), ("__ge__", ">=")] if order else []
    )
    for name, op in comparisons:
        lines += [f" def {name}(self, other):", "  if other.__class__ is self.__class__:",
                  f"   return {mine}{op}{theirs}", "  return NotImplemented"]  # fmt: skip
    if hashed:
        lines += [" def __hash__(self):", f"  return hash({mine})"]
    defaults = "".join(f", _dflt_{name}" for name, kind, _, _ in fields if kind != REQUIRED)
    head = f"def __create_fn__(cls, __dataclass_builtins_object__, _HAS_DEFAULT_FACTORY{defaults}):\n"
    return head + "\n".join(lines) + f"\n return ({', '.join(method_names(key))},)\n"


MADE: dict[MethodsKey, None] = {}
"""The key of every class's methods made in this process, in order (tests/dataclass_methods.py
writes bgc/core/values/_dataclass_methods*.py from them, and a test checks that they hold them all)."""


_PRECOMPILED = ("bgc.core.values._dataclass_methods", "bgc.core.values._dataclass_methods_hook", "bgc.core.values._dataclass_methods_rest")
"""The modules of methods compiled ahead, in the order they are asked (tests/dataclass_methods.py
writes them: first the classes a cold ``bgc gate`` makes, then those a cold hook adds, then the
others), each imported only when the ones before it lack a class."""


def _precompiled(key: MethodsKey) -> Callable[..., tuple[Callable[..., Any], ...]] | None:
    """The class's methods compiled ahead (Python caches the modules' bytecode like any other's),
    by the key their source was written from (:func:`methods_source`): a class whose key differs
    from every entry's is compiled as usual, so an entry can never be used for a class it was not
    written for; an out-of-date (or missing) file only costs the time it saves."""
    for name in _PRECOMPILED:
        table = _TABLES.get(name)
        if table is None:
            try:
                __import__(name)
                table = sys.modules[name].METHODS
            except ImportError:
                table = {}
            _TABLES[name] = table
        create = table.get(key)
        if create is not None:
            return create
    return None


_TABLES: dict[str, dict[MethodsKey, Callable[..., tuple[Callable[..., Any], ...]]]] = {}
"""Each of :data:`_PRECOMPILED`'s tables once imported."""


def _process_class(cls: type, order: bool, frozen: bool, slots: bool) -> type:
    """``cls`` with its methods, in the standard decorator's order of steps (and its refusals)."""
    specs = _fields_of(cls)
    class_hash = cls.__dict__.get("__hash__", MISSING)
    has_explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    for spec in specs:  # a field() leaves its plain default as the class's attribute, as the standard decorator does
        if isinstance(cls.__dict__.get(spec.name), FieldSpec):
            if spec.default is MISSING:
                delattr(cls, spec.name)
            else:
                setattr(cls, spec.name, spec.default)
    hashed = frozen and not has_explicit_hash
    key = _methods_key(specs, order, frozen, hasattr(cls, "__post_init__"), hashed)
    create = _precompiled(key)
    if create is None:  # a class bgc/core/values/_dataclass_methods*.py do not hold (yet): compiled here, as it always could be
        namespace: dict[str, Any] = {}
        exec(methods_source(key), namespace)  # noqa: S102 - our own text, made of the fields' names (identifiers) alone
        create = namespace["__create_fn__"]
    MADE[key] = None
    defaults = [spec.default if spec.default_factory is MISSING else spec.default_factory
                for spec in specs if spec.default is not MISSING or spec.default_factory is not MISSING]  # fmt: skip
    methods = dict(zip(method_names(key), create(cls, object, _HAS_DEFAULT_FACTORY, *defaults), strict=True))
    if frozen:
        methods.update(_frozen_methods(cls, tuple(spec.name for spec in specs)))
    for name, method in methods.items():
        method.__qualname__, method.__module__ = f"{cls.__qualname__}.{name}", cls.__module__
    methods["__init__"].__annotations__ = {**{spec.name: spec.type for spec in specs}, "return": None}
    methods["__repr__"] = _recursive_repr(methods["__repr__"])
    for name in ("__init__", "__repr__", "__eq__"):
        if name not in cls.__dict__:
            setattr(cls, name, methods[name])
    for name in ("__lt__", "__le__", "__gt__", "__ge__") if order else ():
        if name in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}. "
                            "Consider using functools.total_ordering")  # fmt: skip
        setattr(cls, name, methods[name])
    for name in ("__setattr__", "__delattr__") if frozen else ():
        if name in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        setattr(cls, name, methods[name])
    if hashed:  # the standard table (eq=True, unsafe_hash=False): frozen hashes its fields, else unhashable
        cls.__hash__ = methods["__hash__"]  # type: ignore[method-assign]
    elif not has_explicit_hash:
        cls.__hash__ = None  # type: ignore[assignment]
    if not cls.__doc__:
        cls.__doc__ = cls.__name__ + _signature_text(specs)
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = tuple(spec.name for spec in specs)  # type: ignore[attr-defined]
    views = [
        _StandardView(attribute, specs, (order, frozen, slots))
        for attribute in ("__dataclass_fields__", "__dataclass_params__")
    ]
    for view in views:
        setattr(cls, view.attribute, view)
    if slots:
        cls = _add_slots(cls, specs, frozen)
    for view in views:
        view.owner = cls
    abc.update_abstractmethods(cls)
    return cls


def _add_slots(cls: type, specs: list[FieldSpec], frozen: bool) -> type:
    """The class again, with a slot for each field (as the standard ``slots=True`` remakes it)."""
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    names = tuple(spec.name for spec in specs)
    inherited: set[str] = set()
    for base in cls.__mro__[1:-1]:
        held = base.__dict__.get("__slots__", ())
        inherited.update((held,) if isinstance(held, str) else held)
    namespace = dict(cls.__dict__)
    namespace["__slots__"] = tuple(name for name in names if name not in inherited)
    for name in names:
        namespace.pop(name, None)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    qualname = cls.__qualname__
    cls = type(cls)(cls.__name__, cls.__bases__, namespace)
    cls.__qualname__ = qualname
    if frozen:  # pickling: the state of a frozen slotted instance is its fields' values, in order
        getstate, setstate = _pickled_state(cls, names)
        if "__getstate__" not in namespace:
            cls.__getstate__ = getstate  # type: ignore[method-assign]
        if "__setstate__" not in namespace:
            cls.__setstate__ = setstate  # type: ignore[attr-defined]
    return cls


def _frozen_methods(cls: type, names: tuple[str, ...]) -> dict[str, Callable[..., None]]:
    """``__setattr__`` and ``__delattr__`` of a frozen class with fields ``names``: the standard
    ones (which refuse a field of any instance, and any name on an instance of ``cls`` itself)."""

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return {"__setattr__": __setattr__, "__delattr__": __delattr__}


def _pickled_state(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any], list[Any]], Callable[[Any, list[Any]], None]]:
    """``__getstate__`` and ``__setstate__`` of a frozen slotted class with fields ``names``: what
    the standard ones pickle (the values in order), without asking ``dataclasses.fields``. The
    state is set through the slots' own descriptors (what ``object.__setattr__`` finds for a
    slot, looked up once): half the cost a field, and a cold hook unpickles a thousand objects."""
    setters = tuple(getattr(cls, name).__set__ for name in names)

    def getstate(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    def setstate(self: Any, state: list[Any]) -> None:
        for set_field, value in zip(setters, state, strict=False):
            set_field(self, value)

    return getstate, setstate


def _recursive_repr(function: Callable[[Any], str]) -> Callable[[Any], str]:
    """``function``, returning ``...`` for an object whose repr is already being made (in this thread)."""
    running: set[tuple[int, int]] = set()

    def wrapper(self: Any) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            return function(self)
        finally:
            running.discard(key)

    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(wrapper, name, getattr(function, name))
    wrapper.__wrapped__ = function  # type: ignore[attr-defined]
    return wrapper


def _signature_text(specs: list[FieldSpec]) -> str:
    """``(name: type = default, ...)`` as ``str(inspect.signature(cls))`` writes it."""
    parts = []
    for spec in specs:
        text = f"{spec.name}: {_annotation_text(spec.type)}"
        if spec.default_factory is not MISSING:
            text += " = <factory>"
        elif spec.default is not MISSING:
            text += f" = {spec.default!r}"
        parts.append(text)
    return f"({', '.join(parts)})"


def _annotation_text(annotation: Any) -> str:
    """An annotation as :func:`inspect.formatannotation` writes it."""
    if getattr(annotation, "__module__", None) == "typing":
        return repr(annotation).replace("typing.", "")
    if isinstance(annotation, type) and not hasattr(annotation, "__origin__"):
        if annotation.__module__ == "builtins":
            return annotation.__qualname__
        return f"{annotation.__module__}.{annotation.__qualname__}"
    return repr(annotation)


class _StandardView:
    """A class's ``__dataclass_fields__`` or ``__dataclass_params__`` until first asked for: then
    both standard objects are made (importing :mod:`dataclasses`) and replace the views on the class."""

    __slots__ = ("attribute", "options", "owner", "specs")

    def __init__(self, attribute: str, specs: list[FieldSpec], options: tuple[bool, ...]) -> None:
        self.attribute, self.specs, self.options, self.owner = attribute, specs, options, None

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        import dataclasses

        cls = self.owner
        if cls is None:
            raise AttributeError(self.attribute)
        # made by the standard decorator itself, on a stand-in class with the same fields and
        # options, so that they are whatever this Python's dataclasses makes (their private
        # constructors differ from one version to the next)
        namespace: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                     "__annotations__": {spec.name: spec.type for spec in self.specs}}  # fmt: skip
        for spec in self.specs:
            namespace[spec.name] = dataclasses.field(
                default=dataclasses.MISSING if spec.default is MISSING else spec.default,
                default_factory=dataclasses.MISSING if spec.default_factory is MISSING else spec.default_factory,
                repr=spec.repr, compare=spec.compare,
            )  # fmt: skip
        order, frozen, slots = self.options
        stand_in = dataclasses.dataclass(order=order, frozen=frozen, slots=slots)(type(cls.__name__, (), namespace))
        fields, params = stand_in.__dataclass_fields__, stand_in.__dataclass_params__  # type: ignore[attr-defined]
        type.__setattr__(cls, "__dataclass_fields__", fields)
        type.__setattr__(cls, "__dataclass_params__", params)
        return fields if self.attribute == "__dataclass_fields__" else params
