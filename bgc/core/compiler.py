"""The compiler: work order × policy × mode → granted plan (DESIGN §3). Pure: no I/O.

For a requested atom R, under the order's context and the chosen mode::

    granted(R) = L(R) ∩ ⋃allow − ⋃ask − ⋃deny
    ask(R)     = L(R) ∩ ⋃ask − ⋃deny
    denied(R)  = L(R) − granted(R) − ask(R)

Each part is a term ``pattern except {patterns}`` whose pattern is an exact intersection of the
request with a rule pattern (bgc.core.patterns.glob.intersect), so nothing is ever widened; empty parts are
dropped only when the algebra proves them empty.

Fallbacks (``otherwise ask``, ``otherwise deny``) decide only the rest, what no other rule
matches: their parts are ask or denied parts cut by every other applicable rule's pattern (an
``otherwise ask`` by the ``otherwise deny`` ones too), so they never change a grant
(:meth:`Compiler._fallen`, docs/semantics.md "Fallbacks").

Two fail-closed choices deserve a word:

* Conditions are three-valued. A field the context does not know (``call.tool`` while compiling
  requests: a grant in the plan may be used by any call) is *unknown*; an ``allow`` applies only
  when its condition is true, an ``ask`` or ``deny`` whenever it is true *or unknown*.
* When the pattern algebra hits a work bound (:class:`bgc.core.patterns.glob.AlgebraLimit`: a question's own, or
  the order's :class:`bgc.core.patterns.budget.Budget` once it is spent), the undecided piece is not granted: an
  allow whose intersection cannot be computed grants nothing, an ask whose intersection cannot be
  computed asks for nothing (it might not cover the request) but cuts, a cut that cannot be
  decided is kept as a cut, and the request is marked ``unknown``.

Rules are indexed by resource/action and by the literal prefix of their patterns, so the cost of
a request grows with the rules that can overlap it, not with the size of the policy.
"""

from __future__ import annotations

import bisect

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from bgc.core.patterns import glob
from bgc.core import resources
from bgc.core.resources.net import url_deny_patterns
from dataclasses import dataclass, field, replace
from bgc.core.patterns.budget import Budget, CostMemo
from bgc.core.gate import UNDECIDED, Gate, expand_call
from bgc.core.nearest import Near, NearestIndex
from bgc.core.values.limits import ORDER_BUDGET
from bgc.core.values.model import GrantAtom, ToolCall, WorkOrder
from bgc.core.plan import Approvals, CallResult, Part, Plan, RequestResult, RuleRef, tool_specs
from bgc.core.policy.ast import LOCAL_SERVER, Policy, Rule, TemplateError
from bgc.core.policy.bundled import BUNDLED, bundled_path

_ESCAPE = re.compile(r"\\(.)", re.S)
T = TypeVar("T")


def resolve_mode(policy: Policy, mode: str | None) -> str | None:
    """The mode to compile in: the caller's choice (checked), else the policy's default."""
    return policy.resolve_mode(mode)


def rule_ref(policy: Policy, rule: Rule) -> RuleRef:
    """A rule's place as plans record it: the file relative to the root policy's directory.

    Plans must not depend on how the policy's path was typed or where bgc ran, so a rule in
    ``policies/base.bgp`` included by ``policies/default.bgp`` is ``base.bgp:18`` whether the
    user wrote ``-p policies/default.bgp``, ``-p ./policies/default.bgp`` or ran elsewhere; a
    rule of a file bgc ships is ``bgc:claude-code.bgp:40`` wherever bgc is installed.
    """
    return RuleRef(
        policy.file_name(rule.span.file), rule.span.line, rule.effect, rule.because, rule.fallback, rule.sandbox
    )


def rule_source(policy: Policy, ref: RuleRef) -> str:
    """The path of a :class:`RuleRef`'s file as seen from here (the inverse of :func:`rule_ref`)."""
    if ref.file.startswith(BUNDLED):
        return bundled_path(ref.file)
    return os.path.normpath(os.path.join(os.path.dirname(policy.path), ref.file))


def narrows(rule: Rule) -> bool:
    """Whether a rule only ever takes access away where it matches: ``deny``, ``ask`` and
    ``otherwise deny``. The others give some: an ``allow`` grants, an ``otherwise ask`` turns
    what would be denied into a question. A rule that narrows is read on the safe side wherever
    there is a choice (an unknown condition applies, a pattern is folded or widened); one that
    gives never is (that would give more than it says)."""
    return rule.effect != "allow" and not (rule.fallback and rule.effect == "ask")


