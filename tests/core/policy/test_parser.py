"""The policy front end: every construct parses to the AST the compiler reads, with spans."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.values import canonical
from bgc.core.patterns import glob
from bgc.core.values.model import Digest
from bgc.core.policy import parser as policy_parser
from bgc.core.policy.ast import (
    And,
    Approvals,
    AtomTemplate,
    Compare,
    InList,
    Matches,
    Not,
    Or,
    PolicyFile,
    Rule,
    TemplateError,
)
from bgc.core.policy.loader import load_policy, parse_policy
from bgc.core.policy.parser import PolicyError, parse_source


def one_rule(text: str) -> Rule:
    (rule,) = parse_policy(text, "p.bgp").rules
    return rule


# ---- rules --------------------------------------------------------------------------------


def test_bare_rule() -> None:
    rule = one_rule("allow fs:write:/src/**\n")
    assert (rule.effect, rule.resource, rule.action, rule.patterns) == ("allow", "fs", "write", ("/src/**",))
    assert (rule.when, rule.because, rule.approvals, rule.mode) == (None, None, None, None)


def test_pattern_splits_on_first_two_colons_only() -> None:
    rule = one_rule("ask net:connect:https://pypi.org/**")
    assert (rule.resource, rule.action, rule.patterns) == ("net", "connect", ("https://pypi.org/**",))


def test_quoted_pattern_keeps_spaces_commas_and_hashes() -> None:
    rule = one_rule('allow fs:write:"/src/my dir/**", "/a,b#c/**"')
    assert rule.patterns == ("/src/my dir/**", "/a,b#c/**")


def test_quoted_pattern_keeps_glob_escapes_but_not_quote_escapes() -> None:
    rule = one_rule(r'deny fs:write:"/a\*b", "/q\"x", "/\\"')
    assert rule.patterns == (r"/a\*b", '/q"x', "/\\\\")  # `\"` is a quote; `\\` stays a glob escape


def test_several_patterns_and_wildcard_resource_action() -> None:
    rule = one_rule("deny *:*:/etc/**, /var/**,/root/**")
    assert (rule.resource, rule.action, rule.patterns) == ("*", "*", ("/etc/**", "/var/**", "/root/**"))


def test_keyword_words_are_patterns_after_a_comma() -> None:
    assert one_rule("allow fs:read:/a, when, because").patterns == ("/a", "when", "because")


def test_comment_after_a_space_ends_a_bare_pattern() -> None:
    assert one_rule("allow fs:write:/src/** #not part of it").patterns == ("/src/**",)
    assert one_rule("allow fs:write:/src/**, /docs/**\t# two").patterns == ("/src/**", "/docs/**")


@pytest.mark.parametrize(
    ("text", "col", "hint"),
    [
        ("allow fs:write:/src/a#b", 22, 'fs:write:"/src/a#b"'),
        ("deny fs:write:/src/**#not part of it", 22, 'fs:write:"/src/**#not"'),
        ("deny fs:write:/a, /b#c because \"x\"", 21, '"/b#c"'),
        ("deny fs:write:#x", 15, 'fs:write:"#x"'),
        ("tool t needs fs:write:/{p}#q", 27, 'fs:write:"/{p}#q"'),
        ("expect deny fs:write:/a#b", 24, 'fs:write:"/a#b"'),
    ],
)
def test_hash_glued_to_a_bare_pattern_is_an_error(text: str, col: int, hint: str) -> None:
    """`/src/a#b` would silently be `/src/a` plus a comment: a deny cut short protects less."""
    with pytest.raises(PolicyError) as caught:
        parse_policy(text + "\n", "p.bgp")
    error = caught.value
    assert (error.span.line, error.span.col, error.code) == (1, col, "BGC003")
    assert error.message == "`#` starts a comment here; quote the pattern to include it"
    assert f"write `{hint}`" in (error.hint or "")


@pytest.mark.parametrize(
    ("text", "col", "width", "segment"),
    [
        ("deny fs:write:/src/../.git/**", 20, 2, ".."),
        ("allow fs:write:/src/**/../x", 24, 2, ".."),
        ("allow fs:write:/a/./b", 19, 1, "."),
        ('allow fs:write:/x, "/a/[.]/b"', 24, 3, "[.]"),
        ("allow fs:write:/a/\\.\\./b", 19, 4, "\\.\\."),
        ("allow fs:write:/a\\/..\\/b", 20, 2, ".."),  # an escaped `/` separates too
        ("deny *:*:https://h/../x", 20, 2, ".."),
        ("allow fs:write:..", 16, 2, ".."),
        ("tool t needs fs:write:{p}/..", 27, 2, ".."),
        ("tool t needs fs:write:/./{p}", 24, 1, "."),
    ],
)
def test_dot_segment_in_a_pattern_is_an_error(text: str, col: int, width: int, segment: str) -> None:
    """No normalised value has a `.`/`..` segment: such a deny would protect nothing."""
    with pytest.raises(PolicyError) as caught:
        parse_policy(text + "\n", "p.bgp")
    error = caught.value
    assert (error.code, error.span.line, error.span.col, error.span.end_col - error.span.col) == (
        "BGC003", 1, col, width
    )
    assert error.message.startswith(f"`{segment}` segment in pattern `")
    assert "could never match" in error.message


@pytest.mark.parametrize("pattern", ["/a/.env", "/a/.../b", "/a/..x/b", "/a/.*", "/a/*./b", "/**/.git/**", "/a.b/c"])
def test_dots_that_are_not_a_whole_segment_are_fine(pattern: str) -> None:
    assert one_rule(f"deny fs:write:{pattern}").patterns == (pattern,)


def test_an_expect_value_may_have_dot_segments() -> None:
    """An expect is a concrete value the gate normalises: it may show what `..` becomes."""
    (expect,) = parse_policy("deny fs:write:/.git/**\nexpect deny fs:write:/src/../.git/config\n", "p.bgp").expects
    assert expect.value == "/src/../.git/config"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="a./\\*[]", min_size=1, max_size=8))
def test_dot_segment_errors_agree_with_the_request_rule(pattern: str) -> None:
    """A policy pattern is refused for its dots exactly when a request's would be."""
    try:
        dotted = glob.has_dot_segment(pattern)
    except glob.PatternError:
        return
    try:
        parse_policy(f'allow fs:write:"{pattern}"\n', "p.bgp")
    except PolicyError as error:
        assert dotted and "segment in pattern" in error.message, error.render()
    else:
        assert not dotted


