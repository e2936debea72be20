"""One policy file's text → its AST (:func:`parse_source`): the Lark parser and located errors.

The grammar (``grammar/policy.lark``) is permissive about words and strict about structure; this
module checks every word (atom parts, names, fields, patterns, templates, strings) and reports the
first mistake as a :class:`PolicyError` with ``file:line:col``, the source line, a caret under the
offending text, what was expected in words, and a hint when an obvious one exists. Before the
grammar sees the text, characters a reader may see differently from bgc (a lone carriage return,
a bidirectional override, a zero-width space: ``bgc.core.policy.source_text``) are refused (BGC017).

It sees one file only and touches no file system: reading files, following includes and checking
what only the whole policy can show (duplicate modes or tools, unknown modes) is
:mod:`bgc.core.policy.loader`'s job, which uses this module (never the reverse). Keeping the two apart
lets a formatter or an editor parse one file as written.

Start-up matters (a pre-commit hook or ``bgc gate`` runs often), so the LALR tables are built
once per grammar/Lark/Python version and kept in bgc's verified on-disk cache (bgc.core.cache):
loading them is far cheaper than building them (docs/policy-language.md, "Performance").
"""
from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from bgc import codes
from bgc.errors import BgcError, Span
from bgc.names import ATOM_NAME, DOTTED_NAME, display_control
from bgc.core.policy.ast import (
    EFFECTS,
    FIELDS,
    LOCAL_SERVER,
    And,
    Approvals,
    AtomTemplate,
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
    scan_template,
)
from bgc.core.policy.source_text import hidden_reason
from bgc.core.policy.syntax_words import expected_text, join_words, syntax_hint
from bgc.text import did_you_mean

if TYPE_CHECKING:
    from lark import Lark, Token, Tree
    from lark.exceptions import UnexpectedInput

    from bgc.core.patterns.glob import Pattern


class PolicyError(BgcError):
    """A policy that cannot be used: unparseable or invalid. ``code`` is a stable id (BGC0xx)."""

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        *,
        code: str = codes.SYNTAX,
        hint: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(message, span, hint=hint, source=source)
        self.code = code


# ---- the parser, built once ---------------------------------------------------------------

_LARK_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "propagate_positions": True,
    "maybe_placeholders": False,
}


def grammar_text() -> str:
    """The grammar shipped in the package (``bgc.grammar/policy.lark``)."""
    from importlib import resources  # here: a policy served from the cache never reads the grammar

    return (resources.files("bgc.grammar") / "policy.lark").read_text(encoding="utf-8")


@functools.cache
def parser() -> Lark:
    """The LALR parser, loaded from bgc's verified on-disk cache when this exact grammar (and
    Lark, and Python) was built before; built and stored otherwise."""
    import io

    import lark

    from bgc.core import cache

    grammar = grammar_text()
    key = "\0".join([grammar, lark.__version__, repr(sorted(_LARK_OPTIONS.items()))])
    payload = cache.load_bytes("parser", key)
    if payload is not None:
        try:
            return lark.Lark.load(io.BytesIO(payload))
        except Exception:  # noqa: BLE001 - verified bytes that still fail to load are only a miss
            pass
    built = lark.Lark(grammar, **_LARK_OPTIONS)
    buffer = io.BytesIO()
    built.save(buffer)
    cache.store_bytes("parser", key, buffer.getvalue())
    return built


# ---- words --------------------------------------------------------------------------------

MAX_CONDITION_DEPTH = 64
"""Nesting bound for conditions (``not not ...``, parentheses alternating ``and``/``or``)."""

_NAME = ATOM_NAME  # a resource or action: the same words a work order uses
_TOOL = DOTTED_NAME  # a tool name, as in a work order's calls
_MODE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PUBLIC_KEY = re.compile(r"ed25519:[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]")
"""32 bytes of unpadded base64url: 43 characters, the last carrying 2 bits of padding (zero)."""
_SERVER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # an MCP server's name as agents spell it
_IGNORED = re.compile(r"-{0,2}[A-Za-z_][A-Za-z0-9_-]*")  # a parameter no template uses (Grep's `-i` too)

# ---- one file -----------------------------------------------------------------------------

_COMMENT_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"|(#[^\n]*)')


def escape_units(text: str) -> Iterator[tuple[int, str]]:
    """``text`` as its units, each with its index: one character, or an escape ``\\x`` (two
    characters; a trailing lone ``\\`` is a unit of its own). The one walker of backslash escapes
    in policy text: quoted patterns, segments, strings and expect values all read units from it,
    and differ only in what a unit means to them."""
    index = 0
    while index < len(text):
        step = 2 if text[index] == "\\" and index + 1 < len(text) else 1
        yield index, text[index : index + step]
        index += step


