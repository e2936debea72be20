"""``bgc fmt``: print a policy file in its one canonical layout, comments kept in place.

The layout is a function of the AST alone (plus comments and where blank lines were), so
formatting is idempotent by construction and two people who write the same rules the same way
get byte-identical files. Canonical means: one space between words, clauses in the order
``when``, ``approvals``, ``because``; ``, `` between patterns; patterns bare unless they need
quotes; minimal parentheses in conditions; four-space indentation inside mode blocks; at most one
blank line between statements and none at the edges of a file or block; a trailing comment two
spaces after its statement; one final newline; the file's own line ending (``\\n`` or ``\\r\\n``,
:func:`line_ending`).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator

from dataclasses import dataclass
from bgc.core.policy.ast import (
    Approvals,
    LOCAL_SERVER,
    And,
    Comment,
    Compare,
    Condition,
    DefaultMode,
    Expect,
    Filesystem,
    Include,
    InList,
    Matches,
    ModeBlock,
    Not,
    Or,
    Rule,
    SourceFile,
    Statement,
    ToolDecl,
    Trust,
    TrustElicitation,
)

INDENT = "    "
_BARE = re.compile(r'[^\s,#"]+')
_BARE_APPROVER = re.compile(r'[^\s,#"\[\]]+')


# ---- words --------------------------------------------------------------------------------


def quote_string(text: str) -> str:
    """A string literal: ``\\`` and ``"`` escaped (the only escapes the language has)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quote_pattern(text: str) -> str:
    """A pattern in quotes. Pattern text keeps its glob escapes verbatim (``\\x`` is a literal
    ``x`` to the glob), so only a ``"`` that is not already escaped needs a backslash."""
    out: list[str] = []
    index = 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            out.append(text[index : index + 2])
            index += 2
            continue
        out.append('\\"' if text[index] == '"' else text[index])
        index += 1
    return '"' + "".join(out) + '"'


def pattern_word(text: str) -> str:
    """A pattern as written: bare when it can be, quoted otherwise."""
    return text if _BARE.fullmatch(text) else quote_pattern(text)


def atom_word(resource: str, action: str, pattern: str) -> str:
    return f"{resource}:{action}:{pattern_word(pattern)}"


def approver_word(name: str) -> str:
    return name if _BARE_APPROVER.fullmatch(name) else quote_string(name)


_PRECEDENCE = {Or: 1, And: 2, Not: 3}


def condition_text(condition: Condition) -> str:
    """A condition with the fewest parentheses that keep its structure (not > and > or), except
    that the operand of ``not`` is always in parentheses."""
    if isinstance(condition, Compare):
        return f"{condition.field} {condition.op} {quote_string(condition.value)}"
    if isinstance(condition, InList):
        return f"{condition.field} in [{', '.join(quote_string(value) for value in condition.values)}]"
    if isinstance(condition, Matches):
        return f"{condition.field} matches {quote_pattern(condition.pattern)}"
    if isinstance(condition, Not):  # `not (a == "x")`: never leave a reader to guess the scope
        inner = condition_text(condition.item)
        return f"not {inner}" if isinstance(condition.item, Not) else f"not ({inner})"
    joiner = " or " if isinstance(condition, Or) else " and "
    return joiner.join(_operand(item, _PRECEDENCE[type(condition)]) for item in condition.items)


def _operand(condition: Condition, parent: int) -> str:
    text = condition_text(condition)
    own = _PRECEDENCE.get(type(condition), 4)
    return f"({text})" if own <= parent else text


# ---- statements ---------------------------------------------------------------------------


def approvals_text(approvals: Approvals) -> str:
    """`` approvals N of [names]``, as a rule or a mode block writes it."""
    names = ", ".join(approver_word(name) for name in approvals.approvers)
    return f" approvals {approvals.count} of [{names}]"


def rule_text(rule: Rule) -> str:
    first, *rest = rule.patterns
    words = [f"{rule.keyword} {atom_word(rule.resource, rule.action, first)}"]
    words.extend(f", {pattern_word(pattern)}" for pattern in rest)
    if rule.when is not None:
        words.append(f" when {condition_text(rule.when)}")
    if rule.approvals is not None:
        words.append(approvals_text(rule.approvals))
    if rule.sandbox:
        words.append(" in sandbox")
    if rule.because is not None:
        words.append(f" because {quote_string(rule.because)}")
    return "".join(words)


def expect_text(expect: Expect) -> str:
    from bgc.core.patterns import glob

    text = f"expect {expect.effect} {atom_word(expect.resource, expect.action, glob.escape(expect.value))}"
    if expect.context:
        text += " when " + " and ".join(f"{name} == {quote_string(value)}" for name, value in expect.context)
    if expect.mode is not None:
        text += f" in mode {expect.mode}"
    return text


