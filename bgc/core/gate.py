"""The gate: concrete atoms, and the atoms a tool call needs, decided against granted plans.

A plan (:mod:`bgc.core.plan`) says what was granted; the gate answers, for one concrete value at run
time, whether it falls inside those grants: allow, ask (with every approval requirement that
applies) or deny, naming the rule that decided. It serves ``bgc gate``, the hooks, the MCP proxy
and the kernel through :mod:`bgc.runtime.calls`. Values are canonicalised per resource first
(:mod:`bgc.core.resources`); a value that cannot be canonicalised is refused, never matched.
"""

from __future__ import annotations

import copy
import os
import re
import stat
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from bgc.core.patterns import glob
from bgc.core import resources
from bgc.core._gate_index import Directory, LaneIndex, WarmPath
from bgc.core.resources import ARGV_RESOURCES
from bgc.core.resources.fs import normalise_fs_pattern
from bgc.core.nearest import Near, NearestIndex
from bgc.core.patterns.budget import Budget, BudgetExhausted, CostMemo, text_key
from bgc.names import ATOM_NAME
from bgc.core.plan import (
    Approvals,
    CallResult,
    NeedResult,
    Part,
    Plan,
    RuleRef,
    approvals_text,
    call_result,
)
from bgc.core.policy.templates import AtomTemplate, TemplateError

if TYPE_CHECKING:
    from bgc.core.plan import GateEffect


class GateDecision(NamedTuple):
    """The gate's answer for a concrete atom: ``effect`` (allow, ask or deny), ``reason`` (why),
    ``approvals`` (for ask: the requirement of every ask part holding the value; all of them
    apply), ``rule`` (the rule that decided it: an allow's or ask's part names the rule it came
    from; a deny names the deny rule, or none when no rule allows the value) and ``asked_by``
    (for ask: every ask rule whose requirement applies, sorted).

    The atom is not in it: the caller has it (it asked), and every value that the same parts
    hold gets the same answer, so a gate works each answer out once and hands out that one
    object (:class:`_PartIndex`). A warm decision builds nothing; building a decision object per
    atom was the largest cost of a warm decision after the regex. A named tuple rather than a
    frozen dataclass: just as immutable, and cheap to build where a reason names a value.
    """

    effect: GateEffect
    reason: str = ""
    approvals: tuple[Approvals, ...] = ()
    rule: RuleRef | None = None
    asked_by: tuple[RuleRef, ...] = ()

    def to_data(self, atom: str) -> dict[str, Any]:
        """The JSON answer of ``bgc gate`` for ``atom``, whose decision this is."""
        return {
            "atom": atom,
            "decision": self.effect,
            "reason": self.reason,
            "approvals": [a.to_data() for a in self.approvals],
        }


NO_RULE = "no rule allows it"
"""The reason of a value in the part of a request no rule mentions (the default deny)."""
NOT_GRANTED = GateDecision("deny", "not granted by the plan")
NOT_AN_ATOM = GateDecision("deny", "not an atom 'resource:action:value'")


#: Different outcomes (sets of parts holding a value) a resource/action's index remembers.
MAX_OUTCOMES = 4096


