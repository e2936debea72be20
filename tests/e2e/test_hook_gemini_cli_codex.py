"""`bgc hook gemini-cli` and `bgc hook codex` end to end, run as each agent runs its hooks.

A project is set up with `bgc init gemini-cli` / `bgc init codex` (a subprocess); every case runs
the hook command init wrote into the agent's settings, through a shell, with the hook input as
JSON on stdin and a timeout, and reads the agent's answer from stdout (or the blocking exit 2):

* Gemini CLI (packages/core/src/hooks/hookRunner.ts) replaces `$GEMINI_PROJECT_DIR` in the command
  by the shell-quoted project directory, sets GEMINI_PROJECT_DIR and CLAUDE_PROJECT_DIR, and runs
  it with `bash -c` in the project directory;
* Codex runs the command in the session's working directory (the project here).

The tables of calls run served as a process per call, and alone through the hook's entry point in
this process (tests/server_support.py ``run_in_process`` says why that proves the same).

Every expected answer below is written by hand from the starter policy (policies/
claude-code-starter.bgp, base.bgp) and the mappings (policies/gemini-cli.bgp, codex.bgp,
agents.bgp): none is computed by bgc. The last test imports Claude Code permission rules about
MCP tools and checks that the hook decides MCP calls by them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_hook_claude_code import TIMEOUT, P, _fill
from tests.samples import bgc
from tests.server_support import SERVING, private_runtime, run_in_process, served, server_for

# (name, tool_name, tool_input, extra input fields, expected): allow, ask, deny or block (exit 2)
GEMINI: list[tuple[str, str, Any, dict[str, Any], str]] = [
    # ---- files: relative to the project, secrets, outside paths ----
    ("read source, relative", "read_file", {"file_path": "src/a.py"}, {}, "allow"),
    ("read source, absolute, with lines", "read_file", {"file_path": f"{P}/src/a.py", "start_line": 1, "end_line": 2}, {}, "allow"),
    ("read .env", "read_file", {"file_path": ".env"}, {}, "deny"),
    ("read .env via ..", "read_file", {"file_path": "src/../.env"}, {}, "deny"),
    ("read /etc/passwd", "read_file", {"file_path": "/etc/passwd"}, {}, "deny"),
    ("read outside, relative", "read_file", {"file_path": "../outside/secret.txt"}, {}, "deny"),
    ("read through a link leaving the project", "read_file", {"file_path": "link_out/secret.txt"}, {}, "deny"),
    ("read with an undeclared parameter", "read_file", {"file_path": "src/a.py", "follow": True}, {}, "deny"),
    ("read a nested path", "read_file", {"file_path": {"path": "src/a.py"}}, {}, "deny"),
    ("write source", "write_file", {"file_path": "src/new.py", "content": "x"}, {}, "allow"),
    ("write the README", "write_file", {"file_path": "README.md", "content": "x"}, {}, "allow"),
    ("write package.json", "write_file", {"file_path": "package.json", "content": "{}"}, {}, "ask"),
    ("replace in .git/config", "replace", {"file_path": ".git/config", "instruction": "i", "old_string": "a", "new_string": "b"}, {}, "deny"),
    ("replace in source", "replace", {"file_path": "src/a.py", "instruction": "i", "old_string": "a", "new_string": "b", "allow_multiple": True}, {}, "allow"),
    # ---- searches ----
    ("list the project", "list_directory", {"dir_path": "."}, {}, "allow"),
    ("list /etc", "list_directory", {"dir_path": "/etc"}, {}, "deny"),
    ("glob the project", "glob", {"pattern": "**/*.py"}, {}, "allow"),
    ("glob an absolute pattern", "glob", {"pattern": "/etc/*"}, {}, "deny"),
    ("glob a climbing pattern", "glob", {"pattern": "../**"}, {}, "deny"),
    ("glob a brace holding an absolute pattern", "glob", {"pattern": "{/etc/*,*.py}"}, {}, "deny"),
    ("grep src", "grep_search", {"pattern": "TODO", "dir_path": "src", "include_pattern": "*.py"}, {}, "allow"),
    ("grep lib, which holds a secrets directory", "grep_search", {"pattern": "TODO", "dir_path": "lib"}, {}, "deny"),
    ("grep data, which holds a linked directory", "grep_search", {"pattern": "TODO", "dir_path": "data"}, {}, "deny"),
    ("grep .git", "grep_search", {"pattern": "url", "dir_path": ".git"}, {}, "deny"),
    ("grep / (legacy name)", "search_file_content", {"pattern": "password", "dir_path": "/"}, {}, "deny"),
    # ---- the network, the agent ----
    ("search the web", "google_web_search", {"query": "bgc"}, {}, "ask"),
    ("fetch: its URLs are free text, not declared", "web_fetch", {"prompt": "summarise https://example.com/"}, {}, "ask"),
    ("write the to-do list", "write_todos", {"todos": [{"description": "x", "status": "pending"}]}, {}, "allow"),
    ("activate a skill", "activate_skill", {"name": "docs"}, {}, "allow"),
    ("an unknown tool", "frobnicate", {"x": 1}, {}, "ask"),
    # ---- shell commands: every simple command decided, in dir_path ----
    ("shell git push", "run_shell_command", {"command": "git push", "description": "push"}, {}, "ask"),
    ("shell bash -c cat .env", "run_shell_command", {"command": "bash -c 'cat .env'"}, {}, "deny"),  # cat reads .env
    ("shell redirect into .git/config", "run_shell_command", {"command": "echo x > .git/config"}, {}, "deny"),
    ("shell reads ../.env from src", "run_shell_command", {"command": "wc -l < ../.env", "dir_path": "src"}, {}, "deny"),
    ("shell writes config inside .git", "run_shell_command", {"command": "echo x > config", "dir_path": ".git"}, {}, "deny"),
    ("shell writes /etc/passwd in the background", "run_shell_command", {"command": "echo x > /etc/passwd", "is_background": True}, {}, "deny"),
    ("shell asking for more sandbox permissions", "run_shell_command", {"command": "ls", "additional_permissions": {"network": True}}, {}, "block"),
    # ---- MCP tools: named by mcp_context, never by splitting the name ----
    ("mcp read source", "mcp_filesystem_read_file", {"path": f"{P}/src/a.py"},
     {"mcp_context": {"server_name": "filesystem", "tool_name": "read_file", "command": "npx"}}, "allow"),
    ("mcp read .env", "mcp_filesystem_read_file", {"path": f"{P}/.env"},
     {"mcp_context": {"server_name": "filesystem", "tool_name": "read_file"}}, "deny"),
    ("mcp read with a nested path", "mcp_filesystem_read_file", {"path": f"{P}/src/a.py", "options": {"path": "/etc/passwd"}},
     {"mcp_context": {"server_name": "filesystem", "tool_name": "read_file"}}, "deny"),
    ("mcp server whose name has _ (not filesystem)", "mcp_my_filesystem_read_file", {"path": f"{P}/src/a.py"},
     {"mcp_context": {"server_name": "my_filesystem", "tool_name": "read_file"}}, "ask"),
    ("mcp name without mcp_context", "mcp_filesystem_read_file", {"path": f"{P}/src/a.py"}, {}, "block"),
    ("mcp server named local", "mcp_local_read_file", {"file_path": f"{P}/.env"},
     {"mcp_context": {"server_name": "local", "tool_name": "read_file"}}, "block"),
    ("mcp_context on a built-in tool", "read_file", {"file_path": "src/a.py"},
     {"mcp_context": {"server_name": "filesystem", "tool_name": "read_file"}}, "block"),
]

PATCH_NEW = "*** Begin Patch\n*** Add File: src/new.py\n+x = 1\n*** End Patch\n"

# (name, event, tool_name, tool_input, expected)
CODEX: list[tuple[str, str, str, Any, str]] = [
    # ---- PreToolUse: no ask there, so an ask is answered deny ----
    ("bash git push (asked: denied here)", "PreToolUse", "Bash", {"command": "git push"}, "deny"),
    ("bash redirect into .git/config", "PreToolUse", "Bash", {"command": "echo x > .git/config"}, "deny"),
    ("bash $(cat .env) (reads .env: denied)", "PreToolUse", "Bash", {"command": "$(cat .env)"}, "deny"),
    ("bash with a working directory bgc does not read", "PreToolUse", "Bash", {"command": "echo x > config", "workdir": ".git"}, "block"),
    ("bash, not text", "PreToolUse", "Bash", {"command": ["rm", "-rf", "/"]}, "deny"),
    ("patch adds source", "PreToolUse", "apply_patch", {"command": PATCH_NEW}, "allow"),
    ("patch updates .git/config", "PreToolUse", "apply_patch",
     {"command": "*** Begin Patch\n*** Update File: .git/config\n@@\n-a\n+b\n*** End Patch\n"}, "deny"),
    ("patch moves source outside", "PreToolUse", "apply_patch",
     {"command": "*** Begin Patch\n*** Update File: src/a.py\n*** Move to: ../outside/a.py\n@@\n-a\n+b\n*** End Patch\n"}, "deny"),
    ("patch adds source and a CI workflow", "PreToolUse", "apply_patch",
     {"command": "*** Begin Patch\n*** Add File: src/b.py\n+b\n*** Add File: .github/workflows/x.yml\n+r\n*** End Patch\n"}, "deny"),
    ("patch with an indented header for .env", "PreToolUse", "apply_patch",
     {"command": "*** Begin Patch\n*** Add File: src/ok.py\n+x\n   *** Delete File: .env   \n*** End Patch\n"}, "deny"),
    ("patch hiding a header among an update's context lines", "PreToolUse", "apply_patch",
     {"command": "*** Begin Patch\n*** Update File: src/a.py\n@@\n a\n *** Delete File: .env\n-b\n+c\n*** End Patch\n"}, "deny"),
    ("patch through src/..", "PreToolUse", "apply_patch", {"command": "*** Begin Patch\n*** Add File: src/../.env\n+x\n*** End Patch\n"}, "deny"),
    ("patch with CRLF lines", "PreToolUse", "apply_patch", {"command": PATCH_NEW.replace("\n", "\r\n")}, "allow"),
    ("patch of an absolute path outside", "PreToolUse", "apply_patch",
     {"command": "*** Begin Patch\n*** Add File: /etc/cron.d/x\n+x\n*** End Patch\n"}, "deny"),
    ("patch of package.json (asked: denied here)", "PreToolUse", "apply_patch",
     {"command": "*** Begin Patch\n*** Update File: package.json\n@@\n-a\n+b\n*** End Patch\n"}, "deny"),
    ("patch naming no file", "PreToolUse", "apply_patch", {"command": "*** Begin Patch\n*** End Patch\n"}, "block"),
    ("patch, not text", "PreToolUse", "apply_patch", {"command": {"patch": PATCH_NEW}}, "block"),
    ("mcp read source", "PreToolUse", "mcp__filesystem__read_file", {"path": f"{P}/src/a.py"}, "allow"),
    ("mcp read .env", "PreToolUse", "mcp__filesystem__read_file", {"path": f"{P}/.env"}, "deny"),
    ("mcp tool of the server named local", "PreToolUse", "mcp__local__Read", {"file_path": f"{P}/.env"}, "block"),
    ("mcp tool nothing names (asked: denied here)", "PreToolUse", "mcp__evil__exfiltrate", {"data": "x"}, "deny"),
    ("a tool nothing declares (asked: denied here)", "PreToolUse", "web_search", {"query": "x"}, "deny"),
    # ---- PermissionRequest: Codex is about to ask; an ask lets it ----
    ("permission: bash git push", "PermissionRequest", "Bash", {"command": "git push", "description": "push"}, "ask"),
    ("permission: bash writes .git", "PermissionRequest", "Bash", {"command": "echo x > .git/config"}, "deny"),
    ("permission: patch adds source", "PermissionRequest", "apply_patch", {"command": PATCH_NEW}, "allow"),
    ("permission: patch of package.json", "PermissionRequest", "apply_patch",
     {"command": "*** Begin Patch\n*** Update File: package.json\n@@\n-a\n+b\n*** End Patch\n"}, "ask"),
    ("permission: mcp read source", "PermissionRequest", "mcp__filesystem__read_file", {"path": f"{P}/src/a.py"}, "allow"),
]


def _project(base: Path, agent: str) -> dict[str, str]:
    """A project with secrets, links and an outside directory, set up by `bgc init AGENT`."""
    root, outside = base / "my project", base / "outside"  # a space: the command must quote it
    for directory in (root / "src", root / ".git", outside):
        directory.mkdir(parents=True)
    (root / ".env").write_text("TOKEN=x\n")
    (root / "src" / "a.py").write_text("a = 1\n")
    (outside / "secret.txt").write_text("s\n")
    (root / "link_out").symlink_to(outside)
    (root / "lib" / "secrets").mkdir(parents=True)
    (root / "lib" / "secrets" / "key.txt").write_text("k\n")
    (root / "data").mkdir()
    (root / "data" / "ext").symlink_to(outside)
    env = {**os.environ, "BGC_CACHE_DIR": str(base / "cache")}
    done = subprocess.run([sys.executable, "-m", "bgc", "init", agent], cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    settings = {"gemini-cli": (".gemini/settings.json", "BeforeTool"), "codex": (".codex/hooks.json", "PreToolUse")}[agent]
    command = json.loads((root / settings[0]).read_text())["hooks"][settings[1]][0]["hooks"][0]["command"]
    return {"root": str(root.resolve()), "outside": str(outside.resolve()), "command": command, "cache": str(base / "cache")}


@pytest.fixture(scope="module", params=SERVING)
def serving_mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test runs twice: the hook deciding in its own process, and the hook handing the call
    to the project's running decision server (`bgc serve`)."""
    with private_runtime():
        yield request.param


