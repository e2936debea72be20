"""People answering `ask`: every refusal built by hand, thresholds, single use, both engines."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bgc.runtime.approvals import (
    PermissionRequest,
    Requirement,
    encode_answer,
    settle_ask,
    sign_answer,
    standing,
    suggest_rule,
)
from bgc.runtime.kernel.keys import SigningKey
from bgc.runtime.store import open_store
from tests.samples import bgc
from tests.store_support import Scene, store_tamperings

ALICE, BOB, CAROL, MALLORY = (SigningKey.generate(name) for name in ("alice", "bob", "carol", "mallory"))
TRUSTED = {"alice": ALICE.public, "bob": BOB.public, "carol": CAROL.public}


def request(**change: object) -> PermissionRequest:
    base = PermissionRequest(
        tool="Write", server="local", params="sha256:" + "1" * 64, summary="Write /src/release/v1",
        atoms=("fs:write:/src/release/v1",), rule="p.bgp:6", requirements=(Requirement(2, ("alice", "bob", "carol")),),
        created=1_000, expires=2_000, plan="sha256:" + "2" * 64,
    )  # fmt: skip
    return dataclasses.replace(base, **change)


def allow(key: SigningKey, target: PermissionRequest, at: int = 1_500, name: str | None = None):  # type: ignore[no-untyped-def]
    return sign_answer(target.id, "allow-once", name or key.name, key, at)


def test_two_distinct_trusted_approvers_approve() -> None:
    target = request()
    assert standing(target, [allow(ALICE, target)], TRUSTED, now=1_600).state == "pending"
    result = standing(target, [allow(ALICE, target), allow(BOB, target)], TRUSTED, now=1_600)
    assert result.state == "approved" and result.counted == ("alice", "bob")


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("the same approver twice", "counts once"),
        ("a key the policy does not trust for the name", "does not verify"),
        ("a name the policy does not trust at all", "trusts no key"),
        ("an approver the rule does not name", "not among the approvers it needs"),
        ("an answer for another request", "another request"),
        ("an answer after cancel", "after the request was cancelled"),
        ("an answer after expiry", "not live"),
    ],
)
def test_answers_that_must_not_count(case: str, why: str) -> None:
    named_mallory = case == "a name the policy does not trust at all"
    target = request(requirements=(Requirement(2, ("alice", "bob", "mallory")),)) if named_mallory else request()
    first = allow(ALICE, target)
    second = {
        "the same approver twice": allow(ALICE, target, at=1_501),
        "a key the policy does not trust for the name": allow(MALLORY, target, name="bob"),
        "a name the policy does not trust at all": allow(MALLORY, target),
        "an approver the rule does not name": allow(MALLORY, target),
        "an answer for another request": allow(BOB, request(params="sha256:" + "3" * 64)),
        "an answer after cancel": allow(BOB, target, at=1_700),
        "an answer after expiry": allow(BOB, target, at=2_000),
    }[case]
    if case == "an approver the rule does not name":
        trusted = {**TRUSTED, "mallory": MALLORY.public}
    else:
        trusted = TRUSTED
    result = standing(target, [first, second], trusted, now=1_800, cancelled_at=1_650 if "cancel" in case else None)
    assert result.state != "approved"
    assert any(why in reason for _, reason in result.ignored), result.ignored


def test_a_rejection_by_a_named_approver_ends_the_request_whatever_else() -> None:
    target = request()
    answers = [allow(ALICE, target), allow(BOB, target), sign_answer(target.id, "reject", "carol", CAROL, 1_400)]
    result = standing(target, answers, TRUSTED, now=1_600)
    assert result.state == "rejected" and result.rejected_by == "carol"


FIELDS = {
    "tool": st.just("Edit"), "server": st.just("evil"), "params": st.just("sha256:" + "9" * 64),
    "atoms": st.just(("fs:write:/src/release/v2",)), "plan": st.just("sha256:" + "8" * 64),
    "token": st.just("t-1"), "rule": st.just("p.bgp:7"), "requirements": st.just((Requirement(1, ("alice", "bob")),)),
    "summary": st.just("x"), "session": st.just("other"), "expires": st.just(2_001), "created": st.just(999),
}  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(FIELDS)), st.data())
def test_an_approval_never_counts_for_a_request_that_differs_in_any_field(field: str, data: st.DataObject) -> None:
    original = request()
    changed = dataclasses.replace(original, **{field: data.draw(FIELDS[field])})
    answers = [allow(ALICE, original), allow(BOB, original), allow(CAROL, original)]
    assert changed.id != original.id
    assert standing(changed, answers, TRUSTED, now=1_600).state == "pending"


def test_suggested_rule_is_a_policy_line_that_allows_exactly_the_atom(tmp_path: Path) -> None:
    from bgc.core.patterns.glob import is_subset
    from bgc.core.policy.loader import parse_policy

    value = "/src/re lease/v*1"
    rule_text = suggest_rule(request(atoms=(f"fs:write:{value}",)), "alice")
    (rule,) = parse_policy(rule_text + "\n", str(tmp_path / "s.bgp")).rules
    assert (rule.effect, rule.resource, rule.action, rule.because) == (
        "allow",
        "fs",
        "write",
        "approved for Write on local by alice",
    )
    (pattern,) = rule.patterns
    # exactly the value: the pattern and the value's literal pattern cover each other, so the
    # `*` in the value did not become a wildcard
    from bgc.core.patterns.glob import escape

    assert is_subset(pattern, [escape(value)]) and is_subset(escape(value), [pattern])
    assert not is_subset("/src/re lease/vX1", [pattern])


# ---- with a store ----------------------------------------------------------------------------------


def test_an_approved_request_allows_its_call_once_then_asks_again(store_location: str) -> None:
    store = open_store(store_location)
    target = request()
    first = settle_ask(store, target, TRUSTED, now=1_100)
    assert first.effect == "ask" and first.request == target.id and "bgc approve" in first.reason
    from bgc.runtime.approvals import encode_answer

    for key in (ALICE, BOB):
        store.add_answer(target.id, key.name, "allow-once", encode_answer(allow(key, target, at=1_200)))
    again = dataclasses.replace(target, created=1_300, expires=2_300)  # the agent retries the same call
    approved = settle_ask(store, again, TRUSTED, now=1_300)
    assert approved.effect == "allow" and approved.request == target.id and approved.approvers == ("alice", "bob")
    retry = settle_ask(store, dataclasses.replace(target, created=1_400, expires=2_400), TRUSTED, now=1_400)
    assert retry.effect == "ask" and retry.request != target.id  # used once: a new request
    store.close()


@pytest.mark.parametrize("ended_by", ["use", "cancel"])
def test_the_same_call_asked_again_within_the_second_its_twin_ended_gets_a_request_of_its_own(
    store_location: str, ended_by: str
) -> None:
    """Same call, same second: the request would have its ended twin's id (the time is in whole
    seconds); it must not be found as that ended request."""
    from bgc.runtime.approvals import encode_answer

    store = open_store(store_location)
    target = request()
    settle_ask(store, target, TRUSTED, now=1_100)
    if ended_by == "use":
        for key in (ALICE, BOB):
            store.add_answer(target.id, key.name, "allow-once", encode_answer(allow(key, target, at=1_100)))
        assert settle_ask(store, target, TRUSTED, now=1_100).effect == "allow"
    else:
        store.cancel(target.id, 1_100)
    again = settle_ask(store, target, TRUSTED, now=1_100)
    assert (again.effect, again.request != target.id) == ("ask", True), again
    assert settle_ask(store, target, TRUSTED, now=1_100).request == again.request  # and is found as live
    store.close()


def test_a_cancelled_request_takes_no_more_answers(store_location: str) -> None:
    from bgc.runtime.approvals import encode_answer

    store = open_store(store_location)
    target = request(requirements=(Requirement(1, ("alice", "bob", "carol")),))
    settle_ask(store, target, TRUSTED, now=1_100)
    assert store.cancel(target.id, 1_150)
    store.add_answer(target.id, "alice", "allow-once", encode_answer(allow(ALICE, target, at=1_200)))
    later = settle_ask(store, dataclasses.replace(target, created=1_300), TRUSTED, now=1_300)
    assert later.effect == "ask" and later.request != target.id
    store.close()


SETTLER = """
import sys, dataclasses
from bgc.runtime.approvals import PermissionRequest, settle_ask
from bgc.runtime.kernel.keys import PublicKey, parse_public
from bgc.runtime.store import open_store
import json
data = json.loads(sys.argv[2])
trusted = {name: parse_public(text) for name, text in data["trusted"].items()}
request = PermissionRequest.from_data(data["request"])
print(settle_ask(open_store(sys.argv[1]), request, trusted, now=1_300).effect)
"""


@pytest.mark.e2e
def test_eight_processes_using_one_approval_get_one_allow(store_location: str) -> None:
    import json

    from bgc.runtime.approvals import encode_answer

    store = open_store(store_location)
    target = request(requirements=(Requirement(1, ("alice", "bob", "carol")),))
    settle_ask(store, target, TRUSTED, now=1_100)
    store.add_answer(target.id, "alice", "allow-once", encode_answer(allow(ALICE, target, at=1_200)))
    store.close()
    payload = json.dumps({"trusted": {n: k.text for n, k in TRUSTED.items()}, "request": target.body()})
    racers = [
        subprocess.Popen([sys.executable, "-c", SETTLER, store_location, payload], stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    answers = sorted(racer.communicate(timeout=120)[0].strip() for racer in racers)
    assert answers.count("allow") == 1 and all(answer in ("allow", "ask", "deny") for answer in answers)


# ---- the commands, as a person uses them -------------------------------------------------------------


def test_pending_approve_and_the_ledger_from_the_command_line(tmp_path: Path) -> None:
    import os
    import time

    keys = tmp_path / "keys"
    keys.mkdir()
    assert bgc("key", "new", "alice", "--dir", str(keys)).exit_code == 0
    alice_public = (keys / "alice.pub").read_text().strip()
    policy = tmp_path / "p.bgp"
    policy.write_text(f"trust approver alice {alice_public}\nask fs:write:/src/release/** approvals 1 of [alice]\n")
    store_path = str(tmp_path / "state.db")
    now = int(time.time())
    target = request(requirements=(Requirement(1, ("alice",)),), created=now, expires=now + 600)
    store = open_store(store_path)
    trusted = {"alice": SigningKey.generate("x").public}  # the real key is only in the policy
    assert settle_ask(store, target, trusted, now=now).effect == "ask"
    store.close()

    listed = bgc("pending", "--store", store_path, "-p", str(policy))
    assert listed.exit_code == 0 and target.id in listed.stdout and "awaits 1 of [alice] (have: none)" in listed.stdout
    mallory = bgc("key", "new", "mallory", "--dir", str(keys))
    assert mallory.exit_code == 0
    refused = bgc(
        "approve",
        target.id,
        "--key",
        str(keys / "mallory.key"),
        "--as",
        "alice",
        "--store",
        store_path,
        "-p",
        str(policy),
    )
    assert refused.exit_code == 2 and "trusts no key" in refused.output
    approved = bgc(
        "approve",
        target.id,
        "--key",
        str(keys / "alice.key"),
        "--store",
        store_path,
        "-p",
        str(policy),
        "--suggest-rule",
    )
    assert approved.exit_code == 0, approved.output
    assert "approved by alice" in approved.stdout and "allow fs:write:/src/release/v1 because" in approved.stdout
    assert bgc("pending", "--store", store_path, "-p", str(policy)).stdout == ""  # nothing waits any more
    shown = bgc("log", "show", "--store", store_path, "--kind", "approve")
    assert shown.exit_code == 0 and "\tapprove\tallow-once\tWrite@local\tp.bgp:6\tapproved by alice" in shown.stdout
    assert bgc("log", "verify", "--store", store_path).exit_code == 0
    assert os.path.exists(store_path)


def test_approve_reject_and_mode_set_take_a_key_by_its_name_as_bgc_key_new_made_it(tmp_path: Path) -> None:
    """`bgc key new alice` writes .bgc/keys/alice.key; `--key alice` names it, as it does for
    `bgc token issue` (docs/kernel.md, "Keys"), so a person answers with the name they chose."""
    import time

    assert bgc("key", "new", "alice", cwd=tmp_path).exit_code == 0
    alice_public = (tmp_path / ".bgc" / "keys" / "alice.pub").read_text().strip()
    (tmp_path / "p.bgp").write_text(
        f"trust approver alice {alice_public}\nmode release approvals 1 of [alice] {{\n  allow fs:write:/dist/**\n}}\n"
        "ask fs:write:/src/release/** approvals 1 of [alice]\n"
    )
    now = int(time.time())
    store = open_store(str(tmp_path / "s.db"))
    approved, rejected = (
        request(params="sha256:" + digit * 64, requirements=(Requirement(1, ("alice",)),), created=now, expires=now + 600)
        for digit in "45"
    )
    for target in (approved, rejected):
        settle_ask(store, target, {}, now=now)
    store.close()

    answered = bgc("approve", approved.id, "--key", "alice", "--store", "s.db", "-p", "p.bgp", cwd=tmp_path)
    assert answered.exit_code == 0 and "approved by alice" in answered.stdout, answered.output
    refused = bgc("reject", rejected.id, "--key", "alice", "--store", "s.db", "-p", "p.bgp", cwd=tmp_path)
    assert refused.exit_code == 0 and "rejected" in refused.stdout, refused.output
    mode = bgc("mode", "set", "s1", "release", "--key", "alice", "--store", "s.db", "-p", "p.bgp", cwd=tmp_path)
    assert mode.exit_code == 0, mode.output
    missing = bgc("approve", approved.id, "--key", "bob", "--store", "s.db", "-p", "p.bgp", cwd=tmp_path)
    assert missing.exit_code == 2 and "no such key file" in missing.output


def test_overlapping_requirements_are_all_met_by_one_set_of_people() -> None:
    """`1 of [alice]` and `1 of [bob, carol]` (two ask rules): alice alone is not enough."""
    target = request(requirements=(Requirement(1, ("alice",)), Requirement(1, ("bob", "carol"))))
    assert standing(target, [allow(ALICE, target)], TRUSTED, now=1_600).state == "pending"
    assert standing(target, [allow(ALICE, target), allow(CAROL, target)], TRUSTED, now=1_600).state == "approved"
    anyone = request(requirements=(Requirement(2),))
    assert standing(anyone, [allow(ALICE, anyone), allow(BOB, anyone)], TRUSTED, now=1_600).state == "approved"
    assert standing(anyone, [allow(ALICE, anyone), allow(MALLORY, anyone)], TRUSTED, now=1_600).state == "pending"


# ---- nothing unsigned in the store decides an allow ------------------------------------------------

LIFE = 1_000
"""How long the enforcer keeps a request live in these scenes (what it would make a request with)."""


def settled_scene(location: str) -> Scene:
    """Two calls asked through :func:`settle_ask` (what the hook and the MCP proxy run): the first
    approved by alice and bob, the second pending; carol is trusted and named by no rule."""
    store = open_store(location)
    first = request(requirements=(Requirement(2, ("alice", "bob")),), created=1_000, expires=1_000 + LIFE)
    second = dataclasses.replace(first, params="sha256:" + "5" * 64, summary="Write /src/release/v2",
                                 atoms=("fs:write:/src/release/v2",))  # fmt: skip
    for asked in (first, second):
        assert settle_ask(store, asked, TRUSTED, now=1_000).effect == "ask"
    for key in (ALICE, BOB):
        assert store.add_answer(first.id, key.name, "allow-once", encode_answer(allow(key, first, at=1_100)))
    store.close()
    return Scene(location, first, second, ("alice", "bob"), "carol", {"alice": ALICE, "bob": BOB, "carol": CAROL},
                 MALLORY, now=1_500)  # fmt: skip


def settled_again(scene: Scene, which: str) -> str:
    """What :func:`settle_ask` answers when the agent makes the ``which`` call again at ``now``."""
    store = open_store(scene.location)
    try:
        asked = scene.approved if which == "approved" else scene.target
        again = dataclasses.replace(asked, created=scene.now, expires=scene.now + LIFE)
        return settle_ask(store, again, TRUSTED, now=scene.now).effect
    finally:
        store.close()


def test_the_scene_untouched_allows_the_approved_call_once(store_location: str) -> None:
    scene = settled_scene(store_location)
    assert [settled_again(scene, "approved"), settled_again(scene, "target")] == ["allow", "ask"]


@pytest.mark.parametrize("tampering", sorted(store_tamperings(("alice", "bob"))))
def test_no_write_to_the_store_makes_settle_ask_allow(store_location: str, tampering: str) -> None:
    scene = settled_scene(store_location)
    asked = store_tamperings(scene.named)[tampering](scene)
    assert settled_again(scene, asked) != "allow"


KERNEL_CALLS = ({"path": "/migrations/0042.py"}, {"path": "/migrations/0043.py"})


def kernel_scene(location: str) -> tuple[Scene, Any]:
    """The same through ``bgc authorize``'s kernel (answers in its store): two calls under
    modes.bgp's `1 of [dba-oncall]`, the first approved; carol is trusted and named by no rule."""
    from bgc.runtime.approvals import load_request
    from bgc.runtime.kernel.authorize import Kernel
    from tests.kernel_support import ISSUER, KERNEL, NOW, OTHER, line, make_token
    from tests.kernel_support import request as message

    dba = SigningKey.from_seed(bytes(range(3, 35)), "dba-oncall")
    clock = [NOW + 10]
    kernel = Kernel([ISSUER.public], KERNEL, open_store(location), clock=lambda: clock[0],
                    approvers={"dba-oncall": dba.public, "carol": CAROL.public})  # fmt: skip
    token = make_token()
    ids = []
    for params in KERNEL_CALLS:
        decision = kernel.authorize_line(line(message(token, params=params)))
        assert decision.code == "BGC520", decision
        ids.append(decision.reason.split("bgc approve ")[1].split()[0])
    first, second = (load_request(kernel.store, found)[0] for found in ids)
    assert kernel.store.add_answer(
        first.id, "dba-oncall", "allow-once", encode_answer(sign_answer(first.id, "allow-once", "dba-oncall", dba, NOW + 20))
    )
    clock[0] = NOW + 500

    def again(which: str) -> Any:
        return kernel.authorize_line(line(message(token, params=KERNEL_CALLS[which == "target"])))

    scene = Scene(location, first, second, ("dba-oncall",), "carol", {"dba-oncall": dba, "carol": CAROL}, OTHER,
                  now=NOW + 500)  # fmt: skip
    return scene, again


