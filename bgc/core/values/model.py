"""The work-order values (seed: ``workorder.md``), immutable and validated on construction.

A :class:`WorkOrder` is a *proposal*: what a model intends, which tools it wants to call, which
permissions it asks for and where it came from. It authorises nothing. Every value here checks
its own invariants when built, so a value that exists is a value that is valid; conversion
from plain data (``from_data``) reports the field path of the first problem it meets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sized
from typing import Any

from bgc.core.values import canonical
from dataclasses import dataclass
from bgc.core.values.canonical import DataModelError, Digest, FrozenMap, freeze, kind_name, thaw
from bgc.core.values.limits import MAX_CALLS, MAX_REQUEST_CHARS, MAX_REQUESTS
from bgc.names import ATOM_NAME
from bgc.core.values.schema import Fields, ModelError, dotted_name, visible_name

ORDER_TAG = "bgc.WorkOrder"
ORDER_VERSION = 1


def _data(value: Any, field: str) -> Any:
    """Check a free-form field against the data model and freeze it."""
    try:
        canonical.check_value(thaw(value))
    except DataModelError as error:
        raise ModelError(error.message, (field, *error.path)) from None
    return freeze(value)


@dataclass(frozen=True, slots=True)
class Intent:
    """What effect is intended: a dotted ``kind`` and any data-model ``payload``."""

    kind: str
    payload: Any = None

    def __post_init__(self) -> None:
        dotted_name(self.kind, "kind")
        object.__setattr__(self, "payload", _data(self.payload, "payload"))

    def to_data(self) -> dict[str, Any]:
        return {"kind": self.kind, "payload": thaw(self.payload)}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One proposed tool call: a dotted ``tool`` name, an optional ``server`` name, and ``params``."""

    tool: str
    server: str | None = None
    params: FrozenMap = FrozenMap()

    def __post_init__(self) -> None:
        dotted_name(self.tool, "tool")
        if self.server is not None:
            visible_name(self.server, "server")
        if not isinstance(self.params, Mapping):
            raise ModelError(f"expected a map, got {kind_name(self.params)}", ("params",))
        object.__setattr__(self, "params", _data(self.params, "params"))

    def to_data(self) -> dict[str, Any]:
        return {"tool": self.tool, "server": self.server, "params": thaw(self.params)}


@dataclass(frozen=True, slots=True, order=True)
class GrantAtom:
    """A permission ``resource:action:pattern``; split on the first two colons only.

    ``resource`` and ``action`` are lower-case names; ``*`` is allowed for them only where
    ``wildcard=True`` (policies), never in a request. The pattern must be a valid pattern of the
    dialect (DESIGN §2), with no ``.``/``..`` segments in a request, and within the size bounds
    (bgc.core.values.limits: length, segments, wildcards).
    """

    resource: str
    action: str
    pattern: str

    def __post_init__(self) -> None:
        for what, value in (("resource", self.resource), ("action", self.action)):
            if not isinstance(value, str) or not ATOM_NAME.fullmatch(value):
                raise ModelError(f"atom {what} must match [a-z][a-z0-9_.-]*, got {value!r}")
        from bgc.core.patterns import glob
        from bgc.core.resources import ARGV_RESOURCES
        from bgc.core.resources.kind import decoded_dot_segment

        try:
            parsed = glob.parse(self.pattern)
        except glob.PatternError as error:
            raise ModelError(f"bad pattern {self.pattern!r}: {error.message}") from None
        too_large = glob.size_problem(parsed)
        if too_large:
            raise ModelError(f"the pattern is too large: it {too_large}")
        argv = self.resource in ARGV_RESOURCES  # words, not path segments: `.` is a word (bgc.core.resources.proc)
        if not argv and glob.has_dot_segment(parsed.text):
            raise ModelError(f"pattern {self.pattern!r} has a '.' or '..' segment")
        if not argv and self.resource != "fs" and decoded_dot_segment(parsed.text) is not None:
            raise ModelError(f"pattern {self.pattern!r} has a segment a URL parser reads as '.' or '..'")
        object.__setattr__(self, "pattern", parsed.text)

    @classmethod
    def parse(cls, text: Any) -> GrantAtom:
        if not isinstance(text, str):
            raise ModelError(f"expected an atom 'resource:action:pattern', got {text!r}")
        parts = text.split(":", 2)
        if len(parts) != 3:
            raise ModelError(f"expected an atom 'resource:action:pattern', got {text!r}")
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.resource}:{self.action}:{self.pattern}"


