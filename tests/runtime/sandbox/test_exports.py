"""Exports never wider than the plan: generated trees and policies, every target, each document
read back as its tool applies it and compared path by path (existing paths and new names in
every directory) with the plan's own decision; documents widened by hand are refused by the
check; the network and what each format cannot say.
"""

from __future__ import annotations

import json
import os
import random
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.app.commands.sandbox import SANDBOX_REQUESTS, SANDBOX_INTENT
from bgc.core.compiler import Compiler
from bgc.core.gate import Gate
from bgc.core.policy.loader import load_policy
from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder
from bgc.runtime.sandbox import exports, mapping, prove
from bgc.runtime.sandbox.exports import View, codex, common, seatbelt
from bgc.runtime.sandbox.mapping import SandboxRefused
from tests.runtime.sandbox.test_mapping import POLICIES, make_tree

TARGETS = sorted(exports.TARGETS)
PLANS = {
    **POLICIES,
    "write-all": "allow fs:read:/**\nallow fs:write:/**\ndeny fs:write:/**/.git/**, /**/.git, /**/Makefile\ndeny fs:read:/**/*.pem\n",
}
NETWORK = """
allow net:connect:https://pypi.org/**, https://*.pythonhosted.org/**, https://api.example.com:8443/**
allow net:connect:https://docs.example.com/v1/**, http://127.0.0.1:8080/**, https://cut.example.com/**
deny net:connect:https://cut.example.com/admin/**
"""


def compile_text(tmp_path: Path, text: str) -> list:
    path = tmp_path / "policy.bgp"
    path.write_text(text)
    order = WorkOrder(
        Intent(SANDBOX_INTENT, None), (), GrantSet.of(GrantAtom.parse(t) for t in SANDBOX_REQUESTS),
        ProposalOrigin("unknown", (), Digest.of(b"")),
    )  # fmt: skip
    return [Compiler(load_policy(str(path))).compile(order)]


def build(tmp_path: Path, policy: str, seed: int | None = None) -> tuple[list, str, mapping.Confinement, list]:
    project = tmp_path / "project"
    project.mkdir()
    if seed is not None:
        make_tree(project, seed)
    plans = compile_text(tmp_path, policy)
    real = os.path.realpath(project)
    confinement, entries = mapping.build(plans, real, environ={})
    prove.prove(confinement, plans, entries)
    return plans, real, confinement, entries


def access_of(target: str, text: str, project: str) -> exports.Access:
    return exports.TARGETS[target].module()[1](text, project)


def excess(plans: list, project: str, target: str, done: exports.Export) -> list[str]:
    """Brute force: every existing path and a new name in every directory of the project, its
    access as the target's tool applies the document, against the plan's own decision. Reads
    are of what exists (a file appearing later is the mapping's documented limit, as for
    ``bgc sandbox``); a new name an except refuses inside a writable directory is the mapping's
    gap, and may be created; every other excess is listed."""
    gate = Gate(plans)
    access = access_of(target, done.text, project)
    confines_reads = exports.TARGETS[target].module()[2]
    wrong = []
    paths = []
    for dirpath, dirnames, filenames in os.walk(project):
        for name in (*dirnames, *filenames):
            paths.append((os.path.join(dirpath, name), True))
        for name in ("new.py", ".env", "id_rsa", "Makefile"):
            paths.append((os.path.join(dirpath, name), False))
    for full, exists in paths:
        if exists and os.path.islink(full):
            continue
        workspace = "/" + os.path.relpath(full, project)
        if exists and os.path.isfile(full) and os.stat(full).st_nlink > 1:
            continue  # several names: the proof's own rule (every name), tested in test_mapping
        read = gate.decide(f"fs:read:{workspace}").effect == "allow" or (exists and os.path.isdir(full))
        if exists and confines_reads and access.readable(full) and not read:
            wrong.append(f"read {workspace}")
        if access.writable(full) and full not in access.write_roots() and gate.decide(f"fs:write:{workspace}").effect != "allow":
            in_gap = any(
                mapping.inside(full, gap.directory) and any(_matches(p, workspace) for p in gap.patterns) for gap in done.gaps
            )
            if exists or not in_gap:
                wrong.append(f"write {workspace}")
    return wrong


def _matches(pattern: str, text: str) -> bool:
    from bgc.core.patterns import glob

    return glob.parse(pattern).matches(text)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("policy", sorted(PLANS))
