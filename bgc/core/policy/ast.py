"""The policy AST: frozen values with a source span on every node.

Two levels, because two consumers need different things:

* :class:`SourceFile` is one file as written (statements in order, include statements and mode
  blocks intact, comments kept apart). ``bgc fmt`` prints it back; nothing is resolved.
* :class:`Policy` is what the compiler reads: every included file spliced in, rules flattened with
  their mode, names validated, and an id that covers the content of every file it came from.

Spans are compared as *metadata*, not content (``compare=False``): two rules that say the same thing
are equal wherever they sit, which is what round-trip tests and policy diffs want. Conditions are
three-valued (Kleene): a field the context does not know is *unknown*, and a rule whose condition
is unknown is for the compiler to treat conservatively, not for the AST to guess.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal, Union

from dataclasses import dataclass, field
from bgc.errors import Span, UsageError
from bgc.core.policy.bundled import ABSENT, BUNDLED, bundled_directory, recorded
from bgc.core.policy.templates import LOCAL_SERVER as LOCAL_SERVER
from bgc.core.policy.templates import AtomTemplate as AtomTemplate
from bgc.core.policy.templates import TemplateError as TemplateError
from bgc.core.policy.templates import scan_template as scan_template

Effect = Literal["allow", "ask", "deny"]
EFFECTS: tuple[Effect, ...] = ("allow", "ask", "deny")

FIELDS: tuple[str, ...] = ("intent.kind", "origin.model", "call.tool")
"""The context fields a condition may test."""

POLICY_TAG = "bgc.Policy"
POLICY_VERSION = 1


def _meta() -> Any:
    """A span-like field that does not take part in equality or hashing."""
    return field(compare=False)


# ---- conditions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Compare:
    """``field == "value"`` or ``field != "value"``."""

    field: str
    op: Literal["==", "!="]
    value: str
    span: Span = _meta()

    def evaluate(self, ctx: Mapping[str, str]) -> bool | None:
        actual = ctx.get(self.field)
        if actual is None:
            return None
        return (actual == self.value) == (self.op == "==")


@dataclass(frozen=True, slots=True)
class InList:
    """``field in ["a", "b"]``."""

    field: str
    values: tuple[str, ...]
    span: Span = _meta()

    def evaluate(self, ctx: Mapping[str, str]) -> bool | None:
        actual = ctx.get(self.field)
        if actual is None:
            return None
        return actual in self.values


@dataclass(frozen=True, slots=True)
class Matches:
    """``field matches "glob"``: bgc.core.patterns.glob's dialect with the whole field as one segment.

    Condition fields are names, not paths: ``origin.model matches "*-mini"`` must hold for
    ``openai/gpt-4o-mini``, so ``*`` and ``?`` match ``/`` here (fnmatch, not wildmatch's
    ``WM_PATHNAME``). Done by reading ``/`` as a character no field value contains, in the
    pattern and the value alike; a value that does contain it is *unknown*, never a guess.
    """

    field: str
    pattern: str
    span: Span = _meta()

    def evaluate(self, ctx: Mapping[str, str]) -> bool | None:
        from bgc.core.patterns import glob  # parse() is cached: the pattern is compiled once

        actual = ctx.get(self.field)
        if actual is None or _NAME_SLASH in actual:
            return None
        return glob.parse(self.pattern.replace("/", _NAME_SLASH)).matches(actual.replace("/", _NAME_SLASH))


_NAME_SLASH = "\uffff"
"""A noncharacter (Unicode reserves it for internal use): stands for ``/`` in a ``matches``."""


@dataclass(frozen=True, slots=True)
class And:
    """All items hold. Kleene: false wins over unknown, unknown over true."""

    items: tuple[Condition, ...]
    span: Span = _meta()

    def evaluate(self, ctx: Mapping[str, str]) -> bool | None:
        results = [item.evaluate(ctx) for item in self.items]
        if False in results:
            return False
        return None if None in results else True


@dataclass(frozen=True, slots=True)
class Or:
    """Some item holds. Kleene: true wins over unknown, unknown over false."""

    items: tuple[Condition, ...]
    span: Span = _meta()

    def evaluate(self, ctx: Mapping[str, str]) -> bool | None:
        results = [item.evaluate(ctx) for item in self.items]
        if True in results:
            return True
        return None if None in results else False


@dataclass(frozen=True, slots=True)
class Not:
    """The item does not hold; the negation of unknown is unknown."""

    item: Condition
    span: Span = _meta()

    def evaluate(self, ctx: Mapping[str, str]) -> bool | None:
        result = self.item.evaluate(ctx)
        return None if result is None else not result


Condition = Union[Compare, InList, Matches, And, Or, Not]


# ---- statements ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Approvals:
    """``approvals N of [names]``: N distinct people among ``approvers`` must approve."""

    count: int
    approvers: tuple[str, ...]
    span: Span = _meta()


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``allow``/``ask``/``deny`` line, or a fallback (``otherwise ask``/``otherwise deny``).
    ``resource``/``action`` may be ``*``.

    ``patterns`` are NFC-normalised and valid in the bgc.core.patterns.glob dialect. ``mode`` is None when the
    rule applies in every mode. ``pattern_spans`` locates each pattern (for lints).
    """

    effect: Effect
    resource: str
    action: str
    patterns: tuple[str, ...]
    when: Condition | None
    because: str | None
    approvals: Approvals | None
    mode: str | None
    span: Span = _meta()
    pattern_spans: tuple[Span, ...] = field(default=(), compare=False)
    fallback: bool = False
    """``otherwise ask|deny ...``: it decides only what no other rule matches (docs/semantics.md,
    "Fallbacks"); its effect is ``ask`` or ``deny``, never ``allow``."""
    sandbox: bool = False
    """``allow proc:exec:... in sandbox``: what it grants runs only confined (``bgc sandbox``,
    docs/sandbox.md); an enforcer that cannot run the command confined asks instead."""

    @property
    def keyword(self) -> str:
        """The rule's effect as written: ``allow``, ``ask``, ``deny``, ``otherwise ask``, ``otherwise deny``."""
        return f"otherwise {self.effect}" if self.fallback else self.effect


