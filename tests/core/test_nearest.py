"""The nearest rule to a value no rule took, and why it did not (bgc.core.nearest): in explain,
the gate's and the hook's reasons, and failing expects."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.compiler import Compiler, explain
from bgc.core.gate import Gate
from bgc.core.nearest import NEIGHBOURS, NearestIndex
from bgc.core.patterns import glob
from bgc.core.plan import RuleRef
from bgc.core.policy.loader import parse_policy
from bgc.core.resources.proc import encode_argv
from bgc.core.values.model import GrantAtom
from bgc.runtime.calls import implicit_plan
from tests.samples import bgc, examples


def index(resource: str, *texts: str, effect: str = "allow") -> NearestIndex:
    return NearestIndex(resource, [(effect, t, glob.parse(t), RuleRef("p.bgp", n + 1, effect)) for n, t in enumerate(texts)])


@pytest.mark.parametrize(
    ("resource", "rules", "value", "why", "fix"),
    [
        ("proc", ["pytest/**"], ["pytest"], "`**` at the end needs at least one more word", "pytest, pytest/**"),
        ("proc", ["npm/publish"], ["npm", "publish", "--access", "public"],
         "`npm publish --access public` has more words (`--access public`)", "npm/publish, npm/publish/**"),
        ("proc", ["git/status"], ["git", "stats"], "it has `status` where `git stats` has `stats` (word 2)", None),
        ("proc", ["pytest/**"], ["/usr/bin/pytest", "-x"], "`/usr/bin/pytest` is not `pytest`", None),
        ("proc", ["npm/run/test*"], ["npm", "run", "test:unit", "--watch"], "has more words (`--watch`)",
         "npm/run/test*, npm/run/test*/**"),
        ("fs", ["/src/**"], "/src", "it matches what lies below `/src`, not `/src` itself", "/src, /src/**"),
        ("fs", ["/src/*"], "/src/a/b.py", "`*` stays within one segment", "/src/**"),
        ("fs", ["/docs/*.md"], "/docs/guide/a.md", "`*.md` matches in `/docs` itself", "/docs/**/*.md"),
        ("fs", ["src/**"], "/src/a.py", "an fs path is absolute", "/src/**"),
        ("fs", ["/Src/**"], "/src/a.py", "patterns are case-sensitive", None),
        ("fs", ["/sr/**"], "/src/a.py", None, None),  # the first segment differs: no hint
        ("fs", ["/src/secrets/**"], "/src/b.py", None, None),  # `secrets` is no near miss of `b.py`
        ("fs", ["/src/tset/**"], "/src/test/a.py", "it has `tset` where `/src/test/a.py` has `test`", None),
        ("fs", ["/docs/**"], "/src/a.py", None, None),
    ],
)
def test_why_the_nearest_rule_does_not_match(resource: str, rules: list[str], value: object, why: str | None, fix: str | None) -> None:
    text = encode_argv(value) if isinstance(value, list) else str(value)
    near = index(resource, *rules, "/unrelated/**" if resource == "fs" else "unrelated/**").nearest(text)
    if why is None:
        assert near is None, near
        return
    assert near is not None and why in near.why and near.fix == fix, near
    assert str(near).startswith(f"nearest rule: allow `{rules[0]}` at p.bgp:1: ")


WORDS = st.sampled_from(["git", "status", "npm", "publish", "pytest", "-x", "--access", "src", "a.py", "tests"])
PATTERN_WORDS = st.one_of(WORDS, st.sampled_from(["*", "**", "test*", "*.py"]))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.lists(PATTERN_WORDS, min_size=1, max_size=4), min_size=1, max_size=6), st.lists(WORDS, min_size=1, max_size=5))
def test_a_fix_matches_the_value_and_a_matching_rule_is_never_the_hint(rules: list[list[str]], words: list[str]) -> None:
    """Whatever the rules: no hint names a rule that matches the value (it did decide it), and a
    suggested fix, pasted in place of the rule, matches the value (reference: the glob itself)."""
    texts = [text for text in dict.fromkeys("/".join(r) for r in rules) if _parses(text)]
    value = "/".join(words)
    near = index("proc", *texts).nearest(value)
    if near is None:
        return
    assert not glob.parse(near.text).matches(value)
    if near.fix is not None:
        assert any(glob.parse(piece.strip()).matches(value) for piece in near.fix.split(", ")), near


def _parses(text: str) -> bool:
    try:
        glob.parse(text)
    except glob.PatternError:
        return False
    return True


def test_the_work_per_value_is_bounded_whatever_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """4,000 rules: a value looks at a few neighbours of where it sorts, never at every rule."""
    big = index("fs", *(f"/src/m{n:04}/**" for n in range(4000)))
    looked: list[str] = []
    original = NearestIndex._why
    monkeypatch.setattr(NearestIndex, "_why", lambda self, entry, value: looked.append(entry.text) or original(self, entry, value))
    near = big.nearest("/src/m2000")
    assert near is not None and near.text == "/src/m2000/**"
    assert len(looked) <= 2 * 2 * NEIGHBOURS


# ---- where people meet it ------------------------------------------------------------------------

POLICY = """\
tool shell.run needs proc:exec:{argv}
tool fs.write needs fs:write:{path}
allow proc:exec:pytest/**
ask proc:exec:npm/publish
allow fs:write:/docs/** when intent.kind == "docs"
mode edit {
    allow fs:write:/src/**
}
"""


def test_explain_without_an_order_names_the_nearest_rule() -> None:
    policy = parse_policy(POLICY, "p.bgp")
    explained = explain(Compiler(policy), None, GrantAtom.parse("proc:exec:pytest"))
    assert explained.result.verdict == "denied" and explained.hint is not None
    assert explained.hint.text == "pytest/**" and explained.hint.fix == "pytest, pytest/**"
    assert explain(Compiler(policy), None, GrantAtom.parse("proc:exec:pytest/-x")).hint is None  # granted
    assert explain(Compiler(policy), None, GrantAtom.parse("proc:exec:ls/**")).hint is None  # a pattern: no hint


def test_a_rule_that_matches_but_does_not_apply_is_named_with_why() -> None:
    policy = parse_policy(POLICY, "p.bgp")
    compiler = Compiler(policy)
    near = compiler.nearest("fs", "write", "/src/a.py", {}, None)
    assert near is not None and near.why == "it matches, but only in mode `edit`"
    near = compiler.nearest("fs", "write", "/docs/a.md", {"intent.kind": "fix"}, None)
    assert near is not None and near.why == "it matches, but its condition is false here"
    near = compiler.nearest("fs", "write", "/docs/a.md", {}, None)
    assert near is not None and "cannot be decided here" in near.why
    assert compiler.nearest("fs", "write", "/src/a.py", {}, "edit") is None  # it applies: no hint


def test_the_gate_and_the_hook_say_it_in_their_reasons() -> None:
    policy = parse_policy(POLICY, "p.bgp")
    gate = Gate([implicit_plan(policy, None)])
    decision = gate.hinted("proc:exec:pytest", gate.decide("proc:exec:pytest"))
    assert decision.effect == "deny"
    assert decision.reason.startswith("no rule allows it; nearest rule: allow `pytest/**` at p.bgp:3: ")
    publish = gate.need_value("proc", "exec", encode_argv(["npm", "publish", "--access", "public"]))
    assert publish.effect == "deny" and "(write `npm/publish, npm/publish/**`)" in publish.reason
    assert gate.hinted("proc:exec:ls", gate.decide("proc:exec:ls")).reason == "no rule allows it"  # nothing near
    allowed = gate.decide("proc:exec:pytest/-x")
    assert gate.hinted("proc:exec:pytest/-x", allowed) is allowed


ORDER = """\
intent: {kind: test}
requests: ["proc:exec:**"]
origin: {model: m, parents: [], prompt: "sha256:4885856b4b31553605cc3a0d7c1626c219f8779b66664c5f697d86e330d2d9a5"}
"""


def test_bgc_gate_a_failing_expect_and_explain_show_it(tmp_path: Path) -> None:
    (tmp_path / "p.bgp").write_text(POLICY + "expect allow proc:exec:pytest\n")
    checked = bgc("check", "p.bgp", cwd=tmp_path)
    assert "nearest rule: allow `pytest/**` at p.bgp:3: `**` at the end needs at least one more word" in checked.stdout
    (tmp_path / "order.yaml").write_text(ORDER)
    bgc("compile", "order.yaml", "-p", "p.bgp", "--format", "json", "-o", "plan.json", "--fail-on", "never", cwd=tmp_path)
    gated = bgc("gate", "plan.json", "proc:exec:pytest", "proc:exec:ls", cwd=tmp_path)
    assert gated.exit_code == 4
    assert gated.stdout.splitlines() == [
        "deny\tproc:exec:pytest\tno rule allows it; nearest rule: allow `pytest/**` at p.bgp:3: `**` at the end needs "
        "at least one more word: it does not match `pytest` alone (write `pytest, pytest/**`)",
        "deny\tproc:exec:ls\tno rule allows it",
    ]
    explained = bgc("explain", "-p", "p.bgp", "proc:exec:npm/publish/--access/public", cwd=tmp_path)
    assert explained.exit_code == 1
    assert "hint: nearest rule: ask `npm/publish` at p.bgp:4: it matches the command with nothing after it" in explained.stdout
