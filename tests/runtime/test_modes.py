"""Modes chosen by people: only a person the policy names for a mode can switch a session to it,
as many as the mode needs, the later switch stands whatever the clock says, and an agent's
switch is refused and recorded. Against SQLite and PostgreSQL where a store is involved."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.runtime import ledger
from bgc.runtime.kernel.keys import SigningKey
from bgc.runtime.modes import NONE, ModeRules, decode_mode, mode_state, refuse_agent_mode, sign_mode
from bgc.runtime.store import open_store
from tests.samples import bgc

PEOPLE = {name: SigningKey.from_seed(bytes([number]) * 32, name) for number, name in enumerate(("lead", "qa", "writer", "mallory"), 1)}
TRUSTED = {name: key.public for name, key in PEOPLE.items() if name != "mallory"}
RULES = ModeRules(
    ("readonly", "docs", "release", "open"),
    "readonly",
    {"docs": (1, ("writer", "lead")), "release": (2, ("lead", "qa"))},
)
"""``release`` takes two of lead and qa; ``docs`` one of writer and lead; ``open`` names nobody;
``readonly`` is the default, which any trusted person may restore."""


def state_after(steps: list[tuple[str, str, int]], session: str = "s1") -> Any:
    """Each (person, mode, time) signs a switch after the switch in force when they sign, as
    ``bgc mode set`` does; the state at the end."""
    decisions: list[Any] = []
    for person, mode, time in steps:
        after = mode_state(session, decisions, TRUSTED, RULES).switch
        decisions.append(sign_mode(session, mode, after, person, PEOPLE[person], time))
    return mode_state(session, decisions, TRUSTED, RULES)


def test_a_person_trusted_for_one_mode_cannot_switch_to_another() -> None:
    assert state_after([("writer", "release", 10)]).mode is None  # writer is trusted, not for release
    assert state_after([("writer", "docs", 10)]).mode == "docs"
    assert state_after([("mallory", "docs", 10)]).mode is None  # no key the policy trusts
    assert state_after([("lead", "open", 10)]).mode is None  # a mode whose block names nobody
    assert state_after([("lead", "docs", 10), ("writer", "readonly", 11)]).mode == "readonly"


def test_a_mode_that_needs_two_people_needs_two_distinct_people_on_the_same_switch() -> None:
    assert state_after([("lead", "release", 10)]).mode is None
    assert state_after([("lead", "release", 10), ("lead", "release", 11)]).mode is None
    both = state_after([("lead", "release", 10), ("qa", "release", 11)])
    assert both.mode == "release" and both.approvers == ("lead", "qa")
    # a switch in between makes the first signature stale: it was for the switch after another state
    stale = state_after([("lead", "release", 10), ("writer", "docs", 11), ("qa", "release", 12)])
    assert stale.mode == "docs" and [mode for mode, _ in stale.pending.values()] == ["release"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["lead", "qa", "writer"]), st.sampled_from(["readonly", "docs", "release"])), min_size=1, max_size=8), st.data())
def test_the_later_switch_stands_whatever_the_times_say(steps: list[tuple[str, str]], data: st.DataObject) -> None:
    """Times drawn at will (the same second, or going backwards): the switch signed last after
    the one in force decides, exactly as a reference that follows them in order says."""
    times = data.draw(st.lists(st.integers(0, 3), min_size=len(steps), max_size=len(steps)))
    state = state_after([(person, mode, time) for (person, mode), time in zip(steps, times, strict=True)])
    expected, waiting = None, {}  # the reference: apply each signature in order
    for person, mode in steps:
        count, names = RULES.who_may_set(mode, TRUSTED)  # type: ignore[misc]
        if person not in names:
            continue
        signers = waiting.setdefault(mode, set())
        signers.add(person)
        if len(signers) >= count:
            expected, waiting = mode, {}
    assert state.mode == expected


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_the_order_the_store_returns_decides_nothing(order: tuple[int, ...]) -> None:
    decisions: list[Any] = []
    for person, mode in (("writer", "docs"), ("lead", "readonly"), ("writer", "docs")):
        after = mode_state("s1", decisions, TRUSTED, RULES).switch
        decisions.append(sign_mode("s1", mode, after, person, PEOPLE[person], 100))  # all in one second
    assert mode_state("s1", [decisions[index] for index in order], TRUSTED, RULES).mode == "docs"


def test_a_decision_altered_in_the_store_counts_for_nothing() -> None:
    good = sign_mode("s1", "docs", NONE, "writer", PEOPLE["writer"], 10)
    for field, value in (("session", "s2"), ("mode", "release"), ("after", "sha256:" + "1" * 64), ("approver", "lead"), ("time", 11)):
        altered = type(good)(**{**{name: getattr(good, name) for name in good.__slots__}, field: value})
        assert mode_state("s1", [altered], TRUSTED, RULES).mode is None, field
        assert decode_mode(altered.encode()) == altered
    assert decode_mode(b"\xa0") is None and decode_mode(good.encode() + b"\x00") is None


def test_both_engines_keep_every_decision_made_in_the_same_second(store_location: str) -> None:
    store = open_store(store_location)
    try:
        for person, mode in (("writer", "docs"), ("writer", "readonly"), ("writer", "docs"), ("writer", "readonly")):
            decisions = [found for found in map(decode_mode, store.modes("s1")) if found is not None]
            after = mode_state("s1", decisions, TRUSTED, RULES).switch
            store.add_mode("s1", sign_mode("s1", mode, after, person, PEOPLE[person], 100).encode())
        decisions = [found for found in map(decode_mode, store.modes("s1")) if found is not None]
        assert len(decisions) == 4 and mode_state("s1", decisions, TRUSTED, RULES).mode == "readonly"
    finally:
        store.close()


def test_an_agent_asking_for_a_mode_is_refused_and_recorded(store_location: str) -> None:
    store = open_store(store_location)
    try:
        refuse_agent_mode(store, "s1", "release", 1_000)
        (entry,) = [ledger.decode_entry(*row) for row in store.rows()]
    finally:
        store.close()
    body = entry.body  # type: ignore[union-attr]
    assert body["kind"] == "mode" and body["decision"] == "refused" and "agent asked" in body["reason"]


# ---- the commands -----------------------------------------------------------------------------


@pytest.fixture
def people(tmp_path: Path) -> dict[str, str]:
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("lead", "qa", "writer", "mallory"):
        assert bgc("key", "new", name, "--dir", str(keys)).exit_code == 0
    public = {name: (keys / f"{name}.pub").read_text().strip() for name in ("lead", "qa", "writer")}
    policy = tmp_path / "p.bgp"
    policy.write_text(
        "".join(f"trust approver {name} {key}\n" for name, key in public.items())
        + "default mode readonly\nmode readonly {}\nmode open {}\n"
        + "mode docs approvals 1 of [writer] {\n    allow fs:write:/docs/**\n}\n"
        + "mode release approvals 2 of [lead, qa] {\n    allow fs:write:/dist/**\n}\nallow fs:read:/**\n"
    )
    return {"keys": str(keys), "policy": str(policy), "store": str(tmp_path / "s.db")}


def mode(people: dict[str, str], *args: str, key: str | None = None, **options: str) -> Any:
    extra = [f"--{name}={value}" for name, value in options.items()]
    keyed = ["--key", f"{people['keys']}/{key}.key"] if key else []
    return bgc("mode", *args, *keyed, *extra, "--store", people["store"], "-p", people["policy"])


def test_mode_set_follows_the_policy_and_keeps_the_later_decision(people: dict[str, str]) -> None:
    assert "default mode" in mode(people, "show", "s1").stdout
    refused = mode(people, "set", "s1", "release", key="mallory", **{"as": "lead"})
    assert refused.exit_code == 2 and "trusts no key" in refused.output
    assert "no mode 'admin'" in mode(people, "set", "s1", "admin", key="lead").output
    widened = mode(people, "set", "s1", "release", key="writer")
    assert widened.exit_code == 2 and "writer may not switch a session to mode 'release'" in widened.output
    nobody = mode(people, "set", "s1", "open", key="lead")
    assert nobody.exit_code == 2 and "names nobody" in nobody.output and "mode open approvals 1 of [lead]" in nobody.output
    first = mode(people, "set", "s1", "release", key="lead")
    assert first.exit_code == 0 and "waits for more people (signed by lead)" in first.stdout
    second = mode(people, "set", "s1", "release", key="qa")
    assert second.stdout.strip() == "session s1: mode release, set by lead, qa"
    # twice within one second: the later stands
    assert mode(people, "set", "s1", "docs", key="writer").exit_code == 0
    assert mode(people, "set", "s1", "readonly", key="writer").exit_code == 0
    assert mode(people, "show", "s1").stdout.strip() == "session s1: mode readonly, set by writer"
    shown = bgc("log", "show", "--store", people["store"], "--kind", "mode").stdout
    assert [line.split("\t")[3] for line in shown.splitlines()] == ["signed release", "set release", "set docs", "set readonly"]


# ---- the policy says who may -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "column", "message"),
    [
        ("mode release approvals 0 of [lead] {}", 24, "between 1 and the number of names"),
        ("mode release approvals 3 of [lead, qa] {}", 24, "between 1 and the number of names"),
        ("mode release approvals 1 of [lead, lead] {}", 36, "listed twice"),
        ('mode release approvals 1 of [""] {}', 30, "must not be empty"),
        ("mode release approvals 1 of [] {}", 30, "expected"),
    ],
)
def test_a_bad_mode_approvals_clause_is_an_error_at_its_place(tmp_path: Path, header: str, column: int, message: str) -> None:
    policy = tmp_path / "p.bgp"
    policy.write_text(f"allow fs:read:/**\n{header}\n")
    checked = bgc("check", str(policy))
    assert checked.exit_code == 2 and f"p.bgp:2:{column}:" in checked.output and message in checked.output, checked.output


def test_mode_approvals_are_formatted_canonically_and_an_unbound_name_is_flagged(tmp_path: Path) -> None:
    from bgc.core.policy.format import format_text

    text = 'mode release   approvals 2 of [lead,"q a"]   {\n  allow fs:write:/dist/**\n}\n'
    canonical = 'mode release approvals 2 of [lead, "q a"] {\n    allow fs:write:/dist/**\n}\n'
    assert format_text(text, "p.bgp") == canonical and format_text(canonical, "p.bgp") == canonical
    policy = tmp_path / "p.bgp"
    key = PEOPLE["lead"].public.text
    policy.write_text(f"trust approver lead {key}\n{canonical}allow fs:read:/**\n")
    checked = bgc("check", str(policy))
    assert "BGC541" in checked.output and "`q a`" in checked.output and "p.bgp:2:14" in checked.output, checked.output