def test_quoted_pattern_keeps_its_hash() -> None:
    assert one_rule('allow fs:write:"/src/a#b"').patterns == ("/src/a#b",)
    assert one_rule('allow fs:write:/x, "/src/a#b"#c').patterns == ("/x", "/src/a#b")


def test_patterns_are_nfc_normalised() -> None:
    decomposed = unicodedata.normalize("NFD", "/café/**")
    assert decomposed != "/café/**"
    assert one_rule(f"deny fs:write:{decomposed}").patterns == ("/café/**",)


def test_because_travels_with_the_rule() -> None:
    assert one_rule('deny fs:*:/.env because "secrets \\"stay\\" out \\\\ here"').because == 'secrets "stay" out \\ here'


def test_clauses_in_any_order() -> None:
    a = one_rule('ask pkg:install:* because "x" approvals 1 of [a] when intent.kind == "k"')
    b = one_rule('ask pkg:install:* when intent.kind == "k" approvals 1 of [a] because "x"')
    assert a == b
    assert a.approvals == Approvals(1, ("a",), a.approvals.span)


def test_approvals() -> None:
    rule = one_rule('ask fs:write:/migrations/** approvals 2 of [alice, bob, "carol c", dba@example.com]')
    assert rule.approvals is not None
    assert (rule.approvals.count, rule.approvals.approvers) == (2, ("alice", "bob", "carol c", "dba@example.com"))


def test_fallbacks_ask_or_deny_what_no_rule_matches() -> None:
    rule = one_rule('otherwise ask proc:exec:** approvals 1 of [alice] because "the rest"')
    assert (rule.effect, rule.fallback, rule.keyword, rule.patterns) == ("ask", True, "otherwise ask", ("**",))
    assert rule.approvals is not None and (rule.approvals.count, rule.approvals.approvers) == (1, ("alice",))
    assert rule.because == "the rest"
    assert one_rule("ask proc:exec:**").fallback is False
    (inside,) = parse_policy("mode m {\n    otherwise deny fs:*:/**\n}\n", "p.bgp").rules
    assert (inside.keyword, inside.mode) == ("otherwise deny", "m")
    assert one_rule("otherwise deny fs:read:/a") != one_rule("deny fs:read:/a")  # a fallback is not a deny
    # a mode, a tool or a pattern may still be called `otherwise`
    policy = parse_policy("mode otherwise {}\ntool otherwise needs fs:read:{p}\nallow fs:read:/a, otherwise\n", "p.bgp")
    assert policy.modes == ("otherwise",) and policy.rules[0].patterns == ("/a", "otherwise")


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        ("otherwise allow fs:read:/**", "BGC018", "`otherwise allow` is not a rule"),
        ("otherwise fs:read:/**", "BGC001", "expected `allow`, `ask` or `deny`"),
        ("otherwise deny fs:read:/** approvals 1 of [a]", "BGC008", "only applies to `ask` rules"),
        ("otherwize ask fs:read:/**", "BGC001", "`otherwise`, `tool`"),
    ],
)
def test_a_fallback_that_allows_or_is_malformed_is_refused(text: str, code: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "p.bgp")
    assert caught.value.code == code and message in caught.value.message, caught.value.message


