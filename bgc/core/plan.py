"""The granted plan: the compiler's content-addressed output, and how a plan is read.

A plan records, for every requested atom, exactly which part was granted, which part waits for
a human, which part was denied, and the rules that decided each part. It is a value with its
own id (covering the order id, the policy id and the mode), so a plan can be cited, cached and
verified: :func:`plan_from_data` recomputes the id and refuses a plan whose content no longer
matches it.

The gate (:mod:`bgc.core.gate`) answers the enforcer's question at run time, "may this concrete
value be touched now?", from plans alone: no policy, no order, no globbing of the value itself.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from hashlib import sha256
from typing import TYPE_CHECKING, Any, Literal, Protocol

from bgc.core.values import canonical
from bgc.core.patterns import glob
from dataclasses import dataclass, field
from bgc.core.values.canonical import DataModelError, Digest, kind_name
from bgc.names import ATOM_NAME
from bgc.core.policy.templates import AtomTemplate, scan_template
from bgc.core.values.schema import Fields, ModelError, dotted_name, visible_name

if TYPE_CHECKING:
    from bgc.core.policy.ast import ToolDecl

Verdict = Literal["granted", "narrowed", "ask", "denied"]
CallStatus = Literal["covered", "pending", "uncovered"]
GateEffect = Literal["allow", "ask", "deny"]

# Not bgc.core.values.model: reading a plan checks tool and server names as an order names them (the same
# checks, from bgc.core.values.schema) and needs none of the work-order classes.

PLAN_TAG = "bgc.Plan"
PLAN_VERSION = 1

VERDICTS: tuple[Verdict, ...] = ("granted", "narrowed", "ask", "denied")
FAIL_ON: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "denied": (frozenset({"denied"}), frozenset({"uncovered"})),
    "ask": (frozenset({"denied", "ask"}), frozenset({"uncovered", "pending"})),
    "narrowed": (frozenset({"denied", "ask", "narrowed"}), frozenset({"uncovered", "pending"})),
    "never": (frozenset(), frozenset()),
}
"""``--fail-on`` levels: the request verdicts and call statuses each one counts as failing."""


@dataclass(frozen=True, slots=True, order=True)
class RuleRef:
    """Which rule decided a part: its place and the reason the policy author gave. ``fallback``:
    the rule is an ``otherwise ask``/``otherwise deny``, which decided a part no other rule
    matches. ``sandbox``: an ``allow proc:exec:... in sandbox``, whose commands run only confined."""

    file: str
    line: int
    effect: str
    reason: str | None = None
    fallback: bool = False
    sandbox: bool = False

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def keyword(self) -> str:
        """The rule's effect as written (``otherwise ask`` for a fallback)."""
        return f"otherwise {self.effect}" if self.fallback else self.effect

    @property
    def clause(self) -> str:
        """What the rule says after its patterns about how its grant holds: `` in sandbox``, or nothing."""
        return " in sandbox" if self.sandbox else ""

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"file": self.file, "line": self.line, "effect": self.effect, "reason": self.reason}
        if self.fallback:  # only then: a plan without fallbacks is written (and identified) as before
            data["fallback"] = True
        if self.sandbox:  # likewise
            data["sandbox"] = True
        return data


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


def call_result(tool: str, server: str | None, needs: Sequence[NeedResult]) -> CallResult:
    """A call's coverage from its atoms' decisions (:func:`coverage`)."""
    return CallResult(tool, server, *coverage(needs), tuple(needs))


class DecidedAtom(Protocol):
    """What :func:`coverage` reads of an atom's decision."""

    @property
    def atom(self) -> str: ...
    @property
    def effect(self) -> str: ...
    @property
    def reason(self) -> str: ...


def coverage(needs: Sequence[DecidedAtom]) -> tuple[CallStatus, str]:
    """A call's coverage and why, from its atoms' decisions (anything with ``atom``, ``effect``
    and ``reason``): uncovered when one is denied (the first names why), pending when one
    awaits approval, else covered."""
    asked = False
    for need in needs:
        if need.effect == "deny":
            return "uncovered", f"{need.atom}: {need.reason}"
        asked = asked or need.effect == "ask"
    return ("pending", "some atoms await approval") if asked else ("covered", "every atom it needs is granted")


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
    specs = (
        ToolSpec(decl.tool, tuple(sorted(decl.servers)), decl.needs, tuple(sorted(decl.ignores))) for decl in decls
    )
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
        return Digest.of(canonical.envelope(PLAN_TAG, PLAN_VERSION, self.body()))

    def to_data(self) -> dict[str, Any]:
        """The plan as data: the body plus ``id``, ``type`` and ``version`` (JSON/YAML/CBOR)."""
        return {"type": PLAN_TAG, "version": PLAN_VERSION, "id": str(self.id()), **self.body()}

    def fails(self, fail_on: str) -> bool:
        """Whether a request or call is at or above the ``--fail-on`` level (:data:`FAIL_ON`): exit 1."""
        bad_verdicts, bad_calls = FAIL_ON[fail_on]
        return any(r.verdict in bad_verdicts for r in self.requests) or any(c.status in bad_calls for c in self.calls)

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
        raise PlanError(
            f"expected an atom 'resource:action:pattern' (resource and action match [a-z][a-z0-9_.-]*), got {text!r}"
        )
    return parts[0], parts[1], _pattern(parts[2])


