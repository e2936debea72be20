"""`trust issuer|approver NAME KEY` and `trust elicitation` in policies: parsing, refusals, formatting, the BGC541 lint."""

from __future__ import annotations

from pathlib import Path

import pytest

from bgc.analysis.checks import check_paths
from bgc.core.policy.format import format_source
from bgc.core.policy.loader import load_policy
from bgc.core.policy.parser import PolicyError, parse_source
from tests.kernel_support import ISSUER, KERNEL, OTHER

A, B, C = ISSUER.public.text, KERNEL.public.text, OTHER.public.text


def write(tmp_path: Path, text: str, name: str = "p.bgp") -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return str(tmp_path / name)


def test_trust_lines_load_from_includes_and_round_trip(tmp_path: Path) -> None:
    write(tmp_path, f"trust issuer release-bot {A}\n", "base.bgp")
    text = f'include "base.bgp"\ntrust approver "dba oncall" {B}\ntrust approver alice {C}\nask fs:write:/m/** approvals 1 of ["dba oncall", alice]\n'
    policy = load_policy(write(tmp_path, text))
    assert [(t.role, t.name, t.key) for t in policy.trust] == [
        ("issuer", "release-bot", A), ("approver", "dba oncall", B), ("approver", "alice", C)
    ]  # fmt: skip
    assert format_source(parse_source(text, "p.bgp")) == text
    assert check_paths([str(tmp_path / "p.bgp")]).findings == ()


@pytest.mark.parametrize(
    "key",
    ["ed25519:AAAA", A[:-1], A + "A", A.replace("ed25519:", "ed448:"), A[:-1] + "B", A[:-1] + "=", A[:12] + "+" + A[13:]],
)
def test_a_key_that_is_not_an_ed25519_public_key_text(tmp_path: Path, key: str) -> None:
    with pytest.raises(PolicyError) as error:
        load_policy(write(tmp_path, f"trust issuer bot {key}\n"))
    assert error.value.code == "BGC540"


@pytest.mark.parametrize(
    "second",
    [f"trust issuer bot {B}", f"trust issuer other {A}", f"trust approver alice {A}\ntrust approver bob {A}"],
    ids=["name-twice", "key-twice", "one-key-two-approvers"],
)
def test_a_name_or_key_trusted_twice(tmp_path: Path, second: str) -> None:
    with pytest.raises(PolicyError) as error:
        load_policy(write(tmp_path, f"trust issuer bot {A}\n{second}\n"))
    assert error.value.code == "BGC540"


def test_the_same_key_may_be_an_issuer_and_an_approver(tmp_path: Path) -> None:
    assert len(load_policy(write(tmp_path, f"trust issuer alice {A}\ntrust approver alice {A}\n")).trust) == 2


def test_an_unbound_approver_is_flagged_once_approvers_are_bound(tmp_path: Path) -> None:
    rule = "ask fs:write:/m/** approvals 2 of [alice, bob]\n"
    assert check_paths([write(tmp_path, rule, "none.bgp")]).findings == ()
    findings = check_paths([write(tmp_path, f"trust approver alice {A}\n" + rule)]).findings
    assert [(f.rule_id, "`bob`" in f.message) for f in findings] == [("BGC541", True)]


def test_trust_is_not_a_rule_inside_a_mode(tmp_path: Path) -> None:
    with pytest.raises(PolicyError):
        load_policy(write(tmp_path, f"mode edit {{\n    trust issuer bot {A}\n}}\n"))


def test_trust_elicitation_is_the_policy_s_opt_in_and_round_trips(tmp_path: Path) -> None:
    write(tmp_path, "trust elicitation\n", "base.bgp")
    assert load_policy(write(tmp_path, 'include "base.bgp"\nask fs:write:/m/**\n')).trusts_elicitation
    assert not load_policy(write(tmp_path, "ask fs:write:/m/**\n", "plain.bgp")).trusts_elicitation
    text = "trust elicitation\nask fs:write:/m/**\n"
    assert format_source(parse_source(text, "p.bgp")) == text


@pytest.mark.parametrize("line", ["trust elicitation yes", "trust elicitations", "trust elicitation alice " + A])
def test_trust_elicitation_takes_nothing_after_it(tmp_path: Path, line: str) -> None:
    with pytest.raises(PolicyError) as error:
        load_policy(write(tmp_path, line + "\n"))
    assert error.value.code == "BGC001" and error.value.span.line == 1