def test_in_sandbox_confines_what_an_allow_of_commands_grants() -> None:
    rule = one_rule('allow proc:exec:pytest, pytest/** when intent.kind in ["a"] in sandbox because "tests"')
    assert (rule.sandbox, rule.patterns, rule.because) == (True, ("pytest", "pytest/**"), "tests")
    assert one_rule("allow proc:exec:pytest").sandbox is False
    assert one_rule("allow proc:exec:pytest in sandbox") != one_rule("allow proc:exec:pytest")
    # the clause may come anywhere among the others, and `sandbox` is still a name elsewhere
    assert one_rule('allow proc:exec:make/** in sandbox because "b"') == one_rule('allow proc:exec:make/** because "b" in sandbox')
    policy = parse_policy("mode sandbox {}\ntool sandbox needs proc:exec:{a}\nallow fs:read:/sandbox, sandbox\n", "p.bgp")
    assert policy.modes == ("sandbox",) and policy.rules[0].patterns == ("/sandbox", "sandbox")


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("deny proc:exec:pytest in sandbox", 23),
        ("ask proc:exec:pytest in sandbox", 22),
        ("otherwise ask proc:exec:** in sandbox", 28),
        ("allow fs:write:/src/** in sandbox", 24),
        ("allow proc:*:** in sandbox", 17),
        ("allow proc:kill:* in sandbox", 19),
    ],
)
def test_in_sandbox_anywhere_but_an_allow_of_commands_is_refused(text: str, column: int) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "p.bgp")
    error = caught.value
    assert (error.code, error.span.col) == ("BGC008", column), error.message
    assert "`in sandbox` only applies to `allow proc:exec:` rules" in error.message


def test_rule_span_is_file_line_col_as_given() -> None:
    policy = parse_policy("# c\n\n  allow fs:read:/**   # why\n", "policies/x.bgp")
    (rule,) = policy.rules
    assert (rule.span.file, rule.span.line, rule.span.col) == ("policies/x.bgp", 3, 3)
    assert rule.pattern_spans[0].col == 17


def test_pattern_spans_cover_each_pattern_as_written() -> None:
    # A quoted pattern's span is the quoted token, both quotes included, first in the list or
    # later, so the caret (and SARIF's endColumn) never takes one quote and leaves the other.
    line = 'deny fs:write:"/my dir/**", "/a \\" b/**", /c/**'
    (rule,) = parse_policy(line + "\n", "p.bgp").rules
    written = ['"/my dir/**"', '"/a \\" b/**"', "/c/**"]
    assert [line[span.col - 1 : span.end_col - 1] for span in rule.pattern_spans] == written
    assert all(span.line == span.end_line == 1 for span in rule.pattern_spans)


# ---- conditions ---------------------------------------------------------------------------


def condition(text: str):  # type: ignore[no-untyped-def]
    return one_rule(f"allow fs:read:/x when {text}").when


def test_condition_forms() -> None:
    assert condition('intent.kind == "a"') == Compare("intent.kind", "==", "a", None)  # type: ignore[arg-type]
    assert condition('origin.model != "m"') == Compare("origin.model", "!=", "m", None)  # type: ignore[arg-type]
    assert condition('call.tool in ["fs.read", "fs.list"]') == InList("call.tool", ("fs.read", "fs.list"), None)  # type: ignore[arg-type]
    assert condition('origin.model matches "claude-*"') == Matches("origin.model", "claude-*", None)  # type: ignore[arg-type]


def test_precedence_not_and_or() -> None:
    a, b, c = (Compare("intent.kind", "==", v, None) for v in "abc")  # type: ignore[arg-type]
    got = condition('not intent.kind == "a" and intent.kind == "b" or intent.kind == "c"')
    assert got == Or((And((Not(a, None), b), None), c), None)  # type: ignore[arg-type]
    got = condition('not (intent.kind == "a" and (intent.kind == "b" or intent.kind == "c"))')
    assert got == Not(And((a, Or((b, c), None)), None), None)  # type: ignore[arg-type]