def _applies(rule: Rule, context: Mapping[str, str], mode: str | None) -> bool:
    """Fail closed on unknown conditions: unknown never gives access, and always takes it away."""
    if rule.mode is not None and rule.mode != mode:
        return False
    if rule.when is None:
        return True
    outcome = rule.when.evaluate(context)
    return outcome is not False if narrows(rule) else outcome is True


applies = _applies
"""Whether a rule applies in a context and mode, as the compiler reads it (``bgc.analysis.diff`` decides
every context class the same way)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    """One pattern of one rule, parsed (and case-folded where the policy says so)."""

    rule: Rule
    text: str
    pattern: glob.Pattern
    order: int


class _PrefixTrie(Generic[T]):
    """Items keyed by literal prefix: finds those whose prefix is compatible with a query's."""

    __slots__ = ("children", "items", "_below")

    def __init__(self) -> None:
        self.children: dict[str, _PrefixTrie[T]] = {}
        self.items: list[T] = []
        self._below: list[T] | None = None

    def add(self, prefix: str, item: T) -> None:
        node = self
        for char in prefix:
            child = node.children.get(char)
            if child is None:
                child = node.children[char] = _PrefixTrie()
            node = child
        node.items.append(item)

    def below(self) -> list[T]:
        """Every item at or under this node (walked with a stack: a prefix may be long)."""
        if self._below is None:
            found: list[T] = []
            nodes = [self]
            while nodes:
                node = nodes.pop()
                found.extend(node.items)
                nodes.extend(node.children.values())
            self._below = found
        return self._below

    def compatible(self, prefix: str) -> list[T]:
        """Items whose prefix is a prefix of ``prefix``, or has ``prefix`` as a prefix."""
        found: list[T] = []
        node = self
        for char in prefix:
            found.extend(node.items)
            next_node = node.children.get(char)
            if next_node is None:
                return found
            node = next_node
        found.extend(node.below())
        return found


def _by_ends(patterns: list[glob.Pattern]) -> Callable[[glob.Pattern], list[int]]:
    """A lookup: the indices (ascending) of ``patterns`` whose literal prefix and suffix are both
    compatible with a query's (:func:`bgc.core.patterns.glob.disjoint_ends`: the others share no
    text with it). Parts cut from one request by many denies share its prefix; their suffixes
    (``.pem``, ``.key``, ``/secrets``) tell most of them apart."""
    by_prefix = _by_prefix([pattern.prefix for pattern in patterns])
    by_suffix = _by_prefix([pattern.suffix[::-1] for pattern in patterns])
    return lambda query: sorted(set(by_prefix(query.prefix)).intersection(by_suffix(query.suffix[::-1])))


def _by_prefix(prefixes: list[str]) -> Callable[[str], list[int]]:
    """A lookup: the indices (ascending) of ``prefixes`` compatible with a query's (one a prefix
    of the other). The prefixes of the query are looked up by length among those that occur;
    the prefixes that extend it are a range of the sorted distinct prefixes."""
    where: dict[str, list[int]] = {}
    for j, prefix in enumerate(prefixes):
        where.setdefault(prefix, []).append(j)
    ordered = sorted(where)
    lengths = sorted({len(prefix) for prefix in ordered})

    def lookup(query: str) -> list[int]:
        found: list[int] = []
        for length in lengths:
            if length >= len(query):
                break
            found.extend(where.get(query[:length], ()))
        k = bisect.bisect_left(ordered, query)
        while k < len(ordered) and ordered[k].startswith(query):
            found.extend(where[ordered[k]])
            k += 1
        return sorted(found)

    return lookup


