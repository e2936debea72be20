"""The granted plan: the compiler's content-addressed output, and the gate that enforces it.

A plan records, for every requested atom, exactly which part was granted, which part waits for
a human, which part was denied, and the rules that decided each part. It is a value with its
own id (covering the order id, the policy id and the mode), so a plan can be cited, cached and
verified: :func:`plan_from_data` recomputes the id and refuses a plan whose content no longer
matches it.

The gate (:class:`Gate`) answers the enforcer's question at run time, "may this concrete value
be touched now?", from the plan alone: no policy, no order, no globbing of the value itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from bgc import canonical, glob, values
from bgc._gate_index import LaneIndex
from bgc.argv import ARGV_RESOURCES
from bgc.budget import Budget, BudgetExhausted
from bgc.canonical import DataModelError, kind_name
from bgc.names import ATOM_NAME
from bgc.policy.templates import AtomTemplate, TemplateError, scan_template

if TYPE_CHECKING:
    from bgc.model import Digest, Fields
    from bgc.policy.ast import ToolDecl

# bgc.model is imported where plans are read or identified, not here: deciding with a plan a
# process already holds (a cached call decider in a cold `bgc hook`) needs none of its classes.

PLAN_TAG = "bgc.Plan"
PLAN_VERSION = 1

Verdict = Literal["granted", "narrowed", "ask", "denied"]
CallStatus = Literal["covered", "pending", "uncovered"]
GateEffect = Literal["allow", "ask", "deny"]
VERDICTS: tuple[Verdict, ...] = ("granted", "narrowed", "ask", "denied")


@dataclass(frozen=True, slots=True, order=True)
class RuleRef:
    """Which rule decided a part: its place and the reason the policy author gave."""

    file: str
    line: int
    effect: str
    reason: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def to_data(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "effect": self.effect, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Approvals:
    """A human-approval requirement: ``count`` of the named approvers (any person when empty)."""

    count: int
    approvers: tuple[str, ...] = ()

    def __str__(self) -> str:
        if not self.approvers:
            return f"{self.count} approval" + ("s" if self.count != 1 else "")
        return f"{self.count} of [{', '.join(self.approvers)}]"

    def to_data(self) -> dict[str, Any]:
        return {"count": self.count, "of": list(self.approvers)}

    def implies(self, other: Approvals) -> bool:
        """Whether every set of people that meets this requirement also meets ``other``.

        Exact, not a heuristic: ``N of S`` guarantees N people, and at least N − |S − T| of them
        in T (the others may all be outside T); ``N approvals`` by anyone guarantees N people and
        none of them in any particular list.
        """
        if not other.approvers:
            return self.count >= other.count
        if not self.approvers:
            return False
        return self.count - len(set(self.approvers) - set(other.approvers)) >= other.count


def strongest(requirements: Iterable[Approvals]) -> tuple[Approvals, ...]:
    """The requirements a value must meet, all of them, less those another one implies.

    A value inside several ask parts (overlapping ask rules) needs every rule's requirement met
    by one set of approvals, each person counting towards every requirement they meet. A
    requirement is left out only when a kept one implies it (:meth:`Approvals.implies`), so the
    result is met by exactly the same sets of people as the input; the order is the input's.
    """
    distinct: dict[tuple[int, frozenset[str]], Approvals] = {}
    for requirement in requirements:
        distinct.setdefault((requirement.count, frozenset(requirement.approvers)), requirement)
    # distinct requirements never imply each other both ways, so one of a pair is always kept
    kept = list(distinct.values())
    return tuple(r for r in kept if not any(other is not r and other.implies(r) for other in kept))


def approvals_text(requirements: Iterable[Approvals]) -> str:
    """What a value needs, in words: ``2 of [alice, bob]``, ``1 of [alice] and 1 of [bob]``."""
    return " and ".join(str(requirement) for requirement in strongest(requirements))


@dataclass(frozen=True, slots=True)
class Part:
    """A term ``resource:action:pattern except {excepts}``, and the rules that produced it."""

    resource: str
    action: str
    pattern: str
    excepts: tuple[str, ...] = ()
    rules: tuple[RuleRef, ...] = ()
    approvals: Approvals | None = None

    @property
    def atom(self) -> str:
        return f"{self.resource}:{self.action}:{self.pattern}"

    def __str__(self) -> str:
        if not self.excepts:
            return self.atom
        return f"{self.atom} except {', '.join(self.excepts)}"

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "atom": self.atom,
            "except": list(self.excepts),
            "rules": [rule.to_data() for rule in self.rules],
        }
        if self.approvals is not None:
            data["approvals"] = self.approvals.to_data()
        return data


@dataclass(frozen=True, slots=True)
class RequestResult:
    """What became of one requested atom."""

    atom: str
    verdict: Verdict
    granted: tuple[Part, ...] = ()
    ask: tuple[Part, ...] = ()
    denied: tuple[Part, ...] = ()
    unknown: bool = False
    """A work bound was hit while deciding: the verdict was taken on the safe side."""

    @property
    def rules(self) -> tuple[RuleRef, ...]:
        """Every rule that decided some part, sorted and without duplicates."""
        return tuple(sorted({rule for part in (*self.granted, *self.ask, *self.denied) for rule in part.rules}))

    def to_data(self) -> dict[str, Any]:
        return {
            "atom": self.atom,
            "verdict": self.verdict,
            "granted": [part.to_data() for part in self.granted],
            "ask": [part.to_data() for part in self.ask],
            "denied": [part.to_data() for part in self.denied],
            "unknown": self.unknown,
        }


@dataclass(frozen=True, slots=True)
class NeedResult:
    """One atom a tool call needs, and what the plan says about it."""

    atom: str
    effect: GateEffect
    reason: str
    rule: RuleRef | None = field(default=None, compare=False)
    """The rule that decided it, when one did (its place is in ``reason`` too, which plans keep)."""
    approvals: tuple[Approvals, ...] = field(default=(), compare=False)
    """For ``ask``: every requirement that applies (all must be met), as the gate found them;
    what an enforcer turns into a permission request (``reason`` says it in words)."""
    asked_by: tuple[RuleRef, ...] = field(default=(), compare=False)
    """For ``ask``: every ask rule whose requirement applies."""

    def to_data(self) -> dict[str, Any]:
        return {"atom": self.atom, "effect": self.effect, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class CallResult:
    """Coverage of one proposed tool call by the plan."""

    tool: str
    server: str | None
    status: CallStatus
    reason: str
    needs: tuple[NeedResult, ...] = ()

    def to_data(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "server": self.server,
            "status": self.status,
            "reason": self.reason,
            "needs": [need.to_data() for need in self.needs],
        }


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool declaration as a plan carries it: the tool, the servers it covers, the atom
    templates a call needs. The gate maps a concrete call to atoms with it, and needs nothing
    but the plan (the policy that declared it may be gone)."""

    tool: str
    servers: tuple[str, ...]
    needs: tuple[AtomTemplate, ...]
    ignores: tuple[str, ...] = ()

    def to_data(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "servers": list(self.servers),
            "needs": [str(need) for need in self.needs],
            "ignores": list(self.ignores),
        }


