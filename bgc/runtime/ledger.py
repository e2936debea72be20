"""The decision ledger: append-only, hash-chained, content-addressed.

Every decision bgc makes at run time can be appended as one entry: canonical CBOR
(``["bgc.LedgerEntry", 1, {...}]``, RFC 8949 deterministic encoding, as work orders and plans are
encoded), holding its place in the chain (``seq``, and ``prev``: the digest of the entry before
it), when it happened, what was decided, about what (an atom or a call, by the ids of the order,
plan, policy and token involved), which rule decided it (file:line), and who approved it. An
entry's id is the sha256 of its bytes.

Why a chain: a ledger is evidence only if an edit shows. Each entry names its predecessor's
digest, so changing, removing or reordering any entry breaks every link after it, and
:func:`verify` names the first broken one.

What a chain cannot show alone is who wrote it: whoever can write the store can re-hash an edited
newest entry, cut the tail, or append a well-formed entry of their own. Two signatures close
that, as Certificate Transparency and Sigstore's logs do with signed tree heads:

* an enforcer that holds a ledger key signs every entry it writes (``signer``, ``signature``
  inside the entry, so the id covers them); :func:`verify` given the keys it trusts refuses an
  entry that is unsigned, signed by another key, or altered after signing;
* a :class:`Checkpoint` is a signed statement "entry ``seq`` of this ledger is ``head``, at
  ``time``". A checkpoint kept outside the store proves every entry up to ``seq`` stays as it
  was: :func:`verify` checks that today's chain holds that head at that place (a hash chain is
  its own consistency proof: one digest at ``seq`` fixes every entry before it), and that an
  entry named by id lies inside it (inclusion).

The same inputs give byte-identical entries: the time is an input (the caller's clock, in whole
seconds), Ed25519 signatures are deterministic, and nothing else varies.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bgc.core.values import canonical
from dataclasses import dataclass, field
from bgc.runtime.store import GENESIS

if TYPE_CHECKING:
    from bgc.runtime.kernel.keys import PublicKey, SigningKey

ENTRY_TAG = "bgc.LedgerEntry"
ENTRY_VERSION = 1
SIGNED_TAG = "bgc.LedgerEntrySigned"
"""What an entry's signature covers: its body with ``signer`` and without ``signature``, under a
tag of its own, so a signature made for an entry can be read as nothing else."""
CHECKPOINT_TAG = "bgc.LedgerCheckpoint"

KINDS = ("compile", "gate", "hook", "authorize", "preflight", "proxy", "acp", "approve", "reject", "cancel", "mode",
         "pin")
"""What made the decision: a command, an enforcer, or a person's answer (``pin``: the MCP proxy
trusting a version of a server's tool, or withholding one that changed)."""

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


def encode_entry(record: Record, seq: int, prev: str, signer: SigningKey | None = None) -> bytes:
    """The canonical bytes of ``record`` as entry number ``seq`` after ``prev``, signed by
    ``signer`` when given (its public key in ``signer``, the signature in ``signature``)."""
    body = record.body(seq, prev)
    if signer is not None:
        body["signer"] = signer.public.text
        body["signature"] = signer.sign(canonical.envelope(SIGNED_TAG, ENTRY_VERSION, body))
    return canonical.envelope(ENTRY_TAG, ENTRY_VERSION, body)


