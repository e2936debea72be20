"""``bgc check`` for policies: lints (exact, via bgc.core.patterns.glob), inline expects, exit codes, outputs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.patterns import glob
from bgc.analysis.checks import check_paths
from bgc.codes import CODES
from bgc.errors import ExitCode
from bgc.analysis.findings import Severity
from bgc.analysis.lints.never_matches import NOT_FS_PATHS
from bgc.app.render.findings_text import findings_text
from bgc.core.resources import normalise
from tests.samples import bgc

ROOT = Path(__file__).parents[2]
BUNDLED = sorted(str(path) for path in (ROOT / "policies").glob("*.bgp"))


def check_text(tmp_path: Path, text: str, name: str = "p.bgp"):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return check_paths([str(path)])


def ids(result) -> list[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return sorted((f.rule_id, f.span.line, f.span.col) for f in result.findings)


# ---- the bundled policies -----------------------------------------------------------------


def test_bundled_policies_check_clean_and_run_their_expects() -> None:
    result = check_paths(BUNDLED)
    assert [f"{f.span}: {f.rule_id} {f.message}" for f in result.findings] == []
    assert result.exit_code == ExitCode.OK
    assert {Path(p.path).name for p in result.policies} >= {"default.bgp", "strict.bgp", "modes.bgp"}
    assert all(policy.expects for policy in result.policies)


def test_bundled_expects_really_run(tmp_path: Path) -> None:
    """Flip one expect of the default policy: check must now fail on exactly that line."""
    for name in ("default.bgp", "base.bgp"):
        (tmp_path / name).write_text((ROOT / "policies" / name).read_text())
    default = tmp_path / "default.bgp"
    lines = default.read_text().splitlines()
    index = lines.index("expect allow fs:write:/src/parse.py")
    lines[index] = "expect deny fs:write:/src/parse.py"
    default.write_text("\n".join(lines) + "\n")
    result = check_paths([str(default)])
    assert ids(result) == [("BGC201", index + 1, 1)]
    assert result.exit_code == ExitCode.FINDINGS


# ---- lints --------------------------------------------------------------------------------


def test_allow_inside_deny_never_takes_effect(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        "deny fs:write:/secrets, /secrets/**\n"
        "allow fs:write:/src/**, /secrets/keys/**\n",
    )
    assert ids(result) == [("BGC101", 2, 25)]
    (finding,) = result.findings
    assert "deny at" in finding.message and ":1" in finding.message
    assert finding.severity is Severity.WARNING


def test_allow_inside_an_ask_or_a_union_of_denies(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        "ask fs:write:/a/**\n"
        "deny fs:write:/b/*.py\n"
        "deny fs:write:/b/*.txt\n"
        "allow fs:write:/a/x/**\n"  # inside the ask
        "allow fs:write:/b/*.py\n"  # inside one deny
        "allow fs:write:/b/*.md\n",  # in no rule
    )
    assert [f[:2] for f in ids(result)] == [("BGC101", 4), ("BGC101", 5)]


def test_shadowing_respects_conditions_modes_and_wildcards(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        "mode edit {\n"
        "    deny fs:write:/m, /m/**\n"
        "}\n"
        'deny fs:write:/c, /c/** when intent.kind == "x"\n'
        "deny *:*:/w, /w/**\n"
        "allow fs:write:/m/a\n"  # the deny only holds in one mode
        "allow fs:write:/c/a\n"  # the deny holds only under a condition
        "allow fs:write:/w/a\n"  # `*:*` covers fs:write
        "mode other {\n"
        "    allow fs:write:/m/a\n"  # the deny does not hold in this mode
        "}\n",
    )
    assert [f[:2] for f in ids(result)] == [("BGC101", 8)]


def test_ask_inside_deny(tmp_path: Path) -> None:
    result = check_text(tmp_path, "deny fs:write:/.git, /.git/**\nask fs:write:/.git/hooks/**\n")
    assert [f[:2] for f in ids(result)] == [("BGC102", 2)]


def test_deny_of_contents_without_the_directory(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        "deny fs:write:/.github/**\n"  # warned: /.github itself stays writable
        "deny fs:write:/.git, /.git/**\n"  # fine
        "deny fs:*:/ci/**\n"
        "deny *:*:/ci\n"  # `*:*` covers /ci
        "deny proc:exec:/**\n",  # the root: nothing to add
    )
    assert ids(result) == [("BGC103", 1, 15)]
    (finding,) = result.findings
    assert "`/.github` itself" in finding.message and "writable" in finding.message
    assert finding.hint == "deny both: deny fs:write:/.github, /.github/**"


@pytest.mark.parametrize("base", ["/my dir", "/a,b", "/a#b", '/say "hi"'])  # a tab is a control character: an error (test_hardening_values)
def test_directory_hint_is_a_rule_that_parses_to_what_it_says(tmp_path: Path, base: str) -> None:
    from bgc.core.policy.format import pattern_word
    from bgc.core.policy.loader import parse_policy

    result = check_text(tmp_path, f"deny fs:write:{pattern_word(base + '/**')}\n")
    (finding,) = result.findings
    assert finding.rule_id == "BGC103"
    suggested = finding.hint.removeprefix("deny both: ")
    (rule,) = parse_policy(suggested + "\n", "hint.bgp").rules
    assert (rule.effect, rule.resource, rule.action, rule.patterns) == ("deny", "fs", "write", (base, base + "/**"))


def test_directory_hint_quotes_like_the_formatter(tmp_path: Path) -> None:
    result = check_text(tmp_path, 'deny fs:write:"/my dir/**"\n')
    (finding,) = result.findings
    assert finding.hint == 'deny both: deny fs:write:"/my dir", "/my dir/**"'


def test_allow_everything_on_write(tmp_path: Path) -> None:
    result = check_text(tmp_path, "allow fs:write:/**\nallow *:*:**\nallow fs:read:/**\nallow fs:write:/src/**\n")
    assert [f[:2] for f in ids(result)] == [("BGC104", 1), ("BGC104", 2)]


def test_second_pattern_that_looks_like_an_atom(tmp_path: Path) -> None:
    result = check_text(tmp_path, "allow fs:write:/src/**, fs:read:/docs/**\nallow net:connect:https://a/**, https://b/**\n")
    assert ids(result) == [("BGC105", 1, 25)]


@pytest.mark.parametrize("pattern", ["src/**", "//etc/**", "/src/", "/a//b", "*", "?", "/x/*/", "[!a]/x", "a/**/b"])
def test_fs_pattern_that_can_never_match_a_normalised_path(tmp_path: Path, pattern: str) -> None:
    result = check_text(tmp_path, f"deny fs:write:/x, {pattern}\n")
    assert ids(result) == [("BGC107", 1, 19)]  # not BGC103 either: it would suggest such a pattern
    (finding,) = result.findings
    assert finding.severity is Severity.WARNING
    assert finding.message == f"`{pattern}` can never match a normalised fs path, so this deny has no effect"


@pytest.mark.parametrize("pattern", ["/", "/src/**", "/**/", "**", "**/x", "*/x", "**//x", "/src/*.py", "/*"])
def test_fs_patterns_that_can_match_are_not_flagged(tmp_path: Path, pattern: str) -> None:
    """`*/x` matches `/x` (`*` may be empty), `/**/` matches `/`: exact, not a guess."""
    result = check_text(tmp_path, f"allow fs:read:{pattern}\n")
    assert "BGC107" not in {rule for rule, _, _ in ids(result)}


def test_only_fs_rules_are_held_to_fs_paths(tmp_path: Path) -> None:
    result = check_text(tmp_path, "allow net:connect:https://h/x/\nallow *:read:src/a\nallow pkg:install:*\n")
    assert ids(result) == []


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="a/*?", min_size=1, max_size=5))
def test_not_fs_paths_is_exact(pattern: str) -> None:
    """BGC107's decision agrees with the gate: a pattern lies inside NOT_FS_PATHS exactly when
    no value the gate leaves unchanged by normalisation matches it (every witness is short)."""
    parsed = glob.parse(pattern)
    values = ("".join(chars) for size in range(1, 11) for chars in itertools.product("a/", repeat=size))
    can_match = any(normalise("fs", value) == value and parsed.matches(value) for value in values)
    assert bool(glob.is_subset(parsed, [glob.parse(text) for text in NOT_FS_PATHS])) == (not can_match)


def test_allow_on_call_tool_grants_nothing(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        'allow fs:write:/docs/** when intent.kind == "docs" and not call.tool == "shell.run"\n'
        'deny fs:write:/src/gen, /src/gen/** when call.tool == "codegen.run"\n'  # fine: a deny may use it
        'allow fs:read:/** when origin.model == "m"\n',
    )
    assert [f[:2] for f in ids(result)] == [("BGC106", 1), ("BGC111", 3)]  # 3: the proposer names its model
    assert "never grants anything" in result.findings[0].message


def test_allow_on_call_tool_or_something_else_can_still_grant(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        'allow fs:write:/e/** when call.tool == "t.one" or intent.kind == "x.y"\n'
        'allow fs:write:/f/** when call.tool == "t.one" and intent.kind == "x.y"\n'
        'allow fs:write:/g/** when not (call.tool == "t" and origin.model matches "m-*")\n',
    )
    # lines 1 and 3 can grant: on fields the proposer writes (BGC111); line 2 never can (BGC106)
    assert [f[:2] for f in ids(result)] == [("BGC106", 2), ("BGC111", 1), ("BGC111", 3)]


def test_an_allow_beside_a_catch_all_ask_is_told_of_the_fallback(tmp_path: Path) -> None:
    """The issue's shape written the old way: the ask takes the allow, and the hint names the
    fallback that says "allow these, ask about the rest"; written that way, nothing is flagged."""
    result = check_text(tmp_path, "allow proc:exec:pytest, pytest/**\nask proc:exec:**, x\n")
    assert [f[:2] for f in ids(result)] == [("BGC101", 1), ("BGC101", 1)]
    assert all(f.hint.endswith("make the ask at line 2 a fallback: `otherwise ask proc:exec:**`, ...") for f in result.findings)
    assert ids(check_text(tmp_path, "allow proc:exec:pytest, pytest/**\notherwise ask proc:exec:**\n")) == []
    denied = check_text(tmp_path, "deny fs:write:/a/**\nallow fs:write:/a/b\n").findings[0]
    assert "fallback" not in denied.hint  # a deny that takes an allow is no "ask about the rest"


def test_the_documented_fallback_example_holds(tmp_path: Path) -> None:
    """docs/policy-language.md's example of "allow these, ask about the rest": its expects hold."""
    import re

    docs = (ROOT / "docs" / "policy-language.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"## Fallbacks: `otherwise`\n\n```bgp\n(.*?)```", docs, re.S)
    result = check_text(tmp_path, block)
    assert ids(result) == [] and result.policies[0].expects == 4


def test_fallbacks_take_nothing_from_rules(tmp_path: Path) -> None:
    """An allow or ask inside a fallback is not shadowed (the fallback decides only the rest), and
    what an `otherwise deny X/**` leaves out is denied anyway (no BGC103)."""
    result = check_text(
        tmp_path,
        "allow fs:write:/src/**\n"
        "ask fs:write:/docs/**\n"
        "otherwise deny fs:write:/**\n"
        "otherwise ask fs:write:/tmp/**\n"  # inside the otherwise deny: the strictest fallback wins
        "otherwise deny fs:read:/etc/**\n"
        "allow fs:read:/**\n"
        "tool fs.write needs fs:write:{path}\n",
    )
    assert [f[:2] for f in ids(result)] == [("BGC113", 4), ("BGC113", 5)]
    by_line = {f.span.line: f for f in result.findings}
    assert "`/tmp/**` never reaches this otherwise ask" in by_line[4].message and "otherwise deny at" in by_line[4].message
    assert "allow at" in by_line[5].message


def test_a_fallback_without_effect_respects_conditions_modes_and_wildcards(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        "mode edit {\n"
        "    allow fs:write:/m/**\n"
        "    otherwise ask fs:write:/m/a\n"  # 3: the allow holds in this mode
        "}\n"
        'allow fs:write:/c/** when intent.kind == "x"\n'
        "otherwise ask fs:write:/m/b\n"  # 6: the allow holds only in one mode
        "otherwise ask fs:write:/c/a\n"  # 7: the allow holds only under a condition
        "deny *:*:/w, /w/**\n"
        "otherwise deny fs:write:/w/a\n"  # 9: `*:*` decides it
        "otherwise ask fs:write:/w/b, /v\n",  # 10: its first pattern only
    )
    found = [f[:3] for f in ids(result) if f[0] == "BGC113"]
    assert found == [("BGC113", 3, 28), ("BGC113", 9, 25), ("BGC113", 10, 24)]


def test_an_otherwise_ask_on_call_tool_never_asks(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        'otherwise ask fs:write:/** when call.tool == "fs.write"\n'
        'otherwise deny fs:write:/a/** when call.tool == "fs.write"\n'  # fine: it applies when unknown
        "tool fs.write needs fs:write:{path}\n",
    )
    assert [f[:2] for f in ids(result)] == [("BGC106", 1)]
    assert result.findings[0].message.startswith("this otherwise ask depends on `call.tool`")
    assert "never asks for anything" in result.findings[0].message


def test_a_fallback_on_an_unknown_target_is_flagged_and_makes_nothing_known(tmp_path: Path) -> None:
    result = check_text(tmp_path, "tool fs.write needs fs:write:{path}\notherwise ask fs:wrtie:/**\n")
    assert [f[:2] for f in ids(result)] == [("BGC110", 2)]
    assert "this otherwise ask never takes effect" in result.findings[0].message


def test_url_patterns_with_dot_segments_in_disguise(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        "deny net:connect:https://a/%2e%2e/**\n"
        "deny net:connect:https://a/..?x\n"
        "allow net:connect:https://a/ok/**\n",
    )
    assert [f[:2] for f in ids(result) if f[0] == "BGC107"] == [("BGC107", 1), ("BGC107", 2)]


# ---- expects ------------------------------------------------------------------------------


def test_failing_expect_names_the_deciding_rules(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        "allow fs:write:/src/**\n"
        'deny fs:write:/src/secrets, /src/secrets/** when intent.kind == "x"\n'
        "expect allow fs:write:/src/a.py\n"
        'expect deny fs:write:/src/secrets/k when intent.kind == "x"\n'
        'expect allow fs:write:/src/secrets/k when intent.kind == "y"\n'
        "expect deny fs:write:/src/secrets/k\n"  # unknown intent: the conditional deny still applies
        "expect allow fs:write:/src/b.py\n"
        "expect deny fs:write:/src/../etc/passwd\n"
        "expect allow fs:write:/docs/x\n",  # fails: no rule
    )
    assert ids(result) == [("BGC201", 9, 1)]
    (finding,) = result.findings
    assert finding.message == "expected allow for `fs:write:/docs/x`, got deny (denied)"
    assert finding.hint == "no rule applies, so it is denied (fail closed)"


def test_expects_in_modes(tmp_path: Path) -> None:
    result = check_text(
        tmp_path,
        "default mode ro\n"
        "mode ro {}\n"
        "mode edit {\n"
        "    allow fs:write:/src/**\n"
        "}\n"
        "expect deny fs:write:/src/a\n"
        "expect allow fs:write:/src/a in mode edit\n"
        "expect allow fs:write:/src/a in mode ro\n",
    )
    assert ids(result) == [("BGC201", 8, 1)]


def test_expect_failing_only_through_an_include_names_the_policy(tmp_path: Path) -> None:
    (tmp_path / "base.bgp").write_text("allow fs:read:/docs/**\nexpect allow fs:read:/docs/a\n")
    (tmp_path / "ok.bgp").write_text('include "base.bgp"\n')
    (tmp_path / "tight.bgp").write_text('include "base.bgp"\ndeny fs:read:/docs/a\n')
    result = check_paths([str(tmp_path / name) for name in ("base.bgp", "ok.bgp", "tight.bgp")])
    (finding,) = result.findings
    assert finding.span.file.endswith("base.bgp")
    assert finding.message.endswith(f"(in policy {tmp_path / 'tight.bgp'})")
    summary = findings_text(result).splitlines()[-3:]
    assert [line.split(": ", 1)[1] for line in summary] == [
        "1 rule, 0 tools, 1/1 expect holds",
        "1 rule, 0 tools, 1/1 expect holds",
        "2 rules, 0 tools, 0/1 expect holds",
    ]


# ---- results and exit codes ---------------------------------------------------------------


def test_exit_codes(tmp_path: Path) -> None:
    assert check_text(tmp_path, "allow fs:read:/**\n").exit_code == ExitCode.OK
    assert check_text(tmp_path, "allow fs:write:/**\n").exit_code == ExitCode.FINDINGS
    assert check_text(tmp_path, "alow fs:write:/**\n").exit_code == ExitCode.BAD_INPUT


def test_a_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    (tmp_path / "bad.bgp").write_text("allow fs:write:/src/[\n")
    (tmp_path / "good.bgp").write_text("allow fs:write:/**\n")
    result = check_paths([str(tmp_path / "bad.bgp"), str(tmp_path / "missing.bgp"), str(tmp_path / "good.bgp")])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert sorted(f.rule_id for f in result.findings) == ["BGC003", "BGC015", "BGC104"]
    assert len(result.errors) == 2 and len(result.policies) == 1
    assert all(f.rule_id in CODES for f in result.findings)


def test_cli_text_and_json(tmp_path: Path) -> None:
    path = tmp_path / "p.bgp"
    path.write_text("deny fs:write:/.github/**\nexpect deny fs:write:/.github/x\n")
    text = bgc("check", str(path))
    assert text.exit_code == 1
    assert f"{path}:1:15: warning[BGC103]:" in text.output
    assert "  deny fs:write:/.github/**\n                ^^^^^^^^^^^\n" in text.output
    machine = bgc("check", "--format", "json", str(path))
    assert machine.exit_code == 1
    (finding,) = json.loads(machine.output)["findings"]
    assert (finding["rule"], finding["line"], finding["col"], finding["severity"]) == ("BGC103", 1, 15, "warning")


def test_a_quoted_pattern_is_marked_quotes_and_all(tmp_path: Path) -> None:
    path = tmp_path / "p.bgp"
    path.write_text('deny fs:write:"/my dir/**"\n')
    text = bgc("check", str(path))
    assert f"{path}:1:15: warning[BGC103]:" in text.output
    assert '  deny fs:write:"/my dir/**"\n                ^^^^^^^^^^^^\n' in text.output  # 12: both quotes
    sarif = json.loads(bgc("check", "--format", "sarif", str(path)).output)
    region = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert (region["startColumn"], region["endColumn"]) == (15, 27)


def test_policy_summary_counts_agree_with_their_nouns(tmp_path: Path) -> None:
    one = check_text(tmp_path, "allow fs:read:/**\ntool t needs fs:read:{path}\nexpect allow fs:read:/a\n", "one.bgp")
    assert findings_text(one).splitlines()[-1].endswith("one.bgp: 1 rule, 1 tool, 1/1 expect holds")
    two = check_text(tmp_path, "allow fs:read:/**\nallow fs:write:/src/**\nexpect allow fs:read:/a\nexpect deny fs:write:/a\n", "two.bgp")
    assert findings_text(two).splitlines()[-1].endswith("two.bgp: 2 rules, 0 tools, 2/2 expects hold")


def test_each_policy_counts_its_own_failed_expects(tmp_path: Path) -> None:
    """The summary counts a policy's failed expects as they run, not by reading messages back: a
    shared file's expect that fails only in `tight (1).bgp` (parentheses in its path) still holds
    in `base.bgp` itself."""
    (tmp_path / "base.bgp").write_text("allow fs:read:/docs/**\nexpect allow fs:read:/docs/a\n")
    (tmp_path / "tight (1).bgp").write_text('include "base.bgp"\ndeny fs:read:/docs/a\n')
    result = check_paths([str(tmp_path / "base.bgp"), str(tmp_path / "tight (1).bgp")])
    assert [f.message.endswith(f"(in policy {tmp_path / 'tight (1).bgp'})") for f in result.findings] == [True]
    assert result.failed_expects == (0, 1)
    assert [line.split(": ", 1)[1] for line in findings_text(result).splitlines()[-2:]] == [
        "1 rule, 0 tools, 1/1 expect holds",
        "2 rules, 0 tools, 0/1 expect holds",
    ]