def tool_specs(decls: Iterable[ToolDecl]) -> tuple[ToolSpec, ...]:
    """A policy's declarations as a plan carries them, in one order whatever the source order."""
    specs = (ToolSpec(decl.tool, tuple(sorted(decl.servers)), decl.needs, tuple(sorted(decl.ignores))) for decl in decls)
    return tuple(sorted(specs, key=lambda spec: (spec.tool, spec.servers)))


@dataclass(frozen=True, slots=True)
class Plan:
    """A granted plan. Its id is the digest of its canonical encoding (without the id itself)."""

    order: str
    policy: str
    mode: str | None
    requests: tuple[RequestResult, ...]
    calls: tuple[CallResult, ...] = ()
    fold_case: bool = False
    """The policy declared a case-insensitive filesystem: ``fs`` deny/ask excepts fold case."""
    tools: tuple[ToolSpec, ...] = ()
    """The policy's tool declarations (:func:`tool_specs`), so a call can be decided from the plan."""

    def body(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "policy": self.policy,
            "mode": self.mode,
            "fold_case": self.fold_case,
            "requests": [request.to_data() for request in self.requests],
            "calls": [call.to_data() for call in self.calls],
            "tools": [tool.to_data() for tool in self.tools],
        }

    def id(self) -> Digest:
        from bgc.model import Digest

        return Digest.of(canonical.envelope(PLAN_TAG, PLAN_VERSION, self.body()))

    def to_data(self) -> dict[str, Any]:
        """The plan as data: the body plus ``id``, ``type`` and ``version`` (JSON/YAML/CBOR)."""
        return {"type": PLAN_TAG, "version": PLAN_VERSION, "id": str(self.id()), **self.body()}

    def counts(self) -> dict[str, int]:
        """How many requests have each verdict and how many calls each status (for summaries)."""
        out = {verdict: 0 for verdict in VERDICTS}
        out.update({"covered": 0, "pending": 0, "uncovered": 0})
        for request in self.requests:
            out[request.verdict] += 1
        for call in self.calls:
            out[call.status] += 1
        return out


