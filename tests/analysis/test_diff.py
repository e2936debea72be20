"""``bgc diff`` (issue 16): exact new and removed access, against a brute-force reference.

The reference decides every value of a small universe with the real compiler
(:func:`bgc.core.compiler.decide`) under both policies, in every context class and mode: every value
NEW treats more permissively must lie in a reported change of that transition (no false PASS),
and every reported counterexample must really get the reported levels on both sides.
"""

from __future__ import annotations

import functools
import itertools
import random

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bgc.core.patterns import glob
from bgc.core.compiler import Compiler, decide
from bgc.analysis.diff import LEVELS, Change, diff_policies
from bgc.core.policy.ast import Policy
from bgc.core.policy.loader import parse_policy
from tests.samples import examples

SEGMENTS = ["a", "b", "*", "?", "**", "a*", "*b", "[ab]", "[!a]"]
NAMES = ["a", "b", "aa", "ab", "ba", "bb"]
UNIVERSE = ["/"] + ["/" + "/".join(p) for n in (1, 2, 3) for p in itertools.product(NAMES, repeat=n)]
KINDS = ["x", "y", "other"]  # literal values the generated conditions use, and one they never name
RANK = {level: rank for rank, level in enumerate(LEVELS)}

patterns = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3).map(lambda segs: "/" + "/".join(segs))
conditions = st.sampled_from(["", ' when intent.kind == "x"', ' when intent.kind != "y"', ' when intent.kind in ["x", "y"]'])
rules = st.lists(st.tuples(st.sampled_from(["allow", "ask", "deny"]), patterns, conditions), min_size=0, max_size=5)


def policy_text(generated: list[tuple[str, str, str]], mode: str | None = None) -> str:
    lines = [f"{effect} fs:write:{pattern}{when}" for effect, pattern, when in generated]
    if mode is None:
        return "\n".join(lines) + "\n"
    return "\n".join(["mode m {", *("  " + line for line in lines), "}", "default mode m"]) + "\n"


def load(text: str, name: str) -> Policy:
    return parse_policy(text, name)


@functools.lru_cache(maxsize=4)
def compiler_for(policy: Policy) -> Compiler:
    """One compiler per policy for the whole universe: ``decide`` builds a fresh one per value
    otherwise (the policy's id hashed each time), and a compiler's answers do not depend on what it
    decided before, so the reference stays the public ``decide``, only without the repeated set-up."""
    return Compiler(policy)


def level(policy: Policy, value: str, kind: str, mode: str | None = None, resource: str = "fs") -> str:
    context = {"intent.kind": kind, "origin.model": "m"}
    return decide(policy, resource, "write", value, context, mode, compiler=compiler_for(policy)).effect


def in_change(change: Change, value: str) -> bool:
    return glob.parse(change.pattern).matches(value) and not any(glob.parse(e).matches(value) for e in change.excepts)


def holds_in(change: Change, kind: str, policies: tuple[Policy, ...]) -> bool:
    """Does the change hold for this intent kind? Yes when some context it names is one no
    condition of either policy can tell from ``kind`` (an independent reading of the classes)."""
    if not change.conditions:
        return True
    conditions = [rule.when for policy in policies for rule in policy.rules if rule.when is not None]

    def seen(value: str) -> list[bool | None]:
        return [c.evaluate({"intent.kind": value, "origin.model": "m"}) for c in conditions]

    return any(seen(dict(context)["intent.kind"]) == seen(kind) for context in change.contexts)


def check_exact(old: Policy, new: Policy, universe: list[str], resource: str = "fs", mode: str | None = None) -> None:
    result = diff_policies(old, new)
    assert not any(change.undecided for change in result.changes)
    for change in result.changes:  # every counterexample really differs, as reported
        assert change.example is not None
        kinds = [k for k in KINDS if holds_in(change, k, (old, new))]
        assert kinds, change
        for kind in kinds:
            before = level(old, change.example, kind, mode, resource)
            after = level(new, change.example, kind, mode, resource)
            assert (before, after) == (change.before, change.after), (change, kind)
        assert in_change(change, change.example)
    for value, kind in itertools.product(universe, KINDS):  # every real difference is reported
        before = level(old, value, kind, mode, resource)
        after = level(new, value, kind, mode, resource)
        if before == after:
            continue
        direction = "new" if RANK[after] > RANK[before] else "removed"
        assert any(
            change.kind == direction and (change.before, change.after) == (before, after)
            and in_change(change, value) and holds_in(change, kind, (old, new))
            for change in result.changes
        ), (value, kind, before, after, [c.to_data() for c in result.changes])
    assert result.grants_new == any(change.kind == "new" for change in result.changes)


