"""The compiler, plans and the gate (issue 5): DESIGN §3 semantics, exactly."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core import compiler
from bgc.core.compiler import Compiler, decide, explain
from bgc.errors import Span, UsageError
from bgc.core.gate import Gate
from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ModelError, ProposalOrigin, ToolCall, WorkOrder
from bgc.core.plan import PlanError, plan_from_data
from bgc.core.policy.ast import Policy, PolicyFile, Rule
from bgc.core.policy.loader import parse_policy
from bgc.app.render.gate import gate_line
from tests.samples import examples

ROOT = Path(__file__).resolve().parents[2]


def order(*requests: str, calls: tuple[ToolCall, ...] = (), kind: str = "patch.apply", model: str = "claude-opus-5") -> WorkOrder:
    return WorkOrder(
        Intent(kind, "test"),
        calls,
        GrantSet.of(GrantAtom.parse(r) for r in requests),
        ProposalOrigin(model, (), Digest.of(b"prompt")),
    )


def plan_for(policy_text: str, *requests: str, mode: str | None = None, **kw: object):  # type: ignore[no-untyped-def]
    policy = parse_policy(policy_text, "p.bgp")
    return Compiler(policy).compile(order(*requests, **kw), mode)  # type: ignore[arg-type]


BASE = """\
tool fs.write needs fs:write:{path}
tool fs.move needs fs:write:{src}, fs:write:{dst}
tool fs.write_many needs fs:write:{paths}
tool net.fetch needs net:connect:{url}
allow fs:write:/src/**, /tests/** because "source and tests"
ask fs:write:/package.json approvals 2 of [alice, bob, carol] because "dependency change"
deny fs:write:/src/secrets/** because "secrets"
ask net:connect:https://pypi.org/**
"""


def test_narrowing_intersects_and_cuts() -> None:
    plan = plan_for(BASE, "fs:write:/**")
    (request,) = plan.requests
    assert request.verdict == "narrowed"
    assert [str(part) for part in request.granted] == [
        "fs:write:/src/** except /src/secrets/**",
        "fs:write:/tests/**",
    ]
    assert [str(part) for part in request.ask] == ["fs:write:/package.json"]
    assert str(request.ask[0].approvals) == "2 of [alice, bob, carol]"
    denied = [str(part) for part in request.denied]
    assert "fs:write:/src/secrets/**" in denied
    assert "fs:write:/** except /package.json, /src/**, /src/secrets/**, /tests/**" in denied
    assert request.granted[0].rules[0].line == 5
    assert request.granted[0].rules[0].reason == "source and tests"


def test_request_inside_allow_is_granted_as_asked() -> None:
    plan = plan_for(BASE, "fs:write:/tests/**", "fs:write:/src/parse.py")
    assert [r.verdict for r in plan.requests] == ["granted", "granted"]
    assert plan.counts()["granted"] == 2 and not plan.calls


def test_verdicts_ask_and_denied() -> None:
    plan = plan_for(BASE, "fs:write:/package.json", "fs:write:/etc/passwd", "net:connect:https://pypi.org/simple/**")
    verdicts = {r.atom: r.verdict for r in plan.requests}
    assert verdicts == {
        "fs:write:/package.json": "ask",
        "fs:write:/etc/passwd": "denied",
        "net:connect:https://pypi.org/simple/**": "ask",
    }


def test_intersection_becomes_the_granted_pattern() -> None:
    plan = plan_for("allow fs:write:/src/**\n", "fs:write:/**/*.py")
    assert [str(p) for p in plan.requests[0].granted] == ["fs:write:/src/**/*.py"]
    assert plan.requests[0].verdict == "narrowed"


def test_wildcard_resource_and_action() -> None:
    plan = plan_for("allow *:*:/**\ndeny *:write:/etc/**\n", "fs:write:/etc/hosts", "fs:read:/etc/hosts")
    assert {r.atom: r.verdict for r in plan.requests} == {"fs:write:/etc/hosts": "denied", "fs:read:/etc/hosts": "granted"}