# --- reading a plan back ------------------------------------------------------------------------


class PlanError(DataModelError):
    """A plan document that is not a plan (or not exactly one), or whose content does not match
    its id."""


EFFECTS: tuple[GateEffect, ...] = ("allow", "ask", "deny")
CALL_STATUSES: tuple[CallStatus, ...] = ("covered", "pending", "uncovered")
_PLAN_FIELDS = ("type", "version", "id", "order", "policy", "mode", "fold_case", "requests", "calls", "tools")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SERVER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_IGNORED = re.compile(r"-{0,2}[A-Za-z_][A-Za-z0-9_-]*")


def _pattern(text: Any) -> str:
    """A pattern of the dialect; its error is the plan's (located in the plan file), not the pattern's."""
    if not isinstance(text, str):
        raise PlanError(f"expected a pattern, got {kind_name(text)}")
    try:
        glob.parse(text)
    except glob.PatternError as error:
        raise PlanError(f"bad pattern {text!r}: {error.message}") from None
    return text


def _atom(text: str) -> tuple[str, str, str]:
    """``resource:action:pattern``, each part checked."""
    parts = text.split(":", 2)
    if len(parts) != 3 or not (ATOM_NAME.fullmatch(parts[0]) and ATOM_NAME.fullmatch(parts[1])):
        raise PlanError(f"expected an atom 'resource:action:pattern' (resource and action match [a-z][a-z0-9_.-]*), got {text!r}")
    return parts[0], parts[1], _pattern(parts[2])


def _read_rule(rule: Fields) -> RuleRef:
    rule.only("file", "line", "effect", "reason")
    line = rule.value("line", int)
    if line < 1:
        raise PlanError(f"expected a line number of at least 1, got {line}", (*rule.path, "line"))
    return RuleRef(rule.value("file", str), line, rule.choice("effect", EFFECTS), rule.value("reason", str, type(None)))


def _read_approvals(approvals: Fields) -> Approvals:
    """``count`` of the distinct names in ``of`` (any person when there are none)."""
    approvals.only("count", "of")
    count = approvals.value("count", int)
    names = approvals.list("of")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise PlanError(f"expected an approver's name, got {name!r}", (*approvals.path, "of", i))
        if name in names[:i]:
            raise PlanError(f"{name!r} is named twice", (*approvals.path, "of", i))
    if count < 1 or names and count > len(names):
        most = f" to {len(names)} (the number of names)" if names else ""
        raise PlanError(f"expected a count from 1{most}, got {count}", (*approvals.path, "count"))
    return Approvals(count, tuple(names))


def _read_parts(request: Fields, key: str) -> tuple[Part, ...]:
    """The parts under ``key``; ask parts, and only they, carry their approval requirement."""
    from bgc.model import Fields

    asks = key == "ask"
    parts = []
    for part in request.maps(key):
        part.only("atom", "except", "rules", *(("approvals",) if asks else ()))
        resource, action, pattern = part.at("atom").build(_atom, part.value("atom", str))
        excepts = tuple(
            Fields(text, (*part.path, "except", i)).build(_pattern, text) for i, text in enumerate(part.list("except"))
        )
        rules = tuple(_read_rule(rule) for rule in part.maps("rules"))
        approvals = _read_approvals(part.map("approvals")) if asks else None
        parts.append(Part(resource, action, pattern, excepts, rules, approvals))
    return tuple(parts)


def _read_request(request: Fields) -> RequestResult:
    request.only("atom", "verdict", "granted", "ask", "denied", "unknown")
    atom = request.value("atom", str)
    request.at("atom").build(_atom, atom)
    return RequestResult(
        atom,
        request.choice("verdict", VERDICTS),  # type: ignore[arg-type]
        _read_parts(request, "granted"),
        _read_parts(request, "ask"),
        _read_parts(request, "denied"),
        request.value("unknown", bool),
    )


def request_from_data(data: Any, path: tuple[str | int, ...] = ()) -> RequestResult:
    """One request result, read and checked exactly as :func:`plan_from_data` reads a plan's
    (a capability token carries its plan's granted and pending parts this way)."""
    from bgc.model import Fields, ModelError

    try:
        return _read_request(Fields(data, path))
    except ModelError as error:
        raise PlanError(error.message, error.path) from None