class _PartIndex:
    """Every part of one resource/action, granted, asked and denied, decided in one pass.

    Each distinct pattern — a part's pattern, or an except (case-folded for an ``fs`` except on
    a case-insensitive file system) — is one lane of a :class:`~bgc.core._gate_index.LaneIndex`;
    which parts hold a value, and so the outcome, depends only on the lanes it matches, so the
    outcome is worked out once per lane mask and remembered.
    """

    def __init__(
        self, granted: Sequence[Part], asked: Sequence[Part], denied: Sequence[Part], fold_case: bool, plain: Callable[[str], object] | None
    ) -> None:
        self.plain = plain or _NEVER_PLAIN
        """The test a raw value passes when it is its own canonical form (:func:`bgc.core.resources.plain_form`)."""
        lanes: dict[tuple[str, bool], int] = {}
        patterns: list[glob.Pattern] = []

        def lane(text: str, folded: bool) -> int:
            if (text, folded) not in lanes:
                lanes[(text, folded)] = len(patterns)
                pattern = glob.parse(text)
                patterns.append(glob.fold_case(pattern) if folded else pattern)
            return 1 << lanes[(text, folded)]

        # pattern lane -> its parts as (kind: 0 granted, 1 asked, 2 denied; place in the plans; except lanes)
        self._by_lane: dict[int, list[tuple[int, int, Part, int]]] = {}
        for kind, parts in enumerate((granted, asked, denied)):
            for place, part in enumerate(parts):
                excepts = 0
                for text in part.excepts:
                    excepts |= lane(text, fold_case)
                self._by_lane.setdefault(lane(part.pattern, False), []).append((kind, place, part, excepts))
        self._index = LaneIndex(patterns)
        self.directories, self.literals = self._index.directories, self._index.literals
        self._outcomes: dict[int, GateDecision] = {}
        # every outcome that depends only on where a value is (its deepest directory and place),
        # worked out now, so that no decision of a value no literal or pattern set sees computes one
        eager: dict[int, GateDecision] = {}
        for directory in self.directories.values():
            if not directory.others:
                for place, hits in ((1, directory.below | directory.last), (2, directory.below)):
                    known = eager.get(hits)
                    if known is None:
                        known = eager[hits] = self._outcome(hits)
                    directory.outcomes[place] = known

    def located(self, directory: Directory, place: int, value: str) -> GateDecision:
        """The outcome of a canonical ``value`` whose deepest directory is ``directory``, at
        ``place``: the directory's own where nothing else decides the lanes (no literal pattern is
        the value, no pattern set sees it)."""
        known = directory.outcomes[place]
        if known is None or value in self.literals:
            return self._outcome_of(self._index.located_hits(directory, place, value))
        return known  # type: ignore[no-any-return]

    def outcome(self, value: str) -> GateDecision:
        """What the parts say about a canonical value: allow, ask (and the approvals), deny (and why)."""
        directory, place = self._index.locate(value)
        known = directory.outcomes[place]  # located(), inline: this is every cold decision's path
        if known is None or value in self.literals:
            return self._outcome_of(self._index.located_hits(directory, place, value))
        return known  # type: ignore[no-any-return]

    def _outcome_of(self, hits: int) -> GateDecision:
        known = self._outcomes.get(hits)
        if known is None:
            known = self._outcome(hits)
            if len(self._outcomes) < MAX_OUTCOMES:
                self._outcomes[hits] = known
        return known

    def _outcome(self, hits: int) -> GateDecision:
        holding: list[tuple[int, int, Part, int]] = []
        rest = hits
        while rest:  # a value matches few patterns: look at their parts only
            bit = rest & -rest
            rest ^= bit
            holding += [entry for entry in self._by_lane.get(bit, ()) if not entry[3] & hits]
        holding.sort(key=lambda entry: entry[:2])  # the parts' order in the plans
        granted, asked, denied = ([part for kind, _, part, _ in holding if kind == wanted] for wanted in range(3))
        if granted:  # a rule that confines its grant names it: granted two ways, the value runs confined
            first = granted[0].rules[0] if granted[0].rules else None
            rules = (rule for part in granted for rule in part.rules if rule.sandbox)
            return GateDecision("allow", "", (), next(rules, first))
        if asked:
            approvals = tuple(dict.fromkeys(part.approvals or Approvals(1) for part in asked))
            rules = tuple(sorted({rule for part in asked for rule in part.rules}))
            return GateDecision("ask", "awaits approval", approvals, rules[0] if rules else None, rules)
        # name a deny rule when one covers the value; the part no rule mentions comes last
        for part in sorted(denied, key=lambda part: not part.rules):
            if not part.rules:
                return GateDecision("deny", NO_RULE)
            rule = part.rules[0]
            because = f" ({rule.reason})" if rule.reason else ""
            return GateDecision("deny", f"denied by {rule}{because}", (), rule)
        return NOT_GRANTED