def test_conditions_are_fail_closed() -> None:
    text = """\
allow fs:write:/src/** when intent.kind == "patch.apply"
allow fs:write:/docs/** when call.tool == "fs.write"
deny fs:write:/src/gen/** when call.tool == "codegen.run"
"""
    plan = plan_for(text, "fs:write:/src/**", "fs:write:/docs/a.md")
    docs, src = plan.requests  # requests are kept sorted
    # the deny's condition is unknown while compiling requests: it cuts (fail closed)
    assert [str(p) for p in src.granted] == ["fs:write:/src/** except /src/gen/**"]
    # the allow's condition is unknown: it grants nothing
    assert docs.verdict == "denied"
    assert plan_for(text, "fs:write:/src/a", kind="docs.write").requests[0].verdict == "denied"


def test_condition_operators() -> None:
    text = 'allow fs:read:/** when origin.model in ["a", "b"] and not intent.kind matches "deploy.*"\n'
    assert plan_for(text, "fs:read:/x", model="a").requests[0].verdict == "granted"
    assert plan_for(text, "fs:read:/x", model="c").requests[0].verdict == "denied"
    assert plan_for(text, "fs:read:/x", model="b", kind="deploy.prod").requests[0].verdict == "denied"


def test_modes() -> None:
    text = """\
mode readonly {
  allow fs:read:/**
}
mode edit {
  allow fs:read:/**
  allow fs:write:/src/**
}
default mode readonly
deny fs:read:/.env
"""
    assert plan_for(text, "fs:write:/src/a").requests[0].verdict == "denied"
    edit = plan_for(text, "fs:write:/src/a", "fs:read:/.env", mode="edit")
    assert edit.mode == "edit"
    assert {r.atom: r.verdict for r in edit.requests} == {"fs:write:/src/a": "granted", "fs:read:/.env": "denied"}
    with pytest.raises(UsageError, match="unknown mode 'admin'"):
        plan_for(text, "fs:read:/a", mode="admin")


def test_explain_lists_rules_in_precedence_order_and_other_modes() -> None:
    text = """\
mode readonly {
  allow fs:read:/**
}
mode edit {
  allow fs:write:/src/** because "edit source"
}
default mode readonly
deny fs:write:/src/secrets/** because "secrets"
allow fs:write:/elsewhere/**
"""
    policy = parse_policy(text, "p.bgp")
    result = explain(Compiler(policy), order("fs:write:/src/**"), GrantAtom.parse("fs:write:/src/**"))
    assert [(t.rule.effect, t.rule.line, t.applies) for t in result.traces] == [("deny", 8, True), ("allow", 5, False)]
    assert result.traces[1].why == "only in mode 'edit'"
    assert result.result.verdict == "denied"
    assert result.other_modes == (("edit", "narrowed"),)


def test_calls_covered_pending_uncovered() -> None:
    calls = (
        ToolCall("fs.write", "local", {"path": "/src/a.py"}),
        ToolCall("fs.write", None, {"path": "/package.json"}),
        ToolCall("fs.write", None, {"path": "/src/../../etc/passwd"}),
        ToolCall("fs.write", None, {"path": "/src/secrets/key"}),
        ToolCall("fs.write", None, {}),
        ToolCall("shell.run", None, {"argv0": "rm"}),
        ToolCall("fs.move", None, {"src": "/src/a.py", "dst": "/tests/a.py"}),
        ToolCall("fs.write_many", None, {"paths": ["/src/a", "/etc/b"]}),
        ToolCall("fs.write", None, {"path": "/src/*"}),
        ToolCall("fs.write", None, {"path": "/src/a.py", "also": {"path": "/.git/config"}}),
    )
    plan = plan_for(BASE, "fs:write:/**", calls=calls)
    got = [(c.status, c.reason) for c in plan.calls]
    assert got[0] == ("covered", "every atom it needs is granted")
    assert got[1][0] == "pending"
    assert got[2] == ("uncovered", "fs:write:/src/../../etc/passwd: rejected: climbs above '/' with '..'")
    assert got[3][0] == "uncovered" and "denied by p.bgp:7 (secrets)" in got[3][1]
    assert got[4] == ("uncovered", "missing parameter 'path'")
    assert got[5] == ("uncovered", "unknown tool 'shell.run': the policy does not declare it")
    assert got[6][0] == "covered" and [n.atom for n in plan.calls[6].needs] == ["fs:write:/src/a.py", "fs:write:/tests/a.py"]
    assert got[7][0] == "uncovered" and [n.effect for n in plan.calls[7].needs] == ["allow", "deny"]
    # a parameter is literal: `/src/*` is the file named `*`, inside /src/**
    assert got[8][0] == "covered" and plan.calls[8].needs[0].atom == "fs:write:/src/*"
    # a parameter the declaration neither names nor ignores may carry what no rule checks
    assert got[9] == ("uncovered", "parameter 'also' is not one the declaration names or ignores")