def tool_from_data(data: Any, path: tuple[str | int, ...] = ()) -> ToolSpec:
    """One tool declaration, read and checked exactly as :func:`plan_from_data` reads a plan's
    (a capability token's tool scope is its plan's declarations)."""
    from bgc.model import Fields, ModelError

    try:
        return _read_tool(Fields(data, path))
    except ModelError as error:
        raise PlanError(error.message, error.path) from None


def _read_call(call: Fields) -> CallResult:
    from bgc.model import ToolCall

    call.only("tool", "server", "status", "reason", "needs")
    proposed = call.build(ToolCall, call.get("tool"), call.get("server"))  # named as an order names them
    needs = []
    for need in call.maps("needs"):
        need.only("atom", "effect", "reason")
        needs.append(NeedResult(need.value("atom", str), need.choice("effect", EFFECTS), need.value("reason", str)))  # type: ignore[arg-type]
    return CallResult(
        proposed.tool,
        proposed.server,
        call.choice("status", CALL_STATUSES),  # type: ignore[arg-type]
        call.value("reason", str),
        tuple(needs),
    )


def _template(text: str) -> AtomTemplate:
    """An atom template as ``bgc compile`` writes it: ``resource:action:`` then pattern text in
    which each ``{name}`` names one parameter; with every placeholder filled it is a pattern."""
    parts = text.split(":", 2)
    if len(parts) != 3 or not (ATOM_NAME.fullmatch(parts[0]) and ATOM_NAME.fullmatch(parts[1])):
        raise PlanError(f"expected a template 'resource:action:pattern' (resource and action match [a-z][a-z0-9_.-]*), got {text!r}")
    resource, action, template = parts
    params: list[str] = []
    probe: list[str] = []
    for kind, start, end in scan_template(template):
        if kind == "text":
            probe.append(template[start:end])
        elif kind == "param" and _PARAM.fullmatch(name := template[start + 1 : end - 1]) and name not in params:
            params.append(name)
            probe.append("x")
        else:
            raise PlanError(f"bad template {text!r}: {template[start:end]!r} is not a placeholder `{{name}}` used once")
    _pattern("".join(probe))
    return AtomTemplate(resource, action, template, tuple(params), None)  # type: ignore[arg-type]


def _read_tool(tool: Fields) -> ToolSpec:
    from bgc.model import Fields, ToolCall

    tool.only("tool", "servers", "needs", "ignores")
    name = tool.build(ToolCall, tool.get("tool")).tool  # a tool name as an order names it
    servers = tool.list("servers")
    for i, server in enumerate(servers):
        if not isinstance(server, str) or not _SERVER.fullmatch(server) or server in servers[:i]:
            raise PlanError(f"expected a server name, once, got {server!r}", (*tool.path, "servers", i))
    if not servers or servers != sorted(servers):
        raise PlanError("expected the servers, at least one, sorted", (*tool.path, "servers"))
    needs = tuple(
        Fields(text, (*tool.path, "needs", i)).build(_template, text if isinstance(text, str) else "")
        for i, text in enumerate(tool.list("needs"))
    )
    ignores = tool.list("ignores")
    for i, param in enumerate(ignores):
        if not isinstance(param, str) or not _IGNORED.fullmatch(param) or any(param in need.params for need in needs):
            raise PlanError(f"expected the name of a parameter no template uses, got {param!r}", (*tool.path, "ignores", i))
    if ignores != sorted(set(ignores)):
        raise PlanError("expected the ignored parameters sorted, each once", (*tool.path, "ignores"))
    return ToolSpec(name, tuple(servers), needs, tuple(ignores))


def plan_from_data(data: Any) -> Plan:
    """Rebuild a plan from data and verify it: every field, at every level, must be one that
    ``bgc compile`` writes (an unknown one would not be covered by the id), enumerations and
    patterns must be valid, and the recorded id must match the content."""
    return _verified_plan(data)[0]