@settings(max_examples=examples(6, thorough=300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules, rules)
def test_diff_is_exact_against_brute_force(old_rules: list[tuple[str, str, str]], new_rules: list[tuple[str, str, str]]) -> None:
    check_exact(load(policy_text(old_rules), "old.bgp"), load(policy_text(new_rules), "new.bgp"), UNIVERSE)


@settings(max_examples=examples(5, thorough=250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules, st.data())
def test_edits_of_one_policy_are_exact(base: list[tuple[str, str, str]], data: st.DataObject) -> None:
    """Policies that differ by one rule (the common review): added, dropped or its effect changed."""
    edited = list(base)
    action = data.draw(st.sampled_from(["add", "drop", "flip"]))
    if action == "add" or not edited:
        edited.insert(data.draw(st.integers(0, len(edited))), data.draw(st.tuples(st.sampled_from(["allow", "ask", "deny"]), patterns, conditions)))
    elif action == "drop":
        edited.pop(data.draw(st.integers(0, len(edited) - 1)))
    else:
        index = data.draw(st.integers(0, len(edited) - 1))
        effect, pattern, when = edited[index]
        edited[index] = (data.draw(st.sampled_from([e for e in ("allow", "ask", "deny") if e != effect])), pattern, when)
    check_exact(load(policy_text(base), "old.bgp"), load(policy_text(edited), "new.bgp"), UNIVERSE)


@settings(max_examples=examples(15), deadline=None)
@given(rules, st.randoms(use_true_random=False))
def test_reordering_splitting_and_reformatting_report_nothing(generated: list[tuple[str, str, str]], rnd: random.Random) -> None:
    shuffled = list(generated)
    rnd.shuffle(shuffled)
    old = load(policy_text(generated), "old.bgp")
    # one rule with several patterns where the generated ones share effect and condition, laid out loosely
    merged: dict[tuple[str, str], list[str]] = {}
    for effect, pattern, when in shuffled:
        merged.setdefault((effect, when), []).append(pattern)
    text = "\n\n".join(f"{effect}   fs:write:{', '.join(pats)}{when}   # merged" for (effect, when), pats in merged.items())
    for new in (load(policy_text(shuffled), "new.bgp"), load(text + "\n", "new.bgp")):
        result = diff_policies(old, new)
        assert result.equivalent, [c.to_data() for c in result.changes]


def test_semantic_split_reports_nothing() -> None:
    """Splitting one pattern into two that cover exactly the same values is no change."""
    old = load("allow fs:write:/src/**\n", "old.bgp")
    new = load("allow fs:write:/src/a*/**, /src/[!a]*/**\nallow fs:write:/src/a*\nallow fs:write:/src/[!a]*\n", "new.bgp")
    assert diff_policies(old, new).equivalent
    assert diff_policies(new, old).equivalent


def test_counterexample_rules_and_except_list() -> None:
    old = load('allow fs:write:/src/**\ndeny fs:write:/src/secrets/** because "secrets"\n', "old.bgp")
    new = load('allow fs:write:/src/**\ndeny fs:write:/src/secrets/*.key because "keys"\n', "new.bgp")
    result = diff_policies(old, new)
    (change,) = result.changes
    assert (change.kind, change.before, change.after) == ("new", "deny", "allow")
    assert change.atom == "fs:write:/src/secrets/**" and change.excepts == ("/src/secrets/*.key",)
    assert change.example_atom == "fs:write:/src/secrets/a"
    assert [str(r) for r in change.old_rules] == ["old.bgp:2"] and [str(r) for r in change.new_rules] == ["new.bgp:1"]
    assert result.grants_new and not result.removes


def test_counterexamples_are_canonical_values() -> None:
    """`/src/**` matches the text `/src/`, which is no path: the example is a real value."""
    result = diff_policies(load("", "old.bgp"), load("allow fs:write:/src/**\nallow net:connect:*://*/**\n", "new.bgp"))
    examples = {change.resource: change.example for change in result.changes}
    assert examples == {"fs": "/src/a", "net": "ws://a/"}  # the shortest canonical URL


def test_a_difference_only_in_non_canonical_text_is_none() -> None:
    old = load("allow fs:write:/src/*\n", "old.bgp")
    new = load("allow fs:write:/src/*, /src/*/\n", "new.bgp")  # `/src/x/` is no value: the gate reads /src/x
    assert diff_policies(old, new).equivalent


def test_dropping_case_insensitive_is_new_access() -> None:
    old = load("filesystem case-insensitive\nallow fs:write:/**\ndeny fs:write:/.git/**\n", "old.bgp")
    new = load("allow fs:write:/**\ndeny fs:write:/.git/**\n", "new.bgp")
    result = diff_policies(old, new)
    atoms = {change.example_atom for change in result.of_kind("new")}
    assert "fs:write:/.GIT/a" in {a for a in atoms} or any(
        a and a.lower().startswith("fs:write:/.git") for a in atoms
    ), atoms
    for change in result.of_kind("new"):
        assert level(old, change.example, "x") == "deny" and level(new, change.example, "x") == "allow"


def test_modes_are_diffed_each_and_named() -> None:
    old = load("default mode ro\nmode ro {}\nmode edit {\n  allow fs:write:/src/**\n}\n", "old.bgp")
    new = load("default mode ro\nmode ro {}\nmode edit {\n  allow fs:write:/**\n}\n", "new.bgp")
    (change,) = diff_policies(old, new).changes
    assert change.modes == ("mode edit",) and change.example == "/" and change.excepts == ("/src/**",)
    assert diff_policies(old, new, mode="ro").equivalent


def test_default_mode_switch_is_a_difference() -> None:
    old = load("default mode ro\nmode ro {}\nmode edit {\n  allow fs:write:/src/**\n}\n", "old.bgp")
    new = load("default mode edit\nmode ro {}\nmode edit {\n  allow fs:write:/src/**\n}\n", "new.bgp")
    (change,) = diff_policies(old, new).changes
    assert change.modes == ("the default mode (ro → edit)",) and change.kind == "new"


def test_matches_conditions_are_decided_by_class() -> None:
    old = load('allow fs:write:/src/** when origin.model matches "claude-*"\n', "old.bgp")
    new = load('allow fs:write:/src/** when origin.model matches "*"\n', "new.bgp")
    (change,) = diff_policies(old, new).changes
    assert change.conditions == ('origin.model matches "*" and does not match "claude-*"',)
    assert change.contexts == ((("origin.model", "a"),),)


def test_wildcard_resources_include_fs_net_and_any_other() -> None:
    result = diff_policies(load("", "old.bgp"), load("allow *:read:/**, https://*/**\n", "new.bgp"))
    found = {(c.resource, c.any_resource, c.example) for c in result.changes}
    # `/**` is no URL, `https://*/**` is a path too for fs and any other resource
    assert found == {("fs", False, "/"), ("net", False, "https://a/"), ("other", True, "/"), ("other", True, "https:///")}


def test_tool_declarations_that_need_less_are_new_access() -> None:
    old = load("tool fs.move needs fs:write:{src}, fs:write:{dst}\ntool gone needs proc:exec:x\n", "old.bgp")
    new = load("tool fs.move needs fs:write:{dst}\ntool shell.run needs proc:exec:{cmd}\n", "new.bgp")
    result = diff_policies(old, new)
    assert [(t.kind, t.tool) for t in result.tools] == [("new", "fs.move"), ("removed", "gone"), ("new", "shell.run")]
    assert result.grants_new and not result.equivalent


def test_calls_reached_by_a_change_are_named() -> None:
    new = load("tool fs.write needs fs:write:{path}\nallow fs:write:/src/**\n", "new.bgp")
    old = load("tool fs.write needs fs:write:{path}\n", "old.bgp")
    (change,) = diff_policies(old, new).changes
    assert change.calls == ("fs.write {path: /src/a}",)


@pytest.mark.parametrize("resource", ["pkg", "fs"])
def test_other_resources_are_exact_too(resource: str) -> None:
    old = load(f"allow {resource}:write:/a/**\ndeny {resource}:write:/a/b*\n", "old.bgp")
    new = load(f"allow {resource}:write:/a/**, /b\ndeny {resource}:write:/a/bb\n", "new.bgp")
    check_exact(old, new, UNIVERSE, resource)


moded_rules = st.lists(st.tuples(st.sampled_from(["allow", "ask", "deny"]), patterns, st.booleans()), min_size=0, max_size=5)


def moded_text(generated: list[tuple[str, str, bool]], default: bool) -> str:
    inside = [f"  {effect} fs:write:{pattern}" for effect, pattern, in_mode in generated if in_mode]
    outside = [f"{effect} fs:write:{pattern}" for effect, pattern, in_mode in generated if not in_mode]
    return "\n".join([*outside, "mode m {", *inside, "}", *(["default mode m"] if default else [])]) + "\n"


@settings(max_examples=examples(5, thorough=250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moded_rules, moded_rules, st.booleans(), st.booleans())
def test_modes_are_exact_against_brute_force(
    old_rules: list[tuple[str, str, bool]], new_rules: list[tuple[str, str, bool]], old_default: bool, new_default: bool
) -> None:
    """Every mode a person may choose (`--mode m`, or none: the default) is diffed exactly and named."""
    old, new = load(moded_text(old_rules, old_default), "old.bgp"), load(moded_text(new_rules, new_default), "new.bgp")
    result = diff_policies(old, new)
    both_default = old_default and new_default

    def label_for(mode: str | None) -> str:
        return "mode m" if mode == "m" or both_default else "the default mode"

    def holds(change: Change, mode: str | None) -> bool:
        return not change.modes or any(label.startswith(label_for(mode)) for label in change.modes)

    for change in result.changes:
        assert change.example is not None
        modes = [mode for mode in ("m", None) if holds(change, mode)]
        assert modes, change
        for mode in modes:
            levels = (level(old, change.example, "x", mode), level(new, change.example, "x", mode))
            assert levels == (change.before, change.after), (change, mode)
    for value, mode in itertools.product(UNIVERSE, ("m", None)):
        before, after = level(old, value, "x", mode), level(new, value, "x", mode)
        if before != after:
            direction = "new" if RANK[after] > RANK[before] else "removed"
            assert any(
                c.kind == direction and (c.before, c.after) == (before, after) and in_change(c, value) and holds(c, mode)
                for c in result.changes
            ), (value, mode, before, after, [c.to_data() for c in result.changes])


def test_weaker_approvals_are_new_access_and_stricter_ones_removed() -> None:
    from bgc.core.compiler import Compiler
    from bgc.core.gate import Gate
    from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder
    from bgc.core.plan import approvals_text

    old = load("allow fs:write:/**\nask fs:write:/db/** approvals 2 of [alice, bob, carol]\nask fs:write:/x/**\n", "old.bgp")
    new = load("allow fs:write:/**\nask fs:write:/db/**\nask fs:write:/x/** approvals 1 of [alice]\n", "new.bgp")
    result = diff_policies(old, new)
    assert [(c.kind, c.atom, c.example, c.approvals) for c in result.changes] == [
        ("new", "fs:write:/db/**", "/db/a", ("2 of [alice, bob, carol]", "1 approval")),
        ("removed", "fs:write:/x/**", "/x/a", ("1 approval", "1 of [alice]")),
    ]
    for change in result.changes:  # what the gate would ask for, under each policy
        needs = []
        for policy in (old, new):
            order = WorkOrder(Intent("x", "t"), (), GrantSet.of([GrantAtom.parse(f"fs:write:{change.example}")]),
                              ProposalOrigin("m", (), Digest.of(b"p")))  # fmt: skip
            decision = Gate([Compiler(policy).compile(order)]).decide(f"fs:write:{change.example}")
            needs.append(approvals_text(decision.approvals))
        assert tuple(needs) == change.approvals
    assert diff_policies(old, old).equivalent
    # an extra ask rule with the same requirement, overlapping another, changes nothing
    same = load(
        "allow fs:write:/**\nask fs:write:/db/** approvals 2 of [alice, bob, carol]\n"
        "ask fs:write:/db/a/** approvals 2 of [alice, bob, carol]\nask fs:write:/x/**\n", "same.bgp"
    )
    assert diff_policies(old, same).equivalent


WORDS = ["git", "push", ".", "a"]
ARGVS = ["/".join(p) for n in (1, 2, 3) for p in itertools.product(WORDS, repeat=n)]


def test_argv_rules_are_diffed_exactly() -> None:
    """Shell commands in the argv dialect (`proc:exec:git/push/**`) flow through the same algebra;
    `.` is an ordinary word there (`git add .`), so it is in the universe."""
    old = load("allow proc:write:git/**\ndeny proc:write:git/push/**\nallow proc:write:a/.\n", "old.bgp")
    new = load("allow proc:write:git/**, a/*\ndeny proc:write:git/push\nask proc:write:./**\n", "new.bgp")
    check_exact(old, new, ARGVS, "proc")
    found = {(c.kind, c.example) for c in diff_policies(old, new).changes}
    assert ("new", "git/push/") in found  # git push "": an empty word is an argument too


# --- fallbacks (issue 29): two more layers, diffed by the same algebra ----------------------------

FALLBACK_EFFECTS = ["allow", "ask", "deny", "otherwise ask", "otherwise deny"]
fallback_rules = st.lists(st.tuples(st.sampled_from(FALLBACK_EFFECTS), patterns, conditions), min_size=0, max_size=5)


@settings(max_examples=examples(8, thorough=300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fallback_rules, fallback_rules)
@example([("allow", "/a/**", ""), ("otherwise ask", "/**", "")], [("allow", "/a/**", ""), ("otherwise deny", "/**", "")])
@example([("otherwise ask", "/**", ' when intent.kind == "x"')], [("ask", "/*", ""), ("otherwise deny", "/a", "")])
def test_fallbacks_are_diffed_exactly(old_rules: list[tuple[str, str, str]], new_rules: list[tuple[str, str, str]]) -> None:
    check_exact(load(policy_text(old_rules), "old.bgp"), load(policy_text(new_rules), "new.bgp"), UNIVERSE)


@settings(max_examples=examples(6, thorough=250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fallback_rules, st.integers(0, 4))
def test_flipping_a_fallback_is_exact(base: list[tuple[str, str, str]], at: int) -> None:
    """``otherwise deny`` → ``otherwise ask`` (and ordinary ↔ fallback): one line, exactly."""
    if not base:
        return
    index = at % len(base)
    effect, pattern, when = base[index]
    flipped = {"otherwise ask": "otherwise deny", "otherwise deny": "otherwise ask", "ask": "otherwise ask",
               "deny": "otherwise deny", "allow": "otherwise ask"}[effect]  # fmt: skip
    edited = [*base[:index], (flipped, pattern, when), *base[index + 1 :]]
    check_exact(load(policy_text(base), "old.bgp"), load(policy_text(edited), "new.bgp"), UNIVERSE)


def test_a_fallback_turned_from_deny_to_ask_is_new_access_and_back_removed() -> None:
    denying = load("allow fs:write:/src/**\notherwise deny fs:write:/**\n", "old.bgp")
    asking = load("allow fs:write:/src/**\notherwise ask fs:write:/** because \"the rest\"\n", "new.bgp")
    (widened,) = diff_policies(denying, asking).changes
    assert (widened.kind, widened.before, widened.after, str(widened.atom), widened.excepts) == (
        "new", "deny", "ask", "fs:write:/**", ("/src/**",)
    )
    assert [(rule.line, rule.fallback) for rule in widened.new_rules] == [(2, True)]
    (narrowed,) = diff_policies(asking, denying).changes
    assert (narrowed.kind, narrowed.before, narrowed.after) == ("removed", "ask", "deny")
    # the catch-all ask of old: the allow now grants (new access), nothing else changes
    catch_all = load("allow fs:write:/src/**\nask fs:write:/**\n", "catch.bgp")
    (granted,) = diff_policies(catch_all, asking).changes
    assert (granted.kind, granted.before, granted.after, granted.pattern) == ("new", "ask", "allow", "/src/**")


def test_a_fallbacks_weaker_approvals_are_new_access() -> None:
    old = load("otherwise ask fs:write:/** approvals 2 of [alice, bob]\nask fs:write:/q/**\n", "old.bgp")
    new = load("otherwise ask fs:write:/**\nask fs:write:/q/** approvals 2 of [alice, bob]\n", "new.bgp")
    found = [(c.kind, c.atom, c.excepts, c.approvals) for c in diff_policies(old, new).changes]
    assert found == [
        ("new", "fs:write:/**", ("/q/**",), ("2 of [alice, bob]", "1 approval")),
        ("removed", "fs:write:/q/**", (), ("1 approval", "2 of [alice, bob]")),
    ]


CI_NAMES = ["a", "A", "b"]
CI_UNIVERSE = ["/" + "/".join(p) for n in (1, 2) for p in itertools.product(CI_NAMES, repeat=n)]


@settings(max_examples=examples(5, thorough=200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fallback_rules, fallback_rules)
@example([("allow", "/a", ""), ("otherwise ask", "/**", "")], [("otherwise ask", "/**", "")])
def test_fallbacks_on_a_case_insensitive_file_system_are_diffed_exactly(
    old_rules: list[tuple[str, str, str]], new_rules: list[tuple[str, str, str]]
) -> None:
    """There no fallback reaches what an allow names up to case (docs/semantics.md)."""
    folded = "filesystem case-insensitive\n"
    check_exact(load(folded + policy_text(old_rules), "old.bgp"), load(folded + policy_text(new_rules), "new.bgp"), CI_UNIVERSE)