def _read_rule(rule: Fields) -> RuleRef:
    rule.only("file", "line", "effect", "reason", "fallback", "sandbox")
    line = rule.value("line", int)
    if line < 1:
        raise PlanError(f"expected a line number of at least 1, got {line}", (*rule.path, "line"))
    effect = rule.choice("effect", EFFECTS)
    fallback = "fallback" in rule.data
    if fallback and (rule.data["fallback"] is not True or effect == "allow"):
        # one spelling per content (absent, or true), and never a fallback that allows
        raise PlanError("expected `fallback: true` on an ask or deny rule, or no `fallback`", (*rule.path, "fallback"))
    sandbox = "sandbox" in rule.data
    if sandbox and (rule.data["sandbox"] is not True or effect != "allow"):
        raise PlanError("expected `sandbox: true` on an allow rule, or no `sandbox`", (*rule.path, "sandbox"))
    return RuleRef(rule.value("file", str), line, effect, rule.value("reason", str, type(None)), fallback, sandbox)


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
    try:
        return _read_request(Fields(data, path))
    except ModelError as error:
        raise PlanError(error.message, error.path, at_key=error.at_key) from None


def tool_from_data(data: Any, path: tuple[str | int, ...] = ()) -> ToolSpec:
    """One tool declaration, read and checked exactly as :func:`plan_from_data` reads a plan's
    (a capability token's tool scope is its plan's declarations)."""
    try:
        return _read_tool(Fields(data, path))
    except ModelError as error:
        raise PlanError(error.message, error.path, at_key=error.at_key) from None


def _named(tool: Any, server: Any = None) -> tuple[str, str | None]:
    """A tool and its server, named as a work order names them (:class:`bgc.core.values.model.ToolCall`)."""
    dotted_name(tool, "tool")
    if server is not None:
        visible_name(server, "server")
    return tool, server


def _read_call(call: Fields) -> CallResult:
    call.only("tool", "server", "status", "reason", "needs")
    tool, server = call.build(_named, call.get("tool"), call.get("server"))
    needs = []
    for need in call.maps("needs"):
        need.only("atom", "effect", "reason")
        needs.append(NeedResult(need.value("atom", str), need.choice("effect", EFFECTS), need.value("reason", str)))  # type: ignore[arg-type]
    return CallResult(
        tool,
        server,
        call.choice("status", CALL_STATUSES),  # type: ignore[arg-type]
        call.value("reason", str),
        tuple(needs),
    )


def _template(text: Any) -> AtomTemplate:
    """An atom template as ``bgc compile`` writes it: ``resource:action:`` then pattern text in
    which each ``{name}`` names one parameter; with every placeholder filled it is a pattern."""
    if not isinstance(text, str):
        raise PlanError(f"expected a template, got {kind_name(text)}")
    parts = text.split(":", 2)
    if len(parts) != 3 or not (ATOM_NAME.fullmatch(parts[0]) and ATOM_NAME.fullmatch(parts[1])):
        raise PlanError(
            f"expected a template 'resource:action:pattern' (resource and action match [a-z][a-z0-9_.-]*), got {text!r}"
        )
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
    tool.only("tool", "servers", "needs", "ignores")
    name = tool.build(_named, tool.get("tool"))[0]
    servers = tool.list("servers")
    for i, server in enumerate(servers):
        if not isinstance(server, str) or not _SERVER.fullmatch(server) or server in servers[:i]:
            raise PlanError(f"expected a server name, once, got {server!r}", (*tool.path, "servers", i))
    if not servers or servers != sorted(servers):
        raise PlanError("expected the servers, at least one, sorted", (*tool.path, "servers"))
    needs = tuple(
        Fields(text, (*tool.path, "needs", i)).build(_template, text) for i, text in enumerate(tool.list("needs"))
    )
    ignores = tool.list("ignores")
    for i, param in enumerate(ignores):
        if not isinstance(param, str) or not _IGNORED.fullmatch(param) or any(param in need.params for need in needs):
            raise PlanError(
                f"expected the name of a parameter no template uses, got {param!r}", (*tool.path, "ignores", i)
            )
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
    if not isinstance(data, Mapping) or data.get("type") != PLAN_TAG:
        raise PlanError("not a bgc plan (expected the output of `bgc compile --format json|yaml|cbor`)")
    if data.get("version") != PLAN_VERSION or type(data.get("version")) is not int:  # true == 1.0 == 1
        raise PlanError(
            f"unsupported plan version {data.get('version')!r} (this bgc reads version {PLAN_VERSION})", ("version",)
        )
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
        raise PlanError(error.message, error.path, at_key=error.at_key) from None
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
            raise PlanError(error.message, (*((index,) if listed else ()), *error.path), at_key=error.at_key) from None
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
    (:mod:`bgc.core.cache`, keyed by the bytes' digest); only the pins are checked again. A pin a hit
    refuses is read again the slow way, so the error is located in the file.
    """
    from bgc.core import cache
    from bgc.core.values.documents import document_from_bytes, format_for, read_bytes

    data = read_bytes(path)
    fmt = format_for(path, input_format, data)
    key = f"{fmt}\0{sha256(data).hexdigest()}"
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