def test_same_operator_chains_flatten() -> None:
    got = condition('intent.kind == "a" and (intent.kind == "b" and intent.kind == "c")')
    assert isinstance(got, And) and len(got.items) == 3


KLEENE = [
    ('intent.kind == "a"', {"intent.kind": "a"}, True),
    ('intent.kind == "a"', {"intent.kind": "b"}, False),
    ('intent.kind == "a"', {}, None),
    ('intent.kind != "a"', {}, None),
    ('not intent.kind == "a"', {}, None),
    ('intent.kind == "a" and origin.model == "m"', {"intent.kind": "b"}, False),
    ('intent.kind == "a" and origin.model == "m"', {"intent.kind": "a"}, None),
    ('intent.kind == "a" or origin.model == "m"', {"intent.kind": "a"}, True),
    ('intent.kind == "a" or origin.model == "m"', {"intent.kind": "b"}, None),
    ('intent.kind == "a" or origin.model == "m"', {"intent.kind": "b", "origin.model": "x"}, False),
    ('call.tool in ["fs.read"]', {"call.tool": "fs.read"}, True),
    ('call.tool in ["fs.read"]', {"call.tool": "fs.write"}, False),
    ('origin.model matches "claude-*"', {"origin.model": "claude-opus-5"}, True),
    ('origin.model matches "claude-*"', {"origin.model": "gpt-6"}, False),
    ('origin.model matches "claude-*"', {}, None),
]


@pytest.mark.parametrize(("text", "ctx", "expected"), KLEENE)
def test_kleene_evaluation(text: str, ctx: dict[str, str], expected: bool | None) -> None:
    assert condition(text).evaluate(ctx) is expected


# ---- tools --------------------------------------------------------------------------------


def test_tool_declarations() -> None:
    policy = parse_policy(
        "tool fs.write needs fs:write:{path}\n"
        "tool fs.move needs fs:write:{src}, fs:write:{dst}\n"
        'tool fs.save needs fs:write:"/my dir/{name}.txt"\n',
        "p.bgp",
    )
    assert [decl.tool for decl in policy.tools] == ["fs.write", "fs.move", "fs.save"]
    move = policy.tool("fs.move")
    assert move is not None
    assert [(t.resource, t.action, t.template, t.params) for t in move.needs] == [
        ("fs", "write", "{src}", ("src",)),
        ("fs", "write", "{dst}", ("dst",)),
    ]
    save = policy.tool("fs.save")
    assert save is not None and save.needs[0].template == "/my dir/{name}.txt"
    assert policy.tool("nope") is None


def template(text: str) -> AtomTemplate:
    (decl,) = parse_policy(f"tool t needs {text}", "p.bgp").tools
    return decl.needs[0]


def test_template_expansion_escapes_parameters() -> None:
    assert template("fs:write:/src/{name}").expand({"name": "a*b?.py"}) == (r"/src/a\*b\?.py",)


def test_template_escaped_brace_is_literal() -> None:
    t = template(r"fs:write:/x/\{lit\}/{name}")
    assert t.params == ("name",)
    assert t.expand({"name": "n"}) == (r"/x/\{lit\}/n",)


def test_list_parameter_yields_one_atom_per_element() -> None:
    t = template("fs:write:/{dir}/{file}")
    assert t.expand({"dir": ["a", "b"], "file": "f"}) == ("/a/f", "/b/f")
    assert t.expand({"dir": ["a", "b"], "file": ["x", "y"]}) == ("/a/x", "/a/y", "/b/x", "/b/y")


def test_integer_parameter_is_text() -> None:
    assert template("net:connect:https://h:{port}/").expand({"port": 8443}) == ("https://h:8443/",)


@pytest.mark.parametrize(
    "params", [{}, {"path": None}, {"path": True}, {"path": {"a": 1}}, {"path": ["a", 1.5]}, {"path": []}]
)
def test_unusable_parameter_raises(params: dict[str, object]) -> None:
    with pytest.raises(TemplateError) as caught:
        template("fs:write:{path}").expand(params)
    assert caught.value.param == "path"


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (canonical.FrozenMap({"a": 1}), "a map"),
        ({"a": 1}, "a map"),
        ([["a"]], "a list"),
        (1.5, "a number"),
        (True, "true"),
        (None, "null"),
        (b"\x00", "bytes"),
    ],
)
def test_unusable_parameter_is_named_in_the_order_s_words(value: object, kind: str) -> None:
    """The author of a YAML order knows maps and lists, not ``FrozenMap``."""
    with pytest.raises(TemplateError) as caught:
        template("fs:write:{path}").expand({"path": value})
    assert str(caught.value) == f"parameter 'path' is not text or an integer (got {kind})"


