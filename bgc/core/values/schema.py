"""The one schema reader: plain data (from YAML, JSON, CBOR or TOML) read into values, every
mistake an error value carrying the path of the field at fault.

Orders (:mod:`bgc.core.values.model`), plans (:mod:`bgc.core.plan`), capability tokens, test files
(:mod:`bgc.analysis.testing.schema`), recordings (:mod:`bgc.analysis.outcomes`) and the configuration
(:mod:`bgc.analysis.config`) are all read with :class:`Fields`, so an unknown key, a wrong kind and a
missing key read the same everywhere, with the same "did you mean". The reader of the document
turns the path into ``file:line:col`` (:meth:`bgc.core.values.documents.Document.build`,
:func:`bgc.analysis.config.load_config`).

Import-light on purpose (the standard library, :mod:`bgc.names` and :mod:`bgc.text`): the configuration is
read on every ``bgc check`` and hook start, before anything heavy is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from bgc.names import DOTTED_NAME, display_control
from bgc.text import did_you_mean

T = TypeVar("T")


class DataModelError(ValueError):
    """A value outside the canonical data model; ``path`` locates it (``("calls", 0, "params")``).
    ``at_key``: the map key at the end of ``path`` is at fault (an unknown key), not its value,
    so the error points at the key as written."""

    def __init__(self, message: str, path: tuple[str | int, ...] = (), *, at_key: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.at_key = at_key


def format_path(path: tuple[str | int, ...]) -> str:
    """``("requests", 2)`` → ``requests[2]``; ``("origin", "prompt")`` → ``origin.prompt``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(top level)"


