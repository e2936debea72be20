"""The pre-commit hooks, end to end, with the real `pre-commit` tool.

A throwaway git repository gets a bgc configuration, a policy, a policy test and a work order
with its recording; `pre-commit try-repo` installs the hooks from this checkout (building a
virtualenv and installing bgc into it, as a user's machine would) and runs every hook, once on
good files (all pass) and once after breaking each kind of file (each hook fails for its own
reason). The second run reuses the first run's environment, so only the first pays the install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.samples import POLICY, PROMPT

ROOT = Path(__file__).resolve().parent.parent


ORDER = f"""\
intent: {{kind: patch.apply}}
calls:
  - {{tool: fs.write, params: {{path: /src/a.py}}}}
requests: ["fs:write:/src/**"]
origin: {{model: m, parents: [], prompt: "{PROMPT}"}}
"""

TESTS = """\
policy: ../policies/p.bgp
tests:
  - name: source is writable
    order: ../orders/one.yaml
    verdicts: {"fs:write:/src/**": narrowed}
    calls: [covered]
"""

HOOKS = (
    "bgc check (policies, policy tests)",
    "bgc fmt (policies)",
    "bgc check --orders (work orders against their recorded expectations)",
    "bgc diff --against HEAD (no new access)",
)

pytestmark = [
    pytest.mark.first,  # about a minute, most of it pip installing bgc into the hooks' environment
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: pre-commit needs a git repository"),
]


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def hook_lines(output: str) -> dict[str, str]:
    """``{hook name: Passed | Failed | Skipped}`` from pre-commit's summary lines."""
    found = re.findall(r"^(bgc .*?)\.{3,}(?:\(no files to check\))?(Passed|Failed|Skipped)$", output, re.MULTILINE)
    return dict(found)


def test_hooks_pass_on_good_files_and_fail_on_bad_ones(tmp_path: Path) -> None:
    work = tmp_path / "work"
    for name, text in {
        "policies/p.bgp": POLICY,
        "orders/one.yaml": ORDER,
        "tests/p.bgt.yaml": TESTS,
        "bgc.toml": 'policy = "policies/p.bgp"\ntests = ["tests"]\norders = "orders"\n',
    }.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "BGC_CACHE_DIR": str(tmp_path / "bgc-cache"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "NO_COLOR": "1",
    }
    env.pop("PRE_COMMIT", None)
    assert run(["git", "init", "-q", "."], work, env).returncode == 0
    # record the order's expectation with this checkout's bgc, as a user would before committing
    recorded = run([sys.executable, "-c", "from bgc.launch import main; main()", "check", "--update"], work, env)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert (work / "orders/one.yaml.expected.json").is_file()
    assert run(["git", "add", "-A"], work, env).returncode == 0

    try_repo = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "--all-files", "--color", "never"]
    good = run(try_repo, work, env)
    assert good.returncode == 0, good.stdout + good.stderr
    assert hook_lines(good.stdout) == dict.fromkeys(HOOKS, "Passed"), good.stdout
    commit = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "policies"]
    assert run(commit, work, env).returncode == 0

    # break each kind of file: an unformatted policy whose expect fails (and which changes the
    # order's outcome) and which grants new access, a failing policy test
    (work / "policies/p.bgp").write_text(
        POLICY.replace('allow fs:write:/src/** because "source"', 'allow    fs:write:/src/a.py because "source"')
        + "expect allow fs:write:/src/other.py\nallow fs:write:/docs/**\n"
    )
    (work / "tests/p.bgt.yaml").write_text(TESTS.replace("[covered]", "[uncovered]"))
    assert run(["git", "add", "-A"], work, env).returncode == 0
    bad = run(try_repo, work, env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert hook_lines(bad.stdout) == dict.fromkeys(HOOKS, "Failed"), bad.stdout
    assert "error[BGC201]: expected allow for `fs:write:/src/other.py`" in bad.stdout
    assert "expected uncovered, got covered" in bad.stdout
    assert "files were modified by this hook" in bad.stdout  # bgc fmt rewrote the policy
    assert "error[BGC221]: fs:write:/src/**: recorded narrowed" in bad.stdout
    assert "allow fs:write:/src/a.py" in (work / "policies/p.bgp").read_text()  # and it is formatted now
    assert "+ fs:write:/docs/**  deny → allow" in bad.stdout and "e.g. fs:write:/docs/a" in bad.stdout