class RuleIndex:
    """A policy's rules indexed by literal prefix, one trie per requested (resource, action).

    A trie is built on first use for each resource/action pair that requests name, from the
    rules whose resource and action match it (``*`` included), so a lookup walks one trie. On a
    case-insensitive filesystem the ``fs`` tries hold deny and ask patterns case-folded — also
    those of ``*:…`` rules, which a request for ``fs`` meets like any ``fs`` rule — filed under
    the empty prefix, since a folded pattern has no case-exact prefix. Likewise a deny or ask on a
    URL stands for every scheme, port and query of what it names (``bgc.core.resources.net.url_deny_patterns``).
    Fallbacks are indexed with the other rules, read as what they are: an ``otherwise deny`` folds
    and widens as a deny does, an ``otherwise ask`` is exact as an allow is (:func:`narrows`).
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._tries: dict[tuple[str, str], _PrefixTrie[_Entry]] = {}

    def _trie(self, resource: str, action: str) -> _PrefixTrie[_Entry]:
        trie = self._tries.get((resource, action))
        if trie is not None:
            return trie
        trie = self._tries[(resource, action)] = _PrefixTrie[_Entry]()
        order = 0
        for rule in self.policy.rules:
            if rule.resource not in (resource, "*") or rule.action not in (action, "*"):
                order += len(rule.patterns)
                continue
            fold = self.policy.case_insensitive and narrows(rule) and resource == "fs"
            widen = narrows(rule) and resource in resources.URL_RESOURCES
            for written in rule.patterns:
                for text in url_deny_patterns(written) if widen else (written,):
                    exact = glob.parse(text)
                    pattern = glob.fold_case(exact) if fold else exact
                    trie.add("" if fold else exact.prefix, _Entry(rule, text, pattern, order))
                order += 1
        return trie

    def candidates(self, resource: str, action: str, prefix: str) -> list[_Entry]:
        """Entries that may overlap a pattern with this literal prefix, in policy order."""
        found = self._trie(resource, action).compatible(prefix)
        return sorted(found, key=lambda entry: entry.order)


def _confines(part: Part) -> bool:
    """Whether a rule that granted ``part`` runs what it grants only confined (``in sandbox``)."""
    return any(rule.sandbox for rule in part.rules)


@dataclass
class _Accumulator:
    """Parts under construction, merged by identity so equal parts carry all their rules. The
    rules of a part are collected in a set and sorted once, when the parts are pruned: a part
    many rules produce (a request every deny of a large policy cuts) costs one step per rule."""

    parts: dict[tuple[Any, ...], tuple[glob.Pattern, Part, set[RuleRef]]] = field(default_factory=dict)

    def add(self, resource: str, action: str, piece: glob.Pattern, excepts: tuple[str, ...], rule: RuleRef | None,
            approvals: Approvals | None = None) -> None:
        key = (piece.text, excepts, approvals)
        if key not in self.parts:
            self.parts[key] = (piece, Part(resource, action, piece.text, excepts, (), approvals), set())
        if rule is not None:
            self.parts[key][2].add(rule)

    def pruned(self, cutters: Mapping[str, glob.Pattern], budget: Budget) -> tuple[Part, ...]:
        """The parts, each part inside another one folded into it (its rules kept), but for a
        part granted ``in sandbox``, folded only into another such part.

        Part ``P except E`` lies inside ``Q except F`` when P ⊆ Q and every cut in F but not in E
        is disjoint from P; ``cutters`` maps except texts to their (possibly case-folded)
        patterns. Among parts of equal language the first (in sorted order) is kept.
        """
        items = sorted(
            ((piece, replace(part, rules=tuple(sorted(refs)))) for piece, part, refs in self.parts.values()),
            key=lambda item: (item[1].pattern, item[1].excepts),
        )
        by_ends = _by_ends([pattern for pattern, _ in items])
        host: dict[int, int] = {}
        for i, (pattern, part) in enumerate(items):
            # a pattern lies inside another only if their literal ends agree (patterns are never empty)
            candidates = by_ends(pattern)
            budget.note(len(candidates))
            for j in candidates:
                other_pattern, other = items[j]
                if (
                    i != j
                    and other.approvals == part.approvals
                    and (not _confines(part) or _confines(other))  # folded, a confined grant would lose its sandbox
                    and not _plainly_outside(pattern, other_pattern, budget)
                    and _subset(pattern, [other_pattern], budget)
                    and all(
                        _meets(pattern, cutters[text], budget) is False
                        for text in sorted(set(other.excepts) - set(part.excepts))  # sorted: the same steps
                    )
                    and not (
                        j > i
                        and set(other.excepts) <= set(part.excepts)
                        and not _plainly_outside(other_pattern, pattern, budget)
                        and _subset(other_pattern, [pattern], budget)
                    )
                ):
                    host[i] = j
                    break
        rules: dict[int, set[RuleRef]] = {i: set(items[i][1].rules) for i in range(len(items)) if i not in host}
        for i in host:
            root = i
            while root in host:
                root = host[root]
            rules[root] |= set(items[i][1].rules)
        return tuple(
            Part(part.resource, part.action, part.pattern, part.excepts, tuple(sorted(rules[i])), part.approvals)
            for i, (_, part) in enumerate(items)
            if i not in host
        )


# Once an order's budget is spent every question is unknown, so these do not ask: pruning alone
# asks a question per pair of parts, and raising each one's error would be work without bound.


def _ask(question: Callable[[], T], budget: Budget, undecided: Any) -> Any:
    """``question()``'s answer, or ``undecided`` when the algebra cannot decide it (within the budget)."""
    if budget.exhausted:
        return undecided
    try:
        return question()
    except glob.AlgebraLimit:
        return undecided


