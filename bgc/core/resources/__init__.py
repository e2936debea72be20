"""Concrete values: what a tool really touches, canonicalised per resource or refused.

A rule is a pattern; a tool call touches a *value* (a path, a URL, an argv). Before any rule sees a
value it is put in its resource's one canonical form, or refused with the reason, and a refused
value is denied whatever the rules say. Refusing is the fail-closed answer to "this spelling could
mean something the rules did not see": a refused value is denied, never matched.

Each resource kind is one module that says how its values are read and its patterns matched, and
one row of :data:`RESOURCES`:

* ``fs`` and ``host`` — paths, normalised lexically (:mod:`bgc.core.resources.fs`);
* ``net`` — URLs, read as a WHATWG parser reads them (:mod:`bgc.core.resources.net`);
* ``proc`` — argvs in the argv dialect, matched as given (:mod:`bgc.core.resources.proc`);
* ``mcp`` — what an MCP message names, matched as written, its escapes refused
  (:mod:`bgc.core.resources.mcp`);
* every other resource — matched as given, but a segment a URL parser or server would read as
  ``.`` or ``..`` is refused (:data:`OTHER`).

For all resources: NUL, control characters, lone surrogates and text that is not NFC are refused
(:func:`bgc.core.resources.kind.text_problem`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bgc.core.resources import fs, mcp, net, proc
from bgc.core.resources.kind import Rejection, ResourceKind, dot_segment_problem, text_problem, unicode_problem

if TYPE_CHECKING:
    from collections.abc import Callable

    from bgc.core.patterns.glob import Pattern

__all__ = [
    "ARGV_RESOURCES",
    "OTHER",
    "RESOURCES",
    "URL_RESOURCES",
    "Rejection",
    "ResourceKind",
    "kind_of",
    "match_value",
    "normalise",
    "plain_form",
]

def _read_other(value: str, case_insensitive: bool) -> str | Rejection:
    problem = dot_segment_problem(value)
    return Rejection(value, problem) if problem else value


OTHER = ResourceKind(read=_read_other)
"""How a resource without a row of its own kind is read: as given, but a ``.`` or ``..`` segment,
as written or as a URL parser reads it, is refused."""

RESOURCES: dict[str, ResourceKind] = {
    "fs": fs.FS,
    "host": fs.HOST,
    "net": net.NET,
    "proc": proc.PROC,
    # read as any other resource; named here because the hook's plan mode lets them through as
    # reading (bgc.adapters.agents.hook.READING): a search's pattern, and the agents' own
    # bookkeeping (plans, to-do lists, questions, skills, sub-agents)
    "search": OTHER,
    "agent": OTHER,
    "mcp": mcp.MCP,
}
"""The resources whose values are read their own way, by name: the one place a resource kind is
registered. Every resource the gate, the compiler, the lints or the hook treat specially has a row."""

ARGV_RESOURCES = frozenset(name for name, kind in RESOURCES.items() if kind.argv)
"""Resources whose values and patterns are argvs (:attr:`ResourceKind.argv`)."""

URL_RESOURCES = frozenset(name for name, kind in RESOURCES.items() if kind.url)
"""Resources whose values are URLs (:attr:`ResourceKind.url`)."""


def kind_of(resource: str) -> ResourceKind:
    """How values of ``resource`` are read: its row, or :data:`OTHER`."""
    return RESOURCES.get(resource, OTHER)


def normalise(resource: str, value: str, *, case_insensitive: bool = False) -> str | Rejection:
    """The value to match for ``resource``, or why it is refused (see the module docstring).

    ``case_insensitive`` says the policy declared ``filesystem case-insensitive``: ``fs`` values
    a Windows or HFS+ file system would read as another name are refused too.
    """
    kind = RESOURCES.get(resource, OTHER)
    plain = kind.plain_match
    if plain is not None and plain(value) and (kind.plain_when_case_insensitive or not case_insensitive):
        return value
    return _read(resource, value, case_insensitive)


def plain_form(resource: str, *, case_insensitive: bool = False) -> Callable[[str], object] | None:
    """The test :func:`normalise` starts with for ``resource``: a value it accepts is its own
    canonical form (None: no value of the resource is taken so). A caller that decides many
    values asks once and reads the rest only of the values the test refuses."""
    kind = RESOURCES.get(resource, OTHER)
    if case_insensitive and not kind.plain_when_case_insensitive:
        return None
    return kind.plain_match


def _read(resource: str, value: str, case_insensitive: bool) -> str | Rejection:
    """:func:`normalise` without its shortcut for values already canonical: the full reading."""
    problem = text_problem(value)
    if problem:
        return Rejection(value, problem)
    return RESOURCES.get(resource, OTHER).read(value, case_insensitive)


def match_value(pattern: Pattern, text: str, resource: str | None = "fs") -> bool | Rejection:
    """Does ``text`` match ``pattern`` once normalised for ``resource`` as the gate does?

    ``resource=None`` matches the text exactly as given, provided it is text at all (bytes that
    were not UTF-8 are refused). A value the resource refuses is returned as its
    :class:`Rejection` (the gate denies it whatever the pattern).
    """
    if resource is not None:
        value = normalise(resource, text)
        if isinstance(value, Rejection):
            return value
        text = value
    elif problem := unicode_problem(text):
        return Rejection(text, problem)
    return pattern.matches(text)