def _verified_plan(data: Any) -> tuple[Plan, Digest]:
    """:func:`plan_from_data` and the id it verified (encoding a large plan to derive its id
    costs more than reading it: done once)."""
    from bgc.model import Digest, Fields, ModelError

    if not isinstance(data, Mapping) or data.get("type") != PLAN_TAG:
        raise PlanError("not a bgc plan (expected the output of `bgc compile --format json|yaml|cbor`)")
    if data.get("version") != PLAN_VERSION or type(data.get("version")) is not int:  # true == 1.0 == 1
        raise PlanError(f"unsupported plan version {data.get('version')!r} (this bgc reads version {PLAN_VERSION})", ("version",))
    try:
        root = Fields(data, ())
        root.only(*_PLAN_FIELDS)
        recorded, order, policy = (field.build(Digest, field.data) for field in map(root.at, ("id", "order", "policy")))
        plan = Plan(
            str(order),
            str(policy),
            root.value("mode", str, type(None)),
            tuple(_read_request(request) for request in root.maps("requests")),
            tuple(_read_call(call) for call in root.maps("calls")),
            root.value("fold_case", bool),
            tuple(_read_tool(tool) for tool in root.maps("tools")),
        )
    except ModelError as error:
        raise PlanError(error.message, error.path) from None
    if recorded != plan.id():
        raise PlanError(f"the plan's content does not match its id {recorded} (was it edited?)", ("id",))
    return plan, recorded


def plans_from_data(
    data: Any, *, expect_policy: Digest | None = None, expect_plans: Collection[Digest] = ()
) -> tuple[Plan, ...]:
    """One plan or a list of plans (as ``bgc compile`` writes them), each verified, and pinned.

    An id proves only that a plan was not edited after it was written; anyone can compile a plan
    from a policy of their own. ``expect_policy`` refuses a plan compiled against any other
    policy id; ``expect_plans`` refuses a plan whose id is not among them, and a pinned id that
    no plan has: the plans read must be exactly the pinned ones.
    """
    return _pinned(_verified_plans(data), isinstance(data, list), expect_policy, expect_plans)


def _verified_plans(data: Any) -> tuple[tuple[Plan, Digest], ...]:
    """Each plan of ``data`` (one, or a list) verified, with its id."""
    listed = isinstance(data, list)
    verified = []
    for index, item in enumerate(data if listed else [data]):
        try:
            verified.append(_verified_plan(item))
        except DataModelError as error:
            raise PlanError(error.message, (*((index,) if listed else ()), *error.path)) from None
    return tuple(verified)


def _pinned(
    verified: Sequence[tuple[Plan, Digest]],
    listed: bool,
    expect_policy: Digest | None,
    expect_plans: Collection[Digest],
) -> tuple[Plan, ...]:
    """The verified plans, refused unless they are exactly what the pins allow."""
    for index, (plan, plan_id) in enumerate(verified):
        where: tuple[str | int, ...] = (index,) if listed else ()
        if expect_policy is not None and plan.policy != str(expect_policy):
            message = f"the plan was compiled against policy {plan.policy}, not the expected {expect_policy}"
            raise PlanError(message, (*where, "policy"))
        if expect_plans and plan_id not in expect_plans:
            expected = " or ".join(str(digest) for digest in expect_plans)
            raise PlanError(f"the plan {plan_id} is not the expected {expected}", (*where, "id"))
    found = {plan_id for _, plan_id in verified}
    for digest in expect_plans:
        if digest not in found:
            held = ", ".join(sorted(str(plan_id) for plan_id in found)) or "no plan"
            raise PlanError(f"no plan has the expected id {digest} (the file holds {held})")
    return tuple(plan for plan, _ in verified)


def read_plans(
    path: str, input_format: str | None = None, *, expect_policy: Digest | None = None,
    expect_plans: Collection[Digest] = (),
) -> tuple[Plan, ...]:  # fmt: skip
    """The plans of the document at ``path`` (``-``: stdin), as :func:`plans_from_data` reads
    them, each verified once per exact content.

    Verifying a large plan (reading every field, parsing every pattern, deriving the id by
    encoding it) costs an enforcer that runs ``bgc gate`` per call far more than deciding. It
    is a pure function of the bytes, so bytes verified before — the same content, read as the
    same format, by the same code — come as verified plans from bgc's verified cache
    (:mod:`bgc.cache`, keyed by the bytes' digest); only the pins are checked again. A pin a hit
    refuses is read again the slow way, so the error is located in the file.
    """
    import hashlib

    from bgc import cache
    from bgc.documents import document_from_bytes, format_for, read_bytes

    data = read_bytes(path)
    fmt = format_for(path, input_format, data)
    key = f"{fmt}\0{hashlib.sha256(data).hexdigest()}"
    entry = cache.load_object("plans", key)
    if isinstance(entry, tuple) and len(entry) == 3 and entry[0] == key and isinstance(entry[1], bool):
        try:
            return _pinned(entry[2], entry[1], expect_policy, expect_plans)
        except PlanError:
            pass  # read again below: the error, located
    document = document_from_bytes(data, path, input_format)  # the bytes the key names, not a second read
    verified = document.build(_verified_plans)
    cache.store_object("plans", key, (key, isinstance(document.data, list), verified))
    return document.build(lambda plans: _pinned(verified, isinstance(plans, list), expect_policy, expect_plans))


