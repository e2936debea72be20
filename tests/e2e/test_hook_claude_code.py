"""`bgc hook claude-code` end to end, run exactly as Claude Code runs it.

A project is set up with `bgc init claude-code` (a subprocess); every case then runs the hook
command that init wrote into .claude/settings.local.json, through `sh -c` with CLAUDE_PROJECT_DIR
set, the hook input as JSON on stdin and a timeout, and reads Claude Code's answer from stdout
(or the blocking exit 2). Every expected answer below is written by hand from the starter policy
(policies/claude-code-starter.bgp, base.bgp) and the mapping (policies/claude-code.bgp): none is
computed by bgc. Every test runs twice: the hook deciding in its own process, and the hook
handing the call to the project's running decision server (`bgc serve`, tests/server_support.py).
The table of calls runs served as a process per call, and alone through the hook's entry point in
this process (tests/server_support.py ``run_in_process`` says why that proves the same).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.server_support import SERVING, run_in_process, served, serving

TIMEOUT = 120  # seconds for one hook process on a loaded machine; the hook's own deadline is 20 s

P = "{P}"  # the project directory, filled in per run
OUT = "{OUT}"  # a directory outside the project

# (name, tool_name, tool_input, expected): expected is allow, ask, deny, or block (exit 2)
CASES: list[tuple[str, str, Any, str]] = [
    # ---- Read: workspace paths, secrets, outside paths, spellings ----
    ("read source", "Read", {"file_path": f"{P}/src/a.py"}, "allow"),
    ("read with offset and limit", "Read", {"file_path": f"{P}/src/a.py", "offset": 10, "limit": 5}, "allow"),
    ("read relative to cwd", "Read", {"file_path": "src/a.py"}, "allow"),
    ("read .env", "Read", {"file_path": f"{P}/.env"}, "deny"),
    ("read .env via ..", "Read", {"file_path": f"{P}/src/../.env"}, "deny"),
    ("read .env via //", "Read", {"file_path": f"{P}//.env"}, "deny"),
    ("read .env via ./", "Read", {"file_path": f"{P}/./src/./../.env"}, "deny"),
    ("read .env below a file name and ..", "Read", {"file_path": f"{P}/src/a.py/../../.env"}, "deny"),
    ("read .env.local", "Read", {"file_path": f"{P}/src/.env.local"}, "deny"),
    ("read a key", "Read", {"file_path": f"{P}/deploy/server.pem"}, "deny"),
    ("read .git/config", "Read", {"file_path": f"{P}/.git/config"}, "deny"),
    ("read /etc/passwd", "Read", {"file_path": "/etc/passwd"}, "deny"),
    ("read //etc/passwd", "Read", {"file_path": "//etc/passwd"}, "deny"),
    ("read outside via ..", "Read", {"file_path": f"{P}/../outside/secret.txt"}, "deny"),
    ("read outside, relative", "Read", {"file_path": "../outside/secret.txt"}, "deny"),
    ("read through a link leaving the project", "Read", {"file_path": f"{P}/link_out/secret.txt"}, "deny"),
    ("read through a link to .env", "Read", {"file_path": f"{P}/src/link_env"}, "deny"),
    ("read a literal %2e%2e directory's .env", "Read", {"file_path": f"{P}/src/%2e%2e/.env"}, "deny"),
    ("read a decomposed (NFD) name", "Read", {"file_path": f"{P}/src/cafe\u0301.py"}, "deny"),
    # a look-alike is another file, not .env: reading it is reading the workspace
    ("read a Cyrillic look-alike of .env", "Read", {"file_path": f"{P}/.\u0435nv"}, "allow"),
    ("read a fullwidth-dot look-alike of .env", "Read", {"file_path": f"{P}/\uff0eenv"}, "allow"),
    ("read a NUL", "Read", {"file_path": f"{P}/src/a.py\u0000/../../.env"}, "deny"),
    ("read a control character", "Read", {"file_path": f"{P}/src/a\u001b.py"}, "deny"),
    ("read the project directory", "Read", {"file_path": f"{P}/src/"}, "allow"),
    ("read with an undeclared parameter", "Read", {"file_path": f"{P}/src/a.py", "follow": True}, "deny"),
    ("read a nested path", "Read", {"file_path": {"path": f"{P}/src/a.py"}}, "deny"),
    ("read a list with an outside path", "Read", {"file_path": [f"{P}/src/a.py", "/etc/passwd"]}, "deny"),
    ("read without a path", "Read", {}, "deny"),
    ("read a number", "Read", {"file_path": 42}, "deny"),
    # ---- values that fill no declaration: refused, never a call with nothing checked ----
    ("read a list of nothing", "Read", {"file_path": []}, "deny"),
    ("read a list in a list", "Read", {"file_path": [[f"{P}/src/a.py"]]}, "deny"),
    ("read an outside path in a list in a list", "Read", {"file_path": [["/etc/passwd"]]}, "deny"),
    ("read empty text", "Read", {"file_path": ""}, "deny"),
    ("read a list holding empty text", "Read", {"file_path": [f"{P}/src/a.py", ""]}, "deny"),
    ("read null", "Read", {"file_path": None}, "deny"),
    ("read a map", "Read", {"file_path": {}}, "deny"),
    ("read true", "Read", {"file_path": True}, "deny"),
    ("write a list of nothing", "Write", {"file_path": [], "content": "x"}, "deny"),
    ("edit a list in a list", "Edit", {"file_path": [[f"{P}/src/a.py"]], "old_string": "a", "new_string": "b"}, "deny"),
    ("grep a list of nothing", "Grep", {"pattern": "TODO", "path": []}, "deny"),
    ("fetch a list of nothing", "WebFetch", {"url": [], "prompt": "x"}, "deny"),
    ("fetch empty text", "WebFetch", {"url": "", "prompt": "x"}, "deny"),
    ("fetch a number", "WebFetch", {"url": 80, "prompt": "x"}, "deny"),
    ("mcp read a list of nothing", "mcp__filesystem__read_file", {"path": []}, "deny"),
    ("mcp read a list in a list", "mcp__filesystem__read_file", {"path": [[f"{P}/src/a.py"]]}, "deny"),
    # ---- ~ is the home directory the agent expands it to (a host path), never a project folder named ~ ----
    ("read ~/x, the home", "Read", {"file_path": "~/x"}, "deny"),
    ("read ~, the home", "Read", {"file_path": "~"}, "deny"),
    ("read ~/src/a.py, the home's", "Read", {"file_path": "~/src/a.py"}, "deny"),
    ("read ~root/x, another user's home", "Read", {"file_path": "~root/x"}, "deny"),
    ("read ~+/x, the shell's $PWD", "Read", {"file_path": "~+/x"}, "deny"),
    ("read ~-/x, the shell's $OLDPWD", "Read", {"file_path": "~-/x"}, "deny"),
    ("read ./~/x, the project's folder named ~", "Read", {"file_path": "./~/x"}, "allow"),
    ("mcp read ~/x, the home", "mcp__filesystem__read_file", {"path": "~/x"}, "deny"),
    # ---- Write, Edit, MultiEdit, NotebookEdit ----
    ("write source", "Write", {"file_path": f"{P}/src/new.py", "content": "x = 1\n"}, "allow"),
    ("write a test", "Edit", {"file_path": f"{P}/tests/test_a.py", "old_string": "a", "new_string": "b"}, "allow"),
    ("edit source", "Edit", {"file_path": f"{P}/src/a.py", "old_string": "a", "new_string": "b", "replace_all": True}, "allow"),
    ("multi-edit source", "MultiEdit", {"file_path": f"{P}/src/a.py", "edits": [{"old_string": "a", "new_string": "b"}]}, "allow"),
    ("edit a notebook in docs", "NotebookEdit", {"notebook_path": f"{P}/docs/n.ipynb", "new_source": "1"}, "allow"),
    ("write the README", "Write", {"file_path": f"{P}/README.md", "content": "x"}, "allow"),
    ("write package.json", "Write", {"file_path": f"{P}/package.json", "content": "{}"}, "ask"),
    ("write .git/config", "Write", {"file_path": f"{P}/.git/config", "content": "x"}, "deny"),
    # ---- VCS metadata at any depth, directory or gitfile: never written, never created ----
    ("write a nested repository's config", "Write", {"file_path": f"{P}/src/vendor/.git/config", "content": "x"}, "deny"),
    ("create a gitfile below src", "Write", {"file_path": f"{P}/src/.git", "content": "gitdir: /tmp/x\n"}, "deny"),
    ("edit a nested repository's hook", "Edit", {"file_path": f"{P}/tests/a/b/.git/hooks/pre-commit", "old_string": "a", "new_string": "b"}, "deny"),
    ("write a nested Mercurial config", "Write", {"file_path": f"{P}/src/m/.hg/hgrc", "content": "x"}, "deny"),
    ("write a nested Jujutsu config", "MultiEdit", {"file_path": f"{P}/docs/j/.jj/repo/config.toml", "edits": []}, "deny"),
    ("write a nested Sapling config", "Write", {"file_path": f"{P}/src/s/.sl/config", "content": "x"}, "deny"),
    ("write a nested Subversion entry", "Write", {"file_path": f"{P}/src/v/.svn/entries", "content": "x"}, "deny"),
    ("mcp write a nested repository's config", "mcp__filesystem__write_file", {"path": f"{P}/src/x/.git/config", "content": "x"}, "deny"),
    ("a shell redirect into a nested repository's config", "Bash", {"command": "echo x > src/lib/.git/config"}, "deny"),
    # ---- hard links: a file with other names is asked, whatever the name it is given ----
    ("read a hard link to .env", "Read", {"file_path": f"{P}/notes/env"}, "ask"),
    ("read .env, which has another name", "Read", {"file_path": f"{P}/.env"}, "deny"),
    ("write a hard link to .git/config", "Write", {"file_path": f"{P}/src/gitconfig", "content": "x"}, "ask"),
    ("edit a hard link to .git/config, relative", "Edit", {"file_path": "src/gitconfig", "old_string": "a", "new_string": "b"}, "ask"),
    ("grep a directory holding a hard link to .env", "Grep", {"pattern": "TOKEN", "path": f"{P}/notes"}, "ask"),
    ("mcp read a hard link to .env", "mcp__filesystem__read_file", {"path": f"{P}/notes/env"}, "ask"),
    ("read a file with one name", "Read", {"file_path": f"{P}/src/a.py"}, "allow"),
    # ---- credential files the starter does not name one by one ----
    ("read an ECDSA key", "Read", {"file_path": f"{P}/deploy/.ssh/id_ecdsa"}, "deny"),
    ("read a named ed25519 key", "Read", {"file_path": f"{P}/keys/deploy_ed25519"}, "deny"),
    ("read a security-key key", "Read", {"file_path": f"{P}/keys/id_ed25519_sk"}, "deny"),
    ("read .npmrc", "Read", {"file_path": f"{P}/.npmrc"}, "deny"),
    ("read .pypirc", "Read", {"file_path": f"{P}/src/.pypirc"}, "deny"),
    ("read .netrc", "Read", {"file_path": f"{P}/.netrc"}, "deny"),
    ("read .git-credentials", "Read", {"file_path": f"{P}/src/.git-credentials"}, "deny"),
    ("read .envrc", "Read", {"file_path": f"{P}/.envrc"}, "deny"),
    ("read .dev.vars", "Read", {"file_path": f"{P}/worker/.dev.vars"}, "deny"),
    ("read AWS credentials", "Read", {"file_path": f"{P}/ci/.aws/credentials"}, "deny"),
    ("read a gcloud credential", "Read", {"file_path": f"{P}/ci/.config/gcloud/application_default_credentials.json"}, "deny"),
    ("read a docker config", "Read", {"file_path": f"{P}/ci/.docker/config.json"}, "deny"),
    ("read a kube config", "Read", {"file_path": f"{P}/ops/.kube/config"}, "deny"),
    ("read a Java keystore", "Read", {"file_path": f"{P}/android/release.keystore"}, "deny"),
    ("read a PKCS #12 bundle", "Read", {"file_path": f"{P}/certs/client.pfx"}, "deny"),
    ("write bgc's own ledger", "Write", {"file_path": f"{P}/.bgc/kernel.db", "content": "x"}, "deny"),
    ("edit bgc's store through ..", "Edit", {"file_path": f"{P}/src/../.bgc/kernel.db", "old_string": "a", "new_string": "b"}, "deny"),
    ("write a CI workflow", "Edit", {"file_path": f"{P}/.github/workflows/ci.yml", "old_string": "a", "new_string": "b"}, "deny"),
    ("write /etc/hosts", "Edit", {"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"}, "deny"),
    ("write outside via src/../..", "Write", {"file_path": f"{P}/src/../../outside/x", "content": "x"}, "deny"),
    ("write through a link leaving the project", "Write", {"file_path": f"{P}/link_out/x", "content": "x"}, "deny"),
    ("write a case variant of .git", "Write", {"file_path": f"{P}/.GIT/config", "content": "x"}, "allow"),  # another name here
    ("write .git/config through a link and ..", "Write", {"file_path": f"{P}/src/link_git/../.git/config", "content": "x"}, "deny"),
    ("read .git/config through a link and .., relative", "Read", {"file_path": "src/link_git/../.git/config"}, "deny"),
    # ---- searches ----
    ("glob in the working directory", "Glob", {"pattern": "**/*.py"}, "allow"),
    ("glob an absolute pattern", "Glob", {"pattern": "/etc/*"}, "deny"),
    ("glob a climbing pattern", "Glob", {"pattern": "../**"}, "deny"),
    ("glob /etc", "Glob", {"pattern": "*", "path": "/etc"}, "deny"),
    # braces are expanded before matching: each pattern they stand for is decided
    ("glob a brace of extensions", "Glob", {"pattern": "**/*.{py,md}"}, "allow"),
    ("glob a brace holding an absolute pattern", "Glob", {"pattern": "{/etc/*,src/*.py}"}, "deny"),
    ("glob a brace that climbs", "Glob", {"pattern": "src/{..,x}/*"}, "deny"),
    ("glob braces that make ..", "Glob", {"pattern": "{.,x}{.,y}/*"}, "deny"),
    ("glob braces standing for too many patterns", "Glob", {"pattern": "{a,b}" * 9}, "block"),
    ("glob a list holding a brace with an absolute pattern", "Glob", {"pattern": ["*.py", "{/etc/*,x}"]}, "deny"),
    ("glob a brace pattern longer than a pattern may be", "Glob", {"pattern": "{" * 600 + "a,b" + "}" * 600}, "deny"),
    # Grep reads every file below its path: decided on the files there (src/link_env links to .env)
    ("grep src, which holds a link to .env", "Grep", {"pattern": "TODO", "path": f"{P}/src", "-i": True, "output_mode": "content"}, "deny"),
    ("grep docs", "Grep", {"pattern": "TODO", "path": f"{P}/docs", "glob": "*.md"}, "allow"),
    ("grep an empty directory", "Grep", {"pattern": "TODO", "path": f"{P}/tests"}, "allow"),
    ("grep one file", "Grep", {"pattern": "TODO", "path": f"{P}/docs/guide.md"}, "allow"),
    ("grep the project, which holds .env", "Grep", {"pattern": "TODO"}, "deny"),
    ("grep /", "Grep", {"pattern": "password", "path": "/"}, "deny"),
    ("grep .git", "Grep", {"pattern": "url", "path": f"{P}/.git"}, "deny"),
    ("ls the project", "LS", {"path": P}, "allow"),
    # ---- the network ----
    ("fetch a page", "WebFetch", {"url": "https://example.com/", "prompt": "summarise"}, "ask"),
    ("fetch a backslash host trick (refused: read differently by URL parsers)", "WebFetch", {"url": "https://evil.com\\.example.com/", "prompt": "x"}, "deny"),
    ("fetch with an undeclared parameter", "WebFetch", {"url": "https://example.com/", "prompt": "x", "headers": {}}, "deny"),
    ("search the web", "WebSearch", {"query": "bgc policy"}, "ask"),
    # ---- the agent itself ----
    ("start a sub-agent", "Task", {"subagent_type": "general-purpose", "description": "d", "prompt": "p"}, "allow"),
    ("start a sub-agent with an undeclared parameter", "Task", {"subagent_type": "x", "description": "d", "prompt": "p", "tools": ["Bash"]}, "deny"),
    ("write the to-do list", "TodoWrite", {"todos": [{"content": "x", "status": "pending"}]}, "allow"),
    ("an unknown tool", "FrobnicateTool", {"x": 1}, "ask"),
    # ---- MCP tools: per server, with their arguments ----
    ("mcp read a source file", "mcp__filesystem__read_file", {"path": f"{P}/src/a.py"}, "allow"),
    ("mcp read .env", "mcp__filesystem__read_file", {"path": f"{P}/.env"}, "deny"),
    ("mcp read with a nested path", "mcp__filesystem__read_file", {"path": f"{P}/src/a.py", "options": {"path": "/etc/passwd"}}, "deny"),
    ("mcp read a list with a secret", "mcp__filesystem__read_text_file", {"path": [f"{P}/src/a.py", f"{P}/.env"]}, "deny"),
    ("mcp write source", "mcp__filesystem__write_file", {"path": f"{P}/src/x.py", "content": "x"}, "allow"),
    ("mcp github issue", "mcp__github__get_issue", {"owner": "o", "repo": "r", "issue_number": 7}, "ask"),
    ("mcp github issue, nested extra", "mcp__github__create_issue", {"owner": "o", "repo": "r", "title": "t", "x": {"y": 1}}, "deny"),
    ("mcp tool on an undeclared server", "mcp__evil-server__read_file", {"path": f"{P}/src/a.py"}, "ask"),
    ("mcp tool unknown on a known server", "mcp__filesystem__delete_everything", {}, "ask"),
    ("mcp malformed name", "mcp__filesystem", {}, "block"),
    # ---- Bash: every simple command decided (the starter asks for commands) ----
    ("bash ls", "Bash", {"command": "ls"}, "allow"),  # decided by what it reads
    # `cat` reads the file: decided as reading .env is (the catalogue of commands, docs/agents.md)
    ("bash cat .e\"\"nv", "Bash", {"command": 'cat .e""nv'}, "deny"),
    ("bash -c cat .env", "Bash", {"command": "bash -c 'cat .env'"}, "deny"),
    ("bash $(cat .env)", "Bash", {"command": "$(cat .env)"}, "deny"),
    ("bash redirect into .git/config", "Bash", {"command": "echo x > .git/config"}, "deny"),
    ("bash cd .. && rm -rf x", "Bash", {"command": "cd .. && rm -rf x"}, "ask"),
    ("bash find -exec rm", "Bash", {"command": "find . -exec rm {} +"}, "ask"),
    ("bash read .env by redirection", "Bash", {"command": "wc -l < .env"}, "deny"),
    ("bash write /etc/passwd", "Bash", {"command": "echo hi > /etc/passwd"}, "deny"),
    ("bash append to a CI workflow in a subshell", "Bash", {"command": "(echo x >> .github/workflows/ci.yml)"}, "deny"),
    ("bash sh -c writing .git", "Bash", {"command": "sh -c 'echo x > .git/HEAD'"}, "deny"),
    ("bash a command that is not text", "Bash", {"command": ["rm", "-rf", "/"]}, "ask"),
    ("bash with its own parameters", "Bash", {"command": ">src/x", "description": "d", "timeout": 5000, "run_in_background": True, "dangerouslyDisableSandbox": False}, "allow"),
    ("bash outside the sandbox: an allowed command still asks (Claude Code's own question)", "Bash", {"command": ">src/x", "dangerouslyDisableSandbox": True}, "ask"),
    ("bash outside the sandbox: a denied command stays denied", "Bash", {"command": "echo x > .git/config", "dangerouslyDisableSandbox": True}, "deny"),
    ("bash outside the sandbox said with a number (not a boolean)", "Bash", {"command": ">src/x", "dangerouslyDisableSandbox": 1}, "block"),
    ("bash outside the sandbox said with text", "Bash", {"command": ">src/x", "dangerouslyDisableSandbox": "true"}, "block"),
    ("bash with a parameter bgc does not read", "Bash", {"command": ">src/x", "cwd": "/etc"}, "block"),
    ("bash a command after a here-doc's operator", "Bash", {"command": ">src/x <<EOF && cat .env\nhi\nEOF"}, "deny"),
    ("bash a command after a here-doc bash ends early", "Bash", {"command": ">src/x <<E'O'F\nEOF\ncat .env\nE'O'F"}, "ask"),
    ("bash a backquoted command in a here-doc", "Bash", {"command": ">src/x <<EOF\n`cat .env`\nEOF"}, "ask"),
    ("bash a program named CR (a space to the grammar)", "Bash", {"command": ">src/x\n\r#x"}, "ask"),
    ("bash append to .git/config through a link and ..", "Bash", {"command": ">>src/link_git/../.git/config"}, "deny"),  # src/.git/config as read, /.git/config as reached: VCS metadata either way
]

# (name, event, tool_name, tool_input, expected) for PermissionRequest: ask is "no decision"
PERMISSION_CASES: list[tuple[str, str, Any, str]] = [
    ("permission: read source", "Read", {"file_path": f"{P}/src/a.py"}, "allow"),
    ("permission: read .env", "Read", {"file_path": f"{P}/.env"}, "deny"),
    ("permission: fetch", "WebFetch", {"url": "https://example.com/", "prompt": "x"}, "ask"),
]


def _fill(value: Any, project: str, outside: str) -> Any:
    if isinstance(value, str):
        return value.replace(P, project).replace(OUT, outside)
    if isinstance(value, list):
        return [_fill(item, project, outside) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, project, outside) for key, item in value.items()}
    return value


@pytest.fixture(scope="module", params=SERVING)
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A project set up by `bgc init claude-code`, with secrets, links and an outside directory;
    its decision server running or not."""
    base = tmp_path_factory.mktemp("hook")
    root, outside = base / "project", base / "outside"
    for directory in (root / "src", root / "tests", root / "docs", root / ".git", root / "deploy", outside):
        directory.mkdir(parents=True)
    (root / ".env").write_text("TOKEN=x\n")
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "docs" / "guide.md").write_text("# guide\n")
    (outside / "secret.txt").write_text("s\n")
    (root / "link_out").symlink_to(outside)
    (root / "src" / "link_env").symlink_to("../.env")
    (root / "src" / "link_git").symlink_to("../.git")  # `src/link_git/..` is the project root to the kernel
    (root / ".git" / "config").write_text("[core]\n")
    (root / "notes").mkdir()
    os.link(root / ".env", root / "notes" / "env")  # hard links: other names of denied files
    os.link(root / ".git" / "config", root / "src" / "gitconfig")
    env = {**os.environ, "BGC_CACHE_DIR": str(base / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "bgc", "init", "claude-code"], cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    settings = json.loads((root / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    found = {"root": str(root.resolve()), "outside": str(outside.resolve()), "command": command, "cache": str(base / "cache")}
    with serving(request.param, found["root"], found["cache"]) as server:
        yield {**found, "server": server}


def run_hook(project: dict[str, Any], hook_input: Any, *, raw: bytes | None = None, command: str | None = None,
             environ: dict[str, str] | None = None, in_process: bool = False) -> tuple[str, subprocess.CompletedProcess[bytes]]:
    """Run the hook as Claude Code does (``in_process``: its entry point in this process,
    tests/server_support.py ``run_in_process``); the answer as allow/ask/deny/block."""
    added = {"CLAUDE_PROJECT_DIR": project["root"], "BGC_CACHE_DIR": project["cache"], **(environ or {})}
    data = raw if raw is not None else json.dumps(hook_input).encode()
    if in_process:
        done = run_in_process(command or project["command"], data, added, project["root"])
    else:
        done = subprocess.run(["sh", "-c", command or project["command"]], input=data, env={**os.environ, **added},
                              cwd=project["root"], capture_output=True, timeout=TIMEOUT)  # fmt: skip
    assert b"Traceback" not in done.stderr, done.stderr
    if done.returncode == 2:
        assert done.stderr.startswith(b"bgc: ") and not done.stdout, (done.stdout, done.stderr)
        return "block", done
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    if answer == {}:
        return "ask", done  # PermissionRequest without a decision: Claude Code shows its dialog
    output = answer["hookSpecificOutput"]
    if output["hookEventName"] == "PermissionRequest":
        return output["decision"]["behavior"], done
    assert output["permissionDecisionReason"].startswith("bgc: ")
    return output["permissionDecision"], done


def _input(project: dict[str, Any], event: str, tool: str, tool_input: Any) -> dict[str, Any]:
    return {
        "session_id": "s", "transcript_path": "/dev/null", "cwd": project["root"], "permission_mode": "default",
        "hook_event_name": event, "tool_name": tool, "tool_input": _fill(tool_input, project["root"], project["outside"]),
        "tool_use_id": "toolu_1",
    }


def test_the_table_has_enough_calls() -> None:
    assert len(CASES) + len(PERMISSION_CASES) >= 60


@pytest.mark.first  # one of the longest tests: served, a process per call
def test_every_call_gets_the_hand_written_answer(project: dict[str, Any]) -> None:
    runs = [(name, "PreToolUse", tool, tool_input, expected) for name, tool, tool_input, expected in CASES]
    runs += [(name, "PermissionRequest", tool, tool_input, expected) for name, tool, tool_input, expected in PERMISSION_CASES]
    before = served(project["server"])
    if project["server"]:  # a process per call, as Claude Code runs the hook, each answered by the server
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda run: run_hook(project, _input(project, run[1], run[2], run[3])), runs))
    else:  # the hook deciding alone: its entry point in this process (run_in_process says why)
        answers = [run_hook(project, _input(project, run[1], run[2], run[3]), in_process=True) for run in runs]
    assert served(project["server"]) - before == (len(runs) if project["server"] else 0)  # none fell back unseen
    wrong = [
        f"{name}: expected {expected}, got {got} ({done.stdout.decode() or done.stderr.decode()})"
        for (name, _, _, _, expected), (got, done) in zip(runs, answers)
        if got != expected
    ]
    assert not wrong, "\n".join(wrong)


def test_a_reason_names_the_rule_that_decided(project: dict[str, Any]) -> None:
    _, done = run_hook(project, _input(project, "PreToolUse", "Read", {"file_path": f"{P}/.env"}))
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("bgc: fs:read:/.env: denied by base.bgp:") and "secrets stay out of agent context" in reason
    _, done = run_hook(project, _input(project, "PreToolUse", "Read", {"file_path": f"{P}/src/a.py"}))
    assert "granted by policy.bgp:" in json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize(
    "raw",
    [b"", b"not json", b"[]", b'{"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {}}',
     b'{"hook_event_name": "PreToolUse", "tool_input": {}}', b'{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": []}',
     b'{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_name": "Write", "tool_input": {}}', b"\xff\xfe",
     b'{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": NaN}}'],
    ids=["empty", "text", "list", "other-event", "no-tool", "input-not-object", "duplicate-key", "not-utf8", "nan"],
)
def test_unreadable_input_blocks_the_call(project: dict[str, Any], raw: bytes) -> None:
    got, done = run_hook(project, None, raw=raw)
    assert got == "block"


def test_failures_block_with_the_reason(project: dict[str, Any], tmp_path: Path) -> None:
    broken = tmp_path / "broken.bgp"
    broken.write_text("allow fs:read:/** because \"ok\"\nallow fs:read:[ because \"unclosed\"\n")
    call = _input(project, "PreToolUse", "Read", {"file_path": f"{P}/src/a.py"})
    got, done = run_hook(project, call, command=f"{sys.executable} -I -m bgc hook claude-code -p {broken}")
    assert got == "block" and f"{broken}:2:" in done.stderr.decode()
    got, done = run_hook(project, call, command=f"{sys.executable} -I -m bgc hook claude-code -p {tmp_path}/missing.bgp")
    assert got == "block" and "missing.bgp" in done.stderr.decode()
    no_project = {**call, "cwd": None}
    got, done = run_hook(project, no_project, environ={"CLAUDE_PROJECT_DIR": ""})
    assert got == "block" and "no project directory" in done.stderr.decode()


def test_a_working_directory_removed_under_the_hook_still_decides(project: dict[str, Any], tmp_path: Path) -> None:
    """The agent's working directory removed while it runs (a temporary checkout cleaned up):
    the hook decides as it did before the redesign, with the options it was given (absolute
    here), instead of blocking every call on the working directory it cannot name."""
    gone = tmp_path / "gone"
    gone.mkdir()
    command = f"cd {gone} && rmdir {gone} && {project['command']}"
    call = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": project["root"],
            "tool_input": {"file_path": f"{project['root']}/src/a.py"}}  # fmt: skip
    assert run_hook(project, call, command=command)[0] == "allow"