# ---- modes, filesystem --------------------------------------------------------------------


def test_modes_and_default_mode() -> None:
    policy = parse_policy(
        "allow fs:read:/**\n"
        "default mode readonly\n"
        "mode readonly {}\n"
        "mode edit {\n"
        "    allow fs:write:/src/**\n"
        "\n"
        "    deny fs:write:/src/vendor/**\n"
        "}\n",
        "p.bgp",
    )
    assert policy.modes == ("readonly", "edit")
    assert policy.default_mode == "readonly"
    assert [(rule.mode, rule.effect) for rule in policy.rules] == [(None, "allow"), ("edit", "allow"), ("edit", "deny")]


def test_filesystem_case_insensitive() -> None:
    assert parse_policy("filesystem case-insensitive", "p.bgp").case_insensitive is True
    assert parse_policy("filesystem case-sensitive", "p.bgp").case_insensitive is False
    assert parse_policy("", "p.bgp").case_insensitive is False


# ---- expects ------------------------------------------------------------------------------


def test_expect_forms() -> None:
    policy = parse_policy(
        "mode edit {}\n"
        "expect allow fs:write:/src/a.py\n"
        'expect deny fs:write:/src/secrets/k when intent.kind == "x" and origin.model == "m" in mode edit\n'
        'expect ask fs:write:"/my dir/a\\*b"\n',
        "p.bgp",
    )
    first, second, third = policy.expects
    assert (first.effect, first.resource, first.action, first.value, first.context, first.mode) == (
        "allow", "fs", "write", "/src/a.py", (), None,
    )  # fmt: skip
    assert second.context == (("intent.kind", "x"), ("origin.model", "m"))
    assert second.mode == "edit"
    assert third.value == "/my dir/a*b"  # a concrete value: the escape made `*` literal


# ---- includes and the policy id -----------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_include_splices_rules_where_it_appears(tmp_path: Path) -> None:
    write(tmp_path / "org" / "base.bgp", 'deny fs:*:/.env\ntool fs.read needs fs:read:{path}\ninclude "more.bgp"\n')
    write(tmp_path / "org" / "more.bgp", "deny fs:write:/.git/**\n")
    root = write(tmp_path / "repo.bgp", 'allow fs:read:/**\ninclude "org/base.bgp"\nallow fs:write:/src/**\n')
    policy = load_policy(root)
    assert [rule.patterns[0] for rule in policy.rules] == ["/**", "/.env", "/.git/**", "/src/**"]
    assert [file.path for file in policy.files] == ["repo.bgp", "org/base.bgp", "org/more.bgp"]
    assert policy.rules[2].span.file == os.path.join(str(tmp_path), "org", "more.bgp")
    assert policy.tool("fs.read") is not None


def test_included_spans_follow_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "p" / "base.bgp", "deny fs:*:/.env\n")
    write(tmp_path / "p" / "root.bgp", 'include "base.bgp"\n')
    monkeypatch.chdir(tmp_path)
    policy = load_policy("p/root.bgp")
    assert policy.path == "p/root.bgp"
    assert policy.rules[0].span.file == "p/base.bgp"


def test_diamond_include_is_spliced_once(tmp_path: Path) -> None:
    write(tmp_path / "d.bgp", "tool x needs fs:read:{p}\ndeny fs:*:/.env\n")
    write(tmp_path / "b.bgp", 'include "d.bgp"\n')
    write(tmp_path / "c.bgp", 'include "d.bgp"\n')
    policy = load_policy(write(tmp_path / "a.bgp", 'include "b.bgp"\ninclude "c.bgp"\n'))
    assert len(policy.rules) == 1 and len(policy.tools) == 1
    assert [file.path for file in policy.files] == ["a.bgp", "b.bgp", "d.bgp", "c.bgp"]


def test_include_cycle_is_an_error_at_the_include(tmp_path: Path) -> None:
    write(tmp_path / "a.bgp", 'allow fs:read:/**\ninclude "b.bgp"\n')
    write(tmp_path / "b.bgp", '# b\ninclude "a.bgp"\n')
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path / "a.bgp")
    error = caught.value
    assert error.code == "BGC010"
    assert error.span.file.endswith("b.bgp") and (error.span.line, error.span.col) == (2, 1)
    assert "include cycle" in error.message