# --- the gate -----------------------------------------------------------------------------------


class GateDecision(NamedTuple):
    """The gate's answer for one concrete atom.

    A named tuple rather than a frozen dataclass, on purpose: the gate builds one per decision
    and a frozen dataclass costs four ``object.__setattr__`` calls to build, which was the
    largest single cost of a warm decision. It is just as immutable.
    """

    atom: str
    effect: GateEffect
    reason: str = ""
    approvals: tuple[Approvals, ...] = ()
    """For ``ask``: the requirement of every ask part holding the value; all of them apply."""
    rule: RuleRef | None = None
    """The rule that decided it (an allow's or ask's part names the rule it came from; a deny
    names the deny rule, or none when no rule allows the value)."""
    asked_by: tuple[RuleRef, ...] = ()
    """For ``ask``: every ask rule whose requirement applies, sorted."""

    def to_data(self) -> dict[str, Any]:
        return {
            "atom": self.atom,
            "decision": self.effect,
            "reason": self.reason,
            "approvals": [a.to_data() for a in self.approvals],
        }


_decision = tuple.__new__  # GateDecision's fields as one tuple: what its __new__ does, minus the call


Outcome = tuple[GateEffect, str, tuple[Approvals, ...], "RuleRef | None", tuple["RuleRef", ...]]
"""A decision without its atom: what every value holding the same parts gets."""

#: Different outcomes (sets of parts holding a value) a resource/action's index remembers.
MAX_OUTCOMES = 4096


