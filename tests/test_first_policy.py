"""The new user's first policy, written from docs/policy-language.md in one try, holds.

"My agent may edit src/ and tests/, never touch .env or .git, may run pytest, must ask before
`npm publish`": the policy below is that sentence as the docs write it ("Write your first
policy"). This test holds it, word for word, so the docs cannot drift from a policy that works:
the docs' block and examples/first-policy/policy.bgp must be exactly it, `bgc check` and `bgc
test` must pass with every expect line, the expects must say each part of the sentence, and
Claude Code's hook must decide the calls of the sentence so. The draft beside it, with the two
near misses a new user writes, must fail exactly those two expects, each with the hint that
fixes it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bgc.adapters.agents.hook import Options, decide
from tests.samples import bgc

ROOT = Path(__file__).resolve().parent.parent

POLICY = '''\
# What my agent may do in this project: edit src/ and tests/, never touch .env or .git, run
# pytest, and ask before `npm publish`.
include "claude-code.bgp"  # Claude Code's tools as atoms, shipped with bgc

allow fs:read:/** because "reading the project is how the agent works"
allow fs:write:/src/**, /tests/** because "source and tests are the agent's work"
deny fs:*:/**/.env, /.git, /.git/** because "secrets and the repository's internals stay out of reach"
allow proc:exec:pytest, pytest/** because "the tests, alone or with arguments"
ask proc:exec:npm/publish, npm/publish/** because "publishing is a person's decision"

expect allow fs:write:/src/app.py
expect allow fs:write:/tests/test_app.py
expect deny fs:write:/README.md
expect deny fs:read:/.env
expect deny fs:write:/config/.env
expect deny fs:write:/.git/config
expect deny fs:write:/.git
expect allow proc:exec:pytest
expect allow proc:exec:pytest/-x/tests
expect ask proc:exec:npm/publish
expect ask proc:exec:npm/publish/--access/public
expect deny proc:exec:npm/install
'''

SENTENCE = {
    "may edit src/": ("allow", "fs:write:/src/app.py"),
    "and tests/": ("allow", "fs:write:/tests/test_app.py"),
    "(and nothing else)": ("deny", "fs:write:/README.md"),
    "never touch .env": ("deny", "fs:read:/.env"),
    "(anywhere)": ("deny", "fs:write:/config/.env"),
    "or .git": ("deny", "fs:write:/.git/config"),
    "(the directory itself)": ("deny", "fs:write:/.git"),
    "may run pytest": ("allow", "proc:exec:pytest"),
    "(with arguments)": ("allow", "proc:exec:pytest/-x/tests"),
    "must ask before npm publish": ("ask", "proc:exec:npm/publish"),
    "(with options)": ("ask", "proc:exec:npm/publish/--access/public"),
}


def test_the_docs_and_the_example_are_this_policy() -> None:
    docs = (ROOT / "docs" / "policy-language.md").read_text(encoding="utf-8")
    section = docs.split("## Write your first policy", 1)[1]
    block = re.search(r"```bgp\n(.*?)```", section, re.S)
    assert block is not None and block.group(1) == POLICY
    assert (ROOT / "examples" / "first-policy" / "policy.bgp").read_text(encoding="utf-8") == POLICY


def test_its_expects_say_the_sentence() -> None:
    expects = {tuple(line.split()[1:]) for line in POLICY.splitlines() if line.startswith("expect ")}
    assert set(SENTENCE.values()) <= expects


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".claude" / "bgc").mkdir(parents=True)
    (tmp_path / ".claude" / "bgc" / "policy.bgp").write_text(POLICY)
    (tmp_path / "src").mkdir()
    return tmp_path


def test_bgc_check_and_bgc_test_pass_with_every_expect(project: Path) -> None:
    checked = bgc("check", ".claude/bgc/policy.bgp", cwd=project)
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.splitlines() == [
        ".claude/bgc/policy.bgp: 7 rules, 39 tools, 14/14 expects hold",  # 12 of its own, 2 of the mapping's
        "bgc check: all checks passed",
    ]
    tested = bgc("test", ".claude/bgc/policy.bgp", cwd=project)
    assert tested.exit_code == 0 and "14 passed" in tested.stdout, tested.output


CALLS = [
    ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, "allow"),
    ("Write", {"file_path": "tests/test_app.py", "content": "x"}, "allow"),
    ("Write", {"file_path": "README.md", "content": "x"}, "deny"),
    ("Read", {"file_path": ".env"}, "deny"),
    ("Edit", {"file_path": ".git/config", "old_string": "a", "new_string": "b"}, "deny"),
    ("Bash", {"command": "pytest"}, "allow"),
    ("Bash", {"command": "pytest -x tests"}, "allow"),
    ("Bash", {"command": "npm publish --access public"}, "ask"),
]


@pytest.mark.parametrize(("tool", "params", "effect"), CALLS, ids=[f"{t}-{e}-{i}" for i, (t, _, e) in enumerate(CALLS)])
def test_claude_codes_hook_decides_the_sentence(project: Path, tool: str, params: dict[str, str], effect: str) -> None:
    root = str(project.resolve())
    params = {**params, "file_path": f"{root}/{params['file_path']}"} if "file_path" in params else params
    stdin = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": tool, "cwd": root,
                        "tool_input": params}).encode()  # fmt: skip
    options = Options.of(policy=".claude/bgc/policy.bgp", store="none")
    code, out, err = decide("claude-code", options, stdin, {"CLAUDE_PROJECT_DIR": root}, root)
    assert code == 0, err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == effect


def test_the_draft_fails_its_two_near_misses_with_the_fix_in_the_hint() -> None:
    draft = ROOT / "examples" / "first-policy" / "draft.bgp"
    result = bgc("check", "-q", str(draft.relative_to(ROOT)), cwd=ROOT)
    assert result.exit_code == 1
    hints = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("hint:")]
    assert len(hints) == 2 and "(write `pytest, pytest/**`)" in hints[0] and "(write `npm/publish, npm/publish/**`)" in hints[1]
    fixed = draft.read_text().replace("allow proc:exec:pytest/** because \"the tests\"", "allow proc:exec:pytest, pytest/** because \"the tests\"")
    fixed = fixed.replace("ask proc:exec:npm/publish because", "ask proc:exec:npm/publish, npm/publish/** because")
    assert fixed.splitlines()[1:] == [
        line.replace('"the tests, alone or with arguments"', '"the tests"') for line in POLICY.splitlines()[2:]
    ]
