"""The lints that compare rules with rules (BGC101/102 shadowed, BGC103 the directory itself, BGC113
a fallback without effect) read
only the rules whose patterns can overlap (bgc.analysis.lints.context.PatternsByPrefix): their
findings are those of comparing every rule with every other, byte for byte and in the same order,
and their work grows with the number of rules, not its square."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from bgc import codes
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.lints import directory_itself, fallback_shadowed, lint, shadowed
from bgc.analysis.lints.context import Context, pattern_span
from bgc.analysis.lints.never_matches import NOT_FS_PATHS
from bgc.core.patterns import glob
from bgc.core.policy.ast import Rule
from bgc.core.policy.format import atom_word, pattern_word
from bgc.core.policy.loader import parse_policy
from tests.samples import examples
from tests.work_steps import growth

# --- the references: every rule compared with every other ------------------------------------


def _covers(outer: Rule, inner: Rule) -> bool:
    return (outer.when is None and outer.resource in ("*", inner.resource) and outer.action in ("*", inner.action)
            and outer.mode in (None, inner.mode))  # fmt: skip


def shadowed_reference(context: Context) -> Iterator[Finding]:
    rules = [rule for rule in context.policy.rules if not rule.fallback]  # fallbacks take nothing, nor are taken
    for rule in rules:
        if rule.effect not in shadowed.STRONGER:
            continue
        cover = [other for other in rules if other.effect in shadowed.STRONGER[rule.effect] and _covers(other, rule)]
        if not cover:
            continue
        for index, text in enumerate(rule.patterns):
            if context.subset(text, [p for other in cover for p in other.patterns], rule, index):
                single = []
                for other in cover:
                    try:
                        if glob.is_subset(context.pattern(text), [context.pattern(p) for p in other.patterns]):
                            single.append(other)
                    except glob.AlgebraLimit:
                        continue
                culprits = single[:1] or cover
                where = ", ".join(f"{other.effect} at {other.span.file}:{other.span.line}" for other in culprits)
                code = codes.ALLOW_SHADOWED if rule.effect == "allow" else codes.ASK_SHADOWED
                never = "granted" if rule.effect == "allow" else "asked for"
                hint = "remove the pattern, or narrow the rule that takes it"
                ask = next((other for other in culprits if other.effect == "ask"), None)
                if rule.effect == "allow" and ask is not None:
                    more = ", ..." if len(ask.patterns) > 1 else ""
                    hint += (f"; to ask only about what no allow names, make the ask at line {ask.span.line} a fallback: "
                             f"`otherwise ask {atom_word(ask.resource, ask.action, ask.patterns[0])}`{more}")  # fmt: skip
                yield Finding(code, Severity.WARNING, f"`{text}` can never be {never}: everything it matches is taken by {where}",
                              pattern_span(rule, index), hint)  # fmt: skip


def fallback_reference(context: Context) -> Iterator[Finding]:
    """BGC113 by comparing every fallback with every rule: what decides a value before it."""
    for rule in context.policy.rules:
        if not rule.fallback:
            continue
        deciding = [other for other in context.policy.rules if _covers(other, rule)
                    and (not other.fallback or rule.effect == "ask" and other.effect == "deny")]  # fmt: skip
        for index, text in enumerate(rule.patterns):
            if not deciding or not context.subset(text, [p for other in deciding for p in other.patterns], rule, index):
                continue
            meeting = [other for other in deciding if any(glob.overlaps(context.pattern(text), context.pattern(p))
                                                           for p in other.patterns)]  # fmt: skip
            where = ", ".join(f"{other.keyword} at {other.span.file}:{other.span.line}" for other in meeting)
            yield Finding(codes.FALLBACK_WITHOUT_EFFECT, Severity.WARNING,
                          f"`{text}` never reaches this {rule.keyword}: every value it matches is decided by {where}",
                          pattern_span(rule, index),
                          "remove the pattern, or widen it to what no rule names (a fallback decides only that)")  # fmt: skip


def directory_itself_reference(context: Context) -> Iterator[Finding]:
    for rule in context.policy.rules:
        if rule.effect != "deny" or rule.fallback:
            continue
        scope = [other for other in context.policy.rules if other.effect == "deny" and not other.fallback
                 and (other.when is None or other.when == rule.when)
                 and other.resource in ("*", rule.resource) and other.action in ("*", rule.action)
                 and other.mode in (None, rule.mode)]  # fmt: skip
        for index, text in enumerate(rule.patterns):
            if not text.endswith("/**") or text.endswith("\\/**") or "://" in text:
                continue
            base = text[:-3]
            if base in ("", "*", "**") or base.endswith("/"):
                continue
            if rule.resource == "fs" and context.subset(base, NOT_FS_PATHS, rule, index):
                continue
            if context.subset(base, [p for other in scope for p in other.patterns], rule, index):
                continue
            what = "writable" if rule.action in ("write", "*") else f"open to `{rule.action}`"
            yield Finding(codes.DIRECTORY_ITSELF, Severity.WARNING,
                          f"`{text}` does not match `{base}` itself: the directory itself stays {what}",
                          pattern_span(rule, index),
                          f"deny both: {rule.effect} {atom_word(rule.resource, rule.action, base)}, {pattern_word(text)}")  # fmt: skip


# --- generated policies ----------------------------------------------------------------------

SEGMENTS = st.sampled_from(["a", "b", "ab", "src", "secrets", "*", "**", "*.py", "a*", "?", "[ab]", "x.key"])
PATHS = st.lists(SEGMENTS, min_size=1, max_size=4).map(lambda segments: "/" + "/".join(segments))
CONDITIONS = st.sampled_from(["", ' when call.tool == "t"', ' when intent.kind == "k"'])


@st.composite
def rule_lines(draw: st.DrawFn) -> str:
    effect = draw(st.sampled_from(["allow", "ask", "deny", "otherwise ask", "otherwise deny"]))
    resource, action = draw(st.sampled_from([("fs", "write"), ("fs", "read"), ("fs", "*"), ("*", "write"), ("*", "*")]))
    patterns = draw(st.lists(PATHS, min_size=1, max_size=3, unique=True))
    return f"{effect} {resource}:{action}:{', '.join(patterns)}{draw(CONDITIONS)}"


@st.composite
def policies(draw: st.DrawFn) -> str:
    outside = draw(st.lists(rule_lines(), min_size=1, max_size=12))
    inside = draw(st.lists(rule_lines(), max_size=6))
    text = "\n".join(outside) + "\n"
    if inside:
        text += "mode m {\n" + "\n".join(inside) + "\n}\n"
    return text


@settings(max_examples=examples(300))
@given(policies())
def test_indexed_lints_equal_every_pair_compared(text: str) -> None:
    policy = parse_policy(text, "p.bgp")
    indexed, reference = Context(policy), Context(policy)
    assert list(shadowed.check(indexed)) == list(shadowed_reference(reference))
    assert list(directory_itself.check(indexed)) == list(directory_itself_reference(reference))
    assert list(fallback_shadowed.check(indexed)) == list(fallback_reference(reference))
    assert indexed.undecided == reference.undecided


# --- growth ----------------------------------------------------------------------------------

_fresh = itertools.count()
"""A new name space for each policy built: the pattern algebra keeps its answers, and a
policy must not be linted faster for sharing another's patterns."""


def projects(n: int) -> str:
    """``n`` rules over projects, four per project (the benchmark's workload W), and a few
    denies that float over every project."""
    tag = next(_fresh)
    lines = [f"deny fs:*:/**/secrets{tag}/**", f"deny fs:write:/**/*.key{tag}"]
    for i in range(n):
        g = f"{tag}x{i // 4}"
        lines.append([f"allow fs:write:/p{g}/src/**", f"deny fs:write:/p{g}/src/secrets/**", f"allow fs:read:/p{g}/**",
                      f"ask fs:write:/p{g}/**/migrations/**"][i % 4])  # fmt: skip
    return "\n".join(lines) + "\n"


def test_lints_grow_linearly_with_the_rules() -> None:
    assert growth(lambda n: lint(parse_policy(projects(n), "p.bgp")), 400) <= 2.5