@pytest.fixture(scope="module")
def gemini(serving_mode: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    project = _project(tmp_path_factory.mktemp("gemini"), "gemini-cli")
    with server_for(serving_mode, project["root"], project["cache"]) as server:
        yield {**project, "server": server}


@pytest.fixture(scope="module")
def codex(serving_mode: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    project = _project(tmp_path_factory.mktemp("codex"), "codex")
    with server_for(serving_mode, project["root"], project["cache"]) as server:
        yield {**project, "server": server}


def _run(project: dict[str, str], command: str, data: bytes, environ: dict[str, str], in_process: bool) -> subprocess.CompletedProcess[bytes]:
    """The hook ``command`` through bash in the project directory, or (``in_process``) through its
    entry point in this process (tests/server_support.py ``run_in_process`` says why)."""
    added = {"BGC_CACHE_DIR": project["cache"], **environ}
    if in_process:
        done = run_in_process(command, data, added, project["root"])
    else:
        done = subprocess.run([shutil.which("bash") or "sh", "-c", command], input=data, env={**os.environ, **added},
                              cwd=project["root"], capture_output=True, timeout=TIMEOUT)  # fmt: skip
    assert b"Traceback" not in done.stderr, done.stderr
    return done


def run_gemini(project: dict[str, str], hook_input: Any, *, raw: bytes | None = None,
               in_process: bool = False) -> tuple[str, subprocess.CompletedProcess[bytes]]:  # fmt: skip
    """Run the hook as Gemini CLI does; its effect as allow/ask/deny/block."""
    command = project["command"].replace("$GEMINI_PROJECT_DIR", shlex.quote(project["root"]))
    environ = {"GEMINI_PROJECT_DIR": project["root"], "GEMINI_CWD": project["root"], "CLAUDE_PROJECT_DIR": project["root"]}
    done = _run(project, command, raw if raw is not None else json.dumps(hook_input).encode(), environ, in_process)
    if done.returncode == 2:
        assert done.stderr.startswith(b"bgc: ") and not done.stdout, (done.stdout, done.stderr)
        return "block", done
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)  # Gemini CLI reads anything else as allow: it must be one JSON object
    assert set(answer) <= {"decision", "reason", "systemMessage"} and answer["reason"].startswith("bgc: ")
    return answer["decision"], done


def run_codex(project: dict[str, str], hook_input: Any, *, in_process: bool = False) -> tuple[str, subprocess.CompletedProcess[bytes]]:
    """Run the hook as Codex does; its effect as allow/ask/deny/block."""
    done = _run(project, project["command"], json.dumps(hook_input).encode(), {}, in_process)
    if done.returncode == 2:
        assert done.stderr.startswith(b"bgc: ") and not done.stdout, (done.stdout, done.stderr)
        return "block", done
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        assert hook_input["hook_event_name"] == "PreToolUse"
        return "allow", done  # no objection: Codex's own approval policy applies
    answer = json.loads(done.stdout)
    if answer == {}:
        assert hook_input["hook_event_name"] == "PermissionRequest"
        return "ask", done  # no decision: Codex asks the user
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == hook_input["hook_event_name"]
    if output["hookEventName"] == "PermissionRequest":
        return output["decision"]["behavior"], done
    assert output["permissionDecision"] == "deny" and output["permissionDecisionReason"].startswith("bgc: ")
    return "deny", done


def gemini_input(project: dict[str, str], tool: str, tool_input: Any, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": "s", "transcript_path": "", "cwd": project["root"], "hook_event_name": "BeforeTool",
        "timestamp": "2026-12-01T00:00:00.000Z", "tool_name": tool,
        "tool_input": _fill(tool_input, project["root"], project["outside"]), **extra,
    }


def codex_input(project: dict[str, str], event: str, tool: str, tool_input: Any) -> dict[str, Any]:
    return {
        "session_id": "s", "turn_id": "t", "transcript_path": None, "cwd": project["root"], "hook_event_name": event,
        "model": "gpt-5", "permission_mode": "default", "tool_name": tool,
        "tool_input": _fill(tool_input, project["root"], project["outside"]), "tool_use_id": "call_1",
    }


def _wrong(cases: list[Any], inputs: list[dict[str, Any]], run: Any, served: bool) -> str:
    """Every case (its name first, its expected answer last) whose input ``run(input, in_process)``
    answers otherwise: ``served``, a process per call, as the agent runs the hook, each answered by
    the server; else the hook deciding alone through its entry point in this process."""
    if served:
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda hook_input: run(hook_input, in_process=False), inputs))
    else:
        answers = [run(hook_input, in_process=True) for hook_input in inputs]
    return "\n".join(
        f"{case[0]}: expected {case[-1]}, got {got} ({done.stdout.decode() or done.stderr.decode()})"
        for case, (got, done) in zip(cases, answers)
        if got != case[-1]
    )