def test_the_server_is_part_of_a_calls_identity() -> None:
    """A declaration covers the servers it names (`local` when it names none): the same tool
    name on another server is not covered, however the parameters look."""
    text = "tool fs.write needs fs:write:{path}\ntool fs.write on github, gitlab needs fs:write:/remote/{path}\nallow fs:write:/src/**\n"
    calls = (
        ToolCall("fs.write", "evil-server", {"path": "/src/a.py"}),
        ToolCall("fs.write", "local", {"path": "/src/a.py"}),
        ToolCall("fs.write", None, {"path": "/src/a.py"}),
        ToolCall("fs.write", "github", {"path": "/src/a.py"}),
        ToolCall("fs.read", "local", {"path": "/src/a.py"}),
    )
    plan = plan_for(text, "fs:write:/**", calls=calls)
    got = [(c.status, c.reason) for c in plan.calls]
    assert got[0] == ("uncovered", "tool 'fs.write' is not declared on server 'evil-server' (only on github, gitlab, local)")
    assert got[1][0] == got[2][0] == "covered"
    assert got[3][0] == "uncovered" and plan.calls[3].needs[0].atom == "fs:write:/remote/src/a.py"
    assert got[4] == ("uncovered", "unknown tool 'fs.read': the policy does not declare it")
    assert [(t.tool, t.servers) for t in plan.tools] == [("fs.write", ("github", "gitlab")), ("fs.write", ("local",))]


def test_a_tool_is_declared_once_per_server() -> None:
    with pytest.raises(Exception, match="tool `t` on `b` is already declared at p.bgp:1"):
        parse_policy("tool t on a, b needs x:y:{p}\ntool t on b needs x:y:{p}\n", "p.bgp")
    with pytest.raises(Exception, match="server `a` is named twice"):
        parse_policy("tool t on a, a needs x:y:{p}\n", "p.bgp")


def test_literal_params_never_widen_a_need() -> None:
    plan = plan_for("tool fs.write needs fs:write:{path}\nallow fs:write:/src/x\n", "fs:write:/src/x",
                    calls=(ToolCall("fs.write", None, {"path": "/src/[x]"}),))
    assert plan.calls[0].status == "uncovered"


def test_case_insensitive_filesystem_folds_deny_and_ask_only() -> None:
    text = "filesystem case-insensitive\nallow fs:write:/src/**\ndeny fs:write:/src/.env\n"
    plan = plan_for(text, "fs:write:/src/**")
    gate = Gate([plan])
    assert gate.decide("fs:write:/src/.ENV").effect == "deny"
    assert gate.decide("fs:write:/src/.env").effect == "deny"
    assert gate.decide("fs:write:/SRC/a").effect == "deny"  # folding an allow would widen it
    assert gate.decide("fs:write:/src/a").effect == "allow"


# --- plans: ids, determinism, reading back -----------------------------------------------------


def test_plan_round_trip_and_tamper_detection() -> None:
    plan = plan_for(BASE, "fs:write:/**", "net:connect:https://pypi.org/**", calls=(ToolCall("fs.write", None, {"path": "/src/a"}),))
    data = plan.to_data()
    assert plan_from_data(data) == plan
    assert data["id"] == str(plan.id())
    data["requests"][0]["granted"][0]["except"] = []
    with pytest.raises(PlanError, match="does not match its id"):
        plan_from_data(data)