def test_unknown_tools_can_be_denied(project: dict[str, Any]) -> None:
    command = project["command"].replace("hook claude-code", "hook claude-code --unknown deny")
    for tool in ("FrobnicateTool", "mcp__evil-server__read_file"):
        got, _ = run_hook(project, _input(project, "PreToolUse", tool, {"path": f"{P}/src/a.py"}), command=command)
        assert got == "deny", tool


def test_the_deadline_blocks(project: dict[str, Any]) -> None:
    """No decision in time is a block, never an allow (a stdin that never ends stands for any stall)."""
    command = f"{project['command'].replace('hook claude-code', 'hook claude-code --timeout 0.5')}"
    hook = subprocess.Popen(
        ["sh", "-c", command], env={**os.environ, "CLAUDE_PROJECT_DIR": project["root"]},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        returncode = hook.wait(timeout=TIMEOUT)  # stdin stays open while the hook runs: it never ends
    finally:
        hook.kill()
        hook.stdin.close()  # type: ignore[union-attr]
    assert returncode == 2 and b"no decision within 0.5 s" in hook.stderr.read()  # type: ignore[union-attr]


def _own_handler(signum: int, frame: object) -> None:
    raise AssertionError("the hook's timer outlived its block")


@pytest.mark.parametrize("before", [signal.SIG_DFL, signal.SIG_IGN, _own_handler], ids=["default", "ignore", "own"])
@pytest.mark.parametrize("ending", ["done", "raised", "expired", "nested"])
def test_the_deadline_leaves_the_alarm_as_it_found_it(before: Any, ending: str) -> None:
    """The deadline's SIGALRM in a process that runs hook after hook (the decision server, a test
    run in process): whatever handler was there —
    default, ignore, one of the process's own — is back, and no timer is left running, however
    the block ends: done, raising, expired, or around an inner deadline."""
    import time

    from bgc.adapters.agents.hook import HookTimeout
    from bgc.adapters.agents.hook import deadline as _deadline

    previous = signal.signal(signal.SIGALRM, before)
    try:
        try:
            with _deadline(0.05 if ending == "expired" else 30):
                if ending == "raised":
                    raise KeyError("the decision failed")
                if ending == "expired":
                    time.sleep(5)
                if ending == "nested":
                    with _deadline(20):
                        pass
        except (KeyError, HookTimeout) as error:
            assert (type(error), ending) in ((KeyError, "raised"), (HookTimeout, "expired"))
        assert signal.getsignal(signal.SIGALRM) == before
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_decisions_from_a_plan(project: dict[str, Any], tmp_path: Path) -> None:
    """--plan decides with compiled plans alone: the tool declarations travel in the plan."""
    order = tmp_path / "order.yaml"
    order.write_text(
        'intent: {kind: patch.apply, payload: "x"}\nrequests: ["fs:read:/src/**"]\n'
        'origin: {model: m, parents: [], prompt: "sha256:' + "0" * 64 + '"}\n'
    )
    plan = tmp_path / "plan.json"
    policy = Path(project["root"]) / ".claude" / "bgc" / "policy.bgp"
    done = subprocess.run(
        [sys.executable, "-m", "bgc", "compile", str(order), "-p", str(policy), "--format", "json", "-o", str(plan), "--fail-on", "never"],
        capture_output=True, timeout=TIMEOUT, env={**os.environ, "BGC_CACHE_DIR": project["cache"]},
    )
    assert done.returncode == 0, done.stderr
    command = f"{sys.executable} -I -m bgc hook claude-code --plan {plan}"
    for path, expected in ((f"{P}/src/a.py", "allow"), (f"{P}/tests/t.py", "deny"), ("/etc/passwd", "deny")):
        got, _ = run_hook(project, _input(project, "PreToolUse", "Read", {"file_path": path}), command=command)
        assert got == expected, path


# ---- the sandbox flag, by class ------------------------------------------------------------------


def _sandbox_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.samples import bgc

    root = tmp_path_factory.mktemp("sandbox")
    (root / "src").mkdir()
    assert bgc("init", "claude-code", "--dir", str(root)).exit_code == 0
    return root


def test_the_sandbox_flag_is_read_by_its_type_alone() -> None:
    """`dangerouslyDisableSandbox`: `true` marks the call to be asked at least, `false` marks
    nothing, and every other JSON value (numbers equal to a boolean, text, null, lists, maps)
    blocks: generated values, not a list of examples."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from bgc.adapters.agents import claude_code
    from bgc.adapters.agents.protocol import HookInputError

    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
    values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)), max_leaves=6)

    @settings(max_examples=300, deadline=None)
    @given(values)
    def check(flag: Any) -> None:
        data = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": "/p",
                "tool_input": {"command": ">src/x", "dangerouslyDisableSandbox": flag}}  # fmt: skip
        if flag is True or flag is False:
            use = claude_code.tool_use(data)
            assert (use.asks_anyway is not None) == flag
        else:
            with pytest.raises(HookInputError):
                claude_code.tool_use(data)

    check()


def test_outside_the_sandbox_an_allow_is_asked_and_nothing_else_changes(tmp_path_factory: pytest.TempPathFactory) -> None:
    """For generated commands (allowed, asked and denied ones, over generated file names), the
    answer with `dangerouslyDisableSandbox: true` is the answer without it, an allow made an ask."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from bgc.adapters.agents.hook import Options, decide

    root = _sandbox_project(tmp_path_factory)
    env = {"CLAUDE_PROJECT_DIR": str(root)}
    options = Options.of(policy=str(root / ".claude" / "bgc" / "policy.bgp"), store="none")
    shapes = [">src/{n}", ">>tests/{n}", "cat src/{n}", "echo x > .git/{n}", "cat .env > src/{n}", "rm -rf {n}",
              "ls src && >src/{n}", ">.github/workflows/{n}", "git status", "git push origin {n}", ">/etc/{n}"]  # fmt: skip

    def effect(command: str, sandbox_off: bool) -> str:
        tool_input = {"command": command, "dangerouslyDisableSandbox": sandbox_off}
        data = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(root), "tool_input": tool_input})
        code, out, _ = decide("claude-code", options, data.encode(), env, "/")
        assert code == 0
        return json.loads(out)["hookSpecificOutput"]["permissionDecision"]  # type: ignore[no-any-return]

    seen: set[str] = set()

    @settings(max_examples=60, deadline=None)
    @given(st.sampled_from(shapes), st.from_regex(r"[a-z][a-z0-9_.]{0,8}", fullmatch=True))
    def check(shape: str, name: str) -> None:
        command = shape.format(n=name)
        inside = effect(command, False)
        seen.add(inside)
        assert effect(command, True) == ("ask" if inside == "allow" else inside), command

    check()
    assert seen == {"allow", "ask", "deny"}, seen  # the generated commands meet every answer


