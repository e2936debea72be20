"""Regular expressions compiled when first used.

Python compiles a regular expression in Python, 30-600 µs each, and a cold ``bgc gate`` or hook
reaches most of bgc's expressions only for the values that need them: a module's own (the
escapes, percent-encoding and control characters of :mod:`bgc.core.resources.values`) and those a cache entry
holds (a decider's patterns, which :mod:`bgc.core.cache` stores as :class:`RegexOnFirstUse` and
:class:`MethodOnFirstUse`: loading a compiled pattern compiles it again, and a cold hook loaded a
dozen it never called for the call it decided). One place for both, so that a pattern is the same
object whichever way it is met. Imports nothing of bgc.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: a cold `bgc gate` or hook never imports typing (tests/test_startup_imports.py)
if TYPE_CHECKING:
    from typing import Any


class RegexOnFirstUse:
    """A regular expression compiled on the first use of an attribute of the compiled pattern
    (``match``, ``sub``, ``groups``…), which is then kept on the instance and read like any
    attribute: the same answers as ``re.compile(pattern, flags)``, without the compile for an
    expression never used. ``pattern`` and ``flags`` are its own."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags

    def __getattr__(self, name: str) -> Any:  # only until the attribute is set on the instance
        if name.startswith("__"):  # pickle and copy ask for protocol methods: not the pattern's
            raise AttributeError(name)
        value = getattr(re.compile(self.pattern, self.flags), name)
        setattr(self, name, value)
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return RegexOnFirstUse, (self.pattern, self.flags)

    def __repr__(self) -> str:
        return f"RegexOnFirstUse({self.pattern!r}, {self.flags})"


class MethodOnFirstUse:
    """A compiled pattern's bound method as a cache entry held it (``pattern.match``): its
    :class:`RegexOnFirstUse` compiled on the first call, not when the entry is loaded."""

    __slots__ = ("_bound", "name", "regex")

    def __init__(self, regex: RegexOnFirstUse, name: str) -> None:
        self.regex, self.name, self._bound = regex, name, None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound = self._bound
        if bound is None:
            bound = self._bound = getattr(self.regex, self.name)
        return bound(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        return MethodOnFirstUse, (self.regex, self.name)


def reduced(value: object) -> tuple[Any, ...] | None:
    """How :mod:`bgc.core.cache` pickles ``value`` when it is a compiled pattern (as a
    :class:`RegexOnFirstUse`) or one of its bound methods (as a :class:`MethodOnFirstUse` of its
    pattern, which pickling then reduces in turn, once per pattern); None for anything else."""
    if type(value) is re.Pattern:
        return RegexOnFirstUse, (value.pattern, value.flags)
    owner = getattr(value, "__self__", None)
    if type(owner) is re.Pattern and callable(value):
        return MethodOnFirstUse, (owner, value.__name__)
    return None