def kind_name(value: Any) -> str:
    """A value's kind in the words of an order's author, not Python's type name (parameters come
    from YAML/JSON/CBOR: ``FrozenMap`` would mean nothing to them). Booleans are named by value,
    as the author wrote them. One wording for every message that says what it got instead."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a map"
    return f"a {type(value).__name__}"


class ModelError(DataModelError):
    """A value broke an invariant; ``path`` is the field path inside the document (may be empty),
    ``at_key`` says the key at the end of it is at fault (an unknown key), not its value."""


def dotted_name(value: Any, field: str) -> str:
    """``value``, a dotted name like ``patch.apply`` (an intent kind, a tool), else an error at ``field``."""
    if not isinstance(value, str) or not DOTTED_NAME.fullmatch(value):
        raise ModelError(f"expected a dotted name like 'patch.apply', got {value!r}", (field,))
    return value


def visible_name(value: Any, field: str) -> str:
    """``value``, a server or model name: one line of visible text, else an error at ``field``.
    A newline, a terminal escape or a bidi override in a name is no name, only a way to forge
    what people read, so it is refused here (and every text renderer escapes such characters
    anyway)."""
    if not isinstance(value, str) or not value:
        raise ModelError(f"expected non-empty text, got {value!r}", (field,))
    char = display_control(value)
    if char is not None:
        raise ModelError(f"expected a name without control or format characters, got {value!r} (U+{ord(char):04X})", (field,))
    return value


_MISSING = object()
_KIND_WORDS = {
    str: "text", int: "an integer", float: "a number", bool: "true or false", type(None): "null",
    list: "a list", dict: "a map", bytes: "bytes",
}


class Fields:
    """The one schema reader: a cursor over plain data that knows its path, so every error
    says where it happened.

    Every reader of a document walks its input with it — orders (here), plans
    (:mod:`bgc.core.plan`), capability tokens, test files (:mod:`bgc.analysis.testing.schema`), recordings
    (:mod:`bgc.analysis.outcomes`) and the configuration (:mod:`bgc.analysis.config`): ``only`` refuses keys the
    reader does not know (with a "did you mean" when one is close), ``get`` a missing required
    one; ``value``, ``text`` and ``choice`` check a field's kind or enumeration and name the kind
    found instead; ``build`` locates the error of a constructor that validates a value. Errors
    are :class:`ModelError` values carrying the field path (and, for an unknown key, that the
    key itself is at fault), which the document turns into ``file:line:col``
    (:meth:`bgc.core.values.documents.Document.build`, :func:`bgc.analysis.config.load_config`).
    """

    def __init__(self, data: Any, path: tuple[str | int, ...]) -> None:
        self.data = data
        self.path = path

    def _require_map(self) -> Mapping[str, Any]:
        if not isinstance(self.data, Mapping):
            raise ModelError(f"expected a map, got {kind_name(self.data)}", self.path)
        return self.data

    def only(self, *fields: str) -> None:
        for key in self._require_map():
            if key not in fields:
                hint = did_you_mean(key, fields, repr) or f"expected one of: {', '.join(fields)}"
                raise ModelError(f"unknown field {key!r} ({hint})", (*self.path, key), at_key=True)

    def get(self, key: str, default: Any = _MISSING) -> Any:
        data = self._require_map()
        if key in data:
            return data[key]
        if default is _MISSING:
            raise ModelError(f"missing required field {key!r}", self.path)
        return default

    def at(self, key: str) -> Fields:
        """The cursor of the field ``key``, whatever its value."""
        return Fields(self.get(key), (*self.path, key))

    def is_kind(self, *kinds: type) -> Any:
        """This value, which must be of one of ``kinds`` exactly (``True`` is no integer)."""
        if type(self.data) not in kinds:
            expected = " or ".join(_KIND_WORDS[kind] for kind in kinds)
            raise ModelError(f"expected {expected}, got {kind_name(self.data)}", self.path)
        return self.data

    def is_text(self) -> str:
        """This value, which must be text that is not empty or blank."""
        if not isinstance(self.data, str) or not self.data.strip():
            got = "empty text" if isinstance(self.data, str) else kind_name(self.data)
            raise ModelError(f"expected non-empty text, got {got}", self.path)
        return self.data

    def is_one_of(self, choices: Sequence[str], what: str) -> str:
        """This value, which must be one of ``choices`` (an enumeration such as a verdict)."""
        value = self.data
        if isinstance(value, str) and value in choices:
            return value
        expected = f"expected one of: {', '.join(choices)}"
        if not isinstance(value, str):
            raise ModelError(f"{expected}, got {kind_name(value)}", self.path)
        close = did_you_mean(value, choices, repr)
        raise ModelError(f"unknown {what} {value!r} ({close + ' ' if close else ''}{expected})", self.path)

    def value(self, key: str, *kinds: type, default: Any = _MISSING) -> Any:
        """The field ``key``, of one of ``kinds`` (:meth:`is_kind`); ``default`` when absent."""
        if default is not _MISSING and key not in self._require_map():
            return default
        return self.at(key).is_kind(*kinds)

    def text(self, key: str, default: Any = _MISSING) -> Any:
        """The field ``key``, non-empty text (:meth:`is_text`); ``default`` when absent."""
        if default is not _MISSING and key not in self._require_map():
            return default
        return self.at(key).is_text()

    def choice(self, key: str, choices: Sequence[str]) -> str:
        """The field ``key``, which must be one of ``choices`` (:meth:`is_one_of`)."""
        return self.at(key).is_one_of(choices, key)

    def map(self, key: str) -> Fields:
        child = self.at(key)
        child._require_map()
        return child

    def list(self, key: str, default: Any = _MISSING) -> list[Any]:
        value = self.get(key, default)
        if not isinstance(value, list):
            raise ModelError(f"expected a list, got {kind_name(value)}", (*self.path, key))
        return value

    def maps(self, key: str, default: Any = _MISSING) -> list[Fields]:
        """A cursor for each item of the list ``key`` (maps, mostly: each item's reader says)."""
        return [Fields(item, (*self.path, key, i)) for i, item in enumerate(self.list(key, default))]

    def build(self, make: Callable[..., T], *args: Any) -> T:
        """Run a constructor (which raises paths relative to itself) and locate its error here."""
        try:
            return make(*args)
        except DataModelError as error:
            raise ModelError(error.message, self.path + error.path, at_key=error.at_key) from None
