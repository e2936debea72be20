"""A search's tree need decided on the files that exist (bgc.trees via CallDecider), against a
brute-force reading of the same tree: the call is allowed exactly when no file below is denied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc import trees
from bgc.calls import CallDecider, Workspace, implicit_plan
from bgc.policy.loader import parse_policy

POLICY = """tool grep needs fs:read:{path}, fs:read:{path}/** ignores pattern
allow fs:read:/** because "reading"
deny fs:read:/**/.env, /**/secrets/** because "secrets"
ask fs:read:/**/*.log because "logs"
"""


def decider(root: Path) -> CallDecider:
    return CallDecider([implicit_plan(parse_policy(POLICY, "p.bgp"), None)], workspace=Workspace.at(str(root)))


def grep(root: Path, path: str) -> tuple[str, str]:
    decision = decider(root).decide_call("grep", None, {"path": str(root / path), "pattern": "x"})
    return decision.effect, decision.explanation()


def make(root: Path, files: list[str]) -> None:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")


def test_a_clean_tree_is_allowed_and_a_secret_below_denies(tmp_path: Path) -> None:
    make(tmp_path, ["src/a.py", "src/b/c.py"])
    assert grep(tmp_path, "src") == ("allow", "fs:read:/src: granted by p.bgp:2; fs:read:/src/**: every file it reaches now is granted (2 files)")
    make(tmp_path, ["src/b/.env"])
    effect, why = grep(tmp_path, "src")
    assert effect == "deny" and why == "fs:read:/src/**: fs:read:/src/b/.env is below it: denied by p.bgp:3 (secrets)"
    make(tmp_path, ["logs/x.log"])
    assert grep(tmp_path, "logs")[0] == "ask"


def test_links_and_bounds_keep_the_patterns_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = tmp_path / "p", tmp_path / "out"
    make(root, ["src/a.py", "data/a.txt", ".env"])
    make(outside, ["x.txt"])
    (root / "data" / "ext").symlink_to(outside)
    (root / "src" / "env").symlink_to("../.env")
    effect, why = grep(root, "data")
    assert effect == "deny" and "/data/ext is a linked directory" in why
    assert grep(root, "src")[0] == "deny"  # a file link to .env is .env
    (root / "src" / "env").unlink()
    assert grep(root, "src")[0] == "allow"
    monkeypatch.setattr(trees, "MAX_ENTRIES", 0)
    effect, why = grep(root, "src")
    assert effect == "deny" and "not listed one by one" in why


NAMES = st.sampled_from(["a.py", ".env", "secrets", "x.log", "b", "c.txt"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(NAMES, min_size=1, max_size=3), max_size=6))
def test_the_answer_is_the_worst_file_below(tmp_path_factory: pytest.TempPathFactory, paths: list[list[str]]) -> None:
    root = tmp_path_factory.mktemp("tree")
    (root / "src").mkdir()
    files = []
    for parts in paths:
        target = root / "src" / os.path.join(*parts)
        if any(p.is_file() for p in target.parents) or target.is_dir():
            continue  # a file where a directory must be, or the reverse
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x")
        files.append("/src/" + "/".join(parts))
    reached = [f for f in files if (root / f.lstrip("/")).is_file()]
    segments = [f.split("/") for f in reached]
    if any(s[-1] == ".env" or "secrets" in s[:-1] for s in segments):  # /**/.env, /**/secrets/**
        expected = "deny"
    elif any(s[-1].endswith(".log") for s in segments):
        expected = "ask"
    else:
        expected = "allow"
    assert grep(root, "src")[0] == expected, reached
