"""Atom templates of tool declarations (``fs:read:{path}``) and how a call fills them.

A module of its own, apart from the rest of the policy AST, because run time needs only this:
a plan's tool declarations carry templates, and every cold ``bgc hook``/``bgc gate --call``
expands them. Importing the whole AST (twenty value classes, each generated at import) would
cost such a process more than its decision. :mod:`bgc.core.policy.ast` re-exports these names.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Mapping

from dataclasses import dataclass, field
from typing import Any
from bgc.errors import Span
from bgc.core.values.limits import MAX_CALL_ATOMS, MAX_PATTERN_LENGTH


class TemplateError(ValueError):
    """A call cannot fill a tool's atom template (missing or non-text parameter)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True, slots=True)
class AtomTemplate:
    """``resource:action:template`` in a tool declaration; ``{name}`` is a call parameter.

    ``template`` is pattern text in which each ``{name}`` placeholder stands for a parameter; a
    literal brace is written ``\\{``. ``params`` lists the placeholders in order of appearance
    (each appears once).
    """

    resource: str
    action: str
    template: str
    params: tuple[str, ...]
    span: Span = field(compare=False)

    def expand(self, values: Mapping[str, Any]) -> tuple[str, ...]:
        """The patterns a call with parameters ``values`` needs from this template.

        Each placeholder is replaced by the parameter's text with glob characters escaped, so a
        parameter is always literal. A list-valued parameter yields one pattern per element
        (several list parameters: every combination, in order; an empty list is refused, as it
        would fill the declaration with no atom at all). Only text and integers are
        parameter values; anything else, a missing parameter, lists that make more than
        ``MAX_CALL_ATOMS`` patterns, or a pattern longer than ``MAX_PATTERN_LENGTH`` raise
        :class:`TemplateError` so the caller can fail closed; the bounds are checked before any
        pattern is built.
        """
        from bgc.core.patterns import glob

        pieces = self.pieces()
        choices: list[tuple[str, ...]] = []
        atoms, longest = 1, sum(len(piece) for piece in pieces if isinstance(piece, str))
        for name in self.params:
            if name not in values:
                raise TemplateError(f"missing parameter {name!r}", name)
            value = values[name]
            items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
            if not items:  # an empty list would make no atom of this template: nothing checked
                raise TemplateError(f"parameter {name!r} is an empty list: it fills nothing `{self}` declares", name)
            atoms *= len(items)
            if atoms > MAX_CALL_ATOMS:
                raise TemplateError(
                    f"parameter {name!r} makes more than {MAX_CALL_ATOMS:,} atoms of `{self}` for one call", name
                )
            choices.append(tuple(glob.escape(self._word(name, _param_text(name, item))) for item in items))
            longest += max(map(len, choices[-1]), default=0)
            if longest > MAX_PATTERN_LENGTH:
                raise TemplateError(
                    f"parameter {name!r} makes an atom of `{self}` longer than {MAX_PATTERN_LENGTH:,} characters", name
                )
        return tuple(
            "".join(piece if isinstance(piece, str) else combo[piece] for piece in pieces)
            for combo in itertools.product(*choices)
        )

    def pieces(self) -> tuple[str | int, ...]:
        """The template as literal pieces (pattern text, escapes as written) and placeholders
        (each an index into :attr:`params`), in order."""
        return _split_template(self.template)

    def _word(self, name: str, text: str) -> str:
        """A parameter of an argv atom (``proc:exec:{argv0}``) is one word: its ``/`` cannot end
        the word (bgc.core.resources.proc); any other resource takes the text as it is."""
        from bgc.core.resources import ARGV_RESOURCES
        from bgc.core.resources.proc import ArgvError, encode_word

        if self.resource not in ARGV_RESOURCES:
            return text
        try:
            return encode_word(text)
        except ArgvError as error:
            raise TemplateError(f"parameter {name!r}: {error}", name) from None

    def __str__(self) -> str:
        return f"{self.resource}:{self.action}:{self.template}"


def _param_text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    from bgc.core.values.canonical import kind_name  # here, not at the top: only a refusal needs it

    raise TemplateError(f"parameter {name!r} is not text or an integer (got {kind_name(value)})", name)


def scan_template(template: str) -> Iterator[tuple[str, int, int]]:
    """The pieces of an atom template as ``(kind, start, end)`` slices of ``template``.

    ``text`` is literal pattern text (escapes kept as written), ``param`` a ``{name}``
    placeholder (from its ``{`` to just after its ``}``), ``stray`` a ``}`` with no ``{``, and
    ``unclosed`` a ``{`` with no ``}`` before the next ``{`` (the rest of the template). The parser
    reports the last two; :meth:`AtomTemplate.expand` reads templates it has validated.
    """
    index = start = 0
    while index < len(template):
        char = template[index]
        if char == "\\" and index + 1 < len(template):
            index += 2
            continue
        if char not in "{}":
            index += 1
            continue
        if start < index:
            yield ("text", start, index)
        if char == "}":
            yield ("stray", index, index + 1)
            index = start = index + 1
            continue
        close = template.find("}", index)
        nested = template.find("{", index + 1)
        if close < 0 or 0 <= nested < close:
            yield ("unclosed", index, len(template))
            return
        yield ("param", index, close + 1)
        index = start = close + 1
    if start < len(template):
        yield ("text", start, len(template))


@functools.lru_cache(maxsize=256)
def _split_template(template: str) -> tuple[str | int, ...]:
    """Literal pieces and placeholder indexes (the parser has already validated the template)."""
    pieces: list[str | int] = []
    for kind, start, end in scan_template(template):
        if kind == "param":
            pieces.append(sum(1 for piece in pieces if isinstance(piece, int)))
        else:
            pieces.append(template[start:end])
    return tuple(pieces)


LOCAL_SERVER = "local"
"""The server of a declaration without ``on``, and of a call that names none: the machine the
agent runs on. A call is covered only by a declaration of its own tool *on its own server*."""