def test_plan_id_covers_order_policy_and_mode() -> None:
    policy = parse_policy(BASE, "p.bgp")
    other_policy = parse_policy(BASE + "# a comment\n", "p.bgp")
    first = Compiler(policy).compile(order("fs:write:/src/**"))
    assert first.id() == Compiler(policy).compile(order("fs:write:/src/**")).id()
    assert first.id() != Compiler(other_policy).compile(order("fs:write:/src/**")).id()
    assert first.id() != Compiler(policy).compile(order("fs:write:/src/**", model="m2")).id()


@pytest.mark.e2e
def test_plans_are_byte_identical_across_hash_seeds() -> None:
    args = ["compile", "examples/orders/overreach.yaml", "-p", "policies/default.bgp", "--format", "cbor"]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", "from bgc.app.cli import main; main()", *args],
            cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True,
        ).stdout
        for seed in ("0", "7", "31337")
    }
    assert len(outputs) == 1 and len(next(iter(outputs))) > 100


# --- the gate ------------------------------------------------------------------------------------


def test_gate_values_are_concrete_and_normalised() -> None:
    gate = Gate([plan_for(BASE, "fs:write:/**")])
    decisions = {atom: gate.decide(atom) for atom in (
        "fs:write:/src/a.py", "fs:write:/src/./b//c.py", "fs:write:/src/*", "fs:write:/src/../.git/config",
        "fs:write:/../etc", "fs:write:src/a", "fs:write:/src/a\x00", "fs:write:/package.json",
        "fs:write:/src/secrets/k", "fs:read:/src/a", "nope",
    )}
    effects = {atom: d.effect for atom, d in decisions.items()}
    assert effects == {
        "fs:write:/src/a.py": "allow", "fs:write:/src/./b//c.py": "allow", "fs:write:/src/*": "allow",
        "fs:write:/src/../.git/config": "deny", "fs:write:/../etc": "deny", "fs:write:src/a": "deny",
        "fs:write:/src/a\x00": "deny", "fs:write:/package.json": "ask", "fs:write:/src/secrets/k": "deny",
        "fs:read:/src/a": "deny", "nope": "deny",
    }
    assert gate_line("fs:write:/package.json", decisions["fs:write:/package.json"]) == "ask\tfs:write:/package.json\t2 of [alice, bob, carol]"
    assert gate_line("fs:write:/src/secrets/k", decisions["fs:write:/src/secrets/k"]) == "deny\tfs:write:/src/secrets/k\tdenied by p.bgp:7 (secrets)"
    assert "rejected" in decisions["fs:write:/../etc"].reason


def test_gate_root_resolves_symlinks(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "secrets").mkdir()
    (tmp_path / "src" / "out").symlink_to("/etc")
    (tmp_path / "src" / "key").symlink_to(tmp_path / "src" / "secrets" / "k")
    (tmp_path / "src" / "ok").symlink_to(tmp_path / "src" / "real")
    gate = Gate([plan_for(BASE, "fs:write:/**")], root=str(tmp_path))
    assert gate.decide("fs:write:/src/out/passwd").effect == "deny"
    assert "leaves the root" in gate.decide("fs:write:/src/out/passwd").reason
    assert gate.decide("fs:write:/src/key").effect == "deny"
    assert gate.decide("fs:write:/src/ok").effect == "allow"
    assert gate.decide("fs:write:/src/new-file").effect == "allow"


def test_decide_for_expects() -> None:
    policy = parse_policy(BASE, "p.bgp")
    assert decide(policy, "fs", "write", "/src/a", {}).effect == "allow"
    assert decide(policy, "fs", "write", "/src/secrets/a", {}).effect == "deny"
    assert decide(policy, "fs", "write", "/package.json", {}).effect == "ask"
    assert decide(policy, "fs", "write", "/src/../x", {}).effect == "deny"


# --- never widen: generated policies and requests against a brute-force reference ---------------

SEGMENTS = ["a", "b", "*", "?", "**", "a*", "*b", "[ab]", "[!a]"]
NAMES = ["a", "b", "aa", "ab", "ba", "bb"]
UNIVERSE = ["/"] + ["/" + "/".join(p) for n in (1, 2, 3) for p in itertools.product(NAMES, repeat=n)]