class _PartIndex:
    """Every part of one resource/action, granted, asked and denied, decided in one pass.

    Each distinct pattern — a part's pattern, or an except (case-folded for an ``fs`` except on
    a case-insensitive file system) — is one lane of a :class:`~bgc._gate_index.LaneIndex`;
    which parts hold a value, and so the outcome, depends only on the lanes it matches, so the
    outcome is worked out once per lane mask and remembered.
    """

    def __init__(self, granted: Sequence[Part], asked: Sequence[Part], denied: Sequence[Part], fold_case: bool) -> None:
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
        self._outcomes: dict[int, Outcome] = {}

    def outcome(self, value: str) -> Outcome:
        """What the parts say about a canonical value: allow, ask (and the approvals), deny (and why)."""
        hits = self._index.hits(value)
        known = self._outcomes.get(hits)
        if known is None:
            known = self._outcome(hits)
            if len(self._outcomes) < MAX_OUTCOMES:
                self._outcomes[hits] = known
        return known

    def _outcome(self, hits: int) -> Outcome:
        holding: list[tuple[int, int, Part, int]] = []
        rest = hits
        while rest:  # a value matches few patterns: look at their parts only
            bit = rest & -rest
            rest ^= bit
            holding += [entry for entry in self._by_lane.get(bit, ()) if not entry[3] & hits]
        holding.sort(key=lambda entry: entry[:2])  # the parts' order in the plans
        granted, asked, denied = ([part for kind, _, part, _ in holding if kind == wanted] for wanted in range(3))
        if granted:
            return "allow", "", (), granted[0].rules[0] if granted[0].rules else None, ()
        if asked:
            approvals = tuple(dict.fromkeys(part.approvals or Approvals(1) for part in asked))
            rules = tuple(sorted({rule for part in asked for rule in part.rules}))
            return "ask", "awaits approval", approvals, rules[0] if rules else None, rules
        # name a deny rule when one covers the value; the part no rule mentions comes last
        for part in sorted(denied, key=lambda part: not part.rules):
            if not part.rules:
                return "deny", "no rule allows it", (), None, ()
            rule = part.rules[0]
            because = f" ({rule.reason})" if rule.reason else ""
            return "deny", f"denied by {rule}{because}", (), rule, ()
        return "deny", "not granted by the plan", (), None, ()


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
        self._term_cache: dict[tuple[str, str], list[tuple[glob.Pattern, list[glob.Pattern]]]] = {}
        self._fold_case = fold_case
        for (resource, action), kinds in by_key.items():
            if ATOM_NAME.fullmatch(resource) and ATOM_NAME.fullmatch(action):  # so a known key is a valid name
                self._indices.setdefault(resource, {})[action] = _PartIndex(*kinds, fold_case and resource == "fs")
        self._root = os.path.realpath(root) if root is not None else None
        self._case_insensitive = fold_case

    def rooted(self, root: str | None) -> Gate:
        """This gate resolving links under ``root`` (the same grants: nothing is rebuilt)."""
        import copy

        gate = copy.copy(self)
        gate._root = os.path.realpath(root) if root is not None else None
        return gate

    def decide(self, atom: str) -> GateDecision:
        """Normalise the concrete atom (DESIGN §2), resolve links under the root, then decide."""
        parts = atom.split(":", 2)
        if len(parts) == 3 and self._root is None:  # the hot path: one canonicalisation, one index pass
            resource, action, raw = parts
            index = self._indices.get(resource, _NO_ACTIONS).get(action)  # known keys are valid names
            if index is not None:
                value = values.normalise(resource, raw, case_insensitive=self._case_insensitive)
                if value.__class__ is str:
                    return _decision(GateDecision, (atom, *index.outcome(value)))  # type: ignore[arg-type]
        if len(parts) != 3:
            return GateDecision(atom, "deny", "not an atom 'resource:action:value'")
        resource, action, raw = parts
        for what, name in (("resource", resource), ("action", action)):
            if not ATOM_NAME.fullmatch(name):
                return GateDecision(atom, "deny", f"not an atom: the {what} must match [a-z][a-z0-9_.-]*")
        value = values.normalise(resource, raw, case_insensitive=self._case_insensitive)
        if isinstance(value, values.Rejection):
            return GateDecision(atom, "deny", f"rejected: {value.reason}")
        return self._decide_normalised(atom, resource, action, raw, value)

    def _decide_normalised(self, atom: str, resource: str, action: str, raw: str, value: str) -> GateDecision:
        """Decide ``value`` (``raw`` normalised), and its link target under the root too."""
        candidates = [value]
        if resource == "fs" and self._root is not None:
            resolved = self._resolve(raw)
            if isinstance(resolved, values.Rejection):
                return GateDecision(atom, "deny", resolved.reason)
            if resolved != value:
                candidates.append(resolved)  # both the name and its target must be allowed
        decisions = [self._decide_value(atom, resource, action, v) for v in candidates]
        for effect in ("deny", "ask"):
            for decision in decisions:
                if decision.effect == effect:
                    return decision
        return decisions[0]

    def _resolve(self, raw: str) -> str | values.Rejection:
        """Where the value really lands under the root, following links as the OS would.

        The *raw* value is resolved, not the lexically normalised one: after a link, ``..``
        climbs from the link's target (``/src/link/../x`` may be ``/.git/x``), which lexical
        normalisation cannot know. The target is normalised again (a link may name a
        decomposed, non-NFC file) and must stay under the root.
        """
        assert self._root is not None
        real = os.path.realpath(self._root + raw)
        inside = real == self._root or real.startswith(self._root.rstrip("/") + "/")
        if not inside:
            return values.Rejection(raw, f"a symbolic link leaves the root {self._root}")
        target = "/" + os.path.relpath(real, self._root) if real != self._root else "/"
        normalised = values.normalise("fs", target, case_insensitive=self._case_insensitive)
        if isinstance(normalised, values.Rejection):
            return values.Rejection(raw, f"rejected: the link target {normalised.reason}")
        return normalised

    def _decide_value(self, atom: str, resource: str, action: str, value: str) -> GateDecision:
        index = self._indices.get(resource, _NO_ACTIONS).get(action)
        if index is None:
            return GateDecision(atom, "deny", "not granted by the plan")
        return GateDecision(atom, *index.outcome(value))


    def _terms(self, resource: str, action: str) -> list[tuple[glob.Pattern, list[glob.Pattern]]]:
        """The granted parts of a resource/action as terms ``(pattern, excepts)`` of the algebra
        (excepts folded as the gate matches them), built the first time a templated need asks."""
        key = (resource, action)
        if key not in self._term_cache:
            fold = self._fold_case and resource == "fs"
            terms = []
            for part in self._granted_parts.get(key, ()):
                excepts = [glob.parse(text) for text in part.excepts]
                terms.append((glob.parse(part.pattern), [glob.fold_case(e) for e in excepts] if fold else excepts))
            self._term_cache[key] = terms
        return self._term_cache[key]

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
        needs = [self.need(resource, action, text, budget) for resource, action, text in atoms]
        effects = {need.effect for need in needs}
        if "deny" in effects:
            first = next(need for need in needs if need.effect == "deny")
            return CallResult(tool, server, "uncovered", f"{first.atom}: {first.reason}", tuple(needs))
        if "ask" in effects:
            return CallResult(tool, server, "pending", "some atoms await approval", tuple(needs))
        return CallResult(tool, server, "covered", "every atom it needs is granted", tuple(needs))

    def need(self, resource: str, action: str, text: str, budget: Budget) -> NeedResult:
        """Decide one atom a call needs, exactly as the gate decides the value it touches.

        ``text`` is pattern text whose parameters were escaped. The value as the tool sees it
        (escapes resolved, wildcards of the template taken as characters) is checked first,
        before any NFC normalisation by the parser could hide a problem: a value the gate would
        reject is never covered, whatever the template's shape.
        """
        probe = _ESCAPE.sub(r"\1", text)
        checked = values.normalise(resource, probe, case_insensitive=self._case_insensitive)
        if isinstance(checked, values.Rejection):
            return NeedResult(f"{resource}:{action}:{probe}", "deny", f"rejected: {checked.reason}")
        if glob.escape(probe) == text:  # nothing of it is a wildcard: a concrete value, as the gate decides one
            decision = self._decide_normalised(f"{resource}:{action}:{checked}", resource, action, probe, checked)
            return self._need_result(decision, f"{resource}:{action}:{checked}")
        if resource == "fs":
            # every parameter is normalised before it meets the template's own wildcards
            normalised = values.normalise_fs_pattern(text)
            if isinstance(normalised, values.Rejection):
                return NeedResult(f"{resource}:{action}:{probe}", "deny", f"rejected: {normalised.reason}")
            text = normalised
        needed = glob.parse(text)
        if needed.literal is not None:
            return self._need_result(self.decide(f"{resource}:{action}:{checked}"), f"{resource}:{action}:{checked}")
        if resource != "fs" and checked != probe:
            return NeedResult(
                f"{resource}:{action}:{probe}", "deny", f"rejected: not in canonical form (would read as {checked})"
            )
        return self._need_pattern(resource, action, needed, budget)

    @staticmethod
    def _need_result(decision: GateDecision, atom: str) -> NeedResult:
        if decision.effect == "ask":
            by = f" (ask {', '.join(map(str, decision.asked_by))})" if decision.asked_by else ""
            reason = "awaits " + approvals_text(decision.approvals) + by
            return NeedResult(atom, "ask", reason, decision.rule, decision.approvals, decision.asked_by)
        reason = decision.reason or (f"granted by {decision.rule}" if decision.rule else "granted")
        return NeedResult(atom, decision.effect, reason, decision.rule)

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