class Gate:
    """Decides concrete atoms against one or more plans (allow if any plan grants it)."""

    def __init__(self, plans: Iterable[Plan], root: str | None = None) -> None:
        by_key: dict[tuple[str, str], tuple[list[Part], list[Part], list[Part]]] = {}
        fold_case = False
        for plan in plans:
            fold_case |= plan.fold_case
            for request in plan.requests:
                for kind, parts in enumerate((request.granted, request.ask, request.denied)):
                    for part in parts:
                        by_key.setdefault((part.resource, part.action), ([], [], []))[kind].append(part)
        # case folding is about file names: only fs excepts fold (DESIGN §2)
        self._indices: dict[str, dict[str, _PartIndex]] = {}
        self._granted_parts = {key: kinds[0] for key, kinds in by_key.items()}
        self._asked_parts = {key: kinds[1] for key, kinds in by_key.items()}
        self._nearest: dict[tuple[str, str], NearestIndex] = {}
        self._term_cache: CostMemo[list[tuple[glob.Pattern, list[glob.Pattern]]]] = CostMemo(max_bytes=TERM_CACHE_BYTES)
        self._pattern_needs: CostMemo[NeedResult] = CostMemo(max_bytes=PATTERN_NEED_BYTES)
        """What each pattern need (a search's ``fs:read:/src/**``) was answered, with the steps it took (a
        session searches the same directories again; a hit charges those steps, so an answer does not
        depend on what was asked before)."""
        self._fold_case = fold_case
        for (resource, action), kinds in by_key.items():
            if ATOM_NAME.fullmatch(resource) and ATOM_NAME.fullmatch(action):  # so a known key is a valid name
                plain = resources.plain_form(resource, case_insensitive=fold_case)
                self._indices.setdefault(resource, {})[action] = _PartIndex(*kinds, fold_case and resource == "fs", plain)
        self._heads = _atom_heads(self._indices)
        """Every directory of every index with a plain form, by the atom text that ends where its
        last ``/`` would be (``fs:write:/p7/src`` for ``/p7/src/``): what ``rpartition`` leaves."""
        self._probe: Callable[[str], Any] | None = self._heads.get if root is None else None  # a root: links first
        self._longest_head = max(map(len, self._heads), default=0) + 1
        self._warm_places: list[Any] = [None]
        self._warm: Callable[[str], re.Match[str] | None] | None = None  # built after WARM_AFTER decisions
        self._cold_decisions = 0
        self._root = os.path.realpath(root) if root is not None else None
        # the warm path (one regex) does not exist yet: every atom takes the dict probes (or the
        # full reading) until this gate has decided WARM_AFTER of them there, then it is built. A
        # one-shot `bgc gate` or hook decides a few atoms and never pays for compiling it; a
        # long-lived gate pays once, after it has shown it is long-lived. With a root neither the
        # regex nor the probes are used: links must be resolved.
        self._warm_match: Callable[[str], re.Match[str] | None] | None = None
        self._case_insensitive = fold_case

    @property
    def case_insensitive(self) -> bool:
        """Whether its plans declare ``filesystem case-insensitive`` (values are normalised so)."""
        return self._case_insensitive

    def warm_up(self) -> None:
        """Build the warm path now (what a gate does after :data:`WARM_AFTER` decisions)."""
        # a value its resource's plain expression accepts is canonical (not so for fs when names fold)
        warm = WarmPath([
            (resource, action, index._index, index)
            for resource, actions in self._indices.items() for action, index in actions.items()
            if not (self._fold_case and resource == "fs")
        ])  # fmt: skip
        self._warm_places = warm.places
        self._warm = warm.match
        if self._root is None:
            self._warm_match = warm.match

    def rooted(self, root: str | None) -> Gate:
        """This gate resolving links under ``root`` (the same grants: nothing is rebuilt)."""
        gate = copy.copy(self)
        gate._root = os.path.realpath(root) if root is not None else None
        gate._warm_match = gate._warm if gate._root is None else None
        gate._probe = gate._heads.get if gate._root is None else None
        return gate

    def decide(self, atom: str) -> GateDecision:
        """Normalise the concrete atom (DESIGN §2), resolve links under the root, then decide."""
        warm = self._warm_match
        found = warm(atom) if warm is not None else None
        if found is not None:  # the warm path: one regex call, then the outcome of the directory and place
            outcomes, group, index = self._warm_places[found.lastindex]  # type: ignore[misc]
            known = outcomes.get(found[group])
            if known is None:  # a pattern set or a literal may see the value
                known = index.located(index.directories[found[group]], found.lastindex - group + 1, atom[found.start(group) :])
            return known  # type: ignore[no-any-return]
        probe = self._probe
        if probe is not None:  # the cold path: the deepest directory by dict probes on the atom itself
            self._cold_decisions += 1
            if self._cold_decisions == WARM_AFTER:
                self.warm_up()
            head, slash, _ = atom.rpartition("/")
            entry, place = probe(head), 1
            while entry is None and slash:  # not the value's own directory: a shorter one, within the longest
                head, slash, _ = head[: self._longest_head].rpartition("/")
                entry, place = probe(head), 2
            if entry is not None:
                plain, start, outcomes, index, directory = entry
                if plain(atom, start):  # the value (after 'resource:action:') is its own canonical form
                    known = outcomes[place]
                    if known is None:  # a pattern set or a literal may see the value
                        known = index.located(directory, place, atom[start:])
                    return known  # type: ignore[no-any-return]
        parts = atom.split(":", 2)
        if len(parts) == 3 and self._root is None:  # values read first, and those no directory holds
            resource, action, raw = parts
            index = self._indices.get(resource, _NO_ACTIONS).get(action)  # known keys are valid names
            if index is not None:
                if index.plain(raw):
                    return index.outcome(raw)
                value = resources.normalise(resource, raw, case_insensitive=self._case_insensitive)
                if value.__class__ is str:
                    return index.outcome(value)
        if len(parts) != 3:
            return NOT_AN_ATOM
        resource, action, raw = parts
        for what, name in (("resource", resource), ("action", action)):
            if not ATOM_NAME.fullmatch(name):
                return GateDecision("deny", f"not an atom: the {what} must match [a-z][a-z0-9_.-]*")
        value = resources.normalise(resource, raw, case_insensitive=self._case_insensitive)
        if isinstance(value, resources.Rejection):
            return GateDecision("deny", f"rejected: {value.reason}")
        return self._normalised(resource, action, raw, value)

    def decide_normalised(self, resource: str, action: str, raw: str, value: str) -> GateDecision:
        """Decide ``value`` (``raw`` normalised, by :func:`bgc.core.resources.normalise` with this gate's
        case sensitivity), and its link target under the root too; when no rule allows it, the
        reason names the nearest rule (:meth:`hinted`)."""
        return self._hinted(resource, action, value, self._normalised(resource, action, raw, value))

    def _normalised(self, resource: str, action: str, raw: str, value: str) -> GateDecision:
        """:meth:`decide_normalised` without the nearest rule (:meth:`decide`'s own answer)."""
        if resource != "fs" or self._root is None:
            return self._decide_value(resource, action, value)
        resolved = self._resolve(raw, value)
        if isinstance(resolved, resources.Rejection):
            return GateDecision("deny", resolved.reason)
        if resolved == value:
            return self._decide_value(resource, action, value)
        # both the name and its target must be allowed
        decisions = [self._decide_value(resource, action, v) for v in (value, resolved)]
        for effect in ("deny", "ask"):
            for decision in decisions:
                if decision.effect == effect:
                    return decision
        return decisions[0]

    def _resolve(self, raw: str, normalised_raw: str | None = None) -> str | resources.Rejection:
        """Where the value really lands under the root, following links as the OS would.

        The *raw* value is resolved, not the lexically normalised one: after a link, ``..``
        climbs from the link's target (``/src/link/../x`` may be ``/.git/x``), which lexical
        normalisation cannot know. The target is normalised again (a link may name a
        decomposed, non-NFC file) and must stay under the root. ``normalised_raw``, when the
        caller has it, is ``raw`` normalised: a value with no link lands there, read once.
        """
        assert self._root is not None
        if no_link_below(self._root, raw):
            if normalised_raw is not None:
                return normalised_raw  # it lands where it reads, already normalised
            target = raw
        else:
            real = os.path.realpath(self._root + raw)
            inside = real == self._root or real.startswith(self._root.rstrip("/") + "/")
            if not inside:
                return resources.Rejection(raw, f"a symbolic link leaves the root {self._root}")
            target = "/" + os.path.relpath(real, self._root) if real != self._root else "/"
        normalised = resources.normalise("fs", target, case_insensitive=self._case_insensitive)
        if isinstance(normalised, resources.Rejection):
            return resources.Rejection(raw, f"rejected: the link target {normalised.reason}")
        return normalised

    def hinted(self, atom: str, decision: GateDecision) -> GateDecision:
        """``decision`` for ``atom`` (what :meth:`decide` gave it), with, when no rule allows the
        value, the nearest allow or ask rule of the plans and why it does not take it
        (:mod:`bgc.core.nearest`) added to its reason. :meth:`decide` leaves that out: it answers
        from outcomes shared by every value in the same parts, and its caller may not show it."""
        if decision.reason != NO_RULE or decision.rule is not None:
            return decision
        resource, _, rest = atom.partition(":")
        action, _, raw = rest.partition(":")
        value = resources.normalise(resource, raw, case_insensitive=self._case_insensitive)
        return self._hinted(resource, action, value, decision) if isinstance(value, str) else decision

    def _hinted(self, resource: str, action: str, value: str, decision: GateDecision) -> GateDecision:
        """``decision`` for the canonical ``value``, its reason with the nearest rule when no rule allows it."""
        if decision.reason != NO_RULE or decision.rule is not None:
            return decision
        near = self.nearest(resource, action, value)
        return decision if near is None else decision._replace(reason=f"{NO_RULE}; {near}")

    def nearest(self, resource: str, action: str, value: str) -> Near | None:
        """The allow or ask rule of the plans nearest to the canonical ``value``, and why it does
        not take it; the index of a resource and action is built the first time one is asked for
        (only values no rule allows ask, so a gate that allows never builds one)."""
        key = (resource, action)
        index = self._nearest.get(key)
        if index is None:
            entries = {
                (part.pattern, rule): (rule.effect, part.pattern, glob.parse(part.pattern), rule)
                for part in (*self._granted_parts.get(key, ()), *self._asked_parts.get(key, ()))
                for rule in part.rules
            }
            index = self._nearest[key] = NearestIndex(resource, entries.values())
        return index.nearest(value)

    def _decide_value(self, resource: str, action: str, value: str) -> GateDecision:
        """Decide a canonical ``value`` (links already resolved)."""
        index = self._indices.get(resource, _NO_ACTIONS).get(action)
        if index is None:
            return NOT_GRANTED
        return index.outcome(value)

    def _terms(self, resource: str, action: str) -> list[tuple[glob.Pattern, list[glob.Pattern]]]:
        """The granted parts of a resource/action as terms ``(pattern, excepts)`` of the algebra
        (excepts folded as the gate matches them), built the first time a templated need asks (and
        again once the cache has started over: building them charges no steps)."""

        def build() -> list[tuple[glob.Pattern, list[glob.Pattern]]]:
            fold = self._fold_case and resource == "fs"
            terms = []
            for part in self._granted_parts.get((resource, action), ()):
                excepts = [glob.parse(text) for text in part.excepts]
                terms.append((glob.parse(part.pattern), [glob.fold_case(e) for e in excepts] if fold else excepts))
            return terms

        return self._term_cache.get(text_key(resource, action), Budget(), build)

    def cover(self, tool: str, server: str | None, atoms: Sequence[tuple[str, str, str]], budget: Budget) -> CallResult:
        """Whether a call that needs ``atoms`` (``(resource, action, pattern text)`` as
        :func:`expand_call` makes them) is covered, pending or uncovered, atom by atom.

        The atoms are charged to ``budget`` before any is decided (list parameters can make one
        call need a thousand): a call the budget cannot pay for is not covered.
        """
        try:
            budget.charge(sum(NEED_STEPS + NEED_STEPS_PER_CHAR * len(text) for _, _, text in atoms))
        except BudgetExhausted:
            return CallResult(tool, server, "uncovered", UNDECIDED)
        return call_result(
            tool, server, [self.need(resource, action, text, budget) for resource, action, text in atoms]
        )

    def need(self, resource: str, action: str, text: str, budget: Budget) -> NeedResult:
        """Decide one atom a call needs, exactly as the gate decides the value it touches.

        ``text`` is pattern text whose parameters were escaped. The value as the tool sees it
        (escapes resolved, wildcards of the template taken as characters) is checked first,
        before any NFC normalisation by the parser could hide a problem: a value the gate would
        reject is never covered, whatever the template's shape.
        """
        if _WILDCARD_OR_ESCAPE.search(text) is None:  # nothing to unescape and no wildcard: a concrete value
            return self.need_value(resource, action, text)
        escaped = "\\" in text  # else its wildcard is one: escaping the text as it reads could not give it back
        probe = _ESCAPE.sub(r"\1", text) if escaped else text
        if escaped and glob.escape(probe) == text:  # nothing of it is a wildcard: a concrete value
            return self.need_value(resource, action, probe)
        checked = resources.normalise(resource, probe, case_insensitive=self._case_insensitive)
        if isinstance(checked, resources.Rejection):
            return NeedResult(f"{resource}:{action}:{probe}", "deny", f"rejected: {checked.reason}")
        if resource == "fs":
            # every parameter is normalised before it meets the template's own wildcards
            normalised = normalise_fs_pattern(text)
            if isinstance(normalised, resources.Rejection):
                return NeedResult(f"{resource}:{action}:{probe}", "deny", f"rejected: {normalised.reason}")
            text = normalised
        needed = glob.parse(text)
        if needed.literal is not None:
            atom = f"{resource}:{action}:{checked}"
            return NeedResult(atom, *worded(self.hinted(atom, self.decide(atom))))
        if resource != "fs" and checked != probe:
            return NeedResult(
                f"{resource}:{action}:{probe}", "deny", f"rejected: not in canonical form (would read as {checked})"
            )
        return self._pattern_needs.get(
            text_key(resource, action, needed.text), budget, lambda: self._need_pattern(resource, action, needed, budget)
        )

    def need_value(self, resource: str, action: str, value: str) -> NeedResult:
        """Decide the concrete value a call touches (what :meth:`need` decides for pattern text
        with no wildcard of its own, its escapes resolved), as :meth:`decide_value` does."""
        atom, decision = self.decide_value(resource, action, value)
        return NeedResult(atom, *worded(decision))

    def decide_value(self, resource: str, action: str, value: str) -> tuple[str, GateDecision]:
        """A concrete value a call touches, canonicalised or refused, its links resolved under the
        root, then decided as the gate decides an atom: the atom decided (its canonical form, or
        the value as given when it is refused) and the decision."""
        checked = resources.normalise(resource, value, case_insensitive=self._case_insensitive)
        if not isinstance(checked, str):
            return f"{resource}:{action}:{value}", GateDecision("deny", f"rejected: {checked.reason}")
        atom = f"{resource}:{action}:{checked}"
        if resource == "fs" and self._root is not None:
            return atom, self.decide_normalised(resource, action, value, checked)
        return atom, self._hinted(resource, action, checked, self._decide_value(resource, action, checked))

    def _need_pattern(self, resource: str, action: str, needed: glob.Pattern, budget: Budget) -> NeedResult:
        """A templated need with wildcards of its own: covered when inside the granted terms."""
        atom = f"{resource}:{action}:{needed.text}"
        if resource not in ARGV_RESOURCES and glob.has_dot_segment(needed.text):
            return NeedResult(atom, "deny", "rejected: a '.' or '..' segment")
        too_large = glob.size_problem(needed)
        if too_large:
            return NeedResult(atom, "deny", f"rejected: the pattern is too large to decide: it {too_large}")
        terms = self._terms(resource, action)
        try:
            covered = bool(terms) and glob.is_subset_terms(needed, terms, budget=budget)
        except glob.AlgebraLimit:
            return NeedResult(atom, "deny", UNDECIDED)
        return NeedResult(atom, "allow", "granted") if covered else NeedResult(atom, "deny", "not granted by the plan")