@dataclass(frozen=True, slots=True)
class GrantSet:
    """A set of atoms, kept sorted and without duplicates, so equal sets encode equally."""

    atoms: tuple[GrantAtom, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "atoms", tuple(sorted(set(self.atoms))))

    @classmethod
    def of(cls, atoms: Iterable[GrantAtom]) -> GrantSet:
        return cls(tuple(atoms))

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.atoms)

    def __len__(self) -> int:
        return len(self.atoms)

    def to_data(self) -> list[str]:
        return [str(atom) for atom in self.atoms]


@dataclass(frozen=True, slots=True)
class ProposalOrigin:
    """What produced the proposal: the model, the proposals it derives from, the prompt digest."""

    model: str
    parents: tuple[Digest, ...]
    prompt: Digest

    def __post_init__(self) -> None:
        visible_name(self.model, "model")
        object.__setattr__(self, "parents", tuple(self.parents))

    def to_data(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "parents": [str(parent) for parent in self.parents],
            "prompt": str(self.prompt),
        }


@dataclass(frozen=True, slots=True)
class WorkOrder:
    """A typed declaration of intended effect. A proposal asks; it is never authority."""

    intent: Intent
    calls: tuple[ToolCall, ...]
    requests: GrantSet
    origin: ProposalOrigin

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))
        _at_most(self.calls, MAX_CALLS, "calls")
        _within_bounds([str(atom) for atom in self.requests])

    def to_data(self) -> dict[str, Any]:
        """The order as plain data: the body of its canonical encoding and of its JSON/YAML."""
        return {
            "intent": self.intent.to_data(),
            "calls": [call.to_data() for call in self.calls],
            "requests": self.requests.to_data(),
            "origin": self.origin.to_data(),
        }

    def canonical_bytes(self) -> bytes:
        return canonical.envelope(ORDER_TAG, ORDER_VERSION, self.to_data())

    def id(self) -> Digest:
        """This order's content address: the digest of its canonical encoding."""
        return Digest.of(self.canonical_bytes())

    @classmethod
    def from_data(cls, data: Any) -> WorkOrder:
        """Build an order from plain data (as loaded from YAML, JSON or CBOR).

        Raises :class:`ModelError` whose ``path`` names the offending field, e.g. ``requests[2]``.
        """
        root = Fields(data, ())
        if isinstance(data, Mapping) and isinstance(data.get("type"), str):
            # plans (and every other bgc document) say what they are; an order never does
            raise ModelError(
                f"this is a {data['type']!r} document, not a work order: a plan is what `bgc compile "
                "--format json|yaml|cbor` writes and `bgc gate` reads; keep it out of the orders",
                ("type",),
            )
        root.only("intent", "calls", "requests", "origin")
        intent_f = root.map("intent")
        intent_f.only("kind", "payload")
        kind, payload = intent_f.get("kind"), intent_f.get("payload", None)
        intent = intent_f.build(Intent, kind, payload)
        _at_most(root.list("calls", default=[]), MAX_CALLS, "calls")  # before reading any
        calls = []
        for call_f in root.maps("calls", default=[]):
            call_f.only("tool", "server", "params")
            tool, server, params = call_f.get("tool"), call_f.get("server", None), call_f.get("params", {})
            calls.append(call_f.build(ToolCall, tool, server, params))
        requests = root.list("requests")
        _within_bounds(requests)  # before parsing any
        atoms = [Fields(text, ("requests", i)).build(GrantAtom.parse, text) for i, text in enumerate(requests)]
        origin_f = root.map("origin")
        origin_f.only("model", "parents", "prompt")
        parents = tuple(
            Fields(text, ("origin", "parents", i)).build(Digest, text)
            for i, text in enumerate(origin_f.list("parents", default=[]))
        )
        prompt_text, model = origin_f.get("prompt"), origin_f.get("model")
        prompt = Fields(prompt_text, ("origin", "prompt")).build(Digest, prompt_text)
        origin = origin_f.build(ProposalOrigin, model, parents, prompt)
        return cls(intent, tuple(calls), GrantSet.of(atoms), origin)


def _at_most(items: Sized, limit: int, field: str) -> None:
    """Refuse more than ``limit`` items in the order's ``field`` (bgc.core.values.limits: the work is bounded)."""
    if len(items) > limit:
        raise ModelError(f"{len(items):,} {field}: an order may have at most {limit:,}", (field,))


def _within_bounds(requests: list[Any]) -> None:
    """Refuse more requests, or more text in all of them, than an order may have: parsing is
    linear, but a thousand thousand-character patterns would take seconds before any bound."""
    _at_most(requests, MAX_REQUESTS, "requests")
    size = sum(len(text) for text in requests if isinstance(text, str))
    if size > MAX_REQUEST_CHARS:
        raise ModelError(
            f"the requests are {size:,} characters long together: an order may have at most {MAX_REQUEST_CHARS:,}",
            ("requests",),
        )