def test_the_kernel_scene_untouched_allows_the_approved_call_once(store_location: str) -> None:
    _, again = kernel_scene(store_location)
    assert [again("approved").code, again("target").code] == ["BGC534", "BGC520"]


@pytest.mark.parametrize("tampering", sorted(store_tamperings(("dba-oncall",))))
def test_no_write_to_the_store_makes_the_kernel_allow(store_location: str, tampering: str) -> None:
    scene, again = kernel_scene(store_location)
    decision = again(store_tamperings(scene.named)[tampering](scene))
    assert decision.decision == "deny", decision


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(900, 2_100), min_size=2, max_size=2),
    st.one_of(st.none(), st.integers(900, 2_100)),
    st.integers(900, 3_000),
)
def test_approvals_release_a_call_only_while_its_request_is_live_and_not_cancelled(
    times: list[int], cancelled: int | None, now: int
) -> None:
    """Answers given in time stay valid evidence, but a cancelled request, or one presented at or
    after its signed expiry, is never approved (the enforcers refuse it: BGC528 in the kernel)."""
    target = request()
    result = standing(target, [allow(ALICE, target, at=times[0]), allow(BOB, target, at=times[1])], TRUSTED,
                      now=now, cancelled_at=cancelled)  # fmt: skip
    live = cancelled is None and now < target.expires
    in_time = all(target.created <= time < target.expires for time in times)
    assert (result.state == "approved") == (live and in_time), (result, live, in_time)
    if cancelled is not None:
        assert result.state == "cancelled"
    elif not live:
        assert result.state == "expired"


