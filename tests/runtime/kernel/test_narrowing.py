"""Attenuation never drops an approval requirement, and no gap in its proof can widen anything.

1. The requirement algebra: several requirements met at once, against another, checked against a
   brute-force count of every set of people.
2. The narrowing proof compares the *combined* requirement on every part of an overlap: pairs of
   overlapping ask parts in the parent and the child, generated, against a brute-force reading of
   representative values.
3. Every call is decided against every link: with the proof switched off (a stand-in for any
   gap in it), children that widen their parent in each way a child can are still refused.
4. What an allow and its ledger entry cite comes from the link the issuer signed: a child that
   rewrites its parts' rules changes nothing that is recorded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.patterns import glob
from bgc.core.plan import Approvals, Part, RequestResult, RuleRef
from bgc.runtime.approvals import encode_answer, sign_answer
from bgc.runtime.kernel import token as tokens
from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.keys import SigningKey
from bgc.runtime.kernel.requirements import conjunction_implies
from bgc.runtime.kernel.token import Claims, TokenError, prove_narrower
from bgc.runtime.ledger import decode_entry
from bgc.runtime.store.sqlite import SqliteStore
from tests.kernel_support import ISSUER, KERNEL, NOW, forge_child, line, make_token, outermost, request
from tests.samples import examples

NAMES = ("lead", "qa", "ops", "sre")

# ---- 1. requirements -------------------------------------------------------------------------


@st.composite
def requirements(draw: Any) -> Approvals:
    named = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    count = draw(st.integers(1, max(1, len(named)) if named else 3))
    return Approvals(count, tuple(sorted(named)))


def meets(people: frozenset[str], requirement: Approvals) -> bool:
    admitted = people if not requirement.approvers else people & set(requirement.approvers)
    return len(admitted) >= requirement.count


def brute_implies(given: Sequence[Approvals], other: Approvals) -> bool:
    """Every set of people, named or not (three nobody names are enough for counts up to 3),
    that meets all of ``given`` meets ``other``."""
    universe = (*NAMES, "anyone-1", "anyone-2", "anyone-3")
    for size in range(len(universe) + 1):
        for chosen in itertools.combinations(universe, size):
            people = frozenset(chosen)
            if all(meets(people, requirement) for requirement in given) and not meets(people, other):
                return False
    return True


@settings(max_examples=examples(300), deadline=None)
@given(given_=st.lists(requirements(), max_size=4), other=requirements())
def test_a_conjunction_implies_exactly_what_every_set_of_people_says(given_: list[Approvals], other: Approvals) -> None:
    assert conjunction_implies(given_, other) == brute_implies(given_, other)


def test_together_two_single_approvals_guarantee_what_neither_does_alone() -> None:
    both = [Approvals(1, ("lead",)), Approvals(1, ("qa",))]
    assert conjunction_implies(both, Approvals(2, ("lead", "qa")))
    assert not any(conjunction_implies([one], Approvals(2, ("lead", "qa"))) for one in both)


# ---- 2. the proof over overlapping ask parts -------------------------------------------------

PATTERNS = ("/r/**", "/r/p/**", "/r/p/x", "/r/*", "/r/p/*", "/r/*/x", "/q/**")
SAMPLES = ("/r/a", "/r/p", "/r/p/x", "/r/p/y", "/r/p/x/z", "/r/a/x", "/r/a/b", "/r/a/b/x", "/q/a", "/q/p/x", "/s")
"""A value in every region the patterns above cut (checked below), so deciding the samples
decides the patterns."""


def test_the_samples_meet_every_region_the_patterns_cut() -> None:
    for inside in itertools.product((False, True), repeat=len(PATTERNS)):
        region = [p for p, yes in zip(PATTERNS, inside, strict=True) if yes]
        outside = [p for p, yes in zip(PATTERNS, inside, strict=True) if not yes]
        if not region:
            continue
        first, *rest = region
        terms = [("**", (p,)) for p in rest] + [(p, ()) for p in outside]
        exists = glob.uncovered_example(first, terms) is not None
        witnessed = any(
            all(glob.parse(p).matches(v) for p in region) and not any(glob.parse(p).matches(v) for p in outside)
            for v in SAMPLES
        )
        assert exists == witnessed, region


def ask(pattern: str, requirement: Approvals | None) -> Part:
    return Part("fs", "write", pattern, (), (RuleRef("p.bgp", 1, "ask"),), requirement)


def claims_asking(parts: Sequence[Part]) -> Claims:
    return replace(outermost(make_token()), requests=(RequestResult("fs:write:/**", "ask", (), tuple(parts)),))


def brute_narrower(parent: Sequence[Part], child: Sequence[Part]) -> bool:
    for value in SAMPLES:
        ours = [p.approvals for p in child if glob.parse(p.pattern).matches(value)]
        theirs = [p.approvals for p in parent if glob.parse(p.pattern).matches(value)]
        if not ours:
            continue
        if not theirs:
            return False
        if any(requirement is None for requirement in ours):
            continue
        if any(requirement is None for requirement in theirs):
            return False
        if not all(brute_implies(ours, requirement) for requirement in theirs):  # type: ignore[arg-type]
            return False
    return True


asks = st.builds(ask, st.sampled_from(PATTERNS), requirements())


@settings(max_examples=examples(150), deadline=None)
@given(parent=st.lists(asks, min_size=1, max_size=3), child=st.lists(asks, min_size=1, max_size=3))
def test_a_child_is_narrower_exactly_when_every_value_asks_at_least_as_much(
    parent: list[Part], child: list[Part]
) -> None:
    try:
        prove_narrower(claims_asking(parent), claims_asking(child))
        proven = True
    except TokenError:
        proven = False
    assert proven == brute_narrower(parent, child)


@settings(max_examples=examples(60), deadline=None)
@given(parent=st.lists(asks, min_size=1, max_size=3))
def test_a_child_that_keeps_every_part_is_narrower(parent: list[Part]) -> None:
    prove_narrower(claims_asking(parent), claims_asking(parent))


RELEASE = [ask("/r/**", Approvals(2, ("lead", "qa"))), ask("/r/p/**", Approvals(1, ("ops",)))]


@pytest.mark.parametrize(
    "child",
    [
        [RELEASE[0]],  # only the release requirement, over the overlap too
        [ask("/r/p/**", Approvals(2, ("lead", "qa")))],  # the overlap alone, under the other requirement
        [ask("/r/p/**", Approvals(1, ("ops",)))],  # the overlap alone, under ops only
        [RELEASE[0], ask("/r/p/x", Approvals(1, ("ops",)))],  # ops kept for part of the overlap only
        [ask("/r/p/**", Approvals(2, ("lead", "ops")))],  # two people, but maybe not qa
    ],
)
def test_a_child_keeping_one_of_two_overlapping_requirements_is_refused(child: list[Part]) -> None:
    with pytest.raises(TokenError) as refused:
        prove_narrower(claims_asking(RELEASE), claims_asking(child))
    assert refused.value.code == "BGC524" and refused.value.counterexample


@pytest.mark.parametrize(
    "child",
    [
        RELEASE,
        [ask("/r/p/**", Approvals(2, ("lead", "qa"))), ask("/r/p/**", Approvals(1, ("ops",)))],
        [ask("/r/p/**", Approvals(3, ("lead", "ops", "qa")))],  # all three people: both requirements
        [ask("/r/a", Approvals(2, ("lead", "qa")))],  # outside the overlap
    ],
)
def test_a_child_asking_as_much_on_every_part_is_narrower(child: list[Part]) -> None:
    prove_narrower(claims_asking(RELEASE), claims_asking(child))


# ---- 3. every link decides -------------------------------------------------------------------

MIGRATION = {"path": "/migrations/0042.py"}


def _widened_grant(claims: Claims) -> dict[str, Any]:
    grant = Part("fs", "write", "/**", (), (RuleRef("modes.bgp", 18, "allow"),))
    return {"requests": (*claims.requests, RequestResult("fs:write:/**", "granted", (grant,)))}


def _pending_made_granted(claims: Claims) -> dict[str, Any]:
    grant = Part("fs", "write", "/migrations/**", (), (RuleRef("modes.bgp", 21, "allow"),))
    return {"requests": (RequestResult("fs:write:/migrations/**", "granted", (grant,)),)}


def _requirement_dropped(claims: Claims) -> dict[str, Any]:
    weaker = [
        replace(part, approvals=Approvals(1))
        for request in claims.requests for part in request.ask
    ]  # fmt: skip
    return {"requests": (RequestResult("fs:write:/migrations/**", "ask", (), tuple(weaker)),)}


def _declaration_emptied(claims: Claims) -> dict[str, Any]:
    """fs.write declared as needing nothing (its path ignored)."""
    return {
        "tools": tuple(
            replace(spec, needs=(), ignores=("path",)) if spec.tool == "fs.write" else spec for spec in claims.tools
        )
    }


WIDENINGS: dict[str, tuple[Any, dict[str, Any], str]] = {
    "grant-widened": (_widened_grant, {"params": {"path": "/etc/passwd"}}, "BGC519"),
    "pending-made-granted": (_pending_made_granted, {"params": MIGRATION}, "BGC520"),
    "audience-widened": (lambda claims: {"audience": ("local", "prod")}, {"server_id": "prod"}, "BGC515"),
    "declaration-emptied": (_declaration_emptied, {"params": {"path": "/etc/passwd"}}, "BGC519"),
    "nonce-dropped": (lambda claims: {"nonce": False}, {}, "BGC521"),
}


@pytest.fixture
def no_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any gap in the narrowing proof, at its widest: it proves nothing."""
    monkeypatch.setattr(tokens, "prove_narrower", lambda parent, child: None)