@pytest.mark.parametrize("seed", range(5))
def test_exports_never_wider_than_brute_force(tmp_path: Path, target: str, policy: str, seed: int) -> None:
    plans, project, confinement, entries = build(tmp_path, PLANS[policy] + NETWORK, seed)
    done = exports.export(target, confinement, plans, entries)
    assert excess(plans, project, target, done) == []
    for host, port in access_of(target, done.text, project).destinations():
        assert (host, port) in {("pypi.org", 443), ("*.pythonhosted.org", 443), ("api.example.com", 8443)}


RULES = st.lists(
    st.tuples(
        st.sampled_from(["allow", "deny"]),
        st.sampled_from(["fs:read", "fs:write", "fs:*"]),
        st.sampled_from(["/**", "/src/**", "/src/*.py", "/docs/**", "/**/.env", "/.git/**", "/.git", "/src/lib/**", "/README"]),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rules=RULES, seed=st.integers(0, 50))
def test_random_plans_export_never_wider(tmp_path_factory: pytest.TempPathFactory, rules: list, seed: int) -> None:
    tmp_path = tmp_path_factory.mktemp("plan")
    policy = "".join(f"{effect} {action}:{pattern}\n" for effect, action, pattern in rules)
    project = tmp_path / "project"
    project.mkdir()
    make_tree(project, seed)
    os.makedirs(project / "src" / "lib", exist_ok=True)
    plans = compile_text(tmp_path, policy)
    confinement, entries = mapping.build(plans, str(project.resolve()), environ={})
    try:
        prove.prove(confinement, plans, entries)
    except SandboxRefused:
        return  # a plan bgc's own sandbox refuses to confine (writes it does not let be read): nothing to export
    for target in TARGETS:
        done = exports.export(target, confinement, plans, entries)
        assert excess(plans, str(project.resolve()), target, done) == [], (target, policy)


def widened(target: str, text: str, project: str) -> list[str]:
    """The document made wider by hand, in every way the target's format allows."""
    if target == "sandbox-runtime":
        data = json.loads(text)
        fs = data["filesystem"]
        return [
            json.dumps({**data, "filesystem": {**fs, "allowWrite": [*fs["allowWrite"], project]}}),
            json.dumps({**data, "filesystem": {**fs, "denyRead": fs["denyRead"][:1]}}),
            json.dumps({**data, "filesystem": {**fs, "allowRead": [*fs["allowRead"], "/home"]}}),
            json.dumps({**data, "network": {"allowedDomains": ["evil.example.com:443"]}}),
            json.dumps({**data, "network": {"allowedDomains": ["pypi.org"]}}),  # every port
        ]
    if target == "claude-code":
        data = json.loads(text)
        sandbox = data["sandbox"]
        fs = sandbox["filesystem"]
        return [
            json.dumps({"sandbox": {**sandbox, "filesystem": {**fs, "denyWrite": []}}}),  # the working directory
            json.dumps({"sandbox": {**sandbox, "filesystem": {**fs, "denyRead": fs["denyRead"][:1]}}}),
            json.dumps({"sandbox": {**sandbox, "filesystem": {**fs, "allowRead": [*fs["allowRead"], "/home"]}}}),  # settings-relative
            json.dumps({"sandbox": {**sandbox, "allowUnsandboxedCommands": True}}),
            json.dumps({"sandbox": {**sandbox, "failIfUnavailable": False}}),
        ]
    if target == "codex":
        return [
            text.replace('"read-only"', '"workspace-write"'),
            text.replace('"read-only"', '"danger-full-access"'),
            'sandbox_mode = "workspace-write"\n[sandbox_workspace_write]\nexclude_tmpdir_env_var = true\n',  # /tmp
            'sandbox_mode = "workspace-write"\n[sandbox_workspace_write]\nexclude_slash_tmp = true\n',  # $TMPDIR
        ]
    allow_all = text + f'(allow file-write* (subpath "{project}"))\n'
    first_deny = text.index("(deny file-read* file-write*")
    return [
        allow_all,
        text + "(allow network*)\n",
        text[:first_deny] + text[first_deny:].replace("(deny", "(allow", 1),  # a refusal turned round
        text + f'(allow file-read* (subpath "{project}"))\n',  # a grant after the refusals
        text + "(allow default)\n",
    ]


@pytest.mark.parametrize("target", TARGETS)
def test_the_check_refuses_a_widened_document(tmp_path: Path, target: str) -> None:
    project = tmp_path / "project"
    for directory in ("src", "docs", ".git"):
        (project / directory).mkdir(parents=True)
    for name in (".env", "src/.env", "src/a.py", ".git/config", "README"):
        (project / name).write_text("x")
    plans = compile_text(tmp_path, POLICIES["starter"] + NETWORK)
    real = os.path.realpath(project)
    confinement, entries = mapping.build(plans, real, environ={})
    done = exports.export(target, confinement, plans, entries)
    confines_reads = exports.TARGETS[target].module()[2]
    view = View.of(confinement)
    for text in widened(target, done.text, real):
        with pytest.raises(SandboxRefused, match="wider than the plan|unconfined"):
            exports.check(access_of(target, text, real), view, plans, entries, confines_reads=confines_reads)


def test_a_destination_is_a_whole_host_and_port(tmp_path: Path) -> None:
    """Only https://HOST[:PORT]/** grants a destination; a grant of part of a host, another scheme,
    or a host a deny cuts into gives none, and each is reported."""
    plans, project, confinement, entries = build(tmp_path, "allow fs:read:/**\n" + NETWORK)
    found, dropped = common.destinations(View.of(confinement), plans)
    assert found == [("*.pythonhosted.org", 443), ("api.example.com", 8443), ("pypi.org", 443)]
    assert sorted(d.what for d in dropped) == [
        "net:connect:http://127.0.0.1:8080/**",
        "net:connect:https://cut.example.com/**",
        "net:connect:https://docs.example.com/v1/**",
    ]
    assert "refuses part of this host" in next(d.why for d in dropped if "cut" in d.what)


def test_claude_code_denies_writing_a_project_not_granted_whole(tmp_path: Path) -> None:
    """Claude Code always lets its working directory be written: the export denies the project,
    which (a deny wins) drops the granted directories below it, reported one by one."""
    plans, project, confinement, entries = build(tmp_path, POLICIES["starter"])
    for name in ("src", "tests"):
        os.mkdir(os.path.join(project, name))
    confinement, entries = mapping.build(plans, project, environ={})
    done = exports.export("claude-code", confinement, plans, entries)
    fs = json.loads(done.text)["sandbox"]["filesystem"]
    assert fs["denyWrite"][0] == "/" + project and fs["allowWrite"] == []
    assert sorted(d.what for d in done.dropped) == [f"write {project}/src", f"write {project}/tests"]
    assert all(path.startswith("//") for paths in fs.values() for path in paths)


def test_claude_code_keeps_a_project_granted_whole(tmp_path: Path) -> None:
    plans, project, confinement, entries = build(tmp_path, "allow fs:read:/**\nallow fs:write:/**\n", seed=3)
    done = exports.export("claude-code", confinement, plans, entries)
    fs = json.loads(done.text)["sandbox"]["filesystem"]
    assert fs["allowWrite"] == ["/" + project]
    assert not [d for d in done.dropped if d.what.startswith("write")]


def test_claude_code_refuses_a_refusal_it_cannot_spell(tmp_path: Path) -> None:
    plans, project, confinement, entries = build(tmp_path, "allow fs:read:/**\ndeny fs:read:/**/*.key\n")
    Path(project, "a[1].key").write_text("x")
    confinement, entries = mapping.build(plans, project, environ={})
    with pytest.raises(SandboxRefused, match="read as a pattern"):
        exports.export("claude-code", confinement, plans, entries)
    done = exports.export("sandbox-runtime", confinement, plans, entries)  # the runtime has literal paths
    assert {"path": f"{project}/a[1].key", "literal": True} in json.loads(done.text)["filesystem"]["denyRead"]


def test_codex_writes_only_a_project_it_can_keep_exact(tmp_path: Path) -> None:
    plans, project, confinement, entries = build(tmp_path, "allow fs:read:/**\nallow fs:write:/**\n", seed=1)
    done = exports.export("codex", confinement, plans, entries)
    settings_ = tomllib.loads(done.text)
    assert settings_["sandbox_mode"] == "workspace-write"
    assert settings_["sandbox_workspace_write"] == {
        "writable_roots": [], "network_access": False, "exclude_tmpdir_env_var": True, "exclude_slash_tmp": True,
    }  # fmt: skip
    (tmp_path / "b").mkdir()
    plans, project, confinement, entries = build(tmp_path / "b", "allow fs:read:/**\nallow fs:write:/**\ndeny fs:write:/**/Makefile\n")
    Path(project, "Makefile").write_text("x")
    confinement, entries = mapping.build(plans, project, environ={})
    done = exports.export("codex", confinement, plans, entries)
    assert tomllib.loads(done.text) == {"sandbox_mode": "read-only"}
    assert any("cannot keep" in d.why and "Makefile" in d.why for d in done.dropped)
    assert "read the whole disk" in " ".join(done.notes)
    assert codex.interpret(done.text, project).write_roots() == ()


def test_seatbelt_refusals_follow_every_grant(tmp_path: Path) -> None:
    """Structure: every rule that allows a write is a subpath the plan grants whole (D/** inside
    the granted writes) or a device; every deny comes after every allow, so it wins."""
    plans, project, confinement, entries = build(tmp_path, POLICIES["starter"], seed=4)
    for name in ("src", "tests"):
        os.makedirs(os.path.join(project, name), exist_ok=True)
    Path(project, "src", ".env").write_text("x")
    confinement, entries = mapping.build(plans, project, environ={})
    done = exports.export("seatbelt", confinement, plans, entries)
    rules = seatbelt.rules(done.text)
    writes = [part.pattern for part in mapping.granted_parts(plans, "fs", "write")]
    last_allow = max(i for i, rule in enumerate(rules) if rule.effect == "allow")
    first_deny = min(i for i, rule in enumerate(rules) if rule.effect == "deny" and rule.filters)
    assert rules[0].effect == "deny" and rules[0].operations == ("default",) and first_deny > last_allow
    for rule in rules:
        if rule.effect == "allow" and "file-write*" in rule.operations:
            for kind, path in rule.filters:
                assert path in seatbelt.WRITABLE_DEVICES or (
                    kind == "subpath" and prove.subset_of(mapping.below("/" + os.path.relpath(path, project)), writes)
                )
    denied = {path for rule in rules if rule.effect == "deny" for _, path in rule.filters}
    assert f"{project}/src/.env" in denied and f"{project}/src" in denied  # the secret, and the directory itself
    assert "(allow network" not in done.text


def test_a_runtime_directory_is_shown_read_only(tmp_path: Path) -> None:
    """What the tool itself needs (its helper, installed outside /usr) is shown read-only through
    the mapping's own rule for what starts the command, and nothing else of the host."""
    tool = tmp_path / "tool"
    tool.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    plans = compile_text(tmp_path, "allow fs:read:/**\n")
    confinement, entries = mapping.build(plans, str(project), environ={}, extra_read=[str(tool)])
    prove.prove(confinement, plans, entries)
    done = exports.export("sandbox-runtime", confinement, plans, entries)
    fs = json.loads(done.text)["filesystem"]
    assert str(tool) in fs["allowRead"] and fs["allowWrite"] == []


def test_readable_directories_are_split_around_writable_ones(tmp_path: Path) -> None:
    """The runtime binds readable paths after writable ones on Linux: no allowRead may hold an
    allowWrite, so the project is given back as its entries around the writable directory."""
    plans, project, confinement, entries = build(tmp_path, "allow fs:read:/**\nallow fs:write:/pkg/src/**\ndeny fs:*:/.env\n")
    for name in ("pkg/src", "pkg/docs", "lib"):
        os.makedirs(os.path.join(project, name))
    Path(project, "README").write_text("x")
    Path(project, ".env").write_text("x")
    confinement, entries = mapping.build(plans, project, environ={})
    fs = common.common_fs(View.of(confinement))
    assert [p for p in fs["allowRead"] if mapping.inside(p, project)] == [
        f"{project}/README", f"{project}/lib", f"{project}/pkg/docs",
    ]  # fmt: skip
    assert fs["allowWrite"] == [f"{project}/pkg/src"]


def test_random_widening_is_found(tmp_path: Path) -> None:
    """A path added to a runtime document's allowWrite anywhere in the project that the plan does
    not grant whole is refused."""
    plans, project, confinement, entries = build(tmp_path, POLICIES["starter"], seed=7)
    done = exports.export("sandbox-runtime", confinement, plans, entries)
    data = json.loads(done.text)
    rng = random.Random(7)
    directories = [e for e in entries if e.kind == "d" and not e.path.startswith(("/src", "/tests"))]
    for entry in rng.sample(directories, min(5, len(directories))):
        data["filesystem"]["allowWrite"] = [mapping.host_path(project, entry.path)]
        with pytest.raises(SandboxRefused):
            exports.check(access_of("sandbox-runtime", json.dumps(data), project), View.of(confinement), plans, entries)