def signature_problem(entry: Entry, trusted: Sequence[PublicKey]) -> str | None:
    """Why ``entry``'s signature does not hold, or None when it does. With ``trusted`` keys, an
    entry must be signed by one of them; without, a signature it carries must still be valid
    for the key it names (an entry altered after signing is found either way)."""
    from bgc.runtime.kernel.keys import parse_public

    body = entry.body
    signer, signature = body.get("signer"), body.get("signature")
    if signer is None and signature is None:
        return "it is not signed, and this ledger's entries must be" if trusted else None
    if not isinstance(signer, str) or not isinstance(signature, bytes):
        return "its signature is malformed"
    key = parse_public(signer)
    if isinstance(key, str):
        return f"it names a signer that is not a key ({key})"
    if trusted and key.text not in {public.text for public in trusted}:
        return f"it is signed by {signer}, a key not trusted for this ledger"
    unsigned = {name: value for name, value in body.items() if name != "signature"}
    if not key.verify(signature, canonical.envelope(SIGNED_TAG, ENTRY_VERSION, unsigned)):
        return f"its signature by {signer} does not hold: it was altered after it was signed"
    return None


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored entry: its place, its id, and its decoded body."""

    seq: int
    digest: str
    body: Mapping[str, Any]
    data: bytes = field(repr=False)

    def to_data(self) -> dict[str, Any]:
        """The entry as JSON data: its id and fields, a signature as unpadded base64url."""
        from bgc.runtime.kernel.keys import b64url

        data = {"id": self.digest, **self.body}
        if isinstance(data.get("signature"), bytes):
            data["signature"] = b64url(data["signature"])
        return data


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


def verify(
    rows: Iterable[tuple[int, str, bytes]],
    expect_head: str | None = None,
    *,
    signers: Sequence[PublicKey] = (),
    checkpoints: Sequence[Checkpoint] = (),
    entries: Sequence[str] = (),
) -> Verification:
    """Walk the stored rows in order: every id matches its bytes, every entry names the one
    before it, numbers run 1, 2, 3… without a gap, every signature holds (and, with
    ``signers``, every entry is signed by one of them). Then every checkpoint (already checked
    as signed by a trusted key, :func:`read_checkpoint`) must name the entry found at its
    ``seq``, and every id in ``entries`` must be an entry within the newest checkpoint (or the
    chain, without one). The first problem found is named."""
    wanted = {checkpoint.seq for checkpoint in checkpoints}
    found: dict[int, str] = {}
    where: dict[str, int] = {}
    looked_for = set(entries)
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
        unsigned = signature_problem(decoded, signers)
        if unsigned is not None:
            return Verification(count, prev, Problem(seq, f"entry {seq} does not hold: {unsigned}"))
        if seq in wanted:
            found[seq] = digest
        if digest in looked_for:
            where[digest] = seq
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
    for checkpoint in sorted(checkpoints, key=lambda checkpoint: checkpoint.seq):
        if checkpoint.seq > count:
            return Verification(count, prev, Problem(count, (
                f"the checkpoint of {checkpoint.described()} covers {checkpoint.seq} entries and the ledger has "
                f"{count}: entries were removed from the end"
            )))  # fmt: skip
        there = found.get(checkpoint.seq, GENESIS if checkpoint.seq == 0 else None)
        if there != checkpoint.head:
            return Verification(count, prev, Problem(checkpoint.seq, (
                f"entry {checkpoint.seq} is {there}, and the checkpoint of "
                f"{checkpoint.described()} signed {checkpoint.head} there: the history up to it was rewritten"
            )))  # fmt: skip
    covered = max((checkpoint.seq for checkpoint in checkpoints), default=count)
    for entry in entries:
        if entry not in where:
            return Verification(count, prev, Problem(count, f"no entry {entry} in this ledger"))
        if where[entry] > covered:
            return Verification(count, prev, Problem(where[entry], (
                f"entry {where[entry]} ({entry}) comes after the newest checkpoint (entry {covered}): "
                "no checkpoint vouches for it yet"
            )))  # fmt: skip
    return Verification(count, prev, None)


# ---- checkpoints ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A signed statement that entry ``seq`` of a ledger is ``head`` (``GENESIS`` at 0: empty),
    made at ``time`` (whole seconds) by ``signer``."""

    seq: int
    head: str
    time: int
    signer: str
    signature: bytes = field(repr=False)

    @staticmethod
    def signed_bytes(seq: int, head: str, time: int, signer: str) -> bytes:
        return canonical.envelope(
            CHECKPOINT_TAG, ENTRY_VERSION, {"seq": seq, "head": head, "time": time, "signer": signer}
        )

    def described(self) -> str:
        import datetime

        stamp = datetime.datetime.fromtimestamp(self.time, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{stamp} by {self.signer}"

    def to_text(self) -> str:
        """One line of JSON a person can read and keep anywhere (a CI log, another machine)."""
        import json

        from bgc.runtime.kernel.keys import b64url

        fields = {"seq": self.seq, "head": self.head, "time": self.time, "signer": self.signer,
                  "signature": b64url(self.signature)}  # fmt: skip
        return json.dumps({"bgc": CHECKPOINT_TAG, **fields}, sort_keys=True)


def sign_checkpoint(verification: Verification, key: SigningKey, time: int) -> Checkpoint:
    """The checkpoint of a chain that verified, signed by ``key``."""
    if not verification.ok:
        raise ValueError("only a chain that verifies is checkpointed")
    signer = key.public.text
    signature = key.sign(Checkpoint.signed_bytes(verification.entries, verification.head, time, signer))
    return Checkpoint(verification.entries, verification.head, time, signer, signature)


def read_checkpoint(text: str, trusted: Sequence[PublicKey]) -> Checkpoint | str:
    """The checkpoint written by :meth:`Checkpoint.to_text`, signed by one of the ``trusted``
    keys, or why it is not one."""
    import json
    import re

    from bgc.runtime.kernel.keys import from_b64url

    try:
        value = json.loads(text)
    except ValueError as error:
        return f"not JSON ({error})"
    names = {"bgc", "seq", "head", "time", "signer", "signature"}
    if not isinstance(value, dict) or set(value) != names or value["bgc"] != CHECKPOINT_TAG:
        return f"not a {CHECKPOINT_TAG}: expected exactly the fields {', '.join(sorted(names))}"
    seq, head, time, signer, signature = (value[name] for name in ("seq", "head", "time", "signer", "signature"))
    if not (type(seq) is int and type(time) is int and seq >= 0 and time >= 0):
        return "its seq and time must be whole numbers, 0 or more"
    if not (isinstance(head, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", head)):
        return "its head is not a sha256:… digest"
    raw = from_b64url(signature) if isinstance(signature, str) else None
    if raw is None or not isinstance(signer, str):
        return "its signer or signature is malformed"
    key = next((public for public in trusted if public.text == signer), None)
    if key is None:
        return f"it is signed by {signer}, a key not trusted for this ledger (--signer)"
    if not key.verify(raw, Checkpoint.signed_bytes(seq, head, time, signer)):
        return f"its signature by {signer} does not hold: it was altered after it was signed"
    return Checkpoint(seq, head, time, signer, raw)


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
    labels = {"app": "bgc", "ledger_seq": str(entry.seq), "prev": body["prev"]}
    if "signer" in body:
        labels["signer"] = body["signer"]
    return {
        "decision_id": entry.digest,
        "path": f"bgc/{body['kind']}",
        "input": {**call, **ids},
        "result": result,
        "timestamp": stamp,
        "labels": labels,
    }


def append(store: Any, record: Record) -> tuple[int, str]:
    """Append ``record`` to the ledger in ``store`` (a :class:`bgc.runtime.store.Store`); its number and id.

    The store serialises appends across processes, so the entry's ``seq`` and ``prev`` are
    read and written in one transaction: concurrent enforcers still make one chain. The entry is
    signed with the store's ledger key when it has one (:attr:`bgc.runtime.store.Store.signer`)."""
    signer = store.signer()
    return store.append(lambda seq, prev: encode_entry(record, seq, prev, signer))