@pytest.fixture
def store(tmp_path: Any) -> Iterator[SqliteStore]:
    opened = SqliteStore(str(tmp_path / "kernel.db"))
    yield opened
    opened.close()


@pytest.mark.parametrize("widening", sorted(WIDENINGS))
def test_a_child_the_proof_missed_still_cannot_widen_its_chain(
    widening: str, no_proof: None, store: SqliteStore
) -> None:
    change, fields, refused = WIDENINGS[widening]
    root = make_token(nonce=widening == "nonce-dropped")
    child = forge_child(root, **change(outermost(root)))
    decision = Kernel([ISSUER.public], KERNEL, store, clock=lambda: NOW).authorize_line(line(request(child, **fields)))
    assert (decision.decision, decision.code) == ("deny", refused), decision


def test_a_requirement_the_proof_missed_still_counts(no_proof: None, store: SqliteStore) -> None:
    """The root asks 1 of [dba-oncall]; a child asking one approval by anyone lets qa, whom the
    policy also trusts, approve. Deciding every link keeps the root's requirement."""
    root = make_token()
    child = forge_child(root, **_requirement_dropped(outermost(root)))
    qa = SigningKey.from_seed(bytes(range(4, 36)), "qa")
    kernel = Kernel([ISSUER.public], KERNEL, store, clock=itertools.count(NOW).__next__,
                    approvers={"dba-oncall": SigningKey.from_seed(bytes(range(3, 35))).public, "qa": qa.public})  # fmt: skip
    first = kernel.authorize_line(line(request(child, params=MIGRATION)))
    assert (first.decision, first.code) == ("deny", "BGC520") and "1 of [dba-oncall]" in first.reason, first
    request_id = first.reason.split("bgc approve ")[1].split()[0]
    store.add_answer(
        request_id, "qa", "allow-once", encode_answer(sign_answer(request_id, "allow-once", "qa", qa, NOW + 1))
    )
    again = kernel.authorize_line(line(request(child, params=MIGRATION)))
    assert (again.decision, again.code) == ("deny", "BGC520"), again


