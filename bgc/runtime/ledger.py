"""The decision ledger: append-only, hash-chained, content-addressed.

Every decision bgc makes at run time can be appended as one entry: canonical CBOR
(``["bgc.LedgerEntry", 1, {...}]``, RFC 8949 deterministic encoding, as work orders and plans are
encoded), holding its place in the chain (``seq``, and ``prev``: the digest of the entry before
it), when it happened, what was decided, about what (an atom or a call, by the ids of the order,
plan, policy and token involved), which rule decided it (file:line), and who approved it. An
entry's id is the sha256 of its bytes.

Why a chain: a ledger is evidence only if an edit shows. Each entry names its predecessor's
digest, so changing, removing or reordering any entry breaks every link after it, and
:func:`verify` names the first broken one. What a chain cannot show alone is the loss of its
newest entries (a shorter chain is still a chain): keep the head digest somewhere else
(``bgc log verify`` prints it) and check it with ``--expect-head``.

The same inputs give byte-identical entries: the time is an input (the caller's clock, in whole
seconds), and nothing else varies.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from bgc.core.values import canonical
from dataclasses import dataclass, field
from bgc.runtime.store import GENESIS

ENTRY_TAG = "bgc.LedgerEntry"
ENTRY_VERSION = 1

KINDS = ("compile", "gate", "hook", "authorize", "preflight", "proxy", "approve", "reject", "cancel", "mode")
"""What made the decision: a command, an enforcer, or a person's answer."""

_OPTIONAL_TEXT = (
    "session",
    "order",
    "plan",
    "policy",
    "token",
    "atom",
    "tool",
    "server",
    "params",
    "rule",
    "reason",
    "nonce",
    "request",
    "message",
)


@dataclass(frozen=True, slots=True)
class Record:
    """What a caller records: one decision, before it has a place in the chain."""

    kind: str
    decision: str
    time: int
    session: str | None = None
    order: str | None = None
    plan: str | None = None
    policy: str | None = None
    token: str | None = None
    atom: str | None = None
    tool: str | None = None
    server: str | None = None
    params: str | None = None
    """The digest of the call's parameters, never the parameters themselves (they may hold secrets)."""
    rule: str | None = None
    reason: str | None = None
    nonce: str | None = None
    request: str | None = None
    """The id of the permission request an approval, rejection or cancellation answers."""
    message: str | None = None
    """The id of the message the decision answers (an AgentMessage's ``id``)."""
    approvers: tuple[str, ...] = ()
    atoms: tuple[str, ...] = ()
    """Every atom a call needed (``atom`` is for a decision about one atom alone)."""
    rules: tuple[str, ...] = ()
    """Every rule that decided one of those atoms, when more than ``rule`` did (an allow of a
    call granted by two rules names both, so ``log stats --per-rule`` counts a hit for each)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown ledger entry kind {self.kind!r}; one of {', '.join(KINDS)}")
        if not isinstance(self.time, int) or isinstance(self.time, bool) or self.time < 0:
            raise ValueError("time is whole seconds since the epoch")

    def body(self, seq: int, prev: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "seq": seq,
            "prev": prev,
            "kind": self.kind,
            "decision": self.decision,
            "time": self.time,
        }
        for name in _OPTIONAL_TEXT:
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        for name in ("approvers", "atoms", "rules"):
            if getattr(self, name):
                body[name] = list(getattr(self, name))
        return body


def subjects(atoms: Sequence[str], rules: Sequence[str]) -> dict[str, Any]:
    """A decision's atoms and deciding rules as :class:`Record` fields, the same way for every
    writer: ``atom`` when there is one, ``atoms`` when several; ``rule`` the first deciding rule,
    ``rules`` all of them when several (``log stats --per-rule`` counts each)."""
    return {
        "atom": atoms[0] if len(atoms) == 1 else None,
        "atoms": tuple(atoms) if len(atoms) > 1 else (),
        "rule": rules[0] if rules else None,
        "rules": tuple(rules) if len(rules) > 1 else (),
    }


def encode_entry(record: Record, seq: int, prev: str) -> bytes:
    """The canonical bytes of ``record`` as entry number ``seq`` after ``prev``."""
    return canonical.envelope(ENTRY_TAG, ENTRY_VERSION, record.body(seq, prev))


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored entry: its place, its id, and its decoded body."""

    seq: int
    digest: str
    body: Mapping[str, Any]
    data: bytes = field(repr=False)

    def to_data(self) -> dict[str, Any]:
        return {"id": self.digest, **self.body}


@dataclass(frozen=True, slots=True)
class Problem:
    """The first place the chain does not hold, in words a person can act on."""

    seq: int
    message: str


