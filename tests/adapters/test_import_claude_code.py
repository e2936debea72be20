"""`bgc import claude-code`: Claude Code's permission rules as a bgc policy that decides the same.

The golden files in examples/claude-code/ are the command's output for a settings file holding
every rule form of the issue (and some it must refuse); rewrite them with BGC_UPDATE_GOLDEN=1 and
review the diff. The property test compares the translation with a reference written here from
Claude Code's permissions page (text matching, deny then ask then allow), on generated rule sets
and commands.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.resources.proc import encode_argv
from bgc.analysis.checks import EXPECT_CODES, check_paths
from bgc.adapters.imports.claude_code import translate
from bgc.core.compiler import Compiler, decide
from bgc.core.policy.format import format_file
from bgc.core.policy.loader import load_policy
from bgc.core.policy.parser import parse_source
from tests.samples import bgc, examples

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "claude-code"


def _bgc(*args: str, cwd: Path = ROOT):  # type: ignore[no-untyped-def]
    """The command in-process (the one runner: no traceback), from ``cwd``."""
    return bgc(*args, env={"NO_COLOR": "1"}, cwd=cwd)


def test_golden_through_the_cli() -> None:
    result = _bgc("import", "claude-code", "examples/claude-code/settings.json", "--allow-partial")
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        (EXAMPLE / "settings.bgp").write_text(result.stdout, encoding="utf-8")
        (EXAMPLE / "settings.stderr").write_text(result.stderr, encoding="utf-8")
    assert result.exit_code == 1  # some rules are not translated: findings
    assert result.stdout == (EXAMPLE / "settings.bgp").read_text(encoding="utf-8")
    assert result.stderr == (EXAMPLE / "settings.stderr").read_text(encoding="utf-8")


def test_the_golden_policy_is_formatted_and_its_expects_hold() -> None:
    path = str(EXAMPLE / "settings.bgp")
    assert not format_file(path).changed
    checked = check_paths([path])
    assert not checked.errors
    assert checked.failed_expects == (0,)
    assert not [f for f in checked.findings if f.rule_id in EXPECT_CODES]
    assert len(parse_source(Path(path).read_text(), path).statements) > 40  # rules and expects, not an empty file


def test_output_file_and_check_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "claude.bgp"
    result = _bgc(
        "import", "claude-code", "examples/claude-code/settings.json", "-o", str(out), "--home", "/home/dev", "--allow-partial"
    )
    assert result.exit_code == 1 and result.stdout == ""
    text = out.read_text()
    assert 'allow host:write:/home/dev/notes.md, /home/dev/notes.md/** because "Claude Code: allow Edit(~/notes.md)"' in text
    assert "Edit(~/notes.md)" not in result.stderr  # translated now
    checked = _bgc("check", str(out))
    assert "expects hold" in checked.stdout and "BGC201" not in checked.stdout, checked.stdout


def test_every_rule_translated_gives_exit_0(tmp_path: Path) -> None:
    settings_file = tmp_path / "settings.json"
    settings_file.write_text('{"permissions": {"allow": ["Bash(git status)"], "deny": ["Read(.env)"]}}')
    result = _bgc("import", "claude-code", str(settings_file))
    assert result.exit_code == 0 and result.stderr == ""
    assert "NOT translated" not in result.stdout


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("[1", ":2:1:"),
        ('{"permissions": []}', ":1:17:"),
        ('{"permissions": {"deny": "Bash"}}', ":1:26:"),
        ('{"permissions": {"allow": ["Bash", 3]}}', ":1:36:"),
        ('{"a": 1, "a": 2}', ":1:"),
    ],
)
def test_a_file_that_is_not_settings_is_refused_with_its_place_and_nothing_written(
    tmp_path: Path, content: str, where: str
) -> None:
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(content)
    out = tmp_path / "out.bgp"
    result = _bgc("import", "claude-code", str(settings_file), "-o", str(out))
    assert result.exit_code == 2
    assert f"{settings_file}{where}" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


# ---- what is not translated, and why (written by hand) -----------------------------------------

UNTRANSLATED = [
    ("Bash(curl * | sh)", "shell syntax"),
    ("Bash(echo $HOME)", "shell syntax"),
    ("Bash(git 'status')", "shell syntax"),
    ("Bash(git di*ff x)", "word boundary"),
    ("Bash(a*b)", "word boundary"),
    ("Bash()", "empty command"),
    ("Read(!keep.txt)", "negated"),
    ("Read(~/x)", "--home"),
    ("Read(src/[ab].py)", "classes"),
    ("Read(../outside)", "'..'"),
    ("Read(a//b)", "segments"),
    ("Write(src/**)", "Edit(...)"),
    ("WebFetch(domain:*.example.com)", "plain lower-case host"),
    ("WebFetch(https://x.test)", "plain lower-case host"),
    ("Grep", "other tools need too"),
    ("NotebookEdit", "other tools need too"),
    ("Agent(Ex*)", "plain name"),
    ("Agent(a b)", "plain name"),
    ("Glob(src/**)", "no specifier"),
    ("TeleportEverything", "not one of the Claude Code tools"),
    ("mcp__", "MCP tool name"),
    ("Bash(ls", "unbalanced"),
    ("Read(a\u202eb)", "invisible"),
]


@pytest.mark.parametrize(("rule", "reason"), UNTRANSLATED)
def test_rules_without_an_exact_translation_are_listed_not_guessed(rule: str, reason: str) -> None:
    imported = translate({"deny": [rule]}, source="s.json")
    assert imported.rules == ()
    [item] = imported.untranslated
    assert item.source == rule and reason in item.reason
    assert "\u202e" not in imported.text  # the header shows it escaped


# ---- precedence and matching against a reference from Claude Code's page ------------------------

WORDS = ("git", "push", "diff", "x")


def claude_reference(rules: dict[str, list[str]], command: str) -> str:
    """Claude Code's decision for a plain command (no shell syntax), from its permissions page:
    deny, then ask, then allow; `*` any characters; a trailing ` *` or `:*` the prefix alone or
    followed by a space; no rule: bgc's default, deny."""

    def matches(rule: str) -> bool:
        spec = rule[len("Bash(") : -1] if rule != "Bash" else "*"
        if spec.endswith(":*"):
            spec = spec[:-2] + " *"
        if spec.endswith(" *") and spec != "*":
            prefix = ".*".join(map(re.escape, spec[:-2].split("*")))
            return re.fullmatch(prefix + "( .*)?", command) is not None
        return re.fullmatch(".*".join(map(re.escape, spec.split("*"))), command) is not None

    for effect in ("deny", "ask", "allow"):
        if any(matches(rule) for rule in rules.get(effect, [])):
            return effect
    return "deny"