@pytest.mark.parametrize("encoding", ["latin-1", "ascii", "cp1252"])
def test_the_answer_is_utf8_whatever_the_locale(project: dict[str, Any], encoding: str) -> None:
    """A reason with non-ASCII text (the argv dialect writes a ``/`` inside a word as ``∕``; a
    path may hold any letter) is answered in UTF-8 JSON even when the hook's locale cannot encode
    it: before, writing it failed and the call was blocked."""
    for tool_input, wanted in (({"command": "rm -rf /tmp/x"}, "proc:exec:rm/-rf/∕tmp∕x"), ({"file_path": "src/été.py"}, "été")):
        tool = "Bash" if "command" in tool_input else "Read"
        answer, done = run_hook(project, _input(project, "PreToolUse", tool, tool_input), environ={"PYTHONIOENCODING": encoding})
        assert answer in ("allow", "ask", "deny") and wanted in done.stdout.decode("utf-8"), done


@pytest.mark.parametrize("text", ["\udcff", "a\udc80b", "\ud800", "é\udfff∕"])
@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])
def test_the_answer_is_valid_utf8_json_whatever_its_text_holds(monkeypatch: pytest.MonkeyPatch, text: str, errors: str) -> None:
    """A reason holding a lone surrogate (a name decoded with ``surrogateescape`` somewhere on the
    way): the answer is still UTF-8 an agent's JSON reader takes (Codex's reads bytes strictly),
    with its decision as it was; it was written as the raw byte (invalid UTF-8), or, for a
    surrogate outside U+DC80-U+DCFF, not at all (the call blocked)."""
    import io

    from bgc.adapters.agents import hook
    from bgc.app.commands import hook as hook_command

    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": f"bgc: {text}"}}
    monkeypatch.setattr(hook, "_answer", lambda *_: answer)
    code, out, err = hook.decide("claude-code", hook.Options.of(policy="p.bgp"), b"{}", {}, "/")  # as the decision server calls it
    assert (code, err) == (0, b"")
    written = io.BytesIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(written, encoding="utf-8", errors=errors))
    assert hook_command.run("claude-code", policy="p.bgp") == 0  # and as the hook's own process writes it
    assert written.getvalue() == out
    data = json.loads(out.decode("utf-8"))
    assert data["hookSpecificOutput"]["permissionDecision"] == "deny" and data["hookSpecificOutput"]["permissionDecisionReason"].startswith("bgc: ")