PATTERN_NEED_BYTES = 4 * 1024 * 1024
"""What a gate's remembered answers to pattern needs may hold at most
(:func:`~bgc.core.patterns.budget.weight`, keys included; all are dropped when it is full)."""

TERM_CACHE_BYTES = 4 * 1024 * 1024
"""What a gate's granted parts, parsed as terms of the algebra, may hold at most (as above)."""

#: Steps charged for deciding one atom a call needs, plus NEED_STEPS_PER_CHAR per character
#: (expanding, parsing, normalising and matching the value grow with its length).
NEED_STEPS = 128
NEED_STEPS_PER_CHAR = 6

UNDECIDED = "undecided within the work bound: not granted"
_ESCAPE = re.compile(r"\\(.)", re.S)
_WILDCARD_OR_ESCAPE = re.compile(r"[\\*?[]")


def no_link_below(root: str, raw: str) -> bool:
    """Whether ``raw`` (a path under the real directory ``root``) has no ``.``, ``..`` or empty
    segment and no symbolic link on its way down from ``root``: then it lands where it reads,
    as :func:`os.path.realpath` would find, with one ``lstat`` a segment below ``root`` rather
    than one a segment from ``/``. The walk stops at the first name that cannot be read (missing,
    not a directory, not searchable): nothing below it can be read either, so none of it is a
    link, and ``realpath`` takes such a rest as written too."""
    segments = raw.split("/")
    if segments[0] or segments.count("") > 1 or "." in segments or ".." in segments:
        return False
    here, lstat, is_link = root.rstrip("/"), os.lstat, stat.S_ISLNK
    for segment in segments[1:]:
        here = f"{here}/{segment}"
        try:
            if is_link(lstat(here).st_mode):
                return False
        except OSError:
            return True
    return True