@dataclass(frozen=True, slots=True)
class ToolDecl:
    """``tool NAME [on SERVER, ...] needs ATOM, ...``: what a call of the tool on one of those
    servers touches (``local`` when no server is named)."""

    tool: str
    needs: tuple[AtomTemplate, ...]
    span: Span = _meta()
    name_span: Span | None = field(default=None, compare=False)
    servers: tuple[str, ...] = (LOCAL_SERVER,)
    ignores: tuple[str, ...] = ()
    """Parameters that reach no resource; a call's parameter neither templated nor ignored is refused."""


@dataclass(frozen=True, slots=True)
class Expect:
    """An inline example run by ``bgc check``: this concrete value gets this effect.

    ``context`` is the ``when`` part as (field, value) pairs; ``mode`` None means the policy's
    default mode.
    """

    effect: Effect
    resource: str
    action: str
    value: str
    context: tuple[tuple[str, str], ...]
    mode: str | None
    span: Span = _meta()
    mode_span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ModeBlock:
    """``mode NAME [approvals N of [names]] { rules }`` as written (its rules carry
    ``mode=NAME``). ``approvals``: who may switch a session to this mode (``bgc mode set``)."""

    name: str
    rules: tuple[Rule, ...]
    span: Span = _meta()
    name_span: Span | None = field(default=None, compare=False)
    approvals: Approvals | None = None


@dataclass(frozen=True, slots=True)
class DefaultMode:
    """``default mode NAME``."""

    name: str
    span: Span = _meta()
    name_span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Include:
    """``include "path"``, relative to the including file's directory."""

    path: str
    span: Span = _meta()
    path_span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Filesystem:
    """``filesystem case-insensitive`` (or ``case-sensitive``, the default)."""

    case_insensitive: bool
    span: Span = _meta()


@dataclass(frozen=True, slots=True)
class Trust:
    """``trust issuer|approver NAME ed25519:KEY``: who may sign capability tokens, and which key
    speaks for an approver named in ``approvals N of [...]`` (checked by the kernel)."""

    role: Literal["issuer", "approver"]
    name: str
    key: str
    span: Span = _meta()


@dataclass(frozen=True, slots=True)
class TrustElicitation:
    """``trust elicitation``: an MCP client's own dialog (elicitation) may answer an ask that any one
    person may answer. Its answer is unsigned and names nobody, so it counts only where the
    policy says so (docs/mcp.md)."""

    span: Span = _meta()