#: Steps charged for deciding one atom a call needs, plus NEED_STEPS_PER_CHAR per character
#: (expanding, parsing, normalising and matching the value take about 3 µs a character).
NEED_STEPS = 128
NEED_STEPS_PER_CHAR = 6

UNDECIDED = "undecided within the work bound: not granted"
_ESCAPE = re.compile(r"\\(.)", re.S)


def expand_call(
    needs: Sequence[AtomTemplate], ignores: Collection[str], params: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    """The atoms ``(resource, action, pattern text)`` a call with ``params`` needs.

    Fails closed with :class:`~bgc.policy.ast.TemplateError`: a parameter no template names and
    the declaration does not ignore is refused (it may carry a path or a URL no rule checks, as a
    nested property does), and so are missing, nested and non-text parameters
    (:meth:`~bgc.policy.ast.AtomTemplate.expand`).
    """
    refuse_undeclared(needs, ignores, params)
    return [(need.resource, need.action, text) for need in needs for text in need.expand(params)]


def refuse_undeclared(needs: Sequence[AtomTemplate], ignores: Collection[str], params: Mapping[str, Any]) -> None:
    """Raise :class:`~bgc.policy.ast.TemplateError` for a parameter no template names and the
    declaration does not ignore."""
    for name in params:
        if name not in ignores and not any(name in need.params for need in needs):
            raise TemplateError(f"parameter {name!r} is not one the declaration names or ignores", name)


_NO_ACTIONS: dict[str, _PartIndex] = {}