def reference_regex(pattern: str) -> re.Pattern[str]:
    """An independent, git-faithful translation for the generated subset (small inputs only)."""
    parts = pattern.split("/")
    out = []
    for i, seg in enumerate(parts):
        last = i == len(parts) - 1
        after_star = i > 0 and parts[i - 1] == "**"  # the previous `/**/` already ends in `/`
        if seg == "**":
            if i == 0 or after_star:
                out.append(".*" if last else "(?:.*/)?")
            else:
                out.append("/.*" if last else "/(?:.*/)?")
            continue
        body = "".join({"*": "[^/]*", "?": "[^/]"}.get(ch, re.escape(ch)) for ch in seg.replace("[!a]", "\0").replace("[ab]", "\1"))
        body = body.replace("\\\x00", "[^a/]").replace("\x00", "[^a/]").replace("\\\x01", "[ab]").replace("\x01", "[ab]")
        out.append(body if i == 0 or after_star else "/" + body)
    return re.compile("".join(out))


patterns = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3).map(lambda segs: "/" + "/".join(segs))
rules = st.lists(st.tuples(st.sampled_from(["allow", "ask", "deny"]), patterns), min_size=0, max_size=5)


def make_policy(generated: list[tuple[str, str]]) -> Policy:
    return Policy(
        "gen.bgp",
        tuple(
            Rule(effect, "fs", "write", (pattern,), None, None, None, None, Span("gen.bgp", i + 1, 1))  # type: ignore[arg-type]
            for i, (effect, pattern) in enumerate(generated)
        ),
        (), (), None, (), (PolicyFile("gen.bgp", str(Digest.of(repr(generated).encode()))),), False,
    )


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules, patterns)
def test_never_widen_against_brute_force(generated: list[tuple[str, str]], requested: str) -> None:
    assert_exact_against_brute_force(generated, requested)


# many rules: cuts found through the prefix index, many excepts in one automaton, parts pruned
many_rules = st.lists(
    st.tuples(
        st.sampled_from(["allow", "ask", "deny"]), st.one_of(patterns, st.sampled_from(["/**/a", "/**/*b/**", "/a/**"]))
    ),
    min_size=6,
    max_size=16,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(many_rules, st.one_of(patterns, st.just("/**")))
def test_many_rules_are_exact_against_brute_force(generated: list[tuple[str, str]], requested: str) -> None:
    assert_exact_against_brute_force(generated, requested)


def assert_exact_against_brute_force(generated: list[tuple[str, str]], requested: str) -> None:
    """Every text of a small universe is decided by the plan exactly as the rules say."""
    plan = Compiler(make_policy(generated)).compile(order(f"fs:write:{requested}"))
    (result,) = plan.requests
    gate = Gate([plan])
    in_request = reference_regex(requested)
    by_effect = {e: [reference_regex(p) for eff, p in generated if eff == e] for e in ("allow", "ask", "deny")}
    seen = {"allow": 0, "ask": 0, "deny": 0}
    for text in UNIVERSE:
        hits = {e: any(r.fullmatch(text) for r in rs) for e, rs in by_effect.items()}
        if not in_request.fullmatch(text):
            expected = "deny"
        else:
            expected = "deny" if hits["deny"] else "ask" if hits["ask"] else "allow" if hits["allow"] else "deny"
            seen[expected] += 1
        assert gate.decide(f"fs:write:{text}").effect == expected, (text, plan.to_data())
    # the verdict agrees with the parts
    if result.verdict == "granted":
        assert seen["ask"] == seen["deny"] == 0
    if result.verdict in ("ask", "denied"):
        assert seen["allow"] == 0 and not result.granted
    if result.verdict == "denied":
        assert seen["ask"] == 0 and not result.ask
    if result.verdict in ("narrowed", "granted"):
        assert result.granted
    if seen["allow"]:
        assert result.verdict in ("granted", "narrowed")
    if seen["ask"] and not seen["allow"]:
        assert result.verdict in ("ask", "narrowed")


CI_NAMES = ["a", "A", "aB", "b.", "A~1", "a\u200c"]
CI_UNIVERSE = ["/" + "/".join(p) for n in (1, 2) for p in itertools.product(CI_NAMES, repeat=n)]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules, patterns)
def test_never_widen_on_a_case_insensitive_filesystem(generated: list[tuple[str, str]], requested: str) -> None:
    """Deny and ask fold case, allow never does, and alias spellings are refused: against a reference."""
    policy = make_policy(generated)
    policy = Policy(policy.path, policy.rules, (), (), None, (), policy.files, True)
    gate = Gate([Compiler(policy).compile(order(f"fs:write:{requested}"))])
    in_request = reference_regex(requested)
    exact = {e: [reference_regex(p) for eff, p in generated if eff == e] for e in ("allow", "ask", "deny")}

    def folded(effect: str, text: str) -> bool:  # some case variant of the text matches (glob.fold_case's meaning)
        variants = {"".join(v) for v in itertools.product(*({c.lower(), c.upper()} for c in text))}
        return any(r.fullmatch(v) for r in exact[effect] for v in variants)

    for text in CI_UNIVERSE:
        refused = any(seg.endswith(".") or "~1" in seg or "\u200c" in seg for seg in text.split("/"))
        if refused or not in_request.fullmatch(text):
            expected = "deny"
        elif folded("deny", text):
            expected = "deny"
        elif folded("ask", text):
            expected = "ask"
        else:
            expected = "allow" if any(r.fullmatch(text) for r in exact["allow"]) else "deny"
        assert gate.decide(f"fs:write:{text}").effect == expected, (text, generated, requested)