class _Located:
    """Pattern text cut from a source line, with the source column of each of its characters.

    In a quoted pattern ``\\"`` becomes ``"`` (the same literal to the glob, and the one spelling
    the formatter writes), so characters and columns can drift apart; errors use the map.
    """

    __slots__ = ("text", "line", "cols")

    def __init__(self, raw: str, line: int, col: int, quoted: bool) -> None:
        chars: list[str] = []
        cols: list[int] = []
        for index, unit in escape_units(raw):
            if quoted and unit == '\\"':
                chars.append('"')
                cols.append(col + index)
                continue
            for offset, char in enumerate(unit):
                chars.append(char)
                cols.append(col + index + offset)
        self.text = "".join(chars)
        self.line = line
        self.cols = cols or [col]

    def col(self, index: int) -> int:
        """Source column of character ``index`` (0-based; past the end: just after it)."""
        return self.cols[index] if index < len(self.cols) else self.cols[-1] + 1


def _segments(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each ``/``-separated segment of pattern text. ``\\/`` separates too
    (it matches ``/``), any other ``\\x`` is one character, and classes cannot hold ``/``."""
    found: list[tuple[int, int]] = []
    start = 0
    for index, unit in escape_units(text):
        if unit in ("/", "\\/"):
            found.append((start, index))
            start = index + len(unit)
    found.append((start, len(text)))
    return found


def parse_source(text: str, path: str) -> SourceFile:
    """Parse one policy file as written (includes are not followed). Raises PolicyError."""
    return FileParser(text, path).parse()


class FileParser:
    """Turns one file's parse tree into a :class:`SourceFile`, checking every word.

    Statements are read top-down, each method unpacking its node's children by position in the
    grammar: the checks of a statement then run in the order it is written (a rule's atom
    before its ``when``, its ``when`` before its ``because``), which decides which mistake is
    reported first, and a mode block hands its name to the rules inside it. A Lark
    ``Transformer`` would build the clauses before the statement and the rules before their
    block, so statements stay a walk. Conditions are an expression language whose nodes are
    built from their parts alone: they are a ``Transformer`` (:meth:`condition`).
    """

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.lines = [line.removesuffix("\r") for line in text.split("\n")]  # CRLF is one line break

    # -- errors --

    def error(self, message: str, span: Span, code: str, hint: str | None = None) -> PolicyError:
        source = self.lines[span.line - 1] if 0 < span.line <= len(self.lines) else None
        return PolicyError(message, span, code=code, hint=hint, source=source)

    def fail(self, message: str, span: Span, code: str, hint: str | None = None) -> NoReturn:
        raise self.error(message, span, code, hint)

    def at(self, line: int, col: int, width: int = 1) -> Span:
        return Span(self.path, line, col, line, col + max(width, 1))

    def token_span(self, token: Token) -> Span:
        return Span(self.path, token.line, token.column, token.end_line, token.end_column)

    def tree_span(self, tree: Tree) -> Span:
        return self.meta_span(tree.meta)

    def meta_span(self, meta: Any) -> Span:
        """The place of a parse-tree node, from its Lark ``meta`` (``propagate_positions``)."""
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    # -- entry --

    def parse(self) -> SourceFile:
        from lark.exceptions import UnexpectedInput

        self.refuse_hidden_characters()
        text = self.text if self.text.endswith("\n") else self.text + "\n"
        try:
            tree = parser().parse(text)
        except UnexpectedInput as error:
            raise self.syntax_error(error) from None
        statements: list[Statement] = []
        for child in tree.children:
            statements.append(self.statement(child))
        return SourceFile(self.path, tuple(statements), self.comments())

    def refuse_hidden_characters(self) -> None:
        """Refuse the first character a reader may see differently from bgc, anywhere in the
        file (BGC017: :func:`hidden_reason`), before the grammar sees any of it. The error's
        source line is shown escaped, the caret under the character (:func:`bgc.errors.caret_lines`)."""
        for number, line in enumerate(self.lines, start=1):
            char = display_control(line.replace("\t", " "))  # TAB separates words
            if char is not None:
                self.fail(
                    hidden_reason(char),
                    self.at(number, line.index(char) + 1),
                    codes.HIDDEN_CHARACTER,
                    "delete it (an editor may not show it: retype the text at the caret)",
                )

    def comments(self) -> tuple[Comment, ...]:
        found = []
        for number, line in enumerate(self.lines, start=1):
            for match in _COMMENT_SCAN.finditer(line):
                if match.group(1) is not None:
                    text = match.group(1).rstrip()
                    col = match.start(1) + 1
                    found.append(Comment(text, Span(self.path, number, col, number, col + len(text))))
        return tuple(found)

    def statement(self, tree: Tree) -> Statement:
        kind = tree.data
        if kind == "rule":
            return self.rule(tree, None)
        if kind == "tool_decl":
            return self.tool_decl(tree)
        if kind == "mode_block":
            return self.mode_block(tree)
        if kind == "default_mode":
            _, _, name = tree.children
            return DefaultMode(self.mode_name(name), self.tree_span(tree), self.token_span(name))
        if kind == "include":
            return self.include(tree)
        if kind == "expect":
            return self.expect(tree)
        if kind == "filesystem":
            _, case = tree.children
            return Filesystem(case.value == "case-insensitive", self.tree_span(tree))
        if kind == "trust":
            return self.trust(tree)
        if kind == "trust_elicitation":
            return TrustElicitation(self.tree_span(tree))
        raise AssertionError(f"grammar produced an unknown statement {kind!r}")

    # -- atoms and patterns --

    def split_atom(self, token: Token) -> tuple[str, str, _Located]:
        """``resource``, ``action`` and the pattern text (quotes removed, glob escapes kept)."""
        self.glued_comment(token)
        text = token.value
        line, col = token.line, token.column
        first = text.find(":")
        second = text.find(":", first + 1) if first >= 0 else -1
        if first < 0:
            hint = f"name the resource and action, e.g. `fs:write:{text}`" if text.startswith("/") else None
            self.fail(f"expected an atom `resource:action:pattern`, found `{text}`", self.at(line, col, len(text)), codes.BAD_ATOM, hint)
        if second < 0:
            head, tail = text[:first], text[first + 1 :]
            if _NAME.fullmatch(tail) or tail == "*":
                self.fail(
                    f"`{text}` has no pattern: an atom is `resource:action:pattern`",
                    self.at(line, col + len(text)),
                    codes.BAD_ATOM,
                    f"add the pattern right after a colon, e.g. `{text}:/src/**`",
                )
            self.fail(
                f"`{text}` has no action: an atom is `resource:action:pattern`",
                self.at(line, col + first),
                codes.BAD_ATOM,
                f"name the action, e.g. `{head}:write:{tail}`",
            )
        resource, action, rest = text[:first], text[first + 1 : second], text[second + 1 :]
        self.check_part(resource, "resource", line, col)
        self.check_part(action, "action", line, col + first + 1)
        start = col + second + 1
        if rest == '""':
            self.fail("empty pattern: a pattern must match something", self.at(line, start, 2), codes.BAD_PATTERN)
        if rest.startswith('"'):
            return resource, action, _Located(rest[1:-1], line, start + 1, quoted=True)
        if '"' in rest:
            quote = rest.index('"')
            self.fail(
                "a quoted pattern must follow `resource:action:` directly",
                self.at(line, start + quote),
                codes.BAD_ATOM,
                f'quote the whole pattern: {resource}:{action}:"..."',
            )
        if rest == "":
            self.fail(
                "empty pattern after `resource:action:`",
                self.at(line, start),
                codes.BAD_PATTERN,
                "no space is allowed between the action and the pattern",
            )
        return resource, action, _Located(rest, line, start, quoted=False)

    def check_part(self, value: str, part: str, line: int, col: int) -> None:
        if value == "*" or _NAME.fullmatch(value):
            return
        hint = None
        if value and _NAME.fullmatch(value.lower()):
            hint = f"names are lowercase: `{value.lower()}`"
        shown = f"`{value}`" if value else "an empty name"
        self.fail(
            f"{shown} is not a valid {part}: expected a lowercase name ([a-z][a-z0-9_.-]*) or `*`",
            self.at(line, col, len(value)),
            codes.BAD_ATOM,
            hint,
        )

    def pattern(self, located: _Located, shown: str | None = None) -> str:
        """Validate a pattern in the bgc.core.patterns.glob dialect; the error points inside the pattern.
        ``shown`` is the pattern as written when ``located`` stands in for it (a template)."""
        from bgc.core.patterns import glob

        try:
            parsed = glob.parse(unicodedata.normalize("NFC", located.text))
        except glob.PatternError as error:
            problem = error.message.removesuffix(f" at column {error.column}")
            self.fail(
                f"malformed pattern `{shown or located.text}`: {problem}",
                self.at(located.line, located.col(error.column - 1)),
                codes.BAD_PATTERN,
                error.hint,
            )
        self.bounded(parsed, located)
        return parsed.text

    def bounded(self, parsed: Pattern, located: _Located) -> None:
        """Refuse a pattern (or an expect's value) beyond the size bounds of bgc.core.values.limits: the
        algebra's work grows with it, and a policy is compiled against every order. The error
        points at the pattern's start (it may be a thousand characters long)."""
        from bgc.core.patterns import glob

        problem = glob.size_problem(parsed)
        if problem:
            self.fail(
                f"the pattern is too large: it {problem}",
                self.at(located.line, located.col(0)),
                codes.BAD_PATTERN,
                "split it into several narrower patterns",
            )

    def path_pattern(self, located: _Located, shown: str | None = None, *, resource: str = "*") -> str:
        """A rule's or tool template's pattern: valid, and without a ``.`` or ``..`` segment.

        Values are normalised before they are matched (the gate turns ``/src/../.git`` into
        ``/.git``), so no value has such a segment: a deny of ``/src/../.git/**`` would protect
        nothing, and ``/src/**/../x`` must not read as if it were under ``/src``. The same rule
        holds for requests (``bgc.core.patterns.glob.has_dot_segment``). An argv resource (``proc``) is the
        exception: its segments are words, and ``.`` is a word (``find .``; bgc.core.resources.proc).
        """
        from bgc.core.patterns import glob
        from bgc.core.resources import ARGV_RESOURCES

        text = self.pattern(located, shown)
        for start, end in [] if resource in ARGV_RESOURCES else _segments(located.text):
            segment = located.text[start:end]
            if segment and glob.has_dot_segment(unicodedata.normalize("NFC", segment)):
                self.fail(
                    f"`{segment}` segment in pattern `{shown or located.text}`: values are normalised before "
                    "they are matched, so no value has a `.` or `..` segment and this pattern could never match",
                    self.at(located.line, located.col(start), located.col(end - 1) - located.col(start) + 1),
                    codes.BAD_PATTERN,
                    "write the path the pattern means: `/a/./b` is `/a/b`, `/a/x/../b` is `/a/b`",
                )
        return text

    def glued_comment(self, token: Token) -> None:
        """Refuse a ``#`` right after a bare pattern (``fs:write:/src/a#b``).

        The lexer ends a bare pattern at ``#`` and reads the rest as a comment, so the rule would
        silently mean ``/src/a``: for a deny, a shorter pattern than the author wrote. Whitespace
        before ``#`` says "comment"; quotes say "part of the pattern"; anything else is ambiguous.
        """
        is_atom = token.type == "ATOM"
        if token.value.endswith('"') or (is_atom and token.value.count(":") < 2):
            return  # a quoted pattern, or an atom too broken to have a pattern (split_atom says why)
        line = self.lines[token.end_line - 1]
        if line[token.end_column - 1 : token.end_column] != "#":
            return
        whole = token.value + re.split(r'[\s,"]', line[token.end_column - 1 :], maxsplit=1)[0]
        if is_atom:
            resource, action, pattern = whole.split(":", 2)
            suggestion = f'{resource}:{action}:"{pattern}"'
        else:
            suggestion = f'"{whole}"'
        self.fail(
            "`#` starts a comment here; quote the pattern to include it",
            self.at(token.end_line, token.end_column),
            codes.BAD_PATTERN,
            f"write `{suggestion}`, or put a space before `#` to start a comment",
        )

    def quoted(self, token: Token) -> _Located:
        return _Located(token.value[1:-1], token.line, token.column + 1, quoted=True)

    def list_pattern(self, tree: Tree, resource: str) -> tuple[str, Span]:
        (token,) = tree.children
        span = self.token_span(token)
        if token.value == '""':
            self.fail("empty pattern: a pattern must match something", span, codes.BAD_PATTERN)
        if token.type == "STRING":
            return self.path_pattern(self.quoted(token), resource=resource), span
        self.glued_comment(token)
        return self.path_pattern(_Located(token.value, token.line, token.column, quoted=False), resource=resource), span

    # -- strings --

    def string(self, token: Token) -> str:
        """A quoted string's text: ``\\"`` and ``\\\\`` are the only escapes."""
        out: list[str] = []
        for index, unit in escape_units(token.value[1:-1]):  # the grammar ends no string in a lone `\`
            if unit[0] == "\\" and unit[1:] not in ('"', "\\"):
                self.fail(
                    f"unknown escape `{unit}` in a string",
                    self.at(token.line, token.column + 1 + index, 2),
                    codes.BAD_STRING,
                    'inside quotes only \\" and \\\\ are escapes; write \\\\ for a backslash',
                )
            out.append(unit[-1])
        return "".join(out)

    def nonempty_string(self, token: Token, what: str) -> str:
        value = self.string(token)
        if not value.strip():
            self.fail(f"{what} must not be empty", self.token_span(token), codes.BAD_STRING)
        return value

    # -- rules --

    def rule(self, tree: Tree, mode: str | None) -> Rule:
        children = tree.children
        fallback = children[0].type == "OTHERWISE"
        effect_token, atom_token, *rest = children[1:] if fallback else children
        if fallback and effect_token.value == "allow":
            self.fail(
                "`otherwise allow` is not a rule: a fallback may ask or deny, never allow",
                Span(self.path, children[0].line, children[0].column, effect_token.end_line, effect_token.end_column),
                codes.FALLBACK_ALLOW,
                "write `allow` instead: an allow already gives way to every ask and deny, so "
                "`otherwise allow X` would mean `allow X`, and a fallback that grants what no rule names widens",
            )
        resource, action, located = self.split_atom(atom_token)
        patterns = [self.path_pattern(located, resource=resource)]
        # A pattern's span is the pattern as written: a quoted one with both its quotes, as the
        # later patterns of the list (STRING tokens) are, so lints and SARIF regions agree.
        quoted = atom_token.value.endswith('"')
        spans = [Span(self.path, atom_token.line, located.col(0) - quoted, atom_token.end_line, atom_token.end_column)]
        when: Condition | None = None
        because: str | None = None
        approvals: Approvals | None = None
        sandbox = False
        seen: dict[str, Span] = {}
        for child in rest:
            if child.data == "pattern":
                pattern, span = self.list_pattern(child, resource)
                patterns.append(pattern)
                spans.append(span)
                continue
            span = self.tree_span(child)
            if child.data in seen:
                self.duplicate_clause(child.data, span, seen[child.data])
            seen[child.data] = span
            if child.data == "when_clause":
                _, condition = child.children
                when = self.condition(condition)
            elif child.data == "because":
                _, reason = child.children
                because = self.nonempty_string(reason, "a reason")
            elif child.data == "in_sandbox":
                sandbox = self.in_sandbox(span, effect_token.value, fallback, resource, action)
            else:
                approvals = self.approvals(child, effect_token.value)
        effect = effect_token.value
        assert effect in EFFECTS
        return Rule(
            effect, resource, action, tuple(patterns), when, because, approvals, mode,
            self.tree_span(tree), tuple(spans), fallback, sandbox,
        )  # fmt: skip

    def in_sandbox(self, span: Span, effect: str, fallback: bool, resource: str, action: str) -> bool:
        """``in sandbox`` of an ``allow proc:exec:`` rule: what it grants is a command that runs
        confined. Anywhere else it would say nothing a sandbox could keep (a deny or an ask grants
        no command; a file or a host is not a command), so it is refused rather than ignored."""
        if effect != "allow" or fallback or (resource, action) != ("proc", "exec"):
            rule = f"`{'otherwise ' if fallback else ''}{effect} {resource}:{action}:`"
            self.fail(
                f"`in sandbox` only applies to `allow proc:exec:` rules, not {rule}",
                span, codes.MISPLACED_CLAUSE,
                "`in sandbox` confines the commands an allow grants: write it after `allow proc:exec:PATTERN`",
            )  # fmt: skip
        return True

    def duplicate_clause(self, kind: str, span: Span, first: Span) -> NoReturn:
        word = {
            "when_clause": "when", "because": "because", "approvals": "approvals", "in_mode": "in mode",
            "in_sandbox": "in sandbox",
        }[kind]  # fmt: skip
        hint = "join conditions with `and`" if kind == "when_clause" else None
        self.fail(f"`{word}` given twice (first at column {first.col})", span, codes.MISPLACED_CLAUSE, hint)

    def approvals(self, tree: Tree, effect: str | None) -> Approvals:
        """``approvals N of [names]`` of an ``ask`` rule, or of a mode block (``effect`` None):
        who may switch a session to that mode."""
        span = self.tree_span(tree)
        if effect is not None and effect != "ask":
            self.fail(
                f"`approvals` only applies to `ask` rules, not `{effect}`",
                self.at(span.line, span.col, len("approvals")),
                codes.MISPLACED_CLAUSE,
                f"write `ask` instead of `{effect}` if this needs people to approve",
            )
        _, count_token, _, *approvers = tree.children
        names: list[str] = []
        for approver in approvers:
            (token,) = approver.children
            name = self.string(token) if token.type == "STRING" else token.value
            if not name.strip():
                self.fail("an approver's name must not be empty", self.token_span(token), codes.BAD_STRING)
            if name in names:
                self.fail(f"`{name}` is listed twice", self.token_span(token), codes.BAD_APPROVALS)
            names.append(name)
        # A count with more digits than the number of names is too large whatever they say; it is
        # never converted (Python refuses, in its own words, over 4300 digits).
        digits = count_token.value.lstrip("0") or "0"
        count = int(digits) if len(digits) <= len(str(len(names))) else None
        if count is None or count < 1 or count > len(names):
            shown = digits if count is not None else f"a {len(digits)}-digit count"
            self.fail(
                f"approvals {shown} of {len(names)} name{'s' if len(names) != 1 else ''}: "
                f"the count must be between 1 and the number of names",
                self.token_span(count_token),
                codes.BAD_APPROVALS,
            )
        return Approvals(count, tuple(names), span)

    def trust(self, tree: Tree) -> Trust:
        """``trust ROLE NAME KEY``; the key's text form is checked here, its curve point by the
        kernel when it loads the trust (the core does not import the runtime)."""
        _, role, name_tree, key = tree.children
        (token,) = name_tree.children
        name = self.string(token) if token.type == "STRING" else token.value
        if not name.strip():
            self.fail("a trusted name must not be empty", self.token_span(token), codes.BAD_STRING)
        if not _PUBLIC_KEY.fullmatch(key.value):
            self.fail(
                f"`{key.value[:60]}` is not a public key: expected `ed25519:` and 43 base64url characters",
                self.token_span(key),
                codes.BAD_TRUST,
                "`bgc key new NAME` makes a key pair; `bgc key show NAME` prints the public key",
            )
        return Trust(role.value, name, key.value, self.tree_span(tree))  # type: ignore[arg-type]

    # -- conditions --

    def condition(self, tree: Tree) -> Condition:
        """The condition ``tree`` as AST, built bottom-up by :func:`_conditions` (a Lark
        ``Transformer``: each kind of node is one method over its children, already built).

        Nesting is bounded first, without recursion: the first node (in source order) deeper
        than :data:`MAX_CONDITION_DEPTH` is replaced by a ``too_deep`` leaf, which the
        transformer refuses at that node's place. A bottom-up pass meets the leaves in source
        order, as a top-down walk does, so the first error reported is the same either way.
        """
        from lark.exceptions import VisitError

        try:
            return _conditions(self).transform(_bounded(tree))
        except VisitError as error:  # Lark wraps what a callback raises: the PolicyError inside
            raise error.orig_exc from None

    def field(self, token: Token) -> str:
        if token.value not in FIELDS:
            self.fail(
                f"unknown field `{token.value}`: expected {join_words([f'`{name}`' for name in FIELDS])}",
                self.token_span(token),
                codes.UNKNOWN_FIELD,
                did_you_mean(token.value, FIELDS),
            )
        return token.value

    # -- tools --

    def tool_decl(self, tree: Tree) -> ToolDecl:
        _, name_token, *rest = tree.children
        if not _TOOL.fullmatch(name_token.value):
            self.fail(
                f"`{name_token.value}` is not a valid tool name: expected a dotted name like `fs.write`",
                self.token_span(name_token),
                codes.BAD_NAME,
            )
        servers: list[str] = []
        if rest[0].type == "ON":
            needs_at = next(i for i, token in enumerate(rest) if token.type == "NEEDS")
            for token in rest[1:needs_at]:
                if not _SERVER.fullmatch(token.value):
                    self.fail(
                        f"`{token.value}` is not a valid server name: expected letters, digits, `_`, `.` or `-`",
                        self.token_span(token),
                        codes.BAD_NAME,
                    )
                if token.value in servers:
                    self.fail(f"server `{token.value}` is named twice", self.token_span(token), codes.DUPLICATE_TOOL)
                servers.append(token.value)
            rest = rest[needs_at:]
        ignored: list[str] = []
        if any(token.type == "IGNORES" for token in rest):
            ignores_at = next(i for i, token in enumerate(rest) if token.type == "IGNORES")
            for token in rest[ignores_at + 1 :]:
                if not _IGNORED.fullmatch(token.value) or token.value in ignored:
                    self.fail(f"`{token.value}` is not a parameter name, once", self.token_span(token), codes.BAD_PLACEHOLDER)
                ignored.append(token.value)
            rest = rest[:ignores_at]
        needs = tuple(self.template(token) for token in rest[1:])
        for token in rest[ignores_at + 1 :] if ignored else ():
            if any(token.value in need.params for need in needs):
                self.fail(f"`{token.value}` is a template parameter: it cannot also be ignored", self.token_span(token), codes.BAD_PLACEHOLDER)
        return ToolDecl(
            name_token.value,
            needs,
            self.tree_span(tree),
            self.token_span(name_token),
            tuple(servers) or (LOCAL_SERVER,),
            tuple(ignored),
        )

    def template(self, token: Token) -> AtomTemplate:
        resource, action, located = self.split_atom(token)
        text = located.text
        for value, part, offset in ((resource, "resource", 0), (action, "action", len(resource) + 1)):
            if value == "*":
                self.fail(
                    f"a tool needs a concrete {part}, not `*`",
                    self.at(token.line, token.column + offset),
                    codes.BAD_ATOM,
                )
        params: list[str] = []
        probe: list[str] = []
        for kind, start, end in scan_template(text):
            if kind == "text":
                probe.append(text[start:end])
                continue
            if kind == "stray":
                self.fail(
                    "`}` without a matching `{`",
                    self.at(token.line, located.col(start)),
                    codes.BAD_PLACEHOLDER,
                    "write `\\}` for a literal brace",
                )
            if kind == "unclosed":
                self.fail(
                    "unclosed `{`: a placeholder is `{name}`",
                    self.at(token.line, located.col(start)),
                    codes.BAD_PLACEHOLDER,
                    "write `\\{` for a literal brace",
                )
            name = text[start + 1 : end - 1]
            width = located.col(end - 1) - located.col(start) + 1
            if not _PARAM.fullmatch(name):
                self.fail(
                    f"`{{{name}}}` is not a parameter: a placeholder names one call parameter, "
                    f"like `{{path}}`",
                    self.at(token.line, located.col(start), width),
                    codes.BAD_PLACEHOLDER,
                )
            if name in params:
                self.fail(
                    f"parameter `{{{name}}}` appears twice in one atom",
                    self.at(token.line, located.col(start), width),
                    codes.BAD_PLACEHOLDER,
                    "a list-valued parameter expands to one atom per element, so each "
                    "parameter may appear once per atom",
                )
            params.append(name)
            probe.append("x" * (end - start))  # same width: pattern errors keep their column
        self.path_pattern(_Located("".join(probe), token.line, located.col(0), quoted=False), text, resource=resource)
        return AtomTemplate(
            resource, action, unicodedata.normalize("NFC", text), tuple(params), self.token_span(token)
        )

    # -- modes, includes --

    def mode_name(self, token: Token) -> str:
        if not _MODE.fullmatch(token.value):
            self.fail(
                f"`{token.value}` is not a valid mode name: expected letters, digits, `_` or `-`",
                self.token_span(token),
                codes.BAD_NAME,
            )
        return token.value

    def mode_block(self, tree: Tree) -> ModeBlock:
        _, name_token, *body = tree.children
        name = self.mode_name(name_token)
        rules = tuple(self.rule(child, name) for child in body if getattr(child, "data", None) == "rule")
        approvals = next(
            (self.approvals(child, None) for child in body if getattr(child, "data", None) == "approvals"), None
        )
        return ModeBlock(name, rules, self.tree_span(tree), self.token_span(name_token), approvals)

    def include(self, tree: Tree) -> Include:
        _, token = tree.children
        path = self.nonempty_string(token, "an include path")
        if os.path.isabs(path) or path.startswith("/"):
            self.fail(
                f"include paths are relative to the including file, not absolute: `{path}`",
                self.token_span(token),
                codes.BAD_INCLUDE,
            )
        return Include(path, self.tree_span(tree), self.token_span(token))

    # -- expects --

    def expect(self, tree: Tree) -> Expect:
        from bgc.core.patterns import glob

        _, effect_token, atom_token, *clauses = tree.children
        resource, action, located = self.split_atom(atom_token)
        for value, part, offset in ((resource, "resource", 0), (action, "action", len(resource) + 1)):
            if value == "*":
                self.fail(
                    f"an expect checks one concrete {part}, not `*`",
                    self.at(atom_token.line, atom_token.column + offset),
                    codes.BAD_EXPECT,
                )
        value = self.concrete(located)
        self.bounded(glob.parse(glob.escape(value)), located)  # it is decided as a request
        context: tuple[tuple[str, str], ...] = ()
        mode: str | None = None
        mode_span: Span | None = None
        seen: dict[str, Span] = {}
        for child in clauses:
            span = self.tree_span(child)
            if child.data in seen:
                self.duplicate_clause(child.data, span, seen[child.data])
            seen[child.data] = span
            if child.data == "when_clause":
                _, condition = child.children
                context = self.expect_context(self.condition(condition))
            else:
                *_, mode_token = child.children
                mode, mode_span = self.mode_name(mode_token), self.token_span(mode_token)
        return Expect(
            effect_token.value, resource, action, value, context, mode, self.tree_span(tree), mode_span
        )

    def concrete(self, located: _Located) -> str:
        """An expect's value: literal text; ``\\x`` is ``x``, wildcards are refused."""
        out: list[str] = []
        for index, unit in escape_units(located.text):
            if unit == "\\":
                self.fail("trailing `\\` escapes nothing", self.at(located.line, located.col(index)), codes.BAD_EXPECT)
            if unit in ("*", "?", "["):
                self.fail(
                    f"an expect checks one concrete value, not a pattern: `{unit}` is a wildcard",
                    self.at(located.line, located.col(index)),
                    codes.BAD_EXPECT,
                    f"write `\\{unit}` for a literal `{unit}`",
                )
            out.append(unit[-1])
        return "".join(out)

    def expect_context(self, condition: Condition) -> tuple[tuple[str, str], ...]:
        items = condition.items if isinstance(condition, And) else (condition,)
        pairs: dict[str, str] = {}
        for item in items:
            if not (isinstance(item, Compare) and item.op == "=="):
                self.fail(
                    "an expect's context is `field == \"value\"` comparisons joined by `and`",
                    item.span,
                    codes.BAD_EXPECT,
                    "an expect describes one situation, so it cannot use `or`, `not`, `!=`, `in` or `matches`",
                )
            if item.field == "call.tool":
                self.fail(
                    "an expect cannot set `call.tool`: it decides a request, and requests are compiled "
                    "without a call",
                    item.span,
                    codes.BAD_EXPECT,
                    "give intent.kind and origin.model; bgc test checks call coverage",
                )
            if item.field in pairs:
                self.fail(f"`{item.field}` is given twice", item.span, codes.BAD_EXPECT)
            pairs[item.field] = item.value
        return tuple(pairs.items())

    # -- syntax errors in words --

    def syntax_error(self, error: UnexpectedInput) -> PolicyError:
        from lark.exceptions import UnexpectedCharacters, UnexpectedToken

        line, col = error.line, error.column
        if isinstance(error, UnexpectedCharacters):
            expected = set(error.allowed)
            source_line = self.lines[line - 1] if line - 1 < len(self.lines) else ""
            if source_line[col - 1 : col] == '"':
                return self.error(
                    'unclosed string: expected a closing `"` on the same line',
                    self.at(line, col, len(source_line) - col + 1),
                    codes.SYNTAX,
                )
            word = re.match(r'[^\s,#"\[\](){}]+|.', source_line[col - 1 :])
            found_text = word.group(0) if word else ""
            found_type = "WORD"
        else:
            assert isinstance(error, UnexpectedToken)
            expected = set(error.expected)
            token = error.token
            found_type = token.type
            found_text = token.value
            if found_type == "$END":
                return self.unclosed_block(error, expected)
            spaced = self.spaced_atom(error, found_type, found_text)
            if spaced is not None:
                return spaced
        wanted = expected_text(expected)
        if found_type == "_NL":
            found = "the end of the line"
            width = 1
        else:
            found = f"`{found_text}`"
            width = len(found_text)
        hint = syntax_hint(expected, found_type, found_text)
        return self.error(f"expected {wanted}, found {found}", self.at(line, col, width), codes.SYNTAX, hint)

    def spaced_atom(self, error: Any, found_type: str, found: str) -> PolicyError | None:
        """``allow fs:write /src/**``: report the incomplete atom, not the word after it."""
        state = getattr(getattr(error, "interactive_parser", None), "parser_state", None)
        stack = state.value_stack if state is not None else []
        previous = stack[-1] if stack else None
        if getattr(previous, "type", None) != "ATOM" or found_type == "_NL":
            return None
        try:
            self.split_atom(previous)
        except PolicyError as incomplete:
            incomplete.hint = f"write the atom without spaces: `{previous.value.rstrip(':')}:{found}`"
            return incomplete
        return None

    def unclosed_block(self, error: Any, expected: set[str]) -> PolicyError:
        stack = getattr(getattr(error, "interactive_parser", None), "parser_state", None)
        opener = None
        if "RBRACE" in expected and stack is not None:
            opener = next((tok for tok in reversed(stack.value_stack) if getattr(tok, "type", "") == "LBRACE"), None)
        if opener is not None:
            return self.error(
                "this mode block is never closed: expected `}` on a line of its own",
                self.token_span(opener),
                codes.SYNTAX,
            )
        last = max((number for number, text in enumerate(self.lines, start=1) if text.strip()), default=1)
        return self.error(
            f"unexpected end of the file: expected {expected_text(expected)}",
            self.at(last, len(self.lines[last - 1]) + 1),
            codes.SYNTAX,
        )


_CONDITION_NODES = ("or_cond", "and_cond", "not_cond", "compare", "in_list", "matches")


def _bounded(tree: Tree) -> Tree:
    """``tree`` with its first node nested deeper than :data:`MAX_CONDITION_DEPTH` (in source
    order, the root at depth 0) replaced by a ``too_deep`` leaf at the same place: evaluation,
    formatting and the transformer recurse, so nesting is bounded before any of them runs."""
    from lark import Tree

    stack: list[tuple[Tree, int, Tree | None, int]] = [(tree, 0, None, 0)]
    while stack:
        node, depth, parent, index = stack.pop()
        if depth > MAX_CONDITION_DEPTH:
            leaf = Tree("too_deep", [], meta=node.meta)
            if parent is None:
                return leaf
            parent.children[index] = leaf  # the tree is this parse's own: nothing else holds it
            return tree
        children = [(child, i) for i, child in enumerate(node.children) if getattr(child, "data", None) in _CONDITION_NODES]
        stack.extend((child, depth + 1, node, i) for child, i in reversed(children))
    return tree


def _conditions(file: FileParser) -> Any:
    """A Lark ``Transformer`` turning a condition's parse tree into AST nodes, each located at
    its node (``v_args(meta=True)``: every method gets the node's position and its children,
    already transformed), every word checked by ``file`` as it is met."""
    from lark import Transformer, v_args

    @v_args(meta=True)
    class Conditions(Transformer):  # type: ignore[type-arg]
        def or_cond(self, meta: Any, children: list[Any]) -> Or:
            return Or(_joined(Or, children), file.meta_span(meta))

        def and_cond(self, meta: Any, children: list[Any]) -> And:
            return And(_joined(And, children), file.meta_span(meta))

        def not_cond(self, meta: Any, children: list[Any]) -> Not:
            _, item = children
            return Not(item, file.meta_span(meta))

        def compare(self, meta: Any, children: list[Token]) -> Compare:
            field, op, value = children
            return Compare(file.field(field), op.value, file.string(value), file.meta_span(meta))

        def in_list(self, meta: Any, children: list[Token]) -> InList:
            field, _, *values = children
            return InList(file.field(field), tuple(file.string(token) for token in values), file.meta_span(meta))

        def matches(self, meta: Any, children: list[Token]) -> Matches:
            field, _, value = children
            return Matches(file.field(field), file.pattern(file.quoted(value)), file.meta_span(meta))

        def too_deep(self, meta: Any, children: list[Any]) -> NoReturn:
            file.fail(f"condition nested more than {MAX_CONDITION_DEPTH} levels deep", file.meta_span(meta), codes.SYNTAX)

    return Conditions(visit_tokens=False)


def _joined(node: type[Or] | type[And], children: list[Any]) -> tuple[Condition, ...]:
    """The items of an ``or``/``and``, less its keywords; a nested one of the same kind is
    flattened (``(a or b) or c`` is ``a or b or c``)."""
    items: list[Condition] = []
    for child in children:
        if isinstance(child, node):
            items.extend(child.items)
        elif not isinstance(child, str):  # the `and` / `or` keyword (a Token is a str)
            items.append(child)
    return tuple(items)
