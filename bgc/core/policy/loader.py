"""A whole policy: reading its files, following includes, validating across files, one Policy.

:mod:`bgc.core.policy.parser` turns one file's text into a :class:`~bgc.core.policy.ast.SourceFile`; this
module does what needs more than one file: it reads the root file and every file it includes
(bounded reads, UTF-8 only, BGC015), follows ``include`` depth first with cycle detection (each file
spliced in once, BGC010) and never out of the root policy's directory tree — or, for a file bgc
bundles (``include "claude-code.bgp"`` with no such file beside the including one), out of the
bundled policies' directory — checks what only the
whole policy can show (a mode or tool declared twice, a second ``default mode``, an unknown mode,
conflicting ``filesystem`` declarations) and assembles the :class:`~bgc.core.policy.ast.Policy` with
the digest of every file it read.

The dependency runs one way, loader → parser: errors found here are located with the parser of
the file they are in, so they render like syntax errors (``file:line:col``, source line, caret).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NoReturn

from bgc import codes
from bgc.errors import Span
from bgc.core.policy.ast import (
    LOCAL_SERVER,
    Comment,
    DefaultMode,
    Expect,
    Filesystem,
    Include,
    ModeBlock,
    Policy,
    PolicyFile,
    Rule,
    Statement,
    ToolDecl,
    Trust,
    TrustElicitation,
)
from bgc.core.policy.bundled import bundled_directory, bundled_file, recorded
from bgc.core.policy.parser import FileParser, PolicyError
from bgc.core.policy.syntax_words import join_words
from bgc.text import did_you_mean

if TYPE_CHECKING:
    from pathlib import Path


def parse_policy(text: str, path: str | Path) -> Policy:
    """Parse ``text`` as the policy at ``path``; includes are read relative to ``path``'s directory."""
    display = os.fspath(path)
    return _Loader(display).load(display, text, text.encode("utf-8"))


def load_policy(path: str | Path) -> Policy:
    """Read the policy at ``path`` and every file it includes; raises PolicyError."""
    display = os.fspath(path)
    data = _read(display, None)
    return _Loader(display).load(display, _decode(data, display), data)


def cached_policy(path: str) -> Policy:
    """:func:`load_policy`, reusing the parse of unchanged files from bgc's verified cache.

    The entry is keyed by the root file's digest and valid only while every included file
    still has the digest recorded in the policy; anything else is parsed afresh.
    """
    from bgc.core import cache  # the cache's hashing and pickling cost nothing until a policy is loaded

    keyed = cache.policy_key(path, "policy")
    if keyed is not None:
        entry = cache.load_object("policy", keyed[0])
        if entry is not None and cache.unchanged(path, keyed[1], entry.file_digests()):
            return entry  # type: ignore[no-any-return]
    policy = load_policy(path)
    if keyed is not None:
        cache.store_object("policy", keyed[0], policy)
    return policy


def _read(path: str, site: tuple[FileParser, Span, str, str | None] | None) -> bytes:
    """The bytes of the policy file at ``path``. ``site`` is the include that names it (the
    including file's parser, the include's span, the path to show, a hint), for an include's error."""
    from bgc.core.values.documents import DocumentError, read_bytes

    try:
        return read_bytes(path)
    except DocumentError as error:
        if site is None:
            raise PolicyError(error.message, Span(path), code=codes.UNREADABLE_POLICY) from None
        owner, span, shown, hint = site
        owner.fail(f"cannot include `{shown}`: {error.message}", span, codes.BAD_INCLUDE, hint)


def _missing_hint(path: str) -> str | None:
    """For an include that names nothing: the bundled policy it may have meant."""
    from bgc.core.policy.bundled import bundled_names

    names = bundled_names()
    close = did_you_mean(os.path.basename(path), names)
    if close is not None:
        return f"{close} (a policy bgc ships, which an include names without a copy)"
    return "bgc ships " + join_words([f"`{name}`" for name in names], "and") + ": an include names one without a copy"


def _decode(data: bytes, display: str) -> str:
    from bgc.core.values.documents import DocumentError, decode_utf8

    try:
        return decode_utf8(data, display)
    except DocumentError as error:
        raise PolicyError(error.message, error.span, code=codes.UNREADABLE_POLICY) from None