@dataclass(frozen=True, slots=True)
class Comment:
    """A ``#`` comment; ``text`` includes the ``#`` and no trailing whitespace."""

    text: str
    span: Span = _meta()


Statement = Union[Rule, ToolDecl, ModeBlock, DefaultMode, Include, Expect, Filesystem, Trust, TrustElicitation]


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One policy file as written: statements in order, comments apart (both with spans)."""

    path: str
    statements: tuple[Statement, ...]
    comments: tuple[Comment, ...] = field(default=(), compare=False)


# ---- the resolved policy ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyFile:
    """A file that went into a policy: its path relative to the root policy's directory
    ('/'-separated), or ``bgc:NAME`` for a bundled file (:mod:`bgc.core.policy.bundled`), and the digest of its
    bytes."""

    path: str
    digest: str


@dataclass(frozen=True, slots=True)
class Policy:
    """A loaded policy: includes spliced in where they appear, everything validated."""

    path: str
    rules: tuple[Rule, ...]
    tools: tuple[ToolDecl, ...]
    modes: tuple[str, ...]
    default_mode: str | None
    expects: tuple[Expect, ...]
    files: tuple[PolicyFile, ...]
    case_insensitive: bool
    trust: tuple[Trust, ...] = ()
    mode_approvals: tuple[tuple[str, Approvals], ...] = ()
    """Who may switch a session to each mode whose block says (``mode NAME approvals N of [...]``)."""
    trusts_elicitation: bool = False
    """Whether the policy says ``trust elicitation``."""
    comments: tuple[Comment, ...] = field(default=(), compare=False)
    """Every file's comments (with their spans): where lints read ``# bgc: ignore[...]``."""
    absent: tuple[str, ...] = field(default=(), compare=False)
    """Paths (relative to the root policy's directory) where an include found no file and took a
    bundled one: a file appearing there would change the policy."""

    def tool(self, name: str, server: str | None = None) -> ToolDecl | None:
        """The declaration of tool ``name`` on ``server`` (``local`` when None), or None when the
        policy declares no such tool on that server."""
        server = LOCAL_SERVER if server is None else server
        for decl in self.tools:
            if decl.tool == name and server in decl.servers:
                return decl
        return None

    def resolve_mode(self, mode: str | None) -> str | None:
        """The mode to decide in: ``mode`` (which must be declared), else the default mode."""
        if mode is None:
            return self.default_mode
        if mode not in self.modes:
            declared = ", ".join(self.modes) if self.modes else "none"
            raise UsageError(f"unknown mode {mode!r} (the policy declares: {declared})")
        return mode

    def file_name(self, file: str) -> str:
        """How plans name the policy's file ``file`` (as its spans name it): relative to the root
        policy's directory ('/'-separated), or ``bgc:NAME`` for a file bgc ships, so that a plan
        does not depend on where the policy or bgc lies on this machine."""
        if any(item.path.startswith(BUNDLED) for item in self.files):
            real = os.path.realpath(file)
            if os.path.commonpath([bundled_directory(), real]) == bundled_directory():
                name = recorded(real)
                if any(item.path == name for item in self.files):
                    return name
        return os.path.relpath(file, os.path.dirname(self.path) or ".").replace(os.sep, "/")

    def file_digests(self) -> tuple[tuple[str, str], ...]:
        """``(path, digest)`` of every file the policy was read from, and ``(path, ABSENT)`` for
        every path that must stay empty for it to mean the same (:attr:`absent`): what a cache
        entry made from it records (plain pairs, so reading the entry back needs none of this
        module)."""
        return (*((item.path, item.digest) for item in self.files), *((path, ABSENT) for path in self.absent))

    def id(self) -> str:
        """``sha256:<hex>`` of ``["bgc.Policy", 1, {"files": [{"path", "digest"}...]}]``.

        It covers the exact bytes of every file the policy was read from, so any edit anywhere
        (even a comment) gives a new id, and the id can be recomputed from the files alone.
        """
        from bgc.core.values import canonical
        from bgc.core.values.model import Digest

        body = {"files": [{"path": item.path, "digest": item.digest} for item in self.files]}
        return Digest.of(canonical.envelope(POLICY_TAG, POLICY_VERSION, body)).text
