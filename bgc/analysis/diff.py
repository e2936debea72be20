"""``bgc diff``: exactly what one policy allows that another does not, with counterexamples.

A policy change is where permissions silently widen. Patterns are regular languages, so the
question "which values does NEW treat more permissively than OLD?" has an exact answer, built
here from the glob algebra (:func:`bgc.core.patterns.glob.intersect`, :func:`bgc.core.patterns.glob.example`) and the
compiler's precedence (deny > ask > allow, nothing matching is deny).

For one resource/action, one context and one mode, each policy gives every value a *level*:
deny < ask < allow. With A, Q, D the applicable allow, ask and deny patterns (asks and denies as
the compiler widens them: case-folded on a case-insensitive file system, every scheme, port and
query of a URL), the values that gained access are exactly these terms, each
``pattern except {cuts}`` (X the old policy, Y the new):

=============  ===============================================================================
deny → allow   ``a − (Qy ∪ Dy ∪ Ax ∪ Qx)`` for a in Ay;  ``(a ∩ d) − (Qy ∪ Dy)`` for d in Dx
ask → allow    ``(a ∩ q) − (Qy ∪ Dy ∪ Dx)`` for a in Ay, q in Qx
deny → ask     ``q − (Dy ∪ Ax ∪ Qx)`` for q in Qy;  ``(q ∩ d) − Dy`` for d in Dx
ask → ask      ``(q ∩ q') − (Dx ∪ Dy ∪ K)`` for q in Qx, q' in Qy whose approvals do not imply
               q's, K the asks of Qy whose approvals do (fewer or other people may approve)
=============  ===============================================================================

and the values that lost access are the same terms with X and Y swapped. Fallbacks
(``otherwise deny``, ``otherwise ask``) are two more layers below these, which decide only what
no rule matches; the terms are built the same way over every pair of layers (:func:`_gained`),
so turning ``otherwise deny`` into ``otherwise ask`` is new access (deny → ask) and the reverse
is removed access. A term whose pattern is written alike on both sides is empty by construction
and never computed, so reordering, splitting or reformatting rules costs nothing and reports
nothing, and two large policies that differ in one rule cost about one rule's intersections with
the other side.

Values, not pattern texts, are what the gate decides: a term counts only when it holds a value
in its resource's canonical form (:mod:`bgc.core.resources`; ``/src/`` is never a value, ``/src`` is),
and its counterexample is the shortest such value. Values a case-insensitive policy refuses are
denied by that policy, so dropping ``filesystem case-insensitive`` is new access.

Conditions are decided over the finite set of context classes the two policies can tell apart:
each literal a condition compares ``intent.kind`` or ``origin.model`` with, each combination of
``matches`` patterns, and "anything else". ``call.tool`` is unknown while compiling, as in the
compiler. Modes: every mode either policy declares, and the default mode.

Every question is bounded (:data:`DIFF_BUDGET`); a term the algebra cannot decide is reported
as an *undecided* difference, which fails like new access (fail closed).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

from bgc.core.patterns import glob
from bgc.core.resources import ARGV_RESOURCES, normalise
from dataclasses import dataclass, field, replace
from bgc.core.patterns.budget import Budget
from bgc.core.compiler import RuleIndex, applies, rule_ref
from bgc.errors import BgcError, UsageError
from bgc.core.plan import Approvals, RuleRef, approvals_text
from bgc.core.policy.ast import And, Compare, Condition, InList, Matches, Not, Or, Policy, Rule, ToolDecl, scan_template

__all__ = ["DIFF_BUDGET", "Change", "DiffError", "PolicyDiff", "ToolChange", "diff_policies"]

DIFF_BUDGET = 400_000_000
"""Algebra steps one diff may spend (about a minute of the slowest work): past it, every term
still to decide is reported as undecided, which counts as new access."""

MAX_MATCHES_PER_FIELD = 6
"""``matches`` conditions on one context field that a diff decides exactly (2**6 classes)."""

MAX_WITNESS_TRIES = 8
"""Shortest pattern texts tried for a canonical counterexample before a term is undecided."""

LEVELS = ("deny", "ask", "allow")
_RANK = {level: rank for rank, level in enumerate(LEVELS)}
_NAME_SLASH = "\uffff"  # as bgc.core.policy.ast.Matches reads '/' in a field value


class DiffError(BgcError):
    """The diff cannot be decided as asked (an unknown mode, too many ``matches`` classes)."""


# ---- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """Values one policy treats more permissively than the other: one term, in some scenarios.

    ``kind`` is ``new`` (NEW is more permissive: ``before`` → ``after`` is deny→allow, ask→allow
    or deny→ask) or ``removed`` (the reverse). ``pattern except excepts`` is the term;
    ``example`` the shortest canonical value in it (``None`` only when ``undecided``).
    ``old_rules``/``new_rules`` decided the example on each side (empty: no rule, default deny);
    ``new_spans`` locate those NEW rules. ``modes`` and ``conditions`` say where the change
    holds: an empty ``conditions`` means in every context; otherwise ``contexts`` holds one
    value of each context class it holds in (``(("intent.kind", "deploy"), ...)``). ``resource`` is a name neither
    policy uses when ``any_resource`` (the change holds for every such resource); likewise
    ``action``. For ``ask → ask`` the approvals a value needs changed: ``approvals`` is
    ``(old, new)`` in words for the example (``2 of [alice, bob]``, ``1 approval``); new access
    when NEW's no longer imply OLD's. ``refused`` names the sides (``old``, ``new``) that refuse the example as a value
    (a case-insensitive policy refuses names Windows or HFS+ read as other names).
    """

    kind: str
    resource: str
    action: str
    before: str
    after: str
    pattern: str
    excepts: tuple[str, ...]
    example: str | None
    old_rules: tuple[RuleRef, ...]
    new_rules: tuple[RuleRef, ...]
    new_spans: tuple = field(compare=False)
    modes: tuple[str, ...]
    conditions: tuple[str, ...]
    contexts: tuple[tuple[tuple[str, str], ...], ...] = ()
    any_resource: bool = False
    any_action: bool = False
    undecided: str | None = None
    calls: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    approvals: tuple[str, str] | None = None

    @property
    def atom(self) -> str:
        return f"{self.resource}:{self.action}:{self.pattern}"

    @property
    def example_atom(self) -> str | None:
        return None if self.example is None else f"{self.resource}:{self.action}:{self.example}"

    def to_data(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "resource": self.resource,
            "action": self.action,
            "any_resource": self.any_resource,
            "any_action": self.any_action,
            "before": self.before,
            "after": self.after,
            "pattern": self.pattern,
            "except": list(self.excepts),
            "example": self.example_atom,
            "old_rules": [rule.to_data() for rule in self.old_rules],
            "new_rules": [rule.to_data() for rule in self.new_rules],
            "modes": list(self.modes),
            "conditions": list(self.conditions),
            "contexts": [dict(context) for context in self.contexts],
            "undecided": self.undecided,
            "calls": list(self.calls),
            "refused_by": list(self.refused),
            "approvals": None if self.approvals is None else {"old": self.approvals[0], "new": self.approvals[1]},
        }


@dataclass(frozen=True, slots=True)
class ToolChange:
    """A tool declaration that differs: what its calls need in OLD and in NEW.

    ``kind`` is ``new`` when a call may now need less (the tool is newly declared, so its calls
    are no longer refused as unknown, or a needed atom was dropped or rewritten) and
    ``removed`` when every call needs at least what it needed (a need added, the tool dropped).
    """

    kind: str
    tool: str
    old_needs: tuple[str, ...] | None
    new_needs: tuple[str, ...] | None
    reason: str
    span: object = field(compare=False)

    def to_data(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "tool": self.tool,
            "old_needs": None if self.old_needs is None else list(self.old_needs),
            "new_needs": None if self.new_needs is None else list(self.new_needs),
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class PolicyDiff:
    """Every difference between two policies, new access first."""

    changes: tuple[Change, ...]
    tools: tuple[ToolChange, ...]
    scenarios: tuple[str, ...]

    def of_kind(self, kind: str) -> tuple[Change, ...]:
        return tuple(change for change in self.changes if change.kind == kind)

    def tool_changes(self, kind: str) -> tuple[ToolChange, ...]:
        return tuple(change for change in self.tools if change.kind == kind)

    @property
    def grants_new(self) -> bool:
        """Does NEW allow anything OLD did not (undecided counts: fail closed)?"""
        return bool(self.of_kind("new") or self.tool_changes("new"))

    @property
    def removes(self) -> bool:
        return bool(self.of_kind("removed") or self.tool_changes("removed"))

    @property
    def equivalent(self) -> bool:
        return not self.changes and not self.tools


# ---- the algebra over one resource/action ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cut:
    """One effective pattern of one applicable rule (``rule`` None: a value the policy refuses)."""

    text: str
    pattern: glob.Pattern
    rule: Rule | None


@dataclass(frozen=True, slots=True)
class _Side:
    """One policy's applicable rules over one resource/action in one context and mode, read as
    layers (:meth:`layers`): a value gets the level of the first layer with a pattern matching
    it, deny when none does."""

    allow: tuple[_Cut, ...]
    ask: tuple[_Cut, ...]
    deny: tuple[_Cut, ...]
    fallback_deny: tuple[_Cut, ...] = ()
    fallback_ask: tuple[_Cut, ...] = ()
    unreached: tuple[_Cut, ...] = ()
    """On a case-insensitive file system with fallbacks, the allows folded (``rule`` None): what
    they name up to case, which no fallback reaches (the compiler's ``_fallen``)."""

    def layers(self) -> tuple[tuple[str, tuple[_Cut, ...]], ...]:
        """``(level, cuts)`` in precedence order: deny, ask, allow, then what no fallback
        reaches, ``otherwise deny``, ``otherwise ask`` (a fallback decides only what no rule
        matches, and the strictest fallback wins)."""
        return (
            ("deny", self.deny), ("ask", self.ask), ("allow", self.allow),
            ("deny", self.unreached), ("deny", self.fallback_deny), ("ask", self.fallback_ask),
        )  # fmt: skip

    def level(self, value: str) -> tuple[str, tuple[Rule, ...], bool]:
        """The level this side gives a canonical value, the rules that decided it, and whether
        it refuses the value (then no rule decided it)."""
        if any(cut.rule is None and _matches(cut, value) for cut in self.deny):
            return "deny", (), True
        for level, cuts in self.layers():
            matched = [cut for cut in cuts if _matches(cut, value)]
            if matched:
                return level, tuple(cut.rule for cut in matched if cut.rule is not None), False
        return "deny", (), False

    def approvals(self, value: str) -> str:
        """What an ask value needs here, in words: the requirement of every rule of the first
        layer that matches it (ask rules, or else ``otherwise ask`` fallbacks)."""
        for level, cuts in self.layers():
            matched = [cut.rule for cut in cuts if _matches(cut, value)]
            if matched:
                return approvals_text(_requirement(rule) for rule in matched if rule is not None) if level == "ask" else ""
        return ""


def _layers(side: _Side) -> list[tuple[str, tuple[_Cut, ...], tuple[_Cut, ...]]]:
    """The side's layers that have patterns, each ``(level, cuts, earlier)``: a value is decided
    by a layer when it matches one of its cuts and none of the ``earlier`` layers' cuts."""
    found: list[tuple[str, tuple[_Cut, ...], tuple[_Cut, ...]]] = []
    earlier: tuple[_Cut, ...] = ()
    for level, cuts in side.layers():
        if cuts:
            found.append((level, cuts, earlier))
            earlier += cuts
    return found


def _matches(cut: _Cut, value: str) -> bool:
    """Does the cut match ``value``? Its literal prefix first: most of a large policy's patterns
    are told apart by it, without building their automata."""
    return value.startswith(cut.pattern.prefix) and cut.pattern.matches(value)


def _requirement(rule: Rule) -> Approvals:
    """An ask rule's approval requirement (one approval by anyone when it names none)."""
    return Approvals(1) if rule.approvals is None else Approvals(rule.approvals.count, rule.approvals.approvers)


@dataclass(frozen=True, slots=True)
class _Term:
    """A term of the gained region: ``piece − cuts``, and the transition it stands for."""

    before: str
    after: str
    piece: glob.Pattern
    cuts: tuple[_Cut, ...]
    undecided: str | None = None


class _Undecided(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _texts(*groups: Sequence[_Cut]) -> frozenset[str]:
    """The effective patterns (as the compiler matches them: folded, widened) of some cuts."""
    return frozenset(cut.pattern.text for group in groups for cut in group)


def _meet(before: str, after: str, a: _Cut, b: _Cut, cuts: tuple[_Cut, ...], budget: Budget) -> Iterator[_Term]:
    """The terms ``(a ∩ b) − cuts``; when the overlap is undecided, ``a`` whole, marked undecided."""
    try:
        pieces = glob.intersect(a.pattern, b.pattern, budget=budget)
    except glob.AlgebraLimit as error:
        why = f"the overlap of `{a.text}` and `{b.text}` is undecided: {error.message}"
        yield _Term(before, after, a.pattern, cuts, why)
        return
    for piece in pieces:
        yield _Term(before, after, piece, cuts)


def _gained(x: _Side, y: _Side, budget: Budget) -> Iterator[_Term]:
    """Terms whose union is exactly the values ``y`` treats more permissively than ``x``.

    For each layer of ``y`` above deny and each pattern ``p`` in it (its values: ``p`` less the
    earlier layers' patterns ``E``), the values ``x`` treats worse are those ``x`` decides in a
    lower layer, and those in none of ``x``'s layers above deny: ``p − (E ∪ U)`` with ``U`` the
    patterns of ``x``'s allows, asks and ``otherwise ask`` fallbacks, and ``(p ∩ d) − (E ∪ E')``
    for each pattern ``d`` of a lower layer of ``x`` (``E'`` that layer's earlier ones). With
    deny, ask and allow alone this is the table of the module docstring. A term whose pattern
    also stands on the other side in a way that empties it is skipped without a question.
    """
    x_layers = _layers(x)
    x_up = x.allow + x.ask + x.fallback_ask
    x_up_texts = _texts(x_up)
    for level, cuts, earlier in _layers(y):
        if level == "deny":
            continue
        earlier_texts = _texts(earlier)
        below = [(x_level, x_cuts, x_earlier, _texts(x_earlier)) for x_level, x_cuts, x_earlier in x_layers
                 if _RANK[x_level] < _RANK[level]]  # fmt: skip
        for p in cuts:
            if p.pattern.text not in x_up_texts:
                yield _Term("deny", level, p.pattern, earlier + x_up)
            for x_level, x_cuts, x_earlier, x_earlier_texts in below:
                if p.pattern.text in x_earlier_texts:
                    continue
                for d in x_cuts:
                    if d.pattern.text not in earlier_texts and d.pattern.text not in x_earlier_texts:
                        yield from _meet(x_level, level, p, d, earlier + x_earlier, budget)


def _weaker_approvals(x: _Side, y: _Side, budget: Budget) -> Iterator[_Term]:
    """Terms whose union holds every value asked on both sides for which some requirement of
    ``x`` is implied by no requirement of ``y`` (fewer or other people may now approve it).
    A value's requirements are those of the rules of the layer that asks it (ask rules, or
    ``otherwise ask`` fallbacks where no rule matches)."""
    y_asks = [
        (earlier, [(cut, _requirement(cut.rule)) for cut in cuts if cut.rule is not None])
        for level, cuts, earlier in _layers(y)
        if level == "ask"
    ]
    keeping: dict[tuple[Approvals, int], tuple[tuple[_Cut, ...], frozenset[str], list[_Cut]]] = {}
    for level, cuts, x_earlier in _layers(x):
        if level != "ask":
            continue
        for q in cuts:
            if q.rule is None:
                continue
            needed = _requirement(q.rule)
            for n, (y_earlier, asks) in enumerate(y_asks):
                if (needed, n) not in keeping:  # per requirement, not per rule: policies repeat a few of them
                    keeps = tuple(cut for cut, req in asks if req.implies(needed))
                    keeping[(needed, n)] = (keeps, _texts(keeps), [cut for cut, req in asks if not req.implies(needed)])
                keeps, kept_texts, weaker = keeping[(needed, n)]
                if q.pattern.text in kept_texts:
                    continue  # the same pattern asks at least as much: nothing weaker inside it
                for other in weaker:
                    yield from _meet("ask", "ask", q, other, x_earlier + y_earlier + keeps, budget)


# The values a resource can have, as patterns: a term counts only for values in its canonical
# form (bgc.core.resources), so the shortest counterexample is searched inside UNIVERSE minus NOT_CANONICAL;
# the spellings these patterns cannot express are caught by checking each example with
# normalise and searching again without it.
_DOT_SEGMENTS = (".", "..", "./**", "../**", "**/.", "**/..", "**/./**", "**/../**")
_CONTROL = ("**/*[[:cntrl:]]*", "**/*[[:cntrl:]]*/**")
_UNIVERSE = {
    "fs": ("/", "/?*", "/?*/**"),
    "argv": ("?*", "?*/**"),  # a command word, then its arguments (any, '.' and '' included)
    "net": ("http://?*/**", "https://?*/**", "ws://?*/**", "wss://?*/**"),
    None: ("?*", "?*/**", "/**"),
}
_NOT_CANONICAL = {
    # a trailing '/', an empty segment, '.' or '..'
    "fs": ("/?*/**/", "/?*/**//**", *_DOT_SEGMENTS, *_CONTROL),
    "net": ("*://*[A-Z]*/**", "*://*..*/**", "*://.*/**", *_DOT_SEGMENTS, *_CONTROL),
    "argv": _CONTROL,
    None: (*_DOT_SEGMENTS, *_CONTROL),
}
# What a case-insensitive policy refuses (bgc.core.resources.fs.alias_problem), as far as patterns say it:
# a segment ending in '.' or ' ', a ':' or '\' in a segment, an 8.3 short name.
_CASE_INSENSITIVE_REFUSED = (
    "**/*[. ]", "**/*[. ]/**", "**/*:*", "**/*:*/**", "**/*\\\\*", "**/*\\\\*/**", "**/*~[0-9]*", "**/*~[0-9]*/**",
)  # fmt: skip


def _universe(resource: str) -> tuple[tuple[glob.Pattern, ...], tuple[glob.Pattern, ...]]:
    key = "argv" if resource in ARGV_RESOURCES else resource if resource in ("fs", "net") else None
    return tuple(map(glob.parse, _UNIVERSE[key])), tuple(map(glob.parse, _NOT_CANONICAL[key]))


def _witness(resource: str, piece: glob.Pattern, cuts: Sequence[glob.Pattern], budget: Budget) -> str | None:
    """The shortest canonical value of ``resource`` in ``piece`` and in none of ``cuts``.

    None when there is none; raises :class:`_Undecided` past the bounds.
    """
    universe, not_canonical = _universe(resource)
    tried: list[glob.Pattern] = []
    try:
        for _ in range(MAX_WITNESS_TRIES):
            best: str | None = None
            for space in universe:
                for part in glob.intersect(piece, space, budget=budget):
                    found = glob.example(part, [*cuts, *not_canonical, *tried], budget=budget)
                    if found is not None and (best is None or (len(found), found) < (len(best), best)):
                        best = found
            if best is None:
                return None
            if normalise(resource, best) == best:
                return best
            tried.append(glob.parse(glob.escape(best)))
    except glob.AlgebraLimit as error:
        raise _Undecided(f"undecided within the work bound: {error.message}") from None
    raise _Undecided(f"no value in canonical form among the {MAX_WITNESS_TRIES} shortest texts of the term")


def _overlapping(piece: glob.Pattern, cuts: Iterable[_Cut], budget: Budget) -> tuple[_Cut, ...]:
    """The cuts that really cut into ``piece`` (one each by effective pattern), in text order."""
    found: dict[str, _Cut] = {}
    prefix = piece.prefix
    for cut in cuts:
        other = cut.pattern.prefix
        if cut.pattern.text in found or not (other.startswith(prefix) or prefix.startswith(other)):
            continue
        try:
            if glob.intersect(piece, cut.pattern, budget=budget):
                found[cut.pattern.text] = cut
        except glob.AlgebraLimit as error:
            raise _Undecided(f"the overlap of `{piece.text}` and `{cut.text}` is undecided: {error.message}") from None
    return tuple(found[text] for text in sorted(found))


def _region(
    resource: str, action: str, old: _Side, new: _Side, refs: tuple[Policy, Policy], budget: Budget
) -> list[Change]:
    """Every non-empty term of new and removed access between two sides of one resource/action,
    as changes that hold everywhere (the caller says where they hold)."""
    found: dict[tuple[str, str, str, tuple[str, ...]], Change] = {}
    for kind, x, y in (("new", old, new), ("removed", new, old)):
        for term in itertools.chain(_gained(x, y, budget), _weaker_approvals(x, y, budget)):
            before, after = (term.before, term.after) if kind == "new" else (term.after, term.before)
            blank = Change(kind, resource, action, before, after, term.piece.text, (), None, (), (), (), (), ())
            try:
                if term.undecided:
                    raise _Undecided(term.undecided)
                cuts = _overlapping(term.piece, term.cuts, budget)
                shown = tuple(sorted({cut.text for cut in cuts if cut.rule is not None}))
                key = (kind, term.before + term.after, term.piece.text, shown)
                if key in found:
                    continue
                example = _witness(resource, term.piece, [cut.pattern for cut in cuts], budget)
            except _Undecided as undecided:
                found[(kind, term.before + term.after, term.piece.text, ())] = replace(blank, undecided=undecided.why)
                continue
            if example is None:
                continue
            _, old_rules, old_refuses = old.level(example)
            _, new_rules, new_refuses = new.level(example)
            found[key] = replace(
                blank,
                excepts=shown,
                example=example,
                old_rules=tuple(rule_ref(refs[0], rule) for rule in old_rules),
                new_rules=tuple(rule_ref(refs[1], rule) for rule in new_rules),
                new_spans=tuple(rule.span for rule in new_rules),
                refused=tuple(side for side, flag in (("old", old_refuses), ("new", new_refuses)) if flag),
                approvals=(old.approvals(example), new.approvals(example)) if term.before == term.after else None,
                calls=_calls(refs[1], resource, action, example),
            )
    return list(found.values())


# ---- contexts, modes, resources -----------------------------------------------------------------

_FIELDS = ("intent.kind", "origin.model")
"""Context fields known while compiling (``call.tool`` is unknown then, as in the compiler)."""


def _condition_parts(condition: Condition | None) -> Iterator[Compare | InList | Matches]:
    if condition is None:
        return
    if isinstance(condition, (And, Or)):
        for item in condition.items:
            yield from _condition_parts(item)
    elif isinstance(condition, Not):
        yield from _condition_parts(condition.item)
    else:
        yield condition


@dataclass(frozen=True, slots=True)
class _Class:
    """A class of values of one context field that every condition treats alike."""

    value: str
    label: str


def _field_classes(fieldname: str, rules: Sequence[Rule], budget: Budget) -> tuple[_Class, ...]:
    """One value per class the conditions on ``fieldname`` can tell apart (literals, ``matches``
    combinations, anything else); a single unlabelled class when no condition tests it."""
    literals: set[str] = set()
    patterns: set[str] = set()
    for rule in rules:
        for part in _condition_parts(rule.when):
            if part.field != fieldname:
                continue
            if isinstance(part, Compare):
                literals.add(part.value)
            elif isinstance(part, InList):
                literals.update(part.values)
            else:
                patterns.add(part.pattern)
    if not literals and not patterns:
        return (_Class("other", ""),)
    if len(patterns) > MAX_MATCHES_PER_FIELD:
        raise DiffError(
            f"{len(patterns)} `matches` patterns test {fieldname}: a diff decides at most "
            f"{MAX_MATCHES_PER_FIELD} exactly"
        )
    classes = [_Class(value, f'{fieldname} == "{value}"') for value in sorted(literals)]
    ordered = sorted(patterns)
    literal_cuts = [glob.parse(glob.escape(value.replace("/", _NAME_SLASH))) for value in literals if value]
    for signs in itertools.product((True, False), repeat=len(ordered)):
        pieces = [glob.parse("?*")]
        try:
            for pattern, sign in zip(ordered, signs):
                if sign:
                    target = glob.parse(pattern.replace("/", _NAME_SLASH))
                    pieces = [q for p in pieces for q in glob.intersect(p, target, budget=budget)]
            negatives = [glob.parse(p.replace("/", _NAME_SLASH)) for p, s in zip(ordered, signs) if not s]
            examples = [e for p in pieces if (e := glob.example(p, [*negatives, *literal_cuts], budget=budget))]
        except glob.AlgebraLimit as error:
            raise DiffError(f"the `matches` conditions on {fieldname} are undecided: {error.message}") from None
        if not examples:
            continue
        value = min(examples, key=lambda e: (len(e), e)).replace(_NAME_SLASH, "/")
        said = [f'{"matches" if sign else "does not match"} "{p}"' for p, sign in zip(ordered, signs)]
        if not said and literals:
            said = ["is none of " + ", ".join(f'"{v}"' for v in sorted(literals))]
        elif literals:
            said.append("is none of the values above")
        classes.append(_Class(value, f"{fieldname} " + " and ".join(said)))
    return tuple(classes)


@dataclass(frozen=True, slots=True)
class _Scenario:
    label: str
    old_mode: str | None
    new_mode: str | None


def _scenarios(old: Policy, new: Policy, mode: str | None) -> list[_Scenario]:
    declared = sorted(set(old.modes) | set(new.modes))
    if mode is not None:
        if mode not in declared:
            shown = ", ".join(declared) if declared else "none"
            raise UsageError(f"unknown mode {mode!r} (the policies declare: {shown})")
        return [_Scenario(f"mode {mode}", mode, mode)]
    scenarios = [_Scenario(f"mode {name}", name, name) for name in declared]
    if old.default_mode != new.default_mode or old.default_mode is None:
        if old.default_mode == new.default_mode:
            label = "no mode" if not declared else "the default mode (none)"
        else:
            label = f"the default mode ({old.default_mode or 'none'} → {new.default_mode or 'none'})"
        scenarios.append(_Scenario(label, old.default_mode, new.default_mode))
    return scenarios


def _fresh(taken: set[str], stem: str) -> str:
    for n in itertools.count():
        name = stem if n == 0 else f"{stem}{n}"
        if name not in taken:
            return name
    raise AssertionError  # pragma: no cover


def _pairs(old: Policy, new: Policy) -> list[tuple[str, str, bool, bool]]:
    """``(resource, action, any_resource, any_action)`` for every pair either policy can decide."""
    rules = (*old.rules, *new.rules)
    templates = [t for policy in (old, new) for decl in policy.tools for t in decl.needs]
    resources = {rule.resource for rule in rules} | {t.resource for t in templates}
    actions = {rule.action for rule in rules} | {t.action for t in templates}
    named_resources, named_actions = resources - {"*"}, actions - {"*"}
    candidates_r = [(r, False) for r in sorted(named_resources)]
    candidates_a = [(a, False) for a in sorted(named_actions)]
    if "*" in resources:  # fs and net read values their own way: they are never "any other resource"
        candidates_r += [(r, False) for r in ("fs", "net") if r not in named_resources]
        candidates_r.append((_fresh(named_resources | {"fs", "net"}, "other"), True))
    if "*" in actions:
        candidates_a.append((_fresh(named_actions, "other"), True))
    return [
        (r, a, any_r, any_a)
        for r, any_r in candidates_r
        for a, any_a in candidates_a
        if any(rule.resource in (r, "*") and rule.action in (a, "*") for rule in rules)
    ]


# ---- the whole diff ----------------------------------------------------------------------------


class _SideIndex:
    """One policy's effective patterns per resource/action, as the compiler reads them."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.index = RuleIndex(policy)
        self._refused: dict[str, tuple[_Cut, ...]] = {}

    def side(self, resource: str, action: str, context: dict[str, str], mode: str | None) -> _Side:
        cuts: dict[str, list[_Cut]] = {"allow": [], "ask": [], "deny": [], "otherwise ask": [], "otherwise deny": []}
        for entry in self.index.candidates(resource, action, ""):
            if applies(entry.rule, context, mode):
                cuts[entry.rule.keyword].append(_Cut(entry.text, entry.pattern, entry.rule))
        unreached: tuple[_Cut, ...] = ()
        if resource == "fs" and self.policy.case_insensitive:
            cuts["deny"].extend(glob_cut for glob_cut in _refusals())
            if cuts["otherwise ask"] or cuts["otherwise deny"]:
                unreached = tuple(_Cut(cut.text, glob.fold_case(cut.pattern), None) for cut in cuts["allow"])
        return _Side(
            tuple(cuts["allow"]), tuple(cuts["ask"]), tuple(cuts["deny"]),
            tuple(cuts["otherwise deny"]), tuple(cuts["otherwise ask"]), unreached,
        )  # fmt: skip


def _refusals() -> tuple[_Cut, ...]:
    return tuple(_Cut(f"(refused) {text}", glob.parse(text), None) for text in _CASE_INSENSITIVE_REFUSED)


def diff_policies(old: Policy, new: Policy, mode: str | None = None, budget: Budget | None = None) -> PolicyDiff:
    """Every difference in what ``old`` and ``new`` allow, in every mode (or ``mode``) and context.

    Raises :class:`~bgc.errors.UsageError` for a mode neither policy declares and
    :class:`DiffError` when the context classes cannot be enumerated within the bounds.
    """
    budget = Budget(DIFF_BUDGET) if budget is None else budget
    scenarios = _scenarios(old, new, mode)
    rules = (*old.rules, *new.rules)
    fields = [_field_classes(name, rules, budget) for name in _FIELDS]
    contexts = [tuple(combo) for combo in itertools.product(*fields)]
    sides = (_SideIndex(old), _SideIndex(new))
    computed: dict[tuple[object, ...], list[Change]] = {}
    holds: dict[tuple[object, ...], set[tuple[int, int]]] = {}  # change → (scenario, context) where it holds
    firsts: dict[tuple[object, ...], tuple[Change, tuple[str, str, bool, bool]]] = {}
    for pair in _pairs(old, new):
        resource, action = pair[0], pair[1]
        for s, scenario in enumerate(scenarios):
            for c, classes in enumerate(contexts):
                context = {name: cls.value for name, cls in zip(_FIELDS, classes)}
                old_side = sides[0].side(resource, action, context, scenario.old_mode)
                new_side = sides[1].side(resource, action, context, scenario.new_mode)
                key = (resource, action, old_side, new_side)
                if key not in computed:  # sides alike (most contexts of a small change): nothing to ask
                    same = old_side == new_side
                    computed[key] = [] if same else _region(resource, action, old_side, new_side, (old, new), budget)
                for item in computed[key]:
                    change_key = (pair, item.kind, item.before, item.after, item.pattern, item.excepts, item.undecided)
                    firsts.setdefault(change_key, (item, pair))
                    holds.setdefault(change_key, set()).add((s, c))
    changes = []
    for key, (item, pair) in firsts.items():
        by_contexts: dict[frozenset[int], list[int]] = {}  # scenarios grouped by where the change holds in them
        for s in sorted({s for s, _ in holds[key]}):
            by_contexts.setdefault(frozenset(c for t, c in holds[key] if t == s), []).append(s)
        for where, held in by_contexts.items():
            modes = [] if len(held) == len(scenarios) else [scenarios[s].label for s in held]
            conditions = _conditions(fields, contexts, set(where))
            witnesses = () if not conditions else tuple(
                tuple((name, cls.value) for name, cls in zip(_FIELDS, contexts[c]) if cls.label) for c in sorted(where)
            )
            changes.append(replace(item, modes=tuple(modes), conditions=conditions, contexts=witnesses,
                                   any_resource=pair[2], any_action=pair[3]))  # fmt: skip
    changes.sort(key=lambda ch: (ch.kind != "new", ch.resource, ch.action, ch.pattern, ch.excepts, ch.before, ch.after))
    return PolicyDiff(tuple(changes), _tool_changes(old, new), tuple(s.label for s in scenarios))


def _conditions(
    fields: list[tuple[_Class, ...]], contexts: list[tuple[_Class, ...]], held: set[int]
) -> tuple[str, ...]:
    """Where a change holds, in words: () for every context, else one clause per alternative."""
    if len(held) == len(contexts):
        return ()
    chosen = [contexts[c] for c in sorted(held)]
    for index, classes in enumerate(fields):  # a change that depends on one field only
        others = [f for j, f in enumerate(fields) if j != index]
        values_here = sorted({ctx[index] for ctx in chosen}, key=classes.index)
        if len(chosen) == len(values_here) * _product_size(others):
            return tuple(cls.label for cls in values_here)
    return tuple(" and ".join(cls.label for cls in ctx if cls.label) for ctx in chosen)


def _product_size(fields: list[tuple[_Class, ...]]) -> int:
    size = 1
    for classes in fields:
        size *= len(classes)
    return size


def _calls(policy: Policy, resource: str, action: str, example: str | None) -> tuple[str, ...]:
    """The calls, by NEW's tool declarations, that would need the example value (``tool {param: value}``).

    Only templates with one parameter and otherwise literal text are read back; a call needs
    its other atoms too, so this says which calls the change reaches, not that they are covered.
    """
    if example is None:
        return ()
    found = []
    for decl in policy.tools:
        for template in decl.needs:
            if (template.resource, template.action) != (resource, action) or len(template.params) != 1:
                continue
            text = template.template
            pieces = list(scan_template(text))
            params = [i for i, (kind, _, _) in enumerate(pieces) if kind == "param"]
            head = text[: pieces[params[0]][1]]
            tail = text[pieces[params[0]][2]:]
            if any(c in head + tail for c in "*?[\\"):
                continue
            if example.startswith(head) and example.endswith(tail) and len(example) > len(head) + len(tail):
                found.append(f"{decl.tool} {{{template.params[0]}: {example[len(head):len(example) - len(tail)]}}}")
    return tuple(sorted(set(found)))


def _tool_changes(old: Policy, new: Policy) -> tuple[ToolChange, ...]:
    """Tool declarations that differ. Needs are compared as written: a call of a tool whose
    needs lost or rewrote an atom may need less (reported as new, fail closed); one that only
    gained atoms needs more."""
    olds = {decl.tool: decl for decl in old.tools}
    news = {decl.tool: decl for decl in new.tools}
    changes = []
    for name in sorted(set(olds) | set(news)):
        before, after = olds.get(name), news.get(name)
        old_needs = _needs(before)
        new_needs = _needs(after)
        if old_needs == new_needs:
            continue
        if before is None:
            kind, reason = "new", "newly declared: its calls were refused as an unknown tool"
        elif after is None:
            kind, reason = "removed", "no longer declared: its calls are refused as an unknown tool"
        elif set(old_needs or ()) <= set(new_needs or ()):
            added = sorted(set(new_needs or ()) - set(old_needs or ()))
            kind, reason = "removed", "its calls need more: " + ", ".join(added)
        else:
            dropped = sorted(set(old_needs or ()) - set(new_needs or ()))
            kind, reason = "new", "its calls no longer need " + ", ".join(dropped)
        span = (after or before).span  # type: ignore[union-attr]
        changes.append(ToolChange(kind, name, old_needs, new_needs, reason, span))
    return tuple(changes)


def _needs(decl: ToolDecl | None) -> tuple[str, ...] | None:
    return None if decl is None else tuple(sorted(str(template) for template in decl.needs))
