"""Fallbacks (issue 29, item 1): ``otherwise ask X`` and ``otherwise deny X`` decide only what no
other rule matches, exactly, in the compiler, the plan and the gate.

The property tests generate small policies of every kind of rule (fallbacks too, some with a
condition that is unknown while compiling) and decide every text of a small universe three ways
(the gate over a compiled plan of a wide request, the gate over a plan of a narrow one, and
``decide`` as expects do), against a reference that implements docs/semantics.md's "Fallbacks"
directly with regular expressions.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bgc.core.compiler import Compiler, decide, explain
from bgc.core.gate import Gate, worded
from bgc.core.patterns.budget import Budget
from bgc.core.plan import Approvals, plan_from_data
from bgc.core.policy.loader import parse_policy
from tests.core.test_compiler import UNIVERSE, order, plan_for, reference_regex
from tests.samples import examples

SHAPE = """\
tool shell.run needs proc:exec:{argv0}
allow proc:exec:pytest, pytest/** because "the tests"
deny proc:exec:git/push, git/push/** because "a person pushes"
otherwise ask proc:exec:** because "any other command needs a person"
otherwise deny proc:exec:sudo, sudo/** because "never as root"
"""


def test_allow_these_and_ask_about_the_rest_is_one_rule() -> None:
    """The issue's shape: an allow beside a catch-all fallback keeps its grant."""
    plan = plan_for(SHAPE, "proc:exec:**")
    (request,) = plan.requests
    assert request.verdict == "narrowed"
    assert [str(part) for part in request.granted] == ["proc:exec:pytest", "proc:exec:pytest/**"]
    (asked,) = request.ask
    assert str(asked) == "proc:exec:** except git/push, git/push/**, pytest, pytest/**, sudo, sudo/**"
    assert [(rule.line, rule.effect, rule.fallback) for rule in asked.rules] == [(4, "ask", True)]
    denied = {str(part): [(rule.line, rule.fallback) for rule in part.rules] for part in request.denied}
    assert denied == {
        "proc:exec:git/push": [(3, False)], "proc:exec:git/push/**": [(3, False)],
        "proc:exec:sudo": [(5, True)], "proc:exec:sudo/**": [(5, True)],
    }  # fmt: skip
    gate = Gate([plan])
    answers = {atom: gate.decide(f"proc:exec:{atom}") for atom in ("pytest/-x", "ls/-la", "git/push/origin", "sudo/ls")}
    assert {atom: decision.effect for atom, decision in answers.items()} == {
        "pytest/-x": "allow", "ls/-la": "ask", "git/push/origin": "deny", "sudo/ls": "deny",
    }  # fmt: skip
    assert worded(answers["ls/-la"])[1] == "awaits 1 approval (otherwise ask p.bgp:4)"
    assert answers["sudo/ls"].reason == "denied by p.bgp:5 (never as root)" and answers["sudo/ls"].rule.fallback
    assert answers["git/push/origin"].rule.line == 3


def test_a_catch_all_ask_still_asks_for_everything() -> None:
    """An ordinary ask keeps its meaning: ask beats allow."""
    text = SHAPE.replace("otherwise ask", "ask")
    assert Gate([plan_for(text, "proc:exec:**")]).decide("proc:exec:pytest/-x").effect == "ask"


def test_the_fallback_round_trips_through_the_plan_and_keeps_old_ids() -> None:
    plan = plan_for(SHAPE, "proc:exec:**")
    data = plan.to_data()
    assert plan_from_data(data) == plan
    rules = [rule for part in data["requests"][0]["ask"] for rule in part["rules"]]
    assert rules == [{"file": "p.bgp", "line": 4, "effect": "ask", "reason": "any other command needs a person", "fallback": True}]
    plain = plan_for(SHAPE.replace("otherwise ", ""), "proc:exec:**").to_data()
    assert all("fallback" not in rule for kind in ("granted", "ask", "denied")
               for part in plain["requests"][0][kind] for rule in part["rules"])  # fmt: skip


def test_the_strictest_fallback_wins_and_approvals_combine() -> None:
    text = """\
otherwise ask fs:write:/** approvals 1 of [alice, bob]
otherwise ask fs:write:/docs/** approvals 1 of [carol]
otherwise deny fs:write:/docs/private/**
allow fs:write:/src/**
"""
    gate = Gate([plan_for(text, "fs:write:/**")])
    assert gate.decide("fs:write:/src/a").effect == "allow"
    assert gate.decide("fs:write:/README").approvals == (Approvals(1, ("alice", "bob")),)
    both = gate.decide("fs:write:/docs/a")
    assert both.effect == "ask" and set(both.approvals) == {Approvals(1, ("alice", "bob")), Approvals(1, ("carol",))}
    assert gate.decide("fs:write:/docs/private/a").effect == "deny"


def test_a_fallback_that_gives_needs_its_condition_true() -> None:
    """An ``otherwise ask`` turns a deny into a question, so (like an allow) it applies only when
    its condition holds; an ``otherwise deny`` applies when its condition is unknown too."""
    text = """\
otherwise ask fs:write:/** when call.tool == "fs.write"
otherwise ask fs:write:/a/** when intent.kind == "x"
otherwise deny fs:write:/a/b/** when call.tool == "fs.write"
"""
    policy = parse_policy(text, "p.bgp")
    assert decide(policy, "fs", "write", "/z", {"intent.kind": "x"}).effect == "deny"
    assert decide(policy, "fs", "write", "/a/z", {"intent.kind": "x"}).effect == "ask"
    assert decide(policy, "fs", "write", "/a/z", {"intent.kind": "y"}).effect == "deny"
    assert decide(policy, "fs", "write", "/a/b/z", {"intent.kind": "x"}).effect == "deny"


def test_a_fallback_in_a_mode_applies_in_that_mode() -> None:
    text = """\
allow fs:read:/src/**
otherwise ask fs:read:/**
mode locked {
    otherwise deny fs:read:/**
}
"""
    policy = parse_policy(text, "p.bgp")
    assert decide(policy, "fs", "read", "/etc/x", {}).effect == "ask"
    assert decide(policy, "fs", "read", "/etc/x", {}, "locked").effect == "deny"
    assert decide(policy, "fs", "read", "/src/x", {}, "locked").effect == "allow"


def test_explain_lists_fallbacks_last_and_says_what_they_decide() -> None:
    policy = parse_policy(SHAPE, "p.bgp")
    found = explain(Compiler(policy), order("proc:exec:**"), order("proc:exec:**").requests.atoms[0])
    kinds = [trace.rule.keyword for trace in found.traces]
    assert kinds == ["deny", "deny", "allow", "allow", "otherwise deny", "otherwise deny", "otherwise ask"]
    assert found.traces[-1].why == "applies to what no other rule matches in **"


def test_urls_a_fallback_deny_widens_and_a_fallback_ask_never_does() -> None:
    """A deny on a URL stands for every scheme and port of it; an ``otherwise ask`` gives access,
    so it is read exactly as written, like an allow."""
    text = """\
otherwise ask net:connect:https://a.com/**
otherwise deny net:connect:https://a.com/private/**
"""
    gate = Gate([plan_for(text, "net:connect:**")])
    assert gate.decide("net:connect:https://a.com/x").effect == "ask"
    assert gate.decide("net:connect:http://a.com/x").effect == "deny"
    assert gate.decide("net:connect:https://a.com:8443/private/x").effect == "deny"
    assert gate.decide("net:connect:https://a.com/private/x").effect == "deny"


def test_on_a_case_insensitive_file_system_no_fallback_reaches_a_rules_case_variants() -> None:
    text = """\
filesystem case-insensitive
allow fs:write:/src/**
otherwise ask fs:write:/**
"""
    policy = parse_policy(text, "p.bgp")
    gate = Gate([Compiler(policy).compile(order("fs:write:/**"))])
    assert gate.decide("fs:write:/src/a").effect == "allow"
    assert gate.decide("fs:write:/SRC/a").effect == "deny"  # the allow names it, up to case; it never folds
    assert gate.decide("fs:write:/docs/a").effect == "ask"
    assert decide(policy, "fs", "write", "/SRC/a", {}).effect == "deny"
    assert decide(policy, "fs", "write", "/Docs/a", {}).effect == "ask"


def test_a_fallback_the_algebra_cannot_decide_asks_for_nothing() -> None:
    """Undecided, an ``otherwise ask`` gives nothing (as an allow grants nothing) and an
    ``otherwise deny`` cuts the whole request out of every fallback question."""
    compiler = Compiler(parse_policy("otherwise ask fs:write:/**\n", "p.bgp"), order_budget=1)
    result = compiler.request(order("fs:write:/a").requests.atoms[0], {}, None, Budget(1))
    assert result.verdict == "denied" and result.unknown and not result.ask
    cut = parse_policy("otherwise ask fs:write:/**\notherwise deny fs:write:/a/**\n", "p.bgp")
    from bgc.core import compiler as compiler_module

    real = compiler_module._overlaps

    def undecided_deny(a, b, budget):  # type: ignore[no-untyped-def]
        return None if b.text == "/a/**" else real(a, b, budget)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiler_module, "_overlaps", undecided_deny)
        plan = Compiler(cut).compile(order("fs:write:/**"))
    (request,) = plan.requests
    assert request.unknown and Gate([plan]).decide("fs:write:/a/b").effect == "deny"
    assert Gate([plan]).decide("fs:write:/b").effect == "ask"


# --- exact against a brute-force reference -----------------------------------------------------

SEGMENTS = ["a", "b", "*", "**", "a*", "[ab]"]
KINDS = ["allow", "ask", "deny", "otherwise ask", "otherwise deny", "otherwise ask?", "otherwise deny?", "allow?", "deny?"]
"""``?``: the rule's condition is on ``call.tool``, unknown while compiling (an allow or an
``otherwise ask`` then never applies; a deny or an ``otherwise deny`` always does)."""
REQUIREMENTS = {"": Approvals(1), " approvals 1 of [alice]": Approvals(1, ("alice",))}

patterns = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3).map(lambda segs: "/" + "/".join(segs))
rules = st.lists(st.tuples(st.sampled_from(KINDS), patterns, st.sampled_from(sorted(REQUIREMENTS))), max_size=7)


def policy_text(generated: list[tuple[str, str, str]], case_insensitive: bool = False) -> str:
    lines = ["filesystem case-insensitive"] if case_insensitive else []
    for kind, pattern, approvals in generated:
        when = ' when call.tool == "t"' if kind.endswith("?") else ""
        clause = approvals if kind.endswith("ask") or kind == "otherwise ask?" else ""
        lines.append(f"{kind.rstrip('?')} fs:write:{pattern}{when}{clause}")
    return "\n".join(lines) + "\n"


def reference(generated: list[tuple[str, str, str]], text: str, fold: bool = False) -> tuple[str, set[Approvals]]:
    """docs/semantics.md, "Fallbacks", directly: deny, ask, allow; then, where none of those
    matches (up to case, on a case-insensitive file system), the strictest fallback; else deny.
    Restricting rules (deny, ask, otherwise deny) match up to case there; allows and
    ``otherwise ask`` never do."""
    variants = {"".join(v) for v in itertools.product(*({c.lower(), c.upper()} for c in text))} if fold else {text}

    def hits(kind: str, folded: bool) -> list[str]:
        return [
            approvals
            for rule_kind, pattern, approvals in generated
            if rule_kind == kind and any(reference_regex(pattern).fullmatch(v) for v in (variants if folded else {text}))
        ]

    restricting = {kind: hits(kind, fold) for kind in ("deny", "ask", "otherwise deny", "deny?", "otherwise deny?")}
    allowed = hits("allow", False)
    if restricting["deny"] or restricting["deny?"]:
        return "deny", set()
    if restricting["ask"]:
        return "ask", {REQUIREMENTS[a] for a in restricting["ask"]}
    if allowed:
        return "allow", set()
    if fold and hits("allow", True):
        return "deny", set()
    if restricting["otherwise deny"] or restricting["otherwise deny?"]:
        return "deny", set()
    asked = hits("otherwise ask", False)
    return ("ask", {REQUIREMENTS[a] for a in asked}) if asked else ("deny", set())


def assert_exact(generated: list[tuple[str, str, str]], requested: str, universe: list[str], fold: bool = False) -> None:
    policy = parse_policy(policy_text(generated, fold), "gen.bgp")
    compiler = Compiler(policy)
    wide, narrow = (Gate([compiler.compile(order(f"fs:write:{atom}"))]) for atom in ("/**", requested))
    in_request = reference_regex(requested)
    seen: set[str] = set()
    for text in universe:
        expected, requirements = reference(generated, text, fold)
        refused = fold and any(segment.endswith(".") for segment in text.split("/"))
        if refused:
            expected, requirements = "deny", set()
        decision = wide.decide(f"fs:write:{text}")
        assert (decision.effect, set(decision.approvals)) == (expected, requirements), (text, policy_text(generated, fold))
        if in_request.fullmatch(text):
            if not refused:  # a refused text is no value of the request: the verdict is about values
                seen.add(expected)
            assert narrow.decide(f"fs:write:{text}").effect == expected, (text, requested)
        else:
            assert narrow.decide(f"fs:write:{text}").effect == "deny"
        assert decide(policy, "fs", "write", text, {}, compiler=compiler).effect == expected, text
        if expected != "deny" or refused:
            continue
        rule = decision.rule  # a denied value names the deny rule that decided it, or no rule
        if rule is not None:
            assert rule.effect == "deny", (text, rule)
    (result,) = compiler.compile(order(f"fs:write:{requested}")).requests  # the universe is a sample of the request
    assert result.verdict != "granted" or seen <= {"allow"}
    assert result.verdict in ("granted", "narrowed") or "allow" not in seen
    assert result.verdict != "denied" or seen <= {"deny"}


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules, patterns)
@example([("otherwise ask?", "/**", ""), ("otherwise ask", "/a/**", " approvals 1 of [alice]"), ("otherwise deny", "/a/b", "")], "/a/*")
@example([("allow", "/a/**", ""), ("deny?", "/a/b", ""), ("otherwise ask", "/**", ""), ("otherwise ask", "/*/b", "")], "/**")
def test_fallbacks_are_exact_against_brute_force(generated: list[tuple[str, str, str]], requested: str) -> None:
    assert_exact(generated, requested, UNIVERSE)


CI_NAMES = ["a", "A", "ab", "aB", "b."]
CI_UNIVERSE = ["/" + "/".join(p) for n in (1, 2) for p in itertools.product(CI_NAMES, repeat=n)]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules, patterns)
@example([("allow", "/a*", ""), ("ask", "/a/b", ""), ("otherwise ask", "/**", "")], "/a")
@example([("allow", "/a", ""), ("allow", "/*", "")], "/*")
def test_fallbacks_are_exact_on_a_case_insensitive_file_system(generated: list[tuple[str, str, str]], requested: str) -> None:
    assert_exact(generated, requested, CI_UNIVERSE, fold=True)

