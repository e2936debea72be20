"""The plan → confinement mapping against a brute-force reference, and its proof.

Trees are generated (names from classes: secrets, VCS internals, ordinary files; depths; hard
and symbolic links), policies from templates; for every path of the tree, the access the mount
table gives it (the last mount at or above it) is compared with the plan's own decision.
"""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

import pytest

from bgc.core.compiler import Compiler
from bgc.core.gate import Gate
from bgc.core.policy.loader import load_policy
from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder
from bgc.runtime.sandbox import mapping, prove
from bgc.runtime.sandbox.mapping import Mount, SandboxRefused

SECRETS = (".env", ".env.prod", "server.pem", "tls.key", "id_rsa", "id_ed25519.pub", "secrets")
PLAIN = ("a.py", "README", "data.json", "Makefile", "notes.txt")
DIRS = ("src", "tests", "docs", "lib", ".git", "build", "secrets")

POLICIES = {
    "starter": """
deny fs:*:/**/.env, /**/.env.*, /**/*.pem, /**/*.key, /**/id_rsa, /**/id_ed25519.*
deny fs:*:/**/secrets, /**/secrets/**
deny fs:*:/.git, /.git/**
allow fs:read:/**
allow fs:write:/src/**, /tests/**
""",
    "narrow-read": """
allow fs:read:/src/**, /docs/**
allow fs:write:/src/**
deny fs:*:/**/.env
""",
    "write-everything": """
allow fs:read:/**
allow fs:write:/**
deny fs:write:/**/.git/**, /**/.git, /**/Makefile
deny fs:read:/**/*.pem
""",
    "nothing": "allow fs:read:/src/a.py\n",
}


def compile_policy(tmp_path: Path, text: str) -> list:
    path = tmp_path / "policy.bgp"
    path.write_text(text)
    order = WorkOrder(
        Intent("bgc.sandbox", None), (),
        GrantSet.of(GrantAtom.parse(t) for t in ("fs:read:**", "fs:write:**", "host:read:**", "env:read:**")),
        ProposalOrigin("unknown", (), Digest.of(b"")),
    )  # fmt: skip
    return [Compiler(load_policy(str(path))).compile(order)]


def make_tree(root: Path, seed: int) -> None:
    rng = random.Random(seed)
    directories = [root]
    for _ in range(rng.randint(4, 12)):
        parent = rng.choice(directories)
        if len(parent.relative_to(root).parts) < 3:
            child = parent / rng.choice(DIRS)
            child.mkdir(exist_ok=True)
            directories.append(child)
    files = []
    for _ in range(rng.randint(5, 20)):
        parent = rng.choice(directories)
        name = rng.choice(SECRETS + PLAIN)
        target = parent / name
        if not target.exists():
            target.write_text(name)
            files.append(target)
    for _ in range(rng.randint(0, 3)):  # hard links between project files, across classes
        if len(files) >= 2:
            source, parent = rng.choice(files), rng.choice(directories)
            link = parent / f"hard{rng.randint(0, 99)}"
            if not link.exists():
                os.link(source, link)
    for _ in range(rng.randint(0, 2)):
        parent = rng.choice(directories)
        link = parent / f"sym{rng.randint(0, 99)}"
        if not link.exists() and files:
            link.symlink_to(os.path.relpath(rng.choice(files), parent))


def reference(plans: list, project: str, confinement: mapping.Confinement) -> list[str]:
    """Every existing non-link path whose access under the mounts exceeds the plan's decision."""
    gate = Gate(plans)
    wrong = []
    for dirpath, dirnames, filenames in os.walk(project):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                continue
            workspace = "/" + os.path.relpath(full, project)
            mount = prove.effective(confinement.mounts, full)
            readable = mount is not None and mount.kind in ("ro", "rw")
            writable = mount is not None and mount.kind == "rw" and mount.path != full
            info = os.stat(full)
            same = [w for w in _names(project, info.st_ino)] if os.path.isfile(full) else [workspace]
            if readable and os.path.isdir(full):
                if not (gate.decide(f"fs:read:{workspace}").effect == "allow" or _holds_readable(gate, project, full)):
                    wrong.append(f"shown {workspace}")
            elif readable and (
                len(same) < info.st_nlink or not all(gate.decide(f"fs:read:{w}").effect == "allow" for w in same)
            ):
                wrong.append(f"read {workspace}")
            if writable and not all(gate.decide(f"fs:write:{w}").effect == "allow" for w in same):
                wrong.append(f"write {workspace}")
    return wrong


def _holds_readable(gate: Gate, project: str, directory: str) -> bool:
    """Whether anything below ``directory`` (not a link) may be read by the plan."""
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full) and gate.decide(f"fs:read:/{os.path.relpath(full, project)}").effect == "allow":
                return True
    return False


def _names(project: str, inode: int) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(project):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full) and os.stat(full).st_ino == inode:
                found.append("/" + os.path.relpath(full, project))
    return found


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(12))
def test_mapping_never_wider_than_brute_force(tmp_path: Path, policy: str, seed: int) -> None:
    project = tmp_path / "project"
    project.mkdir()
    make_tree(project, seed)
    plans = compile_policy(tmp_path, POLICIES[policy])
    real = os.path.realpath(project)
    confinement, entries = mapping.build(plans, real, environ={})
    prove.prove(confinement, plans, entries)
    assert reference(plans, real, confinement) == []