def test_one_key_trusted_under_two_names_is_one_person() -> None:
    target = request(requirements=(Requirement(2, ("alice", "bob")),))
    same = {"alice": ALICE.public, "bob": ALICE.public}
    result = standing(target, [allow(ALICE, target), allow(ALICE, target, at=1_501, name="bob")], same, now=1_600)
    assert result.state == "pending" and result.counted == ("alice",)
    assert ("bob", "the same key already counted for alice") in result.ignored


class CancelledMeanwhile:
    """A store in which the request found for a call is cancelled (``bgc cancel``, the client
    went away) between finding it and reading it."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def put_request(self, request_id: str, call: str, body: bytes, created: int, expires: int) -> str:
        found = self.store.put_request(request_id, call, body, created, expires)
        self.store.cancel(found, created)
        return str(found)


def test_a_request_cancelled_after_it_was_approved_releases_nothing(store_location: str) -> None:
    scene = settled_scene(store_location)
    store = CancelledMeanwhile(open_store(store_location))
    again = dataclasses.replace(scene.approved, created=scene.now, expires=scene.now + LIFE)
    outcome = settle_ask(store, again, TRUSTED, now=scene.now)
    assert (outcome.effect, outcome.request) == ("deny", scene.approved.id) and "cancelled" in outcome.reason
    store.close()


def test_the_kernel_refuses_an_ended_approved_request_it_finds_with_bgc528(store_location: str) -> None:
    scene, again = kernel_scene(store_location)
    store_tamperings(scene.named)["an approved request presented after its signed expiry"](scene)
    decision = again("approved")
    assert (decision.decision, decision.code) == ("deny", "BGC528") and "expired" in decision.reason, decision


ALTERNATIVES: dict[str, Any] = {
    "tool": "Edit", "server": "evil", "params": "sha256:" + "9" * 64, "summary": "reads a file",
    "atoms": ("fs:read:/tmp/x",), "rule": "p.bgp:7", "plan": "sha256:" + "8" * 64, "token": "t-1", "session": "other",
    "requirements": (Requirement(1),),
}  # fmt: skip


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(st.just(set()), st.sets(st.sampled_from(sorted(ALTERNATIVES)))),
    st.integers(0, 2 * LIFE),
    st.sampled_from([LIFE, 30 * LIFE]),
    st.sets(st.sampled_from(["alice", "bob", "carol", "mallory as alice"])),
)
@example(changed=set(), age=0, life=LIFE, signers={"alice", "bob"})  # the one way to an allow
@example(changed=set(), age=LIFE, life=LIFE, signers={"alice", "bob"})  # the same, presented as it expires
def test_a_stored_request_allows_only_the_call_in_hand_and_only_as_signed(
    store_location: str, changed: set[str], age: int, life: int, signers: set[str]
) -> None:
    """Whatever request the store holds under this call's key (any fields changed, made any time
    ago, any lifetime), and whoever signed it: the call is allowed exactly when that request is
    the one the enforcer would make for it (but for the time it was asked), still live, and
    approved by two of the people the call in hand needs."""
    from tests.store_support import write_directly

    now = 10_000
    in_hand = request(requirements=(Requirement(2, ("alice", "bob")),), created=now, expires=now + LIFE)
    stored = dataclasses.replace(in_hand, **{name: ALTERNATIVES[name] for name in changed},
                                 created=now - age, expires=now - age + life)  # fmt: skip
    store = open_store(store_location)
    try:
        for table in ("bgc_requests", "bgc_answers", "bgc_consumed"):  # what earlier examples left
            write_directly(store_location, f"DELETE FROM {table}")
        write_directly(
            store_location, "INSERT INTO bgc_requests (id, call, body, created, expires) VALUES (?, ?, ?, ?, ?)",
            stored.id, in_hand.call_key(), stored.encode(), stored.created, now + LIFE,
        )  # fmt: skip
        keys = {"alice": ALICE, "bob": BOB, "carol": CAROL, "mallory as alice": MALLORY}
        for signer in signers:
            name = signer.split(" as ")[-1]
            signed = sign_answer(stored.id, "allow-once", name, keys[signer], stored.created)
            write_directly(store_location, "INSERT INTO bgc_answers (request, approver, decision, body) VALUES (?, ?, ?, ?)",
                           stored.id, signer, "allow-once", encode_answer(signed))  # fmt: skip
        effect = settle_ask(store, in_hand, TRUSTED, now=now).effect
    finally:
        store.close()
    bound = not changed and life == LIFE
    assert (effect == "allow") == (bound and age < life and {"alice", "bob"} <= signers), (effect, stored)