def test_error_in_included_file_shows_that_files_line(tmp_path: Path) -> None:
    write(tmp_path / "base.bgp", "allow fs:read:/**\nalow fs:write:/x\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(write(tmp_path / "root.bgp", 'include "base.bgp"\n'))
    assert caught.value.span.file.endswith("base.bgp")
    assert caught.value.source == "alow fs:write:/x"


def test_policy_id_covers_every_file(tmp_path: Path) -> None:
    base = write(tmp_path / "base.bgp", "deny fs:*:/.env\n")
    root = write(tmp_path / "root.bgp", 'include "base.bgp"\n')
    first = load_policy(root)
    body = {"files": [{"path": f.path, "digest": f.digest} for f in first.files]}
    assert first.id() == Digest.of(canonical.envelope("bgc.Policy", 1, body)).text
    assert first.files[1] == PolicyFile("base.bgp", Digest.of(base.read_bytes()).text)
    write(base, "deny fs:*:/.env  # edited\n")
    assert load_policy(root).id() != first.id()
    assert load_policy(root).id() == load_policy(root).id()


def test_parse_policy_and_load_policy_agree(tmp_path: Path) -> None:
    text = "allow fs:read:/**\n"
    path = write(tmp_path / "p.bgp", text)
    assert parse_policy(text, path).id() == load_policy(path).id()


def test_parse_source_keeps_statements_and_comments() -> None:
    source = parse_source('# top\ninclude "b.bgp"  # why\nmode m {\n  # inner\n}\n', "s.bgp")
    assert [type(s).__name__ for s in source.statements] == ["Include", "ModeBlock"]
    assert [(c.text, c.span.line, c.span.col) for c in source.comments] == [
        ("# top", 1, 1), ("# why", 2, 18), ("# inner", 4, 3),
    ]  # fmt: skip


def test_hash_inside_a_string_is_not_a_comment() -> None:
    source = parse_source('allow fs:read:"/a#b" because "see #12"  # real\n', "s.bgp")
    assert [c.text for c in source.comments] == ["# real"]


# ---- the parser is built once and cached --------------------------------------------------


def test_parser_tables_are_cached_and_a_damaged_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("BGC_CACHE_DIR", str(cache_dir))
    policy_parser.parser.cache_clear()
    try:
        built = policy_parser.parser()
        (entry,) = [path for path in cache_dir.iterdir() if not path.name.startswith(".")]
        policy_parser.parser.cache_clear()
        loaded = policy_parser.parser()
        assert loaded is not built and loaded.parse("allow fs:read:/**\n") == built.parse("allow fs:read:/**\n")
        policy_parser.parser.cache_clear()
        entry.write_bytes(entry.read_bytes()[:-100])  # truncated: a miss, never an error
        assert parse_policy("allow fs:read:/**", "p.bgp").rules
        assert len(entry.read_bytes()) > 1000  # rebuilt and stored again
    finally:
        policy_parser.parser.cache_clear()


@pytest.mark.e2e
def test_importing_the_front_end_does_not_import_lark() -> None:
    code = "import sys, bgc.app.cli, bgc.core.policy.parser, bgc.core.policy.loader, bgc.analysis.checks; print('lark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_example_in_the_reference_parses() -> None:
    import re

    docs = Path(__file__).parents[3] / "docs" / "policy-language.md"
    blocks = re.findall(r"```bgp\n(.*?)```", docs.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 8
    for index, block in enumerate(blocks):
        parse_source(block, f"policy-language.md#example-{index}")


@given(st.text(alphabet='ab/\\"*[', max_size=12))
def test_escape_units_cut_text_into_characters_and_escapes(text: str) -> None:
    """The one escape walker: units cover the text in order; an escape is ``\\`` and the next
    character; only the very last character may be a lone ``\\``."""
    from bgc.core.policy.parser import escape_units

    units = list(escape_units(text))
    assert "".join(unit for _, unit in units) == text
    assert [index for index, _ in units] == [sum(len(u) for _, u in units[:i]) for i in range(len(units))]
    for position, (index, unit) in enumerate(units):
        if unit.startswith("\\"):
            assert len(unit) == 2 or (unit == "\\" and position == len(units) - 1 and index == len(text) - 1)
        else:
            assert len(unit) == 1