URL_HOSTS = ["a.com", "b.a.com", "c.b.a.com", "ab.com"]
URL_RULE_HOSTS = ["a.com", "*.a.com", "*", "b.a.com", "*.com"]
URL_UNIVERSE = [f"https://{host}/" + "/".join(p) for host in URL_HOSTS for n in (1, 2) for p in itertools.product(NAMES[:3], repeat=n)]


def url_spellings(url: str) -> list[str]:
    """Other spellings a WHATWG parser reads as ``url``: case, trailing dot, default port, escapes."""
    host, path = url[len("https://") :].split("/", 1)
    escaped = "/".join("".join(f"%{ord(c):02x}" for c in segment) for segment in path.split("/"))
    return [
        f"HTTPS://{host.upper()}/{path}",
        f"https://{host}.:443/{path}",
        f"https://{host}/{escaped}",
        f"https://{host.title()}./{path}#frag",
    ]


url_rules = st.lists(
    st.tuples(st.sampled_from(["allow", "ask", "deny"]), st.sampled_from(URL_RULE_HOSTS), patterns), min_size=1, max_size=4
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url_rules)
def test_never_widen_on_urls_whatever_the_spelling(generated: list[tuple[str, str, str]]) -> None:
    """Each canonical URL is decided as a reference says, and every spelling of it the same way."""
    rules = [(effect, f"https://{host}{path}") for effect, host, path in generated]
    policy = Policy(
        "gen.bgp",
        tuple(
            Rule(effect, "net", "connect", (pattern,), None, None, None, None, Span("gen.bgp", i + 1, 1))  # type: ignore[arg-type]
            for i, (effect, pattern) in enumerate(rules)
        ),
        (), (), None, (), (PolicyFile("gen.bgp", str(Digest.of(repr(rules).encode()))),), False,
    )
    gate = Gate([Compiler(policy).compile(order("net:connect:**"))])
    by_effect = {e: [reference_regex(p) for eff, p in rules if eff == e] for e in ("allow", "ask", "deny")}
    for url in URL_UNIVERSE:
        hits = {e: any(r.fullmatch(url) for r in rs) for e, rs in by_effect.items()}
        expected = "deny" if hits["deny"] else "ask" if hits["ask"] else "allow" if hits["allow"] else "deny"
        assert gate.decide(f"net:connect:{url}").effect == expected, (url, rules)
        for spelling in url_spellings(url):
            assert gate.decide(f"net:connect:{spelling}").effect == expected, (spelling, rules)


def test_a_long_literal_prefix_in_the_rule_index_needs_no_recursion() -> None:
    # the index is a trie with a node per character of a rule's literal prefix
    deep = "/" + "a" * 1000 + "/**"  # within MAX_PATTERN_LENGTH, deeper than the recursion limit
    (request,) = plan_for(f"allow fs:write:{deep}", "fs:write:/**").requests
    assert [part.pattern for part in request.granted] == [deep]