def worded(decision: GateDecision) -> tuple[GateEffect, str, RuleRef | None, tuple[Approvals, ...], tuple[RuleRef, ...]]:
    """A gate decision as the atom of a call reports it: effect, reason (the approvals awaited
    and the ask rules, the rule that granted), rule, approvals, ask rules.

    Worded once per decision object (:data:`_WORDED`): a gate hands out one object per outcome,
    so the same few are worded for every call."""
    known = _WORDED.get(id(decision))
    if known is not None:
        return known[1]
    if decision.effect == "ask":
        kinds: dict[str, list[str]] = {}  # `ask p.bgp:3`, or `otherwise ask p.bgp:9` for a fallback
        for rule in decision.asked_by:
            kinds.setdefault(rule.keyword, []).append(str(rule))
        by = " (" + "; ".join(f"{kind} {', '.join(places)}" for kind, places in kinds.items()) + ")" if kinds else ""
        words = "ask", "awaits " + approvals_text(decision.approvals) + by, decision.rule, decision.approvals, decision.asked_by
    else:
        reason = decision.reason or (f"granted by {decision.rule}" if decision.rule else "granted")
        words = decision.effect, reason, decision.rule, (), ()
    if len(_WORDED) >= MAX_WORDED:
        _WORDED.clear()
    _WORDED[id(decision)] = (decision, words)  # the decision held: no other object takes its id while kept
    return words  # type: ignore[return-value]