def test_a_directory_is_shown_for_what_it_holds(tmp_path: Path) -> None:
    """``/src/**`` matches what is below ``/src``, not ``/src`` itself: the directory is shown
    (its refused entries masked one by one), never hidden with what the plan grants in it."""
    project = tmp_path / "p"
    (project / "src" / "deep").mkdir(parents=True)
    (project / "src" / "deep" / "a.py").write_text("x")
    (project / "src" / ".env").write_text("x")
    (project / "docs").mkdir()
    (project / "docs" / "a.md").write_text("x")
    plans = compile_policy(tmp_path, POLICIES["narrow-read"].replace("/docs/**", "/docs/keep.md"))
    confinement, entries = mapping.build(plans, str(project), environ={})
    prove.prove(confinement, plans, entries)
    assert prove.effective(confinement.mounts, f"{project}/src/deep/a.py").kind == "rw"  # type: ignore[union-attr]
    assert set(confinement.paths("mask-file", "mask-dir")) == {f"{project}/src/.env", f"{project}/docs"}


def test_writable_directories_are_the_granted_ones(tmp_path: Path) -> None:
    project = tmp_path / "p"
    for name in ("src", "tests", "docs"):
        (project / name).mkdir(parents=True)
    plans = compile_policy(tmp_path, POLICIES["starter"])
    confinement, _ = mapping.build(plans, str(project), environ={})
    assert confinement.paths("rw") == (f"{project}/src", f"{project}/tests")
    assert [gap.directory for gap in confinement.gaps] == [f"{project}/src", f"{project}/tests"]
    assert "/**/.env" in confinement.gaps[0].patterns


@pytest.mark.parametrize(
    "widen",
    [
        lambda c, p: [m for m in c.mounts if not m.kind.startswith("mask")],  # a mask dropped
        lambda c, p: [*c.mounts, Mount("rw", f"{p}/docs", "granted fs:write")],  # a write not granted
        lambda c, p: [*c.mounts, Mount("rw", p, "granted fs:write")],  # the whole project writable
        lambda c, p: [*c.mounts, Mount("ro", "/home", "granted host:read")],  # a host path not granted
        lambda c, p: [*c.mounts, Mount("ro", "/var", "somebody's idea")],  # a reason the proof does not know
        lambda c, p: [*c.mounts, Mount("ro", f"{p}/src/.env", "the toolchain")],  # a refused file shown again
    ],
)
def test_proof_refuses_a_wider_confinement(tmp_path: Path, widen) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "p"
    (project / "src").mkdir(parents=True)
    (project / "docs").mkdir()
    (project / "src" / ".env").write_text("SECRET")
    (project / ".env").write_text("SECRET")
    plans = compile_policy(tmp_path, POLICIES["starter"])
    confinement, entries = mapping.build(plans, str(project), environ={})
    prove.prove(confinement, plans, entries)
    wider = dataclasses.replace(confinement, mounts=tuple(widen(confinement, str(project))))
    with pytest.raises(SandboxRefused, match="wider than the plan"):
        prove.prove(wider, plans, entries)


def test_special_files_are_masked(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    os.mkfifo(project / "pipe")
    import socket

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(project / "agent.sock"))
    try:
        plans = compile_policy(tmp_path, "allow fs:read:/**\n")
        confinement, _ = mapping.build(plans, str(project), environ={})
    finally:
        server.close()
    assert set(confinement.paths("mask-file")) == {f"{project}/pipe", f"{project}/agent.sock"}


@pytest.mark.parametrize("name", ["AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "GITHUB_TOKEN", "NPM_TOKEN", "SSH_AUTH_SOCK",
                                  "MY_API_KEY", "DB_PASSWORD", "OPENAI_API_KEY", "GPG_AGENT_INFO", "VAULT_ADDR", "x_secret"])  # fmt: skip
def test_credentials_are_never_inherited_through_a_wildcard(tmp_path: Path, name: str) -> None:
    environ = {name: "s3cr3t", "PATH": "/usr/bin", "LC_ALL": "C", "HOME": "/root"}
    plans = compile_policy(tmp_path, "allow env:read:**\n")
    env = dict(mapping.filtered_env(environ, plans))
    assert name not in env
    assert env["PATH"] == "/usr/bin" and env["LC_ALL"] == "C" and env["HOME"] == mapping.HOME
    named = compile_policy(tmp_path, f"allow env:read:{name}\n")
    assert dict(mapping.filtered_env(environ, named))[name] == "s3cr3t"


def test_a_project_too_large_is_refused(tmp_path: Path) -> None:
    for index in range(5):
        (tmp_path / f"f{index}").write_text("")
    with pytest.raises(SandboxRefused, match="too large"):
        mapping.build(compile_policy(tmp_path, "allow fs:read:/**\n"), str(tmp_path), environ={}, limit=3)


@pytest.mark.parametrize("interpreter", ["home", "root", "/"])
def test_an_interpreter_holding_the_home_directory_is_refused(tmp_path: Path, interpreter: str) -> None:
    project, home = tmp_path / "work" / "p", tmp_path / "home"
    project.mkdir(parents=True)
    home.mkdir()
    prefix = {"home": str(home), "root": str(tmp_path), "/": "/"}[interpreter]
    plans = compile_policy(tmp_path, "allow fs:read:/**\n")
    with pytest.raises(SandboxRefused, match="home directory"):
        mapping.build(plans, str(project), environ={"HOME": str(home)}, extra_read=[prefix])