def test_the_tables_have_enough_calls() -> None:
    assert len(GEMINI) >= 40 and len(CODEX) >= 25


@pytest.mark.first  # one of the longest tests: served, a process per call
def test_gemini_gets_the_hand_written_answers(gemini: dict[str, Any]) -> None:
    inputs = [gemini_input(gemini, tool, tool_input, extra) for _, tool, tool_input, extra, _ in GEMINI]
    before = served(gemini["server"])
    wrong = _wrong(GEMINI, inputs, lambda hook_input, in_process: run_gemini(gemini, hook_input, in_process=in_process),
                   gemini["server"] is not None)  # fmt: skip
    assert served(gemini["server"]) - before == (len(inputs) if gemini["server"] else 0)  # none fell back unseen
    assert not wrong, wrong


@pytest.mark.first  # one of the longest tests: served, a process per call
def test_codex_gets_the_hand_written_answers(codex: dict[str, Any]) -> None:
    inputs = [codex_input(codex, event, tool, tool_input) for _, event, tool, tool_input, _ in CODEX]
    before = served(codex["server"])
    wrong = _wrong(CODEX, inputs, lambda hook_input, in_process: run_codex(codex, hook_input, in_process=in_process),
                   codex["server"] is not None)  # fmt: skip
    assert served(codex["server"]) - before == (len(inputs) if codex["server"] else 0)  # none fell back unseen
    assert not wrong, wrong


