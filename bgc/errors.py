"""Errors as values with source spans, and the one table of exit codes.

Every stage raises a subclass of :class:`BgcError` carrying a :class:`Span` (file, line,
column) and, where it helps, a hint. Errors are rendered once, at the edge (``bgc.app.cli``), with
the offending source line and a caret under the column, every line escaped (a message quotes
input, and input may hold a newline or a terminal escape). No stage prints or exits.
"""

from __future__ import annotations

from enum import IntEnum

from dataclasses import dataclass
from bgc.text import escape_field


class ExitCode(IntEnum):
    """Exit codes, identical in meaning for every command: the one table.

    Each member carries its ``meaning`` in words; the table in ``bgc --help``, the README and
    docs/ci.md is generated from it (:func:`exit_code_rows`), so it is never typed twice.
    Deciding commands (``gate``) refine findings into ``ASK`` and ``DENIED``: a script can tell
    "wait for a human" from "no", and neither is ever 0.
    """

    meaning: str

    def __new__(cls, value: int, meaning: str) -> ExitCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    OK = 0, "everything granted as asked, check passed, all tests passed, every file formatted"
    FINDINGS = 1, (
        "findings: narrowed, ask, denied, uncovered call, failing test, unformatted file, lint, "
        "an order whose result differs from its recording"
    )
    BAD_INPUT = 2, (
        "bad input or usage: the message names file, line, column and what was expected; nothing is written"
    )
    ASK = 3, "`gate`: no atom denied, at least one awaits a human's approval"
    DENIED = 4, "`gate`: at least one atom denied"
    CLOSED_PIPE = 141, (
        "the reader of the output went away (`bgc … | head`): the output stopped early, quietly; "
        "not a finding, never success (128 + SIGPIPE, as a shell reports a process the pipe ended)"
    )


def exit_code_rows() -> list[tuple[int, str]]:
    """``(code, meaning)`` for every exit code, in order: what every exit-code table shows."""
    return [(int(code), code.meaning) for code in ExitCode]


def exit_code_table() -> str:
    """The exit-code table as Markdown, exactly as README.md and docs/ci.md carry it."""
    rows = [f"| {code} | {meaning.replace('|', chr(92) + '|')} |" for code, meaning in exit_code_rows()]
    return "\n".join(["| code | meaning |", "|---:|---|", *rows]) + "\n"


@dataclass(frozen=True, slots=True)
class Span:
    """A place in a source: 1-based line and column; ``line``/``col`` may be 0 when unknown."""

    file: str
    line: int = 0
    col: int = 0
    end_line: int = 0
    end_col: int = 0

    def __str__(self) -> str:
        if self.line and self.col:
            return f"{self.file}:{self.line}:{self.col}"
        if self.line:
            return f"{self.file}:{self.line}"
        return self.file


_SHOWN = 160
"""How much of a long source line a located message shows around its column."""


def caret_lines(span: Span, source: str | None) -> list[str]:
    """The source line ``span`` points into and a caret line under it, both indented two spaces:
    what every located message (errors and findings alike) shows below its first line.

    The carets cover the span when it ends on its own line, else one column; nothing is drawn
    without the source line or a column (a finding about a whole file, say). The line is shown
    escaped (a source may hold a bidi override or a terminal escape), the carets under the
    characters they meant.
    """
    if source is None or not span.col:
        return []
    line = source.rstrip("\n")
    width = span.end_col - span.col if span.end_line == span.line and span.end_col > span.col else 1
    start = span.col - 1
    if len(line) > _SHOWN:  # a one-line JSON document: show the part around the column, marked
        left = max(0, min(start - _SHOWN // 2, len(line) - _SHOWN))
        width = min(width, _SHOWN - (start - left))
        head, tail = ("…" if left else ""), ("…" if left + _SHOWN < len(line) else "")
        line = head + line[left : left + _SHOWN] + tail
        start = start - left + len(head)

    def grown(text: str) -> int:
        return len(escape_field(text, backslash=False)) - len(text)

    carets = " " * (start + grown(line[:start])) + "^" * (width + grown(line[start : start + width]))
    return ["  " + escape_field(line, backslash=False), "  " + carets]


class BgcError(Exception):
    """A user-facing error: what is wrong, where, and (optionally) what to do about it.

    ``source`` is the text of the offending line when the stage has it; the renderer draws a
    caret under ``span.col`` in it.
    """

    kind = "error"

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        *,
        hint: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint
        self.source = source

    def render(self) -> str:
        """The error as people read it: ``file:line:col: error: message``, source, caret, hint."""
        where = f"{self.span}: " if self.span else ""
        lines = [escape_field(f"{where}{self.kind}: {self.message}", backslash=False)]
        if self.span is not None:
            lines.extend(caret_lines(self.span, self.source))
        if self.hint:
            lines.append(escape_field(f"  hint: {self.hint}", backslash=False))
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        """A machine form of the error (stable keys), for ``--format json`` outputs."""
        span = self.span
        return {
            "kind": self.kind,
            "message": self.message,
            "file": span.file if span else None,
            "line": span.line if span else None,
            "col": span.col if span else None,
            "hint": self.hint,
        }


class UsageError(BgcError):
    """The command line itself is wrong (conflicting flags, missing configuration)."""


class InputError(BgcError):
    """A file could not be read or decoded (missing, not UTF-8, too large, too deep)."""