# ---- 4. what is cited --------------------------------------------------------------------------


def _rules_rewritten(claims: Claims) -> Claims:
    fake = (RuleRef("innocent.bgp", 1, "allow", "reviewed by everyone"),)
    requests = tuple(
        replace(request, granted=tuple(replace(part, rules=fake) for part in request.granted))
        for request in claims.requests
    )
    return replace(claims, requests=requests)


def test_a_child_cannot_rewrite_the_rules_an_allow_and_its_ledger_entry_cite(store: SqliteStore) -> None:
    root = make_token()
    child = forge_child(root, requests=_rules_rewritten(outermost(root)).requests)
    decision = Kernel([ISSUER.public], KERNEL, store, clock=lambda: NOW, ledger=True).authorize_line(
        line(request(child))
    )
    entry = decode_entry(*list(store.rows())[-1]).body  # type: ignore[union-attr]
    assert decision.decision == "allow" and decision.rules == ("modes.bgp:18",)
    assert entry["rule"] == "modes.bgp:18" and "innocent.bgp" not in str(entry)


def test_a_child_keeping_many_nested_overlapping_requirements_is_proven_narrower() -> None:
    """Nested ask rules, each asking other people: every value lies in several parts. A child
    that keeps them all is narrower, proven within the bounds."""
    nested = [
        ask("/r" + "".join(f"/d{depth}" for depth in range(level)) + "/**", Approvals(1 + level % 2, NAMES[level % 3 : level % 3 + 2]))
        for level in range(16)
    ]  # fmt: skip
    prove_narrower(claims_asking(nested), claims_asking(nested))
    with pytest.raises(TokenError):
        prove_narrower(claims_asking(nested), claims_asking([replace(nested[0], approvals=Approvals(1)), *nested[1:]]))