def _broken_pipe() -> int:
    """A pipe's write end whose reader is gone."""
    read, write = os.pipe()
    os.close(read)
    return write


def test_an_answer_the_agent_cannot_read_blocks(project: dict[str, Any]) -> None:
    """The hook (deciding in its own process, or its client with the server's answer), its stdout
    a pipe whose reader is gone: it exits 2, the one code every agent takes as a block (141, a
    reader gone, is a non-blocking error to them: the call went through), whatever the answer."""
    write = _broken_pipe()
    try:
        env = {**os.environ, "CLAUDE_PROJECT_DIR": project["root"], "BGC_CACHE_DIR": project["cache"]}
        call = json.dumps(_input(project, "PreToolUse", "Read", {"file_path": ".env"})).encode()
        done = subprocess.run(["sh", "-c", project["command"]], input=call, stdout=write, stderr=subprocess.PIPE,
                              env=env, cwd=project["root"], timeout=TIMEOUT)  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 2 and b"Traceback" not in done.stderr, done


@pytest.mark.parametrize("error", [BrokenPipeError(32, "Broken pipe"), OSError(28, "No space left on device")])
def test_a_served_answer_the_agent_cannot_read_blocks(monkeypatch: pytest.MonkeyPatch, error: OSError) -> None:
    """The hook's client, its server's answer in hand, cannot write it: 2 (a block), not 141."""
    from bgc.adapters.agents import client

    def fail(fd: int, data: bytes) -> None:
        raise error

    monkeypatch.setenv("CLAUDE_PROJECT_DIR", "/p")
    monkeypatch.setattr(client, "_read_stdin", lambda deadline: (b"{}", True))
    monkeypatch.setattr(client, "doorbell_path", lambda project: "/p.bell")
    monkeypatch.setattr(client, "_ask", lambda *_: (0, b'{"decision": "deny"}\n', b""))
    monkeypatch.setattr(client, "_write_all", fail)
    assert client.ask_server("claude-code", [], {}) == 2