class _Loader:
    """Reads a root file and its includes (depth first, each file once) into one Policy."""

    def __init__(self, root: str) -> None:
        self.root_dir = os.path.dirname(root) or "."
        self.boundary = os.path.realpath(self.root_dir)
        self.bundled: dict[str, str] = {}
        """Files read from bgc's bundled policies: the name they are shown by → ``bgc:NAME``."""
        self.files: list[PolicyFile] = []
        self.parsers: dict[str, FileParser] = {}
        self.seen: set[str] = set()
        self.rules: list[Rule] = []
        self.tools: dict[str, ToolDecl] = {}
        self.modes: dict[str, ModeBlock] = {}
        self.defaults: list[DefaultMode] = []
        self.expects: list[Expect] = []
        self.filesystem: Filesystem | None = None
        self.trusted: list[Trust] = []
        self.trusts_elicitation = False
        self.comments: list[Comment] = []
        self.absent: list[str] = []
        """Where an include found nothing and took a bundled file (relative to the root's directory)."""

    def fail(self, message: str, span: Span, code: str, hint: str | None = None) -> NoReturn:
        self.parsers[span.file].fail(message, span, code, hint)

    def load(self, display: str, text: str, data: bytes) -> Policy:
        self.add(display, text, data, ())
        default = self.validate()
        return Policy(
            path=display,
            rules=tuple(self.rules),
            tools=tuple(dict.fromkeys(self.tools.values())),
            modes=tuple(self.modes),
            default_mode=default,
            mode_approvals=tuple(
                (name, block.approvals) for name, block in self.modes.items() if block.approvals is not None
            ),
            expects=tuple(self.expects),
            files=tuple(self.files),
            case_insensitive=bool(self.filesystem and self.filesystem.case_insensitive),
            trust=tuple(self.trusted),
            trusts_elicitation=self.trusts_elicitation,
            comments=tuple(self.comments),
            absent=tuple(dict.fromkeys(self.absent)),
        )

    def add(self, display: str, text: str, data: bytes, stack: tuple[str, ...]) -> None:
        from bgc.core.values.model import Digest

        real = os.path.realpath(display)
        self.seen.add(real)
        relative = self.bundled.get(display) or os.path.relpath(display, self.root_dir).replace(os.sep, "/")
        self.files.append(PolicyFile(relative, Digest.of(data).text))
        file_parser = FileParser(text, display)
        self.parsers[display] = file_parser
        source = file_parser.parse()
        self.comments.extend(source.comments)
        for statement in source.statements:
            if isinstance(statement, Include):
                self.include(statement, display, stack + (real,))
            elif isinstance(statement, Rule):
                self.rules.append(statement)
            elif isinstance(statement, ModeBlock):
                self.mode(statement)
            elif isinstance(statement, ToolDecl):
                self.tool(statement)
            elif isinstance(statement, DefaultMode):
                self.defaults.append(statement)
            elif isinstance(statement, Expect):
                self.expects.append(statement)
            elif isinstance(statement, Trust):
                self.trust(statement)
            elif isinstance(statement, TrustElicitation):
                self.trusts_elicitation = True
            else:
                self.declare_filesystem(statement)

    def include(self, statement: Include, display: str, stack: tuple[str, ...]) -> None:
        """Splice in the file ``statement`` names, relative to the including file ``display``;
        when nothing is there and the path is a plain file name bgc bundles
        (``include "claude-code.bgp"``), that bundled file.

        The file must lie in the root policy's directory or below it once symbolic links are
        resolved: a policy is then self-contained (it means the same wherever the tree is
        checked out, and its id covers every file it reads), and bgc never opens, let alone
        quotes in a syntax error, a file outside the tree (``include "../../etc/passwd"``). The
        resolved path, the one checked, is the one read. A bundled file is recorded as
        ``bgc:NAME`` (so the id is the same on every machine with the same bgc) and its own
        includes stay in the bundled directory by the same rule. A file of the policy's own
        always comes first: anything at the path (even a broken link) is what the include
        means, so a project can pin its copy of a bundled file.
        """
        target = os.path.normpath(os.path.join(os.path.dirname(display), statement.path))
        where = statement.path_span or statement.span
        within = self.boundary
        if display in self.bundled:
            within = bundled_directory()
            self.bundled[target] = recorded(target)
        elif not os.path.lexists(target):
            bundled = bundled_file(statement.path)
            if bundled is not None:
                self.absent.append(os.path.relpath(target, self.root_dir).replace(os.sep, "/"))
                target, within = bundled, os.path.dirname(bundled)
                self.bundled[target] = recorded(bundled)
        real = os.path.realpath(target)
        if os.path.commonpath([within, real]) != within:
            self.fail(
                f"include `{statement.path}` resolves outside the root policy's directory "
                f"(`{self.root_dir}`), symbolic links followed",
                where,
                codes.BAD_INCLUDE,
                "an included file must lie in the root policy's directory or below it; copy it there",
            )
        if real in stack:
            chain = [os.path.relpath(item) for item in stack[stack.index(real) :]] + [os.path.relpath(real)]
            self.fail(f"include cycle: {' → '.join(chain)}", statement.span, codes.BAD_INCLUDE)
        if real in self.seen:
            return  # already spliced in once (a diamond); rules are a set, once is enough
        hint = None if os.path.lexists(target) else _missing_hint(statement.path)
        data = _read(real, (self.parsers[display], where, target, hint))
        self.add(target, _decode(data, target), data, stack)

    def mode(self, block: ModeBlock) -> None:
        if block.name in self.modes:
            first = self.modes[block.name].span
            self.fail(
                f"mode `{block.name}` is already declared at {first}",
                block.name_span or block.span,
                codes.DUPLICATE_MODE,
                "put all of a mode's rules in one block",
            )
        self.modes[block.name] = block
        self.rules.extend(block.rules)

    def tool(self, decl: ToolDecl) -> None:
        for server in decl.servers:
            key = f"{decl.tool}@{server}"
            if key in self.tools:
                where = "" if server == LOCAL_SERVER else f" on `{server}`"
                self.fail(
                    f"tool `{decl.tool}`{where} is already declared at {self.tools[key].span}",
                    decl.name_span or decl.span,
                    codes.DUPLICATE_TOOL,
                    "list every atom the tool needs in one declaration, separated by `,`",
                )
            self.tools[key] = decl

    def trust(self, statement: Trust) -> None:
        """One name per role, and one name per key and role: two approver names with one key
        would let one person count twice towards a threshold."""
        for other in self.trusted:
            if other.role != statement.role:
                continue
            if other.name == statement.name or other.key == statement.key:
                what = f"`{other.name}`" if other.name == statement.name else "this key"
                self.fail(f"{what} is already trusted as {other.role} at {other.span}", statement.span, codes.BAD_TRUST)
        self.trusted.append(statement)

    def declare_filesystem(self, statement: Statement) -> None:
        assert isinstance(statement, Filesystem)
        if self.filesystem and self.filesystem.case_insensitive != statement.case_insensitive:
            self.fail(
                f"conflicts with the `filesystem` declaration at {self.filesystem.span}",
                statement.span,
                codes.CONFLICTING_FILESYSTEM,
            )
        self.filesystem = self.filesystem or statement

    def known_mode(self, name: str, span: Span) -> None:
        if name not in self.modes:
            declared = join_words([f"`{mode}`" for mode in self.modes]) if self.modes else None
            self.fail(
                f"unknown mode `{name}`" + (f": declared modes are {declared}" if declared else ": no mode is declared"),
                span,
                codes.UNKNOWN_MODE,
                did_you_mean(name, self.modes) or (None if declared else f"declare it: mode {name} {{ ... }}"),
            )

    def validate(self) -> str | None:
        for extra in self.defaults[1:]:
            self.fail(f"`default mode` is already set at {self.defaults[0].span}", extra.span, codes.DUPLICATE_MODE)
        default = self.defaults[0] if self.defaults else None
        if default is not None:
            self.known_mode(default.name, default.name_span or default.span)
        for expect in self.expects:
            if expect.mode is not None:
                self.known_mode(expect.mode, expect.mode_span or expect.span)
        return default.name if default else None