bash_rule = st.builds(
    lambda words, tail: f"Bash({' '.join(words)}{tail})",
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.sampled_from(["", " *", ":*", "*"]),
)
COMMANDS = [" ".join(c) for n in (1, 2, 3, 4) for c in itertools.product(WORDS + ("gitx",), repeat=n)]


@settings(max_examples=examples(15, thorough=300), deadline=None)
@given(st.dictionaries(st.sampled_from(["allow", "ask", "deny"]), st.lists(bash_rule, max_size=3), max_size=3))
def test_bash_rules_decide_as_claude_code_does(rules: dict[str, list[str]]) -> None:
    imported = translate(rules, source="s.json")
    assert imported.untranslated == ()
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bgc-import-{os.getpid()}.bgp"
    path.write_text(imported.text)
    try:
        policy = load_policy(str(path))
    finally:
        path.unlink()
    compiler = Compiler(policy)
    for command in COMMANDS:
        got = decide(policy, "proc", "exec", encode_argv(command.split()), {}, None, compiler).effect
        assert got == claude_reference(rules, command), (rules, command)


# ---- tools through bgc's mapping of Claude Code's tools ------------------------------------------


def _decider(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    """A run-time decider for the imported ``text`` beside the bundled mapping (no copy)."""
    from bgc.runtime.calls import CallDecider, implicit_plan

    path = tmp_path / "imported.bgp"
    path.write_text('include "claude-code.bgp"\n' + text)
    policy = load_policy(str(path))
    return CallDecider([implicit_plan(policy, None)])


AGENT = {"description": "d", "prompt": "p"}


def test_the_rules_of_the_issue_are_translated_and_decide_calls_as_claude_code(tmp_path: Path) -> None:
    """`deny Agent(Explore)` and `allow WebSearch` were dropped, one of them a deny: each now
    decides the call the hook maps from Claude Code's tool, and nothing else."""
    imported = translate(
        {"deny": ["Agent(Explore)"], "allow": ["WebSearch", "Agent", "Read"]}, source="s.json"
    )
    assert imported.untranslated == ()
    assert 'deny agent:spawn:Explore because "Claude Code: deny Agent(Explore)"' in imported.text
    assert 'allow search:web:** because "Claude Code: allow WebSearch"' in imported.text
    decider = _decider(tmp_path, imported.text)
    assert decider.decide_call("Agent", None, {**AGENT, "subagent_type": "Explore"}).effect == "deny"
    assert decider.decide_call("Task", None, {**AGENT, "subagent_type": "Explore"}).effect == "deny"  # its old name
    assert decider.decide_call("Agent", None, {**AGENT, "subagent_type": "general-purpose"}).effect == "allow"
    assert decider.decide_call("WebSearch", None, {"query": "bgc"}).effect == "allow"
    checked = check_paths([str(tmp_path / "imported.bgp")])
    assert not [f for f in checked.findings if f.rule_id in EXPECT_CODES], checked.findings


def _sample_params(needs: tuple, ignores: tuple[str, ...]) -> dict[str, object]:  # type: ignore[type-arg]
    """Parameters that fill every template of a declaration with a value its resource reads."""
    params: dict[str, object] = {}
    for need in needs:
        for name in need.params:
            whole = need.template.startswith("{" + name + "}")
            if need.resource in ("fs", "host") and whole:
                params[name] = "/src/a.py"
            elif need.resource == "net" and whole:
                params[name] = "https://example.com/a"
            else:
                params[name] = "x"
    return params


def test_a_tool_rule_decides_that_tool_and_no_other(tmp_path: Path) -> None:
    """For every tool the mapping declares: `deny TOOL` (when translated) denies a call of it
    and leaves every other tool's call as the rest of the policy decides it (here, allowed)."""
    from bgc.adapters.imports.claude_code import ALIASES, claude_code_tools
    from bgc.core.policy.bundled import bundled_file

    declared = {decl.tool: decl for decl in load_policy(bundled_file("claude-code.bgp")).tools if "local" in decl.servers}
    assert set(declared) == set(claude_code_tools())
    translated = 0
    for tool in sorted(declared):
        if tool in ("Read", "Edit", "Bash", "WebFetch"):
            continue  # their own syntax, tested above
        imported = translate({"deny": [tool]}, source="s.json")
        if imported.untranslated:
            continue
        translated += 1
        decider = _decider(tmp_path, imported.text + "allow *:*:**\n")
        for other, decl in declared.items():
            effect = decider.decide_call(other, None, _sample_params(decl.needs, decl.ignores)).effect
            same = ALIASES.get(other, other) == ALIASES.get(tool, tool)
            assert effect == ("deny" if same else "allow"), (tool, other, effect)
    assert translated >= 6  # Agent, Task, WebSearch, Glob, TodoWrite, ExitPlanMode, BashOutput, KillShell, ...


def test_a_deny_or_ask_not_translated_writes_nothing_without_allow_partial(tmp_path: Path) -> None:
    settings_file = tmp_path / "settings.json"
    settings_file.write_text('{"permissions": {"deny": ["Grep", "Read(.env)"], "allow": ["Bash(git status)"]}}')
    out = tmp_path / "out.bgp"
    refused = _bgc("import", "claude-code", str(settings_file), "-o", str(out))
    assert refused.exit_code == 1 and not out.exists() and refused.stdout == ""
    assert "not translated: deny Grep: Grep needs only fs:read" in refused.stderr
    assert "nothing written: 1 deny or ask rule could not be translated" in refused.stderr
    written = _bgc("import", "claude-code", str(settings_file), "-o", str(out), "--allow-partial")
    assert written.exit_code == 1 and "#   deny Grep: " in out.read_text()
    allow_only = tmp_path / "allow.json"
    allow_only.write_text('{"permissions": {"allow": ["Grep", "Bash(git status)"]}}')
    narrower = _bgc("import", "claude-code", str(allow_only))  # an allow left out only narrows: written
    assert narrower.exit_code == 1 and "allow proc:exec:git/status" in narrower.stdout


def test_every_other_setting_of_permissions_is_named(tmp_path: Path) -> None:
    imported = translate(
        {"allow": [], "defaultMode": "acceptEdits", "additionalDirectories": ["../lib", "/opt/x"],
         "disableBypassPermissionsMode": "disable", "mystery": True},
        source="s.json",
    )  # fmt: skip
    listed = [str(item) for item in imported.untranslated]
    assert [item.split(":")[0] for item in listed] == [
        'defaultMode "acceptEdits"', 'additionalDirectories "../lib"', 'additionalDirectories "/opt/x"', "mystery true"
    ]
    assert all(item.effect == "" for item in imported.untranslated)
    assert translate({"defaultMode": "default"}, source="s.json").untranslated == ()