def test_reasons_name_the_rule(gemini: dict[str, Any], codex: dict[str, Any]) -> None:
    _, done = run_gemini(gemini, gemini_input(gemini, "read_file", {"file_path": ".env"}, {}))
    assert json.loads(done.stdout)["reason"].startswith("bgc: fs:read:/.env: denied by base.bgp:")
    _, done = run_gemini(gemini, gemini_input(gemini, "write_file", {"file_path": "package.json", "content": "{}"}, {}))
    asked = json.loads(done.stdout)
    assert asked["systemMessage"] == asked["reason"] and "(ask policy.bgp:" in asked["reason"]
    _, done = run_codex(codex, codex_input(codex, "PreToolUse", "Bash", {"command": "git push"}))
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("bgc: needs a person's approval, which Codex's PreToolUse hook cannot ask for: ")
    # why, the call, the part asked, then how to answer it: the starter trusts the user's own key
    # (bgc init made it), so with bgc approve, the request's id named
    lines = reason.split("\n")
    assert lines[1:3] == ["Bash: git push", lines[2]] and lines[2].startswith("needs approval: `git push` (proc:exec:git/push, ask policy.bgp:")
    assert re.fullmatch(r"approve it with bgc approve sha256:[0-9a-f]{64} \(awaits 1 of any trusted approver \(have: none\)\), "
                        r"then the agent tries the call again", lines[3]), lines[3]  # fmt: skip


