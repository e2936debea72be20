"""Capability tokens: a plan's grants signed by an issuer, and narrower tokens chained to them.

A token is a chain of links, each a COSE_Sign1 over the canonical CBOR of its claims
(``["bgc.CapabilityLink", 1, {...}]``): the plan id, the plan's granted and pending parts, the
tool declarations in scope, the audience (server ids), not-before and expiry, whether calls
need an execution nonce, a token id, the parent link's digest, and ``next``: the public half of
a fresh key pair whose secret (the token's ``proof``) travels with the token.

The root link is signed by an issuer's key; a child link (made by :func:`attenuate`) is signed
with the parent's ``proof`` secret and carries a new ``next``/``proof`` pair, so whoever holds
a token can make it narrower, but nobody holding a child can strip it back to its parent: that
would need the parent's secret, which the child no longer carries (Biscuit's construction).
The verifier (:func:`verify_chain`) checks every signature, the issuer's trust, every parent
digest and that every child is narrower than its parent, proven with the exact pattern
algebra (pending values compared by their combined approval requirements); it never trusts the
chain's own claim to be narrower. The kernel does not rest an allow on that proof alone: it
decides every call against every link.

The token on the wire and in files is base64url text of ``["bgc.CapabilityToken", 1,
{"links": [bstr...], "proof": bstr}]``.

A token's identity (:attr:`Token.id`) is the digest of its whole chain of signed links: content,
never a claim. The ``token`` claim of a link is chosen by whoever signs that link (any holder of
a parent can sign a child claiming any id), so it is only a label; permission requests, nonces
and ledger entries are bound to the chain's digest.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from typing import Any

from bgc.core.values import canonical
from bgc import codes
from bgc.core.patterns import glob
from dataclasses import dataclass, replace
from bgc.core.values.canonical import DataModelError
from bgc.runtime.kernel import cose
from bgc.runtime.kernel.keys import PublicKey, SigningKey, b64url, from_b64url
from bgc.core.values.model import Fields, ModelError
from bgc.names import ATOM_NAME
from bgc.core.plan import Approvals, Part, Plan, PlanError, RequestResult, ToolSpec, request_from_data, tool_from_data

LINK_TAG = "bgc.CapabilityLink"
TOKEN_TAG = "bgc.CapabilityToken"
CHAIN_TAG = "bgc.CapabilityChain"
VERSION = 1
MAX_LINKS = 8
"""A chain longer than this is refused: each link costs a signature check and a proof."""
MAX_TOKEN_TEXT = 512 * 1024
_LINK_FIELDS = ("token", "parent", "plan", "requests", "tools", "audience", "nbf", "exp", "nonce", "fold_case", "next")


class TokenError(ValueError):
    """A token that is not well formed, not validly signed, or not narrower than its parent.

    ``check`` names the check that failed (``signature``, ``issuer``, ``chain``, ``format``),
    ``code`` its BGC5xx code; ``counterexample`` is set when a child link widens its parent.
    """

    def __init__(self, message: str, check: str, code: str, counterexample: str | None = None) -> None:
        super().__init__(message)
        self.message, self.check, self.code, self.counterexample = message, check, code, counterexample


@dataclass(frozen=True, slots=True)
class Claims:
    """What one link of a token says. Times are whole seconds since the Unix epoch."""

    token: str
    parent: str | None
    plan: str
    requests: tuple[RequestResult, ...]
    tools: tuple[ToolSpec, ...]
    audience: tuple[str, ...]
    nbf: int
    exp: int
    nonce: bool
    fold_case: bool
    next: bytes

    def to_data(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "parent": self.parent,
            "plan": self.plan,
            "requests": [request.to_data() for request in self.requests],
            "tools": [tool.to_data() for tool in self.tools],
            "audience": list(self.audience),
            "nbf": self.nbf,
            "exp": self.exp,
            "nonce": self.nonce,
            "fold_case": self.fold_case,
            "next": self.next,
        }

    def gate_plan(self) -> Plan:
        """The claims as a plan, for :class:`bgc.runtime.calls.CallDecider`: a call is mapped through
        these declarations and its values decided exactly as ``bgc gate --call`` decides them."""
        return Plan("", "", None, self.requests, (), self.fold_case, self.tools)


@dataclass(frozen=True, slots=True)
class Token:
    """A token as carried: its signed links (outermost last) and the proof secret."""

    links: tuple[bytes, ...]
    proof: bytes

    def encode(self) -> bytes:
        return canonical.envelope(TOKEN_TAG, VERSION, {"links": list(self.links), "proof": self.proof})

    def text(self) -> str:
        return b64url(self.encode())

    @property
    def id(self) -> str:
        """The token's identity: the digest of ``["bgc.CapabilityChain", 1, {"links": [...]}]``,
        every signed link in order. The proof is left out: it is the holder's secret, and the
        links already fix it (the last link's ``next`` is its public half)."""
        return chain_id(self.links)


@dataclass(frozen=True, slots=True)
class Verified:
    """A chain whose signatures, trust, parent digests, narrowing and proof all checked out."""

    token: Token
    chain: tuple[Claims, ...]
    issuer: PublicKey

    @property
    def id(self) -> str:
        return self.token.id

    @property
    def claims(self) -> Claims:
        """The narrowest link's claims (the outermost): what the token grants."""
        return self.chain[-1]

    @property
    def nbf(self) -> int:
        return max(link.nbf for link in self.chain)

    @property
    def exp(self) -> int:
        return min(link.exp for link in self.chain)


# --- making tokens ------------------------------------------------------------------------------


def _link(claims: Claims, signer: SigningKey) -> bytes:
    payload = canonical.envelope(LINK_TAG, VERSION, claims.to_data())
    return cose.sign1(payload, signer, protected={cose.KID: signer.public.raw})


def _fresh_id() -> str:
    return b64url(os.urandom(16))


def issue(
    plan: Plan,
    issuer: SigningKey,
    *,
    audience: Sequence[str],
    tools: Sequence[str] | None = None,
    now: int,
    ttl: int,
    nonce: bool = False,
) -> Token:
    """A token granting ``plan``'s granted parts (and carrying its pending ones, which still
    need approval) to calls of the plan's tool declarations (those named in ``tools``; all when
    None), for ``audience``, from ``now`` for ``ttl`` seconds."""
    if not audience:
        raise TokenError("a token needs an audience: at least one server id", "format", codes.TOKEN_CANNOT_BE_MADE)
    if ttl <= 0:
        raise TokenError("the lifetime must be positive", "format", codes.TOKEN_CANNOT_BE_MADE)
    holder = SigningKey.generate()
    requests = tuple(replace(request, denied=()) for request in plan.requests if request.granted or request.ask)
    claims = Claims(
        _fresh_id(), None, str(plan.id()), requests, _scope(plan.tools, tools), _audience(audience), now, now + ttl, nonce,
        plan.fold_case, holder.public.raw,
    )
    _check_claims(claims)
    return Token((_link(claims, issuer),), holder.seed())


def _audience(servers: Iterable[str]) -> tuple[str, ...]:
    out = tuple(sorted(set(servers)))
    for server in out:
        if not server or not server.isprintable() or len(server) > 256:
            raise TokenError(f"not a server id: {server[:60]!r}", "format", codes.TOKEN_CANNOT_BE_MADE)
    return out


def attenuate(
    token: Token,
    verified: Verified,
    *,
    only: Sequence[str] | None = None,
    audience: Sequence[str] | None = None,
    tools: Sequence[str] | None = None,
    now: int,
    ttl: int | None = None,
    nonce: bool | None = None,
) -> Token:
    """A child of ``token`` (already verified as ``verified``) narrowed to ``only`` atoms (every
    granted value inside one of them), ``audience``, ``tools`` and a lifetime of ``ttl`` from
    ``now`` (never past the parent's). Refused, with a counterexample, when the child would not
    be narrower: the same proof the verifier repeats."""
    parent = verified.claims
    requests = parent.requests if only is None else tuple(_only_request(atom, parent) for atom in only)
    scopes = _scope(parent.tools, tools)
    exp = parent.exp if ttl is None else now + ttl
    holder = SigningKey.generate()
    child = Claims(
        _fresh_id(),
        _digest(token.links[-1]),
        parent.plan,
        requests,
        scopes,
        parent.audience if audience is None else _audience(audience),
        max(parent.nbf, now) if ttl is not None else parent.nbf,
        exp,
        parent.nonce if nonce is None else nonce,
        parent.fold_case,
        holder.public.raw,
    )
    _check_claims(child)
    prove_narrower(parent, child)
    link = _link(child, SigningKey.from_seed(token.proof))
    return Token((*token.links, link), holder.seed())


def _only_request(atom: str, parent: Claims) -> RequestResult:
    """The child's part for ``--only atom``: the atom less every except the parent's parts of
    its resource and action carry (so ``/src/**`` under a parent that excepts secrets keeps
    excepting them), with their rules; :func:`prove_narrower` then proves it inside."""
    resource, action, pattern = _split_atom(atom)
    theirs = [part for request in parent.requests for part in request.granted if (part.resource, part.action) == (resource, action)]
    excepts = tuple(sorted({text for part in theirs for text in part.excepts}))
    rules = tuple(sorted({rule for part in theirs for rule in part.rules}))
    return RequestResult(atom, "granted", (Part(resource, action, pattern, excepts, rules),))


def _scope(declared: Sequence[ToolSpec], names: Sequence[str] | None) -> tuple[ToolSpec, ...]:
    """The declarations of the tools ``names`` (all of them when None); a name none declares is
    refused, with the name as the counterexample."""
    if names is None:
        return tuple(declared)
    for name in names:
        if not any(spec.tool == name for spec in declared):
            raise TokenError(f"tool {name!r} is not in the scope it is chosen from", "chain", codes.TOKEN_CHAIN_WIDENS, name)
    return tuple(spec for spec in declared if spec.tool in names)


def _split_atom(atom: str) -> tuple[str, str, str]:
    parts = atom.split(":", 2)
    if len(parts) != 3 or not (ATOM_NAME.fullmatch(parts[0]) and ATOM_NAME.fullmatch(parts[1])):
        raise TokenError(f"not an atom 'resource:action:pattern': {atom[:80]!r}", "format", codes.TOKEN_CANNOT_BE_MADE)
    try:
        glob.parse(parts[2])
    except glob.PatternError as error:
        raise TokenError(f"bad pattern in {atom[:80]!r}: {error.message}", "format", codes.TOKEN_CANNOT_BE_MADE) from None
    return parts[0], parts[1], parts[2]


# --- narrowing ----------------------------------------------------------------------------------


def prove_narrower(parent: Claims, child: Claims) -> None:
    """Raise :class:`TokenError` (check ``chain``, with a counterexample) unless everything the
    child allows the parent allows: each granted value, pending value, server, tool, instant."""

    def widens(what: str, example: str) -> TokenError:
        return TokenError(f"the child token widens its parent: {what}", "chain", codes.TOKEN_CHAIN_WIDENS, example)

    if child.plan != parent.plan or child.fold_case != parent.fold_case:
        raise widens("it names another plan", child.plan)
    for server in child.audience:
        if server not in parent.audience:
            raise widens(f"server {server!r} is not in the parent's audience", server)
    if child.nbf < parent.nbf:
        raise widens("it is valid before its parent", str(child.nbf))
    if child.exp > parent.exp:
        raise widens("it expires after its parent", str(child.exp))
    if parent.nonce and not child.nonce:
        raise widens("it drops the parent's execution-nonce requirement", "nonce")
    for spec in child.tools:
        if spec not in parent.tools:
            raise widens(f"tool {spec.tool!r} on {', '.join(spec.servers)} is not in the parent's scope as declared there", spec.tool)
    for request in child.requests:
        for part in request.granted:
            example = _uncovered(part, _parts(parent, "granted", part.resource, part.action))
            if example is not None:
                raise widens(f"{part.resource}:{part.action}:{example} is not granted by the parent", example)
    for resource, action in sorted({(part.resource, part.action) for request in child.requests for part in request.ask}):
        theirs, ours = _parts(parent, "ask", resource, action), _parts(child, "ask", resource, action)
        for part in ours:
            example = _uncovered(part, theirs)
            if example is not None:
                raise widens(f"{resource}:{action}:{example} is not pending approval in the parent", example)
        for pending in theirs:
            weaker = _weaker_overlap(pending, ours)
            if weaker is not None:
                example, kept = weaker
                raise widens(
                    f"{resource}:{action}:{example} needs {kept} in the child, which does not guarantee the parent's "
                    f"{_requirement_text(pending.approvals)} ({pending.atom})", example,
                )  # fmt: skip


MAX_OVERLAP_SETS = 256
"""Sets of overlapping child ask parts examined against one parent ask part before the proof
gives up (not proven is not narrower)."""


def _parts(claims: Claims, kind: str, resource: str, action: str) -> list[Part]:
    return [
        part for request in claims.requests for part in getattr(request, kind)
        if (part.resource, part.action) == (resource, action)
    ]  # fmt: skip


def _uncovered(part: Part, theirs: Sequence[Part]) -> str | None:
    """A value of ``part`` in none of ``theirs`` (each minus its excepts), or None when they
    hold all of it. When the algebra cannot decide within its bounds the answer is "not
    proven": the part itself stands as the counterexample (fail closed)."""
    terms: list[tuple[str, Sequence[str]]] = [(cut, ()) for cut in part.excepts]  # L(p) − E ⊆ T ⟺ L(p) ⊆ T ∪ E
    terms += [(other.pattern, other.excepts) for other in theirs]
    try:
        return glob.uncovered_example(part.pattern, terms)
    except glob.AlgebraLimit:
        return part.pattern


def _weaker_overlap(pending: Part, ours: Sequence[Part]) -> tuple[str, str] | None:
    """A value of the parent's ask part ``pending`` where the child's pending requirement is
    weaker, and that requirement; None when there is none.

    At a value the child requires every requirement of every child ask part holding it (one
    set of people meeting them all), and so does the parent. For each set ``K`` of child parts
    whose requirements together do not guarantee ``pending``'s, the proof asks whether some
    value of ``pending`` lies in every part of ``K`` and in no other child part: that value is
    where the child asks less. A part whose requirements alone guarantee it settles every value
    it holds, so when such parts cover ``pending`` nothing more is asked, and sets are drawn
    from the other parts only; a set whose requirements guarantee it needs no look, nor does
    any larger one (more requirements only ask more); a set whose parts share no value of
    ``pending`` has no larger set that does. Past :data:`MAX_OVERLAP_SETS` sets, or past the
    algebra's bounds, ``pending`` itself is the counterexample (not proven).
    """
    from bgc.runtime.kernel.requirements import NotProven, conjunction_implies

    def implies(chosen: Sequence[Part]) -> bool:
        if any(part.approvals is None for part in chosen):  # a part no answer can settle asks the most
            return True
        if pending.approvals is None:
            return False
        return conjunction_implies([part.approvals for part in chosen if part.approvals is not None], pending.approvals)

    def search(weak: Sequence[Part], start: int, chosen: list[Part], examined: list[int]) -> tuple[str, str] | None:
        for index in range(start, len(weak)):
            examined[0] += 1
            if examined[0] > MAX_OVERLAP_SETS:
                raise NotProven(f"more than {MAX_OVERLAP_SETS} sets of overlapping ask parts")
            sets = [*chosen, weak[index]]
            if implies(sets) or _region(sets, pending, ()) is None:
                continue
            alone = _region(sets, pending, [part for part in near if part not in sets])
            if alone is not None:
                return alone, " and ".join(_requirement_text(part.approvals) for part in sets)
            found = search(weak, index + 1, sets, examined)
            if found is not None:
                return found
        return None

    near = [part for part in ours if _may_overlap(part.pattern, pending.pattern)]
    try:
        enough = [part for part in near if implies((part,))]
        settled = [(cut, ()) for cut in pending.excepts] + [(part.pattern, part.excepts) for part in enough]
        if glob.uncovered_example(pending.pattern, settled) is None:
            return None  # every value lies in a part that asks enough alone
        return search([part for part in near if part not in enough], 0, [], [0])
    except (NotProven, glob.AlgebraLimit):
        return pending.pattern, "a requirement the proof could not compare within its bounds"


def _may_overlap(a: str, b: str) -> bool:
    try:
        return glob.overlaps(a, b)
    except glob.AlgebraLimit:
        return True  # examined in full by the region's own question


def _region(inside: Sequence[Part], pending: Part, outside: Sequence[Part]) -> str | None:
    """A value in every part of ``inside`` and in ``pending`` (each minus its excepts) and in
    none of ``outside``, or None. Asked of the algebra as "is the first part's pattern covered
    by its excepts, the complements of the others, and ``outside``": ``**`` minus a pattern is
    that pattern's complement."""
    first, *rest = inside
    terms: list[tuple[str, Sequence[str]]] = [(cut, ()) for cut in first.excepts]
    for part in (*rest, pending):
        terms.append(("**", (part.pattern,)))
        terms += [(cut, ()) for cut in part.excepts]
    terms += [(part.pattern, part.excepts) for part in outside]
    return glob.uncovered_example(first.pattern, terms)


def _requirement_text(approvals: Approvals | None) -> str:
    return "an approval no answer can give" if approvals is None else str(approvals)


# --- reading and verifying ----------------------------------------------------------------------


def decode_token(text: str) -> Token:
    """The token written as base64url text (format errors only; nothing is verified)."""
    if type(text) is not str or len(text) > MAX_TOKEN_TEXT:
        raise TokenError("a capability token is base64url text of bounded size", "format", codes.TOKEN_MALFORMED)
    data = from_b64url(text.strip())
    if data is None:
        raise TokenError("a capability token is unpadded base64url text", "format", codes.TOKEN_MALFORMED)
    try:
        value = cose.strict_cbor(data, "token")
        canonical.check_value(value)
    except (cose.CoseError, DataModelError) as error:
        raise TokenError(f"not a capability token: {error}", "format", codes.TOKEN_MALFORMED) from None
    if not (type(value) is list and len(value) == 3 and value[0] == TOKEN_TAG and value[1] == VERSION
            and type(value[1]) is int and type(value[2]) is dict and set(value[2]) == {"links", "proof"}):
        raise TokenError(f"not a {TOKEN_TAG} version {VERSION}", "format", codes.TOKEN_MALFORMED)  # fmt: skip
    links, proof = value[2]["links"], value[2]["proof"]
    if type(links) is not list or not 1 <= len(links) <= MAX_LINKS or any(type(link) is not bytes for link in links):
        raise TokenError(f"a token has 1 to {MAX_LINKS} signed links", "format", codes.TOKEN_MALFORMED)
    if type(proof) is not bytes or len(proof) != 32:
        raise TokenError("a token's proof is a 32-byte secret", "format", codes.TOKEN_MALFORMED)
    return Token(tuple(links), proof)


def chain_id(links: Sequence[bytes]) -> str:
    """The identity of the chain ``links`` (:attr:`Token.id`)."""
    return canonical.digest_text(canonical.envelope(CHAIN_TAG, VERSION, {"links": list(links)}))


def _digest(link: bytes) -> str:
    return "sha256:" + hashlib.sha256(link).hexdigest()


def read_link(link: bytes) -> tuple[cose.Sign1, Claims]:
    """A link's envelope and claims, well formed or :class:`TokenError` (signature unchecked)."""
    try:
        envelope = cose.decode_sign1(link)
        value = cose.strict_cbor(envelope.payload, "link payload")
        canonical.check_value(value)
    except (cose.CoseError, DataModelError) as error:
        raise TokenError(f"a token link is malformed: {error}", "format", codes.TOKEN_MALFORMED) from None
    if not (type(value) is list and len(value) == 3 and value[0] == LINK_TAG and value[1] == VERSION
            and type(value[1]) is int):
        raise TokenError(f"a token link is not a {LINK_TAG} version {VERSION}", "format", codes.TOKEN_MALFORMED)  # fmt: skip
    if envelope.kid is None or len(envelope.kid) != 32:
        raise TokenError("a token link names no signer key (kid)", "format", codes.TOKEN_MALFORMED)
    try:
        claims = _claims(Fields(value[2], ()))
    except (ModelError, PlanError, TokenError) as error:
        where = canonical.format_path(getattr(error, "path", ()))
        raise TokenError(f"a token link's claims are malformed at {where}: {error}", "format", codes.TOKEN_MALFORMED) from None
    return envelope, claims


def _claims(root: Fields) -> Claims:
    root.only(*_LINK_FIELDS)
    parent = root.value("parent", str, type(None))
    requests = tuple(request_from_data(item, ("requests", i)) for i, item in enumerate(root.list("requests")))
    tools = tuple(tool_from_data(item, ("tools", i)) for i, item in enumerate(root.list("tools")))
    audience = root.list("audience")
    if any(type(server) is not str for server in audience) or list(audience) != sorted(set(audience)):
        raise ModelError("the audience is a sorted list of distinct server ids", ("audience",))
    claims = Claims(
        root.value("token", str), parent, root.value("plan", str), requests, tools, tuple(audience),
        root.value("nbf", int), root.value("exp", int), root.value("nonce", bool), root.value("fold_case", bool),
        root.value("next", bytes),
    )  # fmt: skip
    _check_claims(claims)
    return claims


def _check_claims(claims: Claims) -> None:
    if len(claims.next) != 32:
        raise TokenError("'next' is a 32-byte public key", "format", codes.TOKEN_MALFORMED)
    if claims.exp <= claims.nbf:
        raise TokenError("a token expires after it becomes valid", "format", codes.TOKEN_MALFORMED)
    if len(set(claims.tools)) != len(claims.tools):
        raise TokenError("a tool is declared twice in the token's scope", "format", codes.TOKEN_MALFORMED)


def verify_chain(token: Token, issuers: Sequence[PublicKey]) -> Verified:
    """Check the whole chain (see the module doc); :class:`TokenError` names the failed check.

    Times are not checked here (they change; the chain does not): see :func:`check_time`.
    """
    chain: list[Claims] = []
    root_key: PublicKey | None = None
    for index, link in enumerate(token.links):
        envelope, claims = read_link(link)
        signer = PublicKey(envelope.kid)  # type: ignore[arg-type]
        if index == 0:
            if claims.parent is not None:
                raise TokenError("the root link names a parent", "chain", codes.TOKEN_CHAIN_WIDENS)
            if not envelope.verify(signer):
                raise TokenError("the token's signature does not verify", "signature", codes.TOKEN_SIGNATURE)
            if signer not in issuers:
                raise TokenError(f"the token's issuer {signer.text} is not trusted", "issuer", codes.TOKEN_ISSUER_UNTRUSTED)
            root_key = signer
        else:
            parent = chain[-1]
            if signer.raw != parent.next or claims.parent != _digest(token.links[index - 1]):
                raise TokenError(f"link {index} is not chained to its parent", "chain", codes.TOKEN_CHAIN_WIDENS)
            if not envelope.verify(signer):
                raise TokenError(f"link {index}'s signature does not verify", "signature", codes.TOKEN_SIGNATURE)
            prove_narrower(parent, claims)
        chain.append(claims)
    if SigningKey.from_seed(token.proof).public.raw != chain[-1].next:
        raise TokenError("the token's proof is not the secret of its last link", "signature", codes.TOKEN_SIGNATURE)
    assert root_key is not None
    return Verified(token, tuple(chain), root_key)


def check_time(verified: Verified, now: int) -> TokenError | None:
    """Why the token is not valid at ``now``, or None (the tightest window of the chain)."""
    if now >= verified.exp:
        return TokenError(f"the token expired at {verified.exp} (now {now})", "expired", codes.TOKEN_EXPIRED)
    if now < verified.nbf:
        return TokenError(f"the token is not valid before {verified.nbf} (now {now})", "not-yet-valid", codes.TOKEN_NOT_YET_VALID)
    return None