def _subset(a: glob.Pattern, bs: list[glob.Pattern], budget: Budget) -> bool:
    """Whether L(a) ⊆ ∪L(bs); False when undecided."""
    return _ask(lambda: glob.is_subset(a, bs, budget=budget), budget, False)


def _plainly_outside(a: glob.Pattern, b: glob.Pattern, budget: Budget) -> bool:
    """Whether a probe of ``a`` shows it is not inside ``b``; False when it does not, or undecided."""
    return _ask(lambda: glob.plainly_outside(a, b, budget=budget), budget, False)


def _meets(a: glob.Pattern, b: glob.Pattern, budget: Budget) -> bool | None:
    """Whether some text matches both; None when undecided."""
    return _ask(lambda: glob.overlaps(a, b, budget=budget), budget, None)


def _overlaps(a: glob.Pattern, b: glob.Pattern, budget: Budget) -> list[glob.Pattern] | None:
    """The exact intersection; None when undecided."""
    return _ask(lambda: glob.intersect(a, b, budget=budget), budget, None)




REQUEST_MEMO_BYTES = 16 * 1024 * 1024
"""What a compiler's remembered request results may hold at most (a long-lived process compiles
many orders with one compiler)."""


class Compiler:
    """Compiles orders against one policy; reuse it for many orders (the index is built once).

    Each order gets its own work :class:`~bgc.core.patterns.budget.Budget` of ``order_budget`` steps (by default
    ``bgc.core.values.limits.ORDER_BUDGET``), shared by its requests and calls; request results are remembered
    with their cost, so an order's plan is the same whatever the compiler compiled before.
    """

    def __init__(self, policy: Policy, order_budget: int | None = None) -> None:
        self.policy = policy
        self.order_budget = ORDER_BUDGET if order_budget is None else order_budget
        self.index = RuleIndex(policy)
        self._requests: CostMemo[RequestResult] = CostMemo(max_bytes=REQUEST_MEMO_BYTES)
        self._refs: dict[int, RuleRef] = {}
        self.policy_id = policy.id()
        self.tools = tool_specs(policy.tools)
        self._nearest: dict[tuple[str, str, tuple[str, ...]], NearestIndex] = {}

    def ref(self, rule: Rule) -> RuleRef:
        """The rule's :class:`RuleRef` (memoised: every part of every request cites rules)."""
        ref = self._refs.get(id(rule))
        if ref is None:
            ref = self._refs[id(rule)] = rule_ref(self.policy, rule)
        return ref

    @staticmethod
    def context(order: WorkOrder) -> dict[str, str]:
        """What conditions may know of an order; ``call.tool`` is never known while compiling."""
        return {"intent.kind": order.intent.kind, "origin.model": order.origin.model}

    def compile(self, order: WorkOrder, mode: str | None = None, budget: Budget | None = None) -> Plan:
        """The plan for ``order``; its work is charged to ``budget`` (a fresh order budget if None)."""
        mode = resolve_mode(self.policy, mode)
        context = self.context(order)
        budget = Budget(self.order_budget) if budget is None else budget
        requests = tuple(self.request(atom, context, mode, budget) for atom in order.requests)
        plan = Plan(str(order.id()), self.policy_id, mode, requests, (), self.policy.case_insensitive, self.tools)
        if not order.calls:
            return plan
        gate = Gate([plan])  # calls are judged exactly as the gate will judge them at run time
        calls = tuple(self.call(call, gate, budget) for call in order.calls)
        return Plan(plan.order, plan.policy, mode, requests, calls, plan.fold_case, self.tools)

    def request(
        self, atom: GrantAtom, context: Mapping[str, str], mode: str | None, budget: Budget | None = None
    ) -> RequestResult:
        """What the policy gives ``atom``; the work is charged to ``budget`` (a fresh order's if None)."""
        budget = Budget(self.order_budget) if budget is None else budget
        if budget.exhausted:  # every question would be unknown: nothing is granted, nothing asked
            whole = Part(atom.resource, atom.action, glob.parse(atom.pattern).text)
            return RequestResult(str(atom), "denied", (), (), (whole,), True)
        key = json.dumps([str(atom), sorted(context.items()), mode], ensure_ascii=False).encode("utf-8", "surrogatepass")
        return self._requests.get(hashlib.blake2b(key, digest_size=20).digest(), budget,
                                  lambda: self._request(atom, context, mode, budget))  # fmt: skip

    def _request(self, atom: GrantAtom, context: Mapping[str, str], mode: str | None, budget: Budget) -> RequestResult:
        requested = glob.parse(atom.pattern)
        unknown = False
        touching: dict[str, list[tuple[_Entry, list[glob.Pattern]]]] = {"allow": [], "ask": [], "deny": []}
        fallbacks: dict[str, list[tuple[_Entry, list[glob.Pattern]]]] = {"ask": [], "deny": []}
        undecided_asks: set[int] = set()
        for entry in self.index.candidates(atom.resource, atom.action, requested.prefix):
            if not _applies(entry.rule, context, mode):
                continue
            pieces = _overlaps(requested, entry.pattern, budget)
            if pieces is None:
                unknown = True
                if not narrows(entry.rule):
                    continue  # an allow (or an otherwise ask) we cannot intersect gives nothing
                if entry.rule.effect == "ask":
                    undecided_asks.add(id(entry))
                pieces = [requested]  # a cut we cannot intersect cuts the whole request
            if pieces:
                (fallbacks if entry.rule.fallback else touching)[entry.rule.effect].append((entry, pieces))

        # a cut can meet a piece only if their literal prefixes agree
        cutters = {
            effect: _by_prefix([entry.pattern.prefix for entry, _ in touching[effect]]) for effect in ("ask", "deny")
        }

        def cuts(piece: glob.Pattern, effects: tuple[str, ...]) -> tuple[tuple[str, ...], list[glob.Pattern]]:
            texts: dict[str, glob.Pattern] = {}
            for effect in effects:
                for index in cutters[effect](piece.prefix):
                    entry = touching[effect][index][0]
                    if _meets(piece, entry.pattern, budget) is not False:  # undecided: kept as a cut
                        texts.setdefault(entry.text, entry.pattern)
            ordered = sorted(texts)
            return tuple(ordered), [texts[text] for text in ordered]

        def nonempty(piece: glob.Pattern, excepts: list[glob.Pattern]) -> bool:
            nonlocal unknown
            if not budget.exhausted:
                try:
                    return not glob.is_empty(piece, excepts, budget=budget)
                except glob.AlgebraLimit:
                    pass
            unknown = True
            return True  # kept: the term is exact, only its emptiness is undecided

        granted, asked, denied = _Accumulator(), _Accumulator(), _Accumulator()
        for entry, pieces in touching["allow"]:
            for piece in pieces:
                excepts, cut_patterns = cuts(piece, ("ask", "deny"))
                if nonempty(piece, cut_patterns):
                    granted.add(atom.resource, atom.action, piece, excepts, self.ref(entry.rule))
        for entry, pieces in touching["ask"]:
            if id(entry) in undecided_asks:
                continue  # it cuts the whole request, but may not cover it: it asks for nothing
            approvals = _approvals(entry.rule)
            for piece in pieces:
                excepts, cut_patterns = cuts(piece, ("deny",))
                if nonempty(piece, cut_patterns):
                    asked.add(atom.resource, atom.action, piece, excepts, self.ref(entry.rule), approvals)
        for entry, pieces in touching["deny"]:
            for piece in pieces:
                denied.add(atom.resource, atom.action, piece, (), self.ref(entry.rule))
        everything = {entry.text: entry.pattern for effect in touching.values() for entry, _ in effect}
        fallen = {entry.text: entry.pattern for effect in fallbacks.values() for entry, _ in effect}
        residual = sorted({**everything, **fallen})
        cut_by = [*everything.values(), *fallen.values()]  # by pattern: one text may be read two ways (folded or not)
        if nonempty(requested, cut_by):
            denied.add(atom.resource, atom.action, requested, tuple(residual), None)

        granted_parts, ask_parts = granted.pruned(everything, budget), asked.pruned(everything, budget)
        denied_parts = denied.pruned({**fallen, **everything}, budget)
        if fallbacks["ask"] or fallbacks["deny"]:
            more_asks, more_denied = self._fallen(atom, context, mode, fallbacks, everything, nonempty, budget)
            ask_parts = _sorted_parts(ask_parts + more_asks)
            denied_parts = _sorted_parts(denied_parts + more_denied)
        allow_patterns = [piece for _, pieces in touching["allow"] for piece in pieces]
        complete = not unknown and not touching["ask"] and not touching["deny"] and bool(allow_patterns)
        if complete:  # granted as asked, or only narrowed? Undecided counts as narrowed, and unknown.
            inside: bool | None = None
            if not budget.exhausted:
                try:
                    inside = glob.is_subset(requested, allow_patterns, budget=budget)
                except glob.AlgebraLimit:
                    pass
            complete, unknown = inside is True, inside is None
        verdict = "granted" if complete else "narrowed" if granted_parts else "ask" if ask_parts else "denied"
        return RequestResult(str(atom), verdict, granted_parts, ask_parts, denied_parts, unknown)

    def _fallen(
        self,
        atom: GrantAtom,
        context: Mapping[str, str],
        mode: str | None,
        fallbacks: Mapping[str, list[tuple[_Entry, list[glob.Pattern]]]],
        everything: Mapping[str, glob.Pattern],
        nonempty: Callable[[glob.Pattern, list[glob.Pattern]], bool],
        budget: Budget,
    ) -> tuple[tuple[Part, ...], tuple[Part, ...]]:
        """The parts the fallbacks decide: the request's values no other rule matches, inside a
        fallback's pattern, asked (``otherwise ask``, cut by every ``otherwise deny`` too: the
        strictest fallback wins) or denied citing the fallback (``otherwise deny``).

        "No rule matches" is read as the gate reads a part's excepts: on a case-insensitive file
        system the gate folds every ``fs`` except, so there every rule keeps the case variants of
        what it names out of a fallback (``/SRC/a`` beside ``allow fs:write:/src/**`` is neither
        granted, as an allow never folds, nor asked: it is denied). Folding only ever narrows a
        fallback's question, and keeps the compiler and the gate in agreement on every value.
        """
        fold = self.policy.case_insensitive and atom.resource == "fs"
        decided = {text: glob.fold_case(pattern) if fold else pattern for text, pattern in everything.items()}
        if fold:  # an allow that misses the request may still name a case variant of it
            for entry in self.index.candidates(atom.resource, atom.action, ""):
                if entry.rule.effect == "allow" and _applies(entry.rule, context, mode):
                    decided.setdefault(entry.text, glob.fold_case(entry.pattern))
        refused = {**decided, **{entry.text: entry.pattern for entry, _ in fallbacks["deny"]}}

        def cut(piece: glob.Pattern, pool: Mapping[str, glob.Pattern]) -> tuple[tuple[str, ...], list[glob.Pattern]]:
            texts = sorted(text for text, pattern in pool.items() if _meets(piece, pattern, budget) is not False)
            return tuple(texts), [pool[text] for text in texts]

        asked, denied = _Accumulator(), _Accumulator()
        for effect, pool, into in (("ask", refused, asked), ("deny", decided, denied)):
            for entry, pieces in fallbacks[effect]:
                approvals = _approvals(entry.rule) if effect == "ask" else None
                for piece in pieces:
                    excepts, cut_patterns = cut(piece, pool)
                    if nonempty(piece, cut_patterns):
                        into.add(atom.resource, atom.action, piece, excepts, self.ref(entry.rule), approvals)
        return asked.pruned(refused, budget), denied.pruned(decided, budget)

    def nearest(
        self, resource: str, action: str, value: str, context: Mapping[str, str], mode: str | None,
        effects: tuple[str, ...] = ("allow", "ask"),
    ) -> Near | None:  # fmt: skip
        """The rule of one of ``effects`` nearest to the canonical ``value``, and why it did not
        decide it (:mod:`bgc.core.nearest`): one that matches but does not apply (its mode, its
        condition), else the nearest whose pattern does not match. None when one of them
        matches and applies, or none is near."""
        for entry in self.index.candidates(resource, action, value):
            rule = entry.rule
            if rule.effect not in effects or not entry.pattern.matches(value):
                continue
            if _applies(rule, context, mode):
                return None
            if rule.mode is not None and rule.mode != mode:
                why = f"it matches, but only in mode `{rule.mode}`"
            elif rule.when is not None and rule.when.evaluate(context) is None:
                why = "it matches, but its condition cannot be decided here, and an allow needs it true"
            else:
                why = "it matches, but its condition is false here"
            return Near(rule.effect, entry.text, self.ref(rule), why)
        key = (resource, action, effects)
        index = self._nearest.get(key)
        if index is None:
            index = self._nearest[key] = NearestIndex(resource, [
                (rule.effect, text, glob.parse(text), self.ref(rule))
                for rule in self.policy.rules
                if rule.effect in effects and rule.resource in (resource, "*") and rule.action in (action, "*")
                for text in rule.patterns
            ])  # fmt: skip
        return index.nearest(value)

    def call(self, call: ToolCall, gate: Gate, budget: Budget) -> CallResult:
        """Resolve a call through its tool declaration (for its server) and check every atom it
        needs, exactly as the gate checks a call at run time (:meth:`bgc.core.gate.Gate.cover`)."""
        decl = self.policy.tool(call.tool, call.server)
        if decl is None:
            return CallResult(call.tool, call.server, "uncovered", undeclared_reason(self.policy, call.tool, call.server))
        if budget.exhausted:
            return CallResult(call.tool, call.server, "uncovered", UNDECIDED)
        try:
            atoms = expand_call(decl.needs, decl.ignores, call.params)
        except TemplateError as error:
            return CallResult(call.tool, call.server, "uncovered", str(error))
        return gate.cover(call.tool, call.server, atoms, budget)