@pytest.mark.parametrize(
    "raw",
    [b"", b"not json", b"[]", b'{"hook_event_name": "AfterTool", "tool_name": "read_file", "tool_input": {}}',
     b'{"hook_event_name": "PreToolUse", "tool_name": "read_file", "tool_input": {}}',
     b'{"hook_event_name": "BeforeTool", "tool_name": "read_file", "tool_name": "write_file", "tool_input": {}}',
     b'{"hook_event_name": "BeforeTool", "tool_name": "read_file", "tool_input": {"file_path": NaN}}'],
    ids=["empty", "text", "list", "after-tool", "claude-event", "duplicate-key", "nan"],
)
def test_gemini_blocks_what_it_cannot_read(gemini: dict[str, Any], raw: bytes) -> None:
    assert run_gemini(gemini, None, raw=raw)[0] == "block"


def test_codex_blocks_another_event(codex: dict[str, Any]) -> None:
    hook_input = codex_input(codex, "PostToolUse", "Bash", {"command": "ls"})
    assert run_codex(codex, hook_input)[0] == "block"


# ---- item: MCP rules imported from Claude Code decide the hook's MCP calls -----------------------

SETTINGS = {
    "permissions": {
        "allow": ["mcp__github", "Edit(src/**)", "WebFetch(domain:github.com)"],
        "ask": ["mcp__filesystem__write_file"],
        "deny": ["mcp__github__delete_repo"],
    }
}