def test_module_level_compile_matches_compiler() -> None:
    policy = parse_policy(BASE, "p.bgp")
    assert compiler.compile(order("fs:write:/**"), policy) == Compiler(policy).compile(order("fs:write:/**"))


def test_templated_need_with_wildcards_must_lie_inside_the_granted_terms() -> None:
    text = "tool fs.glob_write needs fs:write:/src/{dir}/*.py\nallow fs:write:/src/**\ndeny fs:write:/src/gen/x.py\n"
    ok = plan_for(text, "fs:write:/src/**", calls=(ToolCall("fs.glob_write", None, {"dir": "lib"}),))
    cut = plan_for(text, "fs:write:/src/**", calls=(ToolCall("fs.glob_write", None, {"dir": "gen"}),))
    climb = plan_for(text, "fs:write:/src/**", calls=(ToolCall("fs.glob_write", None, {"dir": ".."}),))
    assert ok.calls[0].status == "covered"
    assert cut.calls[0].status == "uncovered"  # /src/gen/*.py includes the denied /src/gen/x.py
    # the parameter is normalised like any path: /src/../*.py is /*.py, which nothing grants
    assert climb.calls[0].status == "uncovered" and climb.calls[0].needs[0].atom == "fs:write:/*.py"


def test_plans_from_data_locates_the_bad_plan_in_a_list() -> None:
    from bgc.core.plan import plans_from_data

    good = plan_for(BASE, "fs:write:/src/**").to_data()
    bad = plan_for(BASE, "fs:write:/**").to_data()
    bad["mode"] = "edit"
    assert len(plans_from_data([good, good])) == 2
    with pytest.raises(PlanError) as caught:
        plans_from_data([good, bad])
    assert caught.value.path == (1, "id")
    with pytest.raises(PlanError, match="not a bgc plan"):
        plans_from_data({"requests": []})


def test_case_insensitive_folds_wildcard_resource_denies_for_fs_only() -> None:
    text = "filesystem case-insensitive\nallow *:*:/**\ndeny *:write:/.env\n"
    gate = Gate([plan_for(text, "fs:write:/**", "kv:write:/**")])
    assert gate.decide("fs:write:/.ENV").effect == "deny"  # a `*` deny still meets fs requests folded
    assert gate.decide("kv:write:/.ENV").effect == "allow"  # folding is about file names only
    assert gate.decide("kv:write:/.env").effect == "deny"


