"""The pre-commit hooks, end to end, with the real `pre-commit` tool.

A throwaway git repository gets a bgc configuration, a policy, a policy test and a work order
with its recording, and a pre-commit configuration naming this checkout's hooks (a snapshot of
the working tree, uncommitted changes included, as `pre-commit try-repo` takes it). `pre-commit
run` installs the hooks (a virtualenv with bgc built from this checkout and installed into it
with its dependencies, as a user's machine does) and runs every hook, once on good files (all
pass) and once after breaking each kind of file (each hook fails for its own reason). Both runs
share one pre-commit home, so only the first pays the install (`try-repo` would install twice:
it keeps no environment between runs).

The install is what takes time, and most of that is pip asking the package index about every
dependency. So pip gets a local wheelhouse: the dependencies' wheels and the build backend,
fetched once through the user's own pip configuration and kept under the user's cache keyed by
everything that decides them (pyproject.toml, the interpreter, the platform). With it the install
is offline (`PIP_NO_INDEX`); when it cannot be filled (no network, no index), pip reaches the
index as a user's would. bgc itself is always built from this checkout, never taken from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.samples import POLICY, PROMPT

ROOT = Path(__file__).resolve().parents[2]


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
    pytest.mark.first,  # the longest single test: pip installing bgc into the hooks' environment
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: pre-commit needs a git repository"),
]


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def hook_lines(output: str) -> dict[str, str]:
    """``{hook name: Passed | Failed | Skipped}`` from pre-commit's summary lines."""
    found = re.findall(r"^(bgc .*?)\.{3,}(?:\(no files to check\))?(Passed|Failed|Skipped)$", output, re.MULTILINE)
    return dict(found)


def wheelhouse() -> Path | None:
    """A directory of wheels for every dependency of bgc and its build backend, or None when pip
    cannot fill one (then the install asks the index, as a user's pip would).

    Kept between runs under the user's cache, named by a digest of what decides its content, and
    filled in a temporary directory renamed into place, so a concurrent run never sees half of it.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = sorted(project["project"]["dependencies"]) + sorted(project["build-system"]["requires"])
    key = json.dumps([wanted, sys.version, sysconfig.get_platform(), platform.libc_ver()]).encode()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bgc-tests"
    house = cache / ("wheelhouse-" + hashlib.sha256(key).hexdigest()[:16])
    if house.is_dir():
        return house
    cache.mkdir(parents=True, exist_ok=True)
    filling = Path(tempfile.mkdtemp(dir=cache, prefix=".filling-"))
    pip = [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(filling), *wanted]
    try:
        if subprocess.run(pip, capture_output=True, timeout=600).returncode != 0:
            return None
        filling.rename(house)
    except (OSError, subprocess.TimeoutExpired):  # no index reachable, or a concurrent run was first
        return house if house.is_dir() else None
    finally:
        shutil.rmtree(filling, ignore_errors=True)
    return house


def snapshot(into: Path) -> tuple[Path, str]:
    """This checkout's tracked files as they are in the working tree (uncommitted changes
    included, as `pre-commit try-repo` takes them), committed in a new repository pre-commit can
    clone; and that commit."""
    quiet = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_symlink():  # bgc/grammar, bgc/policies: links into the tree, kept as links
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            (into / name).symlink_to(os.readlink(ROOT / name))
        elif (ROOT / name).is_file():  # a tracked file deleted in the working tree stays deleted
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    for command in (["init", "-q", "."], ["add", "-A"], [*identity, "commit", "-qm", "working tree"]):
        subprocess.run(["git", *command], cwd=into, check=True, env=quiet, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=into, capture_output=True, text=True, check=True, env=quiet)
    return into, head.stdout.strip()


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
    house = wheelhouse()
    if house is not None:  # every wheel is there: the install needs no index
        env.update(PIP_FIND_LINKS=str(house), PIP_NO_INDEX="1")
    hooks_repo, rev = snapshot(tmp_path / "hooks-repo")
    config = tmp_path / "pre-commit-config.yaml"
    offered = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hooks = [{"id": hook["id"]} for hook in offered]  # every hook this checkout offers, as try-repo runs them
    config.write_text(json.dumps({"repos": [{"repo": str(hooks_repo), "rev": rev, "hooks": hooks}]}))
    assert run(["git", "init", "-q", "."], work, env).returncode == 0
    # record the order's expectation with this checkout's bgc, as a user would before committing
    recorded = run([sys.executable, "-c", "from bgc.app.launch import main; main()", "check", "--update"], work, env)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert (work / "orders/one.yaml.expected.json").is_file()
    assert run(["git", "add", "-A"], work, env).returncode == 0

    pre_commit = [sys.executable, "-m", "pre_commit", "run", "-c", str(config), "--all-files", "--color", "never"]
    good = run(pre_commit, work, env)
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
    bad = run(pre_commit, work, env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert hook_lines(bad.stdout) == dict.fromkeys(HOOKS, "Failed"), bad.stdout
    assert "error[BGC201]: expected allow for `fs:write:/src/other.py`" in bad.stdout
    assert "expected uncovered, got covered" in bad.stdout
    assert "files were modified by this hook" in bad.stdout  # bgc fmt rewrote the policy
    assert "error[BGC221]: fs:write:/src/**: recorded narrowed" in bad.stdout
    assert "allow fs:write:/src/a.py" in (work / "policies/p.bgp").read_text()  # and it is formatted now
    assert "+ fs:write:/docs/**  deny → allow" in bad.stdout and "e.g. fs:write:/docs/a" in bad.stdout