# (name, tool_name, tool_input, expected), each decided through the imported rules
MCP_IMPORTED = [
    ("a github tool nothing declares: allowed by mcp__github", "mcp__github__list_issues", {"owner": "o"}, "allow"),
    ("a github tool denied by name", "mcp__github__delete_repo", {"owner": "o", "repo": "r"}, "deny"),
    ("a declared github tool: its identity and its URL both allowed", "mcp__github__create_issue",
     {"owner": "o", "repo": "r", "title": "t"}, "allow"),
    ("a declared github tool whose arguments escape the declaration", "mcp__github__create_issue",
     {"owner": "o", "repo": "r", "title": "t", "x": {"y": 1}}, "deny"),
    ("a declared filesystem tool asked by name, writing source", "mcp__filesystem__write_file",
     {"path": f"{P}/src/x.py", "content": "x"}, "ask"),
    ("a declared filesystem tool asked by name, writing outside src", "mcp__filesystem__write_file",
     {"path": f"{P}/setup.py", "content": "x"}, "deny"),
    ("a server no rule names", "mcp__slack__post_message", {"text": "hi"}, "ask"),
]


def test_imported_mcp_rules_decide_the_hooks_calls(tmp_path: Path) -> None:
    """import settings → policy → hook decision: one mapping of an MCP tool, mcp:call:SERVER/TOOL
    (each command in this process: what is tested is the translation, not the process)."""
    from importlib import resources

    from tests.e2e.test_hook_claude_code import _input, run_hook

    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(SETTINGS))
    imported = project / "imported.bgp"
    done = bgc("import", "claude-code", str(settings), "-o", str(imported))
    assert done.exit_code == 0, done.output
    assert "allow mcp:call:github/*" in imported.read_text() and "deny mcp:call:github/delete_repo" in imported.read_text()
    for name in ("claude-code.bgp", "agents.bgp"):
        (project / name).write_bytes((resources.files("bgc.policies") / name).read_bytes())
    policy = project / "policy.bgp"
    policy.write_text('include "claude-code.bgp"\ninclude "imported.bgp"\n')
    checked = bgc("check", str(policy))
    assert checked.exit_code == 0, checked.output
    where = {"root": str(project.resolve()), "outside": str(tmp_path), "cache": str(tmp_path / "cache"),
             "command": f"{sys.executable} -I -m bgc hook claude-code -p {shlex.quote(str(policy))}"}
    wrong = []
    for name, tool, tool_input, expected in MCP_IMPORTED:
        got, ran = run_hook(where, _input(where, "PreToolUse", tool, tool_input), in_process=True)
        if got != expected:
            wrong.append(f"{name}: expected {expected}, got {got} ({ran.stdout.decode() or ran.stderr.decode()})")
    assert not wrong, "\n".join(wrong)
