"""``bgc diff`` on the command line: exit codes, formats, policies from git history, check --baseline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.app.render.test_machine_formats import validate_sarif
from tests.samples import bgc as run_bgc

pytestmark = pytest.mark.e2e

OLD = """\
include "base.bgp"
allow fs:write:/src/**
tool fs.write needs fs:write:{path}
"""
BASE_OLD = 'deny fs:write:/src/secrets, /src/secrets/** because "secrets"\n'
BASE_NEW = 'deny fs:write:/src/secrets, /src/secrets/*.key because "keys"\n'

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def bgc(*args: str, cwd: Path):  # type: ignore[no-untyped-def]
    """The command in-process (the one runner, which fails on a traceback), run from ``cwd`` as
    a user in that checkout would. The console script's own process runs these commands in
    test_the_ci_example_fails_a_widening_pull_request."""
    return run_bgc(*args, env={"NO_COLOR": "1", "BGC_CACHE_DIR": str(cwd / ".cache")}, cwd=cwd)


def git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, env=env, check=True,
                   capture_output=True)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies/main.bgp").write_text(OLD)
    (tmp_path / "policies/base.bgp").write_text(BASE_OLD)
    (tmp_path / "bgc.toml").write_text('policy = "policies/main.bgp"\npolicies = ["policies/main.bgp"]\n')
    git("init", "-q", ".", cwd=tmp_path)
    git("add", "-A", cwd=tmp_path)
    git("commit", "-qm", "base", cwd=tmp_path)
    return tmp_path


def test_exit_codes_new_removed_equivalent(tmp_path: Path) -> None:
    (tmp_path / "a.bgp").write_text("allow fs:write:/src/**\n")
    (tmp_path / "b.bgp").write_text("allow fs:write:/src/**, /docs/**\n")
    (tmp_path / "c.bgp").write_text("allow fs:write:/docs/**, /src/**  # reordered\n")
    assert bgc("diff", "a.bgp", "b.bgp", cwd=tmp_path).exit_code == 1
    assert bgc("diff", "b.bgp", "a.bgp", cwd=tmp_path).exit_code == 0  # only removals
    assert bgc("diff", "b.bgp", "a.bgp", "--fail-on", "removed", cwd=tmp_path).exit_code == 1
    assert bgc("diff", "a.bgp", "b.bgp", "--fail-on", "never", cwd=tmp_path).exit_code == 0
    same = bgc("diff", "b.bgp", "c.bgp", "--equivalent", cwd=tmp_path)
    assert same.exit_code == 0 and "no difference in effect" in same.stdout
    assert bgc("diff", "b.bgp", "a.bgp", "--equivalent", cwd=tmp_path).exit_code == 1


def test_bad_input_is_exit_2_located(tmp_path: Path) -> None:
    (tmp_path / "a.bgp").write_text("allow fs:write:/src/**\n")
    (tmp_path / "bad.bgp").write_text("allow fs:write:/src/[\n")
    bad = bgc("diff", "a.bgp", "bad.bgp", cwd=tmp_path)
    assert bad.exit_code == 2 and "bad.bgp:1:" in bad.stderr and not bad.stdout
    assert bgc("diff", "a.bgp", cwd=tmp_path).exit_code == 2
    assert bgc("diff", "a.bgp", "a.bgp", "--mode", "nope", cwd=tmp_path).exit_code == 2
    assert bgc("diff", "a.bgp", "missing.bgp", cwd=tmp_path).exit_code == 2


@needs_git
def test_text_names_the_counterexample_and_both_rules(repo: Path) -> None:
    (repo / "policies/base.bgp").write_text(BASE_NEW)  # the widening is in an included file
    result = bgc("diff", "git:HEAD:policies/main.bgp", "policies/main.bgp", cwd=repo)
    assert result.exit_code == 1, result.stderr
    assert result.stdout == (
        "git:HEAD:policies/main.bgp → policies/main.bgp\n"
        "  new access\n"
        "  + fs:write:/src/secrets/** except /src/secrets/*.key  deny → allow\n"
        "      e.g. fs:write:/src/secrets/a\n"
        "      old: deny base.bgp:1 “secrets”\n"
        "      new: allow main.bgp:2\n"
        "      calls: fs.write {path: /src/secrets/a}\n"
        "  summary: 1 new access change, 0 removals\n"
    )


@needs_git
def test_json_and_sarif_point_at_the_new_rules(repo: Path) -> None:
    (repo / "policies/base.bgp").write_text(BASE_NEW)
    data = json.loads(bgc("diff", "--against", "HEAD", "--format", "json", cwd=repo).stdout)
    (comparison,) = data["comparisons"]
    assert comparison["grants_new"] and not comparison["equivalent"]
    (change,) = comparison["changes"]
    assert change["example"] == "fs:write:/src/secrets/a" and change["old_rules"][0]["file"] == "base.bgp"
    sarif = bgc("diff", "--against", "HEAD", "--format", "sarif", cwd=repo)
    assert sarif.exit_code == 1
    document = json.loads(sarif.stdout)
    (result,) = document["runs"][0]["results"]
    assert result["ruleId"] == "BGC310" and result["level"] == "error"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "policies/main.bgp" and location["region"]["startLine"] == 2
    validate_sarif(document)
    github = bgc("diff", "--against", "HEAD", "--format", "github", cwd=repo).stdout
    assert github.startswith("::error file=policies/main.bgp,line=2,") and "e.g. fs%3Awrite" not in github


@needs_git
def test_git_revision_errors_are_exit_2(repo: Path) -> None:
    for spec, said in [
        ("git:nope:policies/main.bgp", "unknown revision"),
        ("git:HEAD:policies/gone.bgp", "no such file in revision HEAD"),
        ("git:HEAD", "git:REV:path"),
        ("git:--upload-pack=x:policies/main.bgp", "cannot start with '-'"),
    ]:
        result = bgc("diff", spec, "policies/main.bgp", cwd=repo)
        assert result.exit_code == 2 and said in result.stderr, (spec, result.stderr)
    (repo / "policies/main.bgp").write_text('include "loop.bgp"\n')
    (repo / "policies/loop.bgp").write_text('include "main.bgp"\n')
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "loop", cwd=repo)
    looped = bgc("diff", "git:HEAD:policies/main.bgp", "policies/base.bgp", cwd=repo)
    assert looped.exit_code == 2 and "git:HEAD:policies/" in looped.stderr and "include cycle" in looped.stderr
    assert "bgc-revision-" not in looped.stderr  # the temporary directory never shows


@needs_git
def test_symbolic_links_in_history_are_refused(repo: Path) -> None:
    os.symlink("base.bgp", repo / "policies/link.bgp")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "link", cwd=repo)
    result = bgc("diff", "git:HEAD:policies/link.bgp", "policies/base.bgp", cwd=repo)
    assert result.exit_code == 2 and "symbolic link" in result.stderr


@needs_git
def test_check_baseline_fails_on_new_access(repo: Path) -> None:
    clean = bgc("check", "--baseline", "HEAD", cwd=repo)
    assert clean.exit_code == 0, clean.stdout + clean.stderr
    (repo / "policies/base.bgp").write_text(BASE_NEW)
    widened = bgc("check", "--baseline", "HEAD", cwd=repo)
    assert widened.exit_code == 1 and "e.g. fs:write:/src/secrets/a" in widened.stdout
    sarif = json.loads(bgc("check", "--baseline", "HEAD", "--format", "sarif", cwd=repo).stdout)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["BGC310"]


@needs_git
def test_a_policy_new_since_the_baseline_is_a_note(repo: Path) -> None:
    (repo / "policies/extra.bgp").write_text("allow fs:write:/**\n")
    result = bgc("diff", "--against", "HEAD", "policies/extra.bgp", cwd=repo)
    assert result.exit_code == 0 and "not in the baseline revision" in result.stdout


@needs_git
def test_the_ci_example_fails_a_widening_pull_request(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """examples/ci/github-actions-no-new-access.yml, its steps run by bash as the runner would:
    a pull request that widens a permission fails, with the counterexample in the log."""
    import yaml

    root = Path(__file__).resolve().parents[3]
    workflow = yaml.safe_load((root / "examples/ci/github-actions-no-new-access.yml").read_text())
    steps = [step for step in workflow["jobs"]["no-new-access"]["steps"] if "run" in step and "pip install" not in step["run"]]
    git("branch", "-M", "main", cwd=repo)
    git("remote", "add", "origin", str(repo), cwd=repo)
    git("fetch", "-q", "origin", cwd=repo)
    git("checkout", "-qb", "pr", cwd=repo)
    (repo / "policies/base.bgp").write_text(BASE_NEW)
    git("commit", "-qam", "narrow the secrets deny", cwd=repo)
    github_env = tmp_path_factory.mktemp("runner") / "env"
    github_env.write_text("")
    env = {**os.environ, "GITHUB_ENV": str(github_env), "BASE_REF": "main", "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    results = []
    for step in steps:
        env.update(line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line)
        results.append(subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env, capture_output=True, text=True, timeout=300))
    annotate, verdict = results[-2], results[-1]
    assert annotate.returncode == 0 and annotate.stdout.startswith("::error file=policies/main.bgp,line=2,")
    assert verdict.returncode == 1 and "e.g. fs:write:/src/secrets/a" in verdict.stdout, verdict.stdout + verdict.stderr