MAX_WORDED = 4096
"""Decisions :func:`worded` keeps the words of (all are dropped when it is full: the words stay
the same, only slower)."""
_WORDED: dict[int, tuple[GateDecision, tuple[Any, ...]]] = {}


def expand_call(
    needs: Sequence[AtomTemplate], ignores: Collection[str], params: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    """The atoms ``(resource, action, pattern text)`` a call with ``params`` needs.

    Fails closed with :class:`~bgc.core.policy.ast.TemplateError`: a parameter no template names and
    the declaration does not ignore is refused (it may carry a path or a URL no rule checks, as a
    nested property does), and so are missing, nested and non-text parameters
    (:meth:`~bgc.core.policy.ast.AtomTemplate.expand`).
    """
    refuse_undeclared(needs, ignores, params)
    refuse_unfilled(needs, params)
    return [(need.resource, need.action, text) for need in needs for text in need.expand(params)]


def refuse_undeclared(needs: Sequence[AtomTemplate], ignores: Collection[str], params: Mapping[str, Any]) -> None:
    """Raise :class:`~bgc.core.policy.ast.TemplateError` for a parameter no template names and the
    declaration does not ignore."""
    for name in params:
        if name not in ignores and not any(name in need.params for need in needs):
            raise TemplateError(f"parameter {name!r} is not one the declaration names or ignores", name)


def refuse_unfilled(needs: Sequence[AtomTemplate], params: Mapping[str, Any]) -> None:
    """Raise :class:`TemplateError` for a value that does not fill the template it is given for:
    a list of nothing (it would need no atom at all, so nothing would be checked), a list inside a
    list, empty text, or anything but text where a template starts with the parameter (the value
    is then a whole path, URL or command: ``fs:read:{path}``, ``net:connect:{url}``,
    ``proc:exec:{argv0}``); an integer may fill a part (``…/issues/{number}``). A parameter that is
    missing, or of a kind no template takes, is :meth:`AtomTemplate.expand`'s to refuse."""
    for need in needs:
        for name in need.params:
            if name not in params:
                continue
            value = params[name]
            items = value if isinstance(value, (list, tuple)) else (value,)
            if not items:
                raise TemplateError(f"parameter {name!r} is an empty list: it names nothing for `{need}` to check", name)
            whole = need.template.startswith("{" + name + "}")
            for item in items:
                if isinstance(item, str) and item or not isinstance(item, (str, int, list, tuple)) or isinstance(item, bool):
                    continue  # text that names something; a kind no template takes is expand's to refuse
                if isinstance(item, int) and not whole:
                    continue
                raise TemplateError(f"parameter {name!r} {_not_filling(item)}: it does not fill `{need}`", name)


def _not_filling(item: str | int | list[Any] | tuple[Any, ...]) -> str:
    if isinstance(item, str):
        return "is empty text"
    if isinstance(item, (list, tuple)):
        return "lists a list"
    return "is a number where a whole path, URL or command is declared"


def _atom_heads(indices: Mapping[str, Mapping[str, _PartIndex]]) -> dict[str, tuple[Any, int, list[Any], _PartIndex, Directory]]:
    """The cold path's table: for every directory ``D`` (but the top one) of every index whose
    resource has a plain form, the atom text ``resource:action:D`` without its last ``/``, to
    ``(plain test, where the value starts, outcome by place, index, directory)``.

    Names hold no ``:``, so a head found in an atom names the atom's resource and action, and the
    probes from the atom's last ``/`` up find its value's deepest directory as
    :meth:`~bgc.core._gate_index.LaneIndex.locate` does. An outcome is None where the directory's own
    is not the whole answer: a pattern set sees the value, or a literal pattern's deepest
    directory and place are these (the value may be that literal).
    """
    heads: dict[str, tuple[Any, int, list[Any], _PartIndex, Directory]] = {}
    for resource, actions in indices.items():
        for action, index in actions.items():
            if index.plain is _NEVER_PLAIN:
                continue
            key = f"{resource}:{action}:"
            with_literals = {index._index.locate(literal) for literal in index.literals}
            for text, directory in index.directories.items():
                if text:
                    outcomes = [None, *(None if (directory, place) in with_literals else directory.outcomes[place] for place in (1, 2))]
                    heads[key + text[:-1]] = (index.plain, len(key), outcomes, index, directory)
    return heads


_NO_ACTIONS: dict[str, _PartIndex] = {}
_NEVER_PLAIN = re.compile("(?!)").match

WARM_AFTER = 1024
"""Decisions a gate makes by dict probes (or the full reading) before it builds its warm path (one regex over the
plan, costly to compile for a large plan)."""