def test_gate_root_follows_links_before_dot_dot(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").touch()
    (tmp_path / "src" / "g").symlink_to("../.git")
    gate = Gate([plan_for(BASE + "deny fs:write:/.git/**\n", "fs:write:/**")], root=str(tmp_path))
    # lexically /src/g/../.git/config is /src/.git/config, but the OS lands in /.git/config
    decision = gate.decide("fs:write:/src/g/../.git/config")
    assert decision.effect == "deny"
    assert "p.bgp:9" in decision.reason


def test_gate_refuses_percent_encoded_dot_segments() -> None:
    gate = Gate([plan_for("allow net:connect:https://api.example.com/v1/**\n", "net:connect:https://api.example.com/v1/**")])
    assert gate.decide("net:connect:https://api.example.com/v1/items").effect == "allow"
    for sneaky in ("/v1/%2e%2e/admin", "/v1/%2E%2E/admin", "/v1/..%2fadmin", "/v1/..\\admin", "/v1/.%2e/admin"):
        decision = gate.decide("net:connect:https://api.example.com" + sneaky)
        assert decision.effect == "deny" and "rejected" in decision.reason, sneaky


def test_gate_lines_cannot_be_forged() -> None:
    gate = Gate([plan_for(BASE, "fs:write:/**")])
    for forged in ("fs:write:/.git/x\u2028allow\tfs:write:/src/a", "fs:write:/.git/x\nallow\tfs:write:/src/a", "fs:write:/a\x85b"):
        line = gate_line(forged, gate.decide(forged))
        assert len(line.splitlines()) == 1 and line.count("\t") == 2, line
        assert line.startswith("deny\t")
    assert gate_line("fs:write:/src/a\\b", gate.decide("fs:write:/src/a\\b")) == "allow\tfs:write:/src/a\\\\b"


def test_gate_names_malformed_atoms() -> None:
    gate = Gate([plan_for(BASE, "fs:write:/**")])
    for bad in ("fs:Write:/src/a", "*:*:/src/a", "  fs:write:/src/a", "fs:/src/a"):
        decision = gate.decide(bad)
        assert decision.effect == "deny" and decision.reason.startswith("not an atom"), bad


def test_plan_reading_is_strict() -> None:
    data = plan_for(BASE, "fs:write:/**").to_data()
    with pytest.raises(PlanError, match="unknown field 'extra'"):
        plan_from_data({**data, "extra": 1})
    with pytest.raises(PlanError, match="expected a digest"):
        plan_from_data({**data, "order": data["order"].upper().replace("SHA256", "sha256")})


def test_gate_names_the_deny_rule_for_a_case_variant() -> None:
    text = 'filesystem case-insensitive\nallow fs:write:/src/**\ndeny fs:write:/src/.env because "secret"\n'
    gate = Gate([plan_for(text, "fs:write:/**")])
    for variant in ("fs:write:/SRC/.env", "fs:write:/src/.ENV"):
        decision = gate.decide(variant)
        assert (decision.effect, decision.reason) == ("deny", "denied by p.bgp:3 (secret)"), variant
    assert gate.decide("fs:write:/etc/x").reason == "no rule allows it"


def test_escaped_template_text_does_not_let_bad_values_through() -> None:
    """A template with an escape (`\\{`) is still literal: its values meet the gate's checks (and the
    URL is shown as the gate reads it: WHATWG percent-encodes braces in a path)."""
    text = "allow net:connect:https://x.example/**\ntool web.get needs net:connect:https://x.example/\\{v\\}/{path}\n"
    for value, reason in (("%2e%2e/admin", "decodes to '..'"), ("a\u0085b", "control character"), ("e\u0301", "NFC")):
        plan = plan_for(text, "net:connect:https://x.example/**", calls=(ToolCall("web.get", None, {"path": value}),))
        (call,) = plan.calls
        assert call.status == "uncovered" and reason in call.reason, (value, call.reason)
    ok = plan_for(text, "net:connect:https://x.example/**", calls=(ToolCall("web.get", None, {"path": "items"}),))
    assert ok.calls[0].status == "covered" and ok.calls[0].needs[0].atom == "net:connect:https://x.example/%7Bv%7D/items"


def test_wildcard_template_values_meet_the_same_checks() -> None:
    text = "allow net:connect:https://x.example/**\ntool web.list needs net:connect:https://x.example/{dir}/*\n"
    bad = plan_for(text, "net:connect:https://x.example/**", calls=(ToolCall("web.list", None, {"dir": "%2e%2e"}),))
    assert bad.calls[0].status == "uncovered" and "decodes to '..'" in bad.calls[0].reason
    good = plan_for(text, "net:connect:https://x.example/**", calls=(ToolCall("web.list", None, {"dir": "v1"}),))
    assert good.calls[0].status == "covered"


def test_url_dot_segments_cut_by_query_fragment_or_parameters_are_refused() -> None:
    text = "tool t.net needs net:connect:{url}\nallow net:connect:https://ok.com/public/**\n"
    for url in ("https://ok.com/public/..?x", "https://ok.com/public/%2e%2e#x", "https://ok.com/public/..;/admin"):
        plan = plan_for(text, "net:connect:https://ok.com/public/**", calls=(ToolCall("t.net", None, {"url": url}),))
        assert plan.calls[0].status == "uncovered", url
        assert Gate([plan]).decide(f"net:connect:{url}").effect == "deny", url
    with pytest.raises(ModelError, match="reads as '.' or '..'"):
        GrantAtom.parse("net:connect:https://a/%2e%2e/x")


def test_gate_escapes_bytes_that_were_not_utf8() -> None:
    gate = Gate([plan_for(BASE, "fs:write:/**")])
    atom = "fs:write:/src/a\udc85fs:write:/.git/x"
    line = gate_line(atom, gate.decide(atom))
    assert "a\\x85fs" in line and line.encode("utf-8", "surrogateescape").count(b"\x85") == 0