@dataclass(frozen=True, slots=True)
class Verification:
    """What :func:`verify` found: how many entries held, the head, and the first problem."""

    entries: int
    head: str
    problem: Problem | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def decode_entry(seq: int, digest: str, data: bytes) -> Entry | Problem:
    """The stored row as an entry, or why it is not one (edited, not canonical, mislabelled)."""
    import cbor2

    if canonical.digest_text(data) != digest:
        return Problem(seq, f"entry {seq} was edited: its content does not hash to its id {digest}")
    try:
        value = cbor2.loads(data)
    except Exception as error:  # noqa: BLE001 - any decoding failure is a broken entry
        return Problem(seq, f"entry {seq} is not CBOR ({type(error).__name__})")
    if not (
        isinstance(value, list)
        and len(value) == 3
        and value[:2] == [ENTRY_TAG, ENTRY_VERSION]
        and isinstance(value[2], dict)
    ):
        return Problem(seq, f"entry {seq} is not a {ENTRY_TAG} v{ENTRY_VERSION}")
    # the form bgc writes: deterministic CBOR (the data-model checks ran when it was written,
    # and the digest and the chain already bind these bytes)
    if cbor2.dumps(value, canonical=True) != data:
        return Problem(seq, f"entry {seq} is not in canonical form: bgc did not write it")
    return Entry(seq, digest, value[2], data)


def verify(rows: Iterable[tuple[int, str, bytes]], expect_head: str | None = None) -> Verification:
    """Walk the stored rows in order: every id matches its bytes, every entry names the one
    before it, numbers run 1, 2, 3… without a gap. The first problem found is named."""
    prev, count = GENESIS, 0
    for seq, digest, data in rows:
        decoded = decode_entry(seq, digest, data)
        if isinstance(decoded, Problem):
            return Verification(count, prev, decoded)
        body = decoded.body
        if seq != count + 1 or body.get("seq") != seq:
            missing = count + 1
            return Verification(
                count,
                prev,
                Problem(
                    seq, f"entry {missing} is missing or out of order: entry {body.get('seq')} follows entry {count}"
                ),
            )
        if body.get("prev") != prev:
            return Verification(
                count,
                prev,
                Problem(
                    seq,
                    f"entry {seq} does not follow entry {count}: it names {body.get('prev')} before it, the chain has {prev} (removed, reordered or edited)",
                ),
            )
        prev, count = digest, seq
    if expect_head is not None and expect_head != prev:
        return Verification(
            count,
            prev,
            Problem(
                count,
                f"the head is {prev}, expected {expect_head}: entries were removed from the end, or this is another ledger",
            ),
        )
    return Verification(count, prev, None)


def matching(
    entries: Iterable[Entry],
    *,
    session: str | None = None,
    rule: str | None = None,
    decision: str | None = None,
    kind: str | None = None,
    since: int | None = None,
    until: int | None = None,
) -> Iterator[Entry]:
    """The entries whose fields equal every filter given (``since``/``until``: time bounds, inclusive)."""
    for entry in entries:
        body = entry.body
        if session is not None and body.get("session") != session:
            continue
        if rule is not None and body.get("rule") != rule and rule not in body.get("rules", ()):
            continue
        if decision is not None and body.get("decision") != decision:
            continue
        if kind is not None and body.get("kind") != kind:
            continue
        if since is not None and body["time"] < since:
            continue
        if until is not None and body["time"] > until:
            continue
        yield entry


def per_rule(entries: Iterable[Entry], rules: Sequence[str] = ()) -> dict[str, dict[str, int]]:
    """How many times each rule decided, by decision; every rule in ``rules`` is listed, so a rule
    that never fired shows with no hits."""
    counts: dict[str, dict[str, int]] = {rule: {} for rule in rules}
    for entry in entries:
        decision = entry.body["decision"]
        for rule in entry.body.get("rules") or [entry.body.get("rule") or "(no rule)"]:
            by_decision = counts.setdefault(rule, {})
            by_decision[decision] = by_decision.get(decision, 0) + 1
    return counts


def opa_decision(entry: Entry) -> dict[str, Any]:
    """The entry in Open Policy Agent's decision-log shape (decision_id, path, input, result,
    timestamp, labels), for log pipelines built for OPA."""
    import datetime

    body = entry.body
    call = {name: body[name] for name in ("tool", "server", "params", "atom", "atoms") if name in body}
    ids = {
        name: body[name] for name in ("session", "order", "plan", "policy", "token", "nonce", "request") if name in body
    }
    stamp = datetime.datetime.fromtimestamp(body["time"], datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    result: dict[str, Any] = {"decision": body["decision"]}
    for name in ("rule", "rules", "reason", "approvers"):
        if name in body:
            result[name] = body[name]
    return {
        "decision_id": entry.digest,
        "path": f"bgc/{body['kind']}",
        "input": {**call, **ids},
        "result": result,
        "timestamp": stamp,
        "labels": {"app": "bgc", "ledger_seq": str(entry.seq), "prev": body["prev"]},
    }


def append(store: Any, record: Record) -> tuple[int, str]:
    """Append ``record`` to the ledger in ``store`` (a :class:`bgc.runtime.store.Store`); its number and id.

    The store serialises appends across processes, so the entry's ``seq`` and ``prev`` are
    read and written in one transaction: concurrent enforcers still make one chain."""
    return store.append(lambda seq, prev: encode_entry(record, seq, prev))