def statement_text(statement: Statement) -> str:
    """One single-line statement (a mode block is laid out by :func:`format_source`)."""
    if isinstance(statement, Rule):
        return rule_text(statement)
    if isinstance(statement, ToolDecl):
        needs = ", ".join(atom_word(need.resource, need.action, need.template) for need in statement.needs)
        servers = "" if statement.servers == (LOCAL_SERVER,) else f" on {', '.join(statement.servers)}"
        ignores = f" ignores {', '.join(statement.ignores)}" if statement.ignores else ""
        return f"tool {statement.tool}{servers} needs {needs}{ignores}"
    if isinstance(statement, DefaultMode):
        return f"default mode {statement.name}"
    if isinstance(statement, Include):
        return f"include {quote_string(statement.path)}"
    if isinstance(statement, Filesystem):
        return "filesystem case-insensitive" if statement.case_insensitive else "filesystem case-sensitive"
    if isinstance(statement, Expect):
        return expect_text(statement)
    if isinstance(statement, Trust):
        return f"trust {statement.role} {approver_word(statement.name)} {statement.key}"
    if isinstance(statement, TrustElicitation):
        return "trust elicitation"
    raise TypeError(f"not a single-line statement: {type(statement).__name__}")


# ---- layout -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Item:
    line: int
    end_line: int
    node: Statement | Comment


class _Layout:
    """Places statements, standalone comments and trailing comments, level by level."""

    def __init__(self, source: SourceFile) -> None:
        self.comment_at = {comment.span.line: comment for comment in source.comments}
        occupied: set[int] = set()
        for statement in source.statements:
            occupied.add(statement.span.line)
            occupied.add(statement.span.end_line)
            if isinstance(statement, ModeBlock):
                occupied.update(rule.span.line for rule in statement.rules)
        self.blocks = [statement for statement in source.statements if isinstance(statement, ModeBlock)]
        self.loose: dict[int, list[Comment]] = {}
        top: list[Comment] = []
        for comment in source.comments:
            line = comment.span.line
            if line in occupied:
                continue
            owner = next((b for b in self.blocks if b.span.line < line < b.span.end_line), None)
            if owner is None:
                top.append(comment)
            else:
                self.loose.setdefault(id(owner), []).append(comment)
        self.top = top

    def trailing(self, line: int) -> str:
        comment = self.comment_at.get(line)
        return f"  {comment.text}" if comment is not None else ""

    def lines(self, statements: tuple[Statement, ...] | tuple[Rule, ...], comments: list[Comment], indent: str) -> Iterator[str]:  # noqa: E501
        items = [_Item(s.span.line, s.span.end_line, s) for s in statements]
        items += [_Item(c.span.line, c.span.line, c) for c in comments]
        items.sort(key=lambda item: item.line)
        previous_end: int | None = None
        for item in items:
            if previous_end is not None and item.line > previous_end + 1:
                yield ""
            previous_end = item.end_line
            node = item.node
            if isinstance(node, Comment):
                yield indent + node.text
            elif isinstance(node, ModeBlock):
                yield from self.block(node, indent)
            else:
                yield indent + statement_text(node) + self.trailing(node.span.line)

    def block(self, block: ModeBlock, indent: str) -> Iterator[str]:
        inner = self.loose.get(id(block), [])
        head, close = block.span.line, block.span.end_line
        name = block.name + (approvals_text(block.approvals) if block.approvals is not None else "")
        if not block.rules and not inner:
            trailing = self.trailing(head) or self.trailing(close)
            yield f"{indent}mode {name} {{}}{trailing}"
            return
        yield f"{indent}mode {name} {{{self.trailing(head)}"
        yield from self.lines(block.rules, inner, indent + INDENT)
        yield f"{indent}}}{self.trailing(close) if close != head else ''}"


def format_source(source: SourceFile) -> str:
    """The canonical text of one parsed file."""
    layout = _Layout(source)
    lines = list(layout.lines(source.statements, layout.top, ""))
    return "\n".join(lines) + "\n" if lines else ""


def format_text(text: str, path: str) -> str:
    """Parse ``text`` (one file, includes not followed) and return its canonical layout."""
    from bgc.core.policy.parser import parse_source

    return format_source(parse_source(text, path))


# ---- files --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Formatted:
    """One file before and after formatting."""

    path: str
    original: str
    formatted: str

    @property
    def changed(self) -> bool:
        return self.original != self.formatted

    def diff(self) -> str:
        """A unified diff from the file as it is to the file as ``bgc fmt`` would write it."""
        import difflib

        return "".join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.formatted.splitlines(keepends=True),
                fromfile=f"{self.path} (current)",
                tofile=f"{self.path} (formatted)",
            )
        )


def line_ending(text: str) -> str:
    """The line ending a file is written with: its first line's (``\r\n`` or ``\n``), as ruff's
    ``line-ending = "auto"`` and black decide, so a Windows checkout stays CRLF after ``bgc fmt``
    and a file with mixed endings comes out in its first line's."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def format_file(path: str) -> Formatted:
    """Read and format one file, keeping its line ending (:func:`line_ending`); raises
    PolicyError (unparseable) or InputError (unreadable)."""
    from bgc.core.values.documents import decode_utf8, read_bytes

    data = read_bytes(path)
    text = decode_utf8(data, path)
    original = "\ufeff" + text if data.startswith(codecs.BOM_UTF8) else text  # fmt drops a BOM
    formatted = format_text(text, path)
    ending = line_ending(text)
    return Formatted(path, original, formatted if ending == "\n" else formatted.replace("\n", ending))