def undeclared_reason(policy: Policy, tool: str, server: str | None) -> str:
    """Why a call has no declaration: an unknown tool, or a known tool on a server it is not declared for."""
    servers = sorted({name for decl in policy.tools if decl.tool == tool for name in decl.servers})
    if not servers:
        return f"unknown tool {tool!r}: the policy does not declare it"
    return f"tool {tool!r} is not declared on server {server or LOCAL_SERVER!r} (only on {', '.join(servers)})"


def _sorted_parts(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """Parts in the order a plan lists them (as :meth:`_Accumulator.pruned` sorts its own)."""
    return tuple(sorted(parts, key=lambda part: (part.pattern, part.excepts)))


def _approvals(rule: Rule) -> Approvals:
    if rule.approvals is None:
        return Approvals(1)
    return Approvals(rule.approvals.count, rule.approvals.approvers)


def compile(order: WorkOrder, policy: Policy, mode: str | None = None) -> Plan:  # noqa: A001 - the issue's name
    """Compile one order; for many orders against one policy, reuse a :class:`Compiler`."""
    return Compiler(policy).compile(order, mode)


@dataclass(frozen=True, slots=True)
class Decision:
    """The effect a policy gives one concrete value in a context (used by inline expects)."""

    effect: str
    rules: tuple[RuleRef, ...]
    reason: str


def decide(
    policy: Policy,
    resource: str,
    action: str,
    value: str,
    context: Mapping[str, str],
    mode: str | None = None,
    compiler: Compiler | None = None,
) -> Decision:
    """Decide one concrete value: normalised, then compiled as a single-string request."""
    normalised = resources.normalise(resource, value, case_insensitive=policy.case_insensitive)
    if isinstance(normalised, resources.Rejection):
        return Decision("deny", (), f"rejected: {normalised.reason}")
    compiler = compiler or Compiler(policy)
    atom = GrantAtom(resource, action, glob.escape(normalised))
    result = compiler.request(atom, context, resolve_mode(policy, mode))
    effect = {"granted": "allow", "narrowed": "allow", "ask": "ask", "denied": "deny"}[result.verdict]
    if result.unknown and effect == "allow":
        effect = "deny"
    reason = {"allow": "granted", "ask": "awaits approval", "deny": "denied"}[effect]
    return Decision(effect, result.rules, reason)


@dataclass(frozen=True, slots=True)
class RuleTrace:
    """How one rule bore on a requested atom, in words (for ``bgc explain``)."""

    rule: RuleRef
    pattern: str
    applies: bool
    why: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """Every rule that touched an atom, in precedence order, the result, other modes' verdicts,
    and for a value no rule took, the nearest rule and why it did not (:mod:`bgc.core.nearest`)."""

    atom: str
    mode: str | None
    result: RequestResult
    traces: tuple[RuleTrace, ...]
    other_modes: tuple[tuple[str, str], ...]
    hint: Near | None = None

    def to_data(self) -> dict[str, Any]:
        """``bgc explain --format json``'s object for this atom."""
        return {
            **self.result.to_data(),
            "mode": self.mode,
            "rules": [
                {"pattern": trace.pattern, "rule": trace.rule.to_data(), "applies": trace.applies, "why": trace.why}
                for trace in self.traces
            ],
            "other_modes": dict(self.other_modes),
            "hint": self.hint.to_data() if self.hint is not None else None,
        }


_PRECEDENCE = {("deny", False): 0, ("ask", False): 1, ("allow", False): 2, ("deny", True): 3, ("ask", True): 4}
"""The order ``bgc explain`` lists rules in: deny, ask, allow, then the fallbacks (the strictest first)."""


def explain(compiler: Compiler, order: WorkOrder | None, atom: GrantAtom, mode: str | None = None) -> Explanation:
    """Why ``atom`` (asked in ``order``'s context; without an order, in a context that knows no
    field) gets what it gets, rule by rule.

    Rules are listed deny, then ask, then allow (the precedence), then ``otherwise deny`` and
    ``otherwise ask`` (which decide only what none of the others matches), each in policy order. For a
    request not granted in full, the verdict in every other mode is given too: a person may
    switch modes; the proposal cannot. The atom is decided as if it were the order's only
    request (an order's budget of its own); the rules' overlaps have another, and the other
    modes share a third, so an explanation costs at most three orders' work. An atom without
    wildcards that some part of no rule takes gets a hint: the nearest rule and why it did not.
    """
    policy = compiler.policy
    mode = resolve_mode(policy, mode)
    context = compiler.context(order) if order is not None else {}
    requested = glob.parse(atom.pattern)
    traces = []
    budget = Budget(compiler.order_budget)
    entries = sorted(
        compiler.index.candidates(atom.resource, atom.action, ""),
        key=lambda entry: (_PRECEDENCE[entry.rule.effect, entry.rule.fallback], entry.order),
    )
    for entry in entries:
        rule = entry.rule
        overlap = _overlaps(requested, entry.pattern, budget)
        if overlap == []:
            continue  # never touched the atom
        if rule.mode is not None and rule.mode != mode:
            applies, why = False, f"only in mode {rule.mode!r}"
        else:
            outcome = rule.when.evaluate(context) if rule.when is not None else True
            applies = _applies(rule, context, mode)
            if outcome is False:
                why = "its condition is false for this order"
            elif outcome is None and applies:
                why = "its condition cannot be decided here, so it applies (fail closed)"
            elif outcome is None:
                why = f"its condition cannot be decided here, and an {rule.keyword} needs it true"
            elif overlap is None:
                why = "applies; the overlap could not be computed within bounds (not granted)"
            elif rule.fallback:
                why = "applies to what no other rule matches in " + ", ".join(piece.text for piece in overlap)
            else:
                why = "applies to " + ", ".join(piece.text for piece in overlap)
        traces.append(RuleTrace(compiler.ref(rule), entry.text, applies, why))
    result = compiler.request(atom, context, mode)
    others: list[tuple[str, str]] = []
    if result.verdict != "granted":
        modes_budget = Budget(compiler.order_budget)
        for other in policy.modes:
            if other != mode:
                others.append((other, compiler.request(atom, context, other, modes_budget).verdict))
    hint = None
    if requested.literal is not None and any(not part.rules for part in result.denied):
        hint = compiler.nearest(atom.resource, atom.action, requested.literal, context, mode)
    return Explanation(str(atom), mode, result, tuple(traces), tuple(others), hint)
