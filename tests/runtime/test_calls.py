"""Run-time call decisions (bgc.runtime.calls) and `bgc gate --call`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.runtime.calls import CallDecider, Workspace, implicit_plan, policy_decider
from bgc.core.compiler import Compiler, decide
from bgc.errors import BgcError
from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder
from bgc.core.plan import PlanError, plan_from_data
from bgc.core.policy.loader import parse_policy
from tests.samples import examples

POLICY = """\
tool fs.read needs fs:read:{path} ignores encoding
tool fs.write needs fs:write:{path}
tool fs.move needs fs:write:{src}, fs:write:{dst}
tool net.fetch needs net:connect:{url}
tool search on github, gitlab needs net:connect:https://code.example.com/{repo}
tool tree needs fs:read:{path}/**
allow fs:read:/** because "read"
allow fs:write:/src/**, /tests/** because "write"
deny fs:*:/**/.env, /.git/** because "secrets"
ask fs:write:/src/migrations/** approvals 2 of [alice, bob] because "schema"
ask net:connect:https://code.example.com/** because "net"
"""


@pytest.fixture(scope="module")
def policy():  # type: ignore[no-untyped-def]
    return parse_policy(POLICY, "p.bgp")


@pytest.fixture(scope="module")
def decider(policy) -> CallDecider:  # type: ignore[no-untyped-def]
    return CallDecider([implicit_plan(policy, None)])


def test_each_atom_is_decided_and_names_its_rule(decider: CallDecider) -> None:
    allowed = decider.decide_call("fs.write", None, {"path": "/src/a.py"})
    assert (allowed.effect, [str(a.rule) for a in allowed.atoms]) == ("allow", ["p.bgp:8"])
    denied = decider.decide_call("fs.move", "local", {"src": "/src/a.py", "dst": "/.git/config"})
    assert denied.effect == "deny" and [a.effect for a in denied.atoms] == ["allow", "deny"]
    assert denied.explanation() == "fs:write:/.git/config: denied by p.bgp:9 (secrets)"
    asked = decider.decide_call("fs.write", None, {"path": "/src/migrations/1.sql"})
    assert asked.effect == "ask" and asked.atoms[0].reason == "awaits 2 of [alice, bob] (ask p.bgp:10)"
    nothing = decider.decide_call("fs.write", None, {"path": "/README.md"})
    assert nothing.effect == "deny" and nothing.atoms[0].reason == "no rule allows it"


def test_the_server_is_part_of_the_call(decider: CallDecider) -> None:
    assert decider.decide_call("search", "github", {"repo": "a/b"}).effect == "ask"
    for server in ("evil-server", "local", "GitHub", "github "):
        decision = decider.decide_call("search", server, {"repo": "a/b"})
        assert (decision.effect, decision.declared) == ("deny", False), server
    unknown = decider.decide_call("fs.read", "github", {"path": "/src/a"})
    assert unknown.reason == (
        "tool 'fs.read' is not declared on server 'github' (only on local), and no rule names mcp:call:github/fs.read"
    )


def test_a_subtree_need_is_granted_only_whole(decider: CallDecider) -> None:
    assert decider.decide_call("tree", None, {"path": "/src/lib"}).effect == "deny"  # /src/lib/.env is denied
    plan = Compiler(parse_policy("tool tree needs fs:read:{path}/**\nallow fs:read:/src/**\n", "q.bgp")).compile(
        WorkOrder(Intent("x", None), (), GrantSet.of([GrantAtom("fs", "read", "**")]), ProposalOrigin("m", (), Digest.of(b"")))
    )
    assert CallDecider([plan]).decide_call("tree", None, {"path": "/src/lib"}).effect == "allow"


# Every kind of parameter value that is not text or an integer, and every way a call can carry
# more than its declaration checks: each is refused, whatever it holds.
_scalars = st.one_of(st.text(max_size=8), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False))
_nested = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=8)
_not_text = st.one_of(st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False), st.dictionaries(st.text(max_size=5), _nested, max_size=3), st.lists(st.dictionaries(st.text(max_size=3), _nested, min_size=1), min_size=1, max_size=3))


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_not_text)
def test_a_parameter_that_is_not_text_is_refused(decider: CallDecider, value: Any) -> None:
    decision = decider.decide_call("fs.read", None, {"path": value})
    assert decision.effect == "deny" and decision.reason.startswith("refused: ")


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.text(min_size=1, max_size=10).filter(lambda n: n not in ("path", "encoding")), value=_nested)
def test_an_undeclared_parameter_is_refused(decider: CallDecider, name: str, value: Any) -> None:
    decision = decider.decide_call("fs.read", None, {"path": "/src/a.py", name: value})
    assert (decision.effect, decision.reason) == ("deny", f"refused: parameter {name!r} is not one the declaration names or ignores")


def test_missing_and_ignored_parameters(decider: CallDecider) -> None:
    assert decider.decide_call("fs.move", None, {"src": "/src/a"}).reason == "refused: missing parameter 'dst'"
    assert decider.decide_call("fs.read", None, {"path": "/src/a", "encoding": {"any": ["thing"]}}).effect == "allow"


_segments = st.sampled_from(["src", "tests", ".env", ".git", "migrations", "a.py", "..", ".", "", "x", "é", "e\u0301"])


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(action=st.sampled_from(["read", "write"]), parts=st.lists(_segments, min_size=1, max_size=5))
def test_a_call_is_decided_as_compiling_its_atom_alone(policy, decider: CallDecider, action: str, parts: list[str]) -> None:  # type: ignore[no-untyped-def]
    """The implicit plan is the policy: a call's one atom gets what compiling that atom as a
    single-value request gives it (bgc.core.compiler.decide, the reference expects use)."""
    path = "/" + "/".join(parts)
    got = decider.decide_call(f"fs.{action}", None, {"path": path})
    reference = decide(policy, "fs", action, path, {"intent.kind": "bgc.call", "origin.model": "unknown"})
    assert got.effect == reference.effect, (path, got, reference)


def test_workspace_places_host_paths(tmp_path: Path, policy) -> None:  # type: ignore[no-untyped-def]
    project, outside = tmp_path / "p", tmp_path / "o"
    (project / "src").mkdir(parents=True)
    outside.mkdir()
    (project / "out").symlink_to(outside)
    (project / "src" / "env").symlink_to("../.env")
    workspace = Workspace.at(str(project), str(project / "src"))
    decider = CallDecider([implicit_plan(policy, None)], workspace=workspace)
    root = os.path.realpath(project)
    expected = {
        f"{root}/src/a.py": ("allow", "fs:read:/src/a.py"),
        "a.py": ("allow", "fs:read:/src/a.py"),  # relative to the working directory
        "../.env": ("deny", "fs:read:/.env"),
        f"{root}/src/env": ("deny", "fs:read:/src/env"),  # a link to .env
        f"{root}/out/x": ("deny", "fs:read:/out/x"),  # a link leaving the project
        "/etc/passwd": ("deny", "host:read:/etc/passwd"),
        f"{root}/../o/x": ("deny", f"host:read:{os.path.realpath(outside)}/x"),
        f"{root}x/a": ("deny", f"host:read:{root}x/a"),  # a sibling sharing the prefix is outside
    }
    for path, (effect, atom) in expected.items():
        decision = decider.decide_call("fs.read", None, {"path": path})
        assert (decision.effect, decision.atoms[0].atom) == (effect, atom), path


def test_plans_carry_their_tool_declarations(policy) -> None:  # type: ignore[no-untyped-def]
    plan = implicit_plan(policy, None)
    data = json.loads(json.dumps(plan.to_data()))
    assert plan_from_data(data) == plan
    search = next(tool for tool in data["tools"] if tool["tool"] == "search")
    assert search == {"tool": "search", "servers": ["github", "gitlab"], "needs": ["net:connect:https://code.example.com/{repo}"], "ignores": []}
    for edit in (
        lambda d: d["tools"][0].update(servers=["evil-server", "local"]),
        lambda d: d["tools"][0].update(needs=["fs:read:/**"]),
        lambda d: d["tools"].pop(),
    ):
        tampered = json.loads(json.dumps(data))
        edit(tampered)
        with pytest.raises(PlanError, match="does not match its id"):
            plan_from_data(tampered)
    for bad, message in (
        (["fs:read:{path"], "not a placeholder"),
        (["fs:read:{a}{a}"], "not a placeholder"),
        (["FS:read:{a}"], "expected a template"),
        (["fs:read:[{a}"], "bad pattern"),
    ):
        broken = json.loads(json.dumps(data))
        broken["tools"][0]["needs"] = bad
        with pytest.raises(PlanError, match=message):
            plan_from_data(broken)


def test_the_policy_decider_is_cached_and_follows_edits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BGC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "p.bgp"
    path.write_text(POLICY)
    assert policy_decider(str(path)).decide_call("fs.write", None, {"path": "/src/a"}).effect == "allow"
    assert policy_decider(str(path)).decide_call("fs.write", None, {"path": "/src/a"}).effect == "allow"  # from the cache
    path.write_text(POLICY.replace('allow fs:write:/src/**, /tests/** because "write"', 'allow fs:write:/tests/** because "write"'))
    assert policy_decider(str(path)).decide_call("fs.write", None, {"path": "/src/a"}).effect == "deny"


def test_a_cached_decider_is_served_without_loading_the_policy_and_only_while_every_file_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hit reads the policy's files and nothing else (what a hook before every call can pay);
    an edited include, another mode, or an edit put back with the old digest behave as they must."""
    from bgc.core.policy import loader

    monkeypatch.setenv("BGC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p").mkdir()
    root, included = tmp_path / "p" / "root.bgp", tmp_path / "p" / "inc.bgp"
    root.write_text('include "inc.bgp"\n' + POLICY)
    included.write_text('mode strict {\n  deny fs:write:/src/** because "strict"\n}\n')
    loads: list[str] = []
    real = loader.cached_policy
    monkeypatch.setattr(loader, "cached_policy", lambda path: loads.append(path) or real(path))

    def effect(path: str, mode: str | None = None) -> str:
        return policy_decider(path, mode).decide_call("fs.write", None, {"path": "/src/a"}).effect

    assert effect(str(root)) == "allow" and len(loads) == 1
    monkeypatch.chdir(tmp_path)
    assert effect("p/../p/root.bgp") == "allow" and len(loads) == 1  # another spelling: a hit
    assert effect(str(root), "strict") == "deny" and len(loads) == 2  # the mode is part of the key
    assert effect(str(root), "strict") == "deny" and len(loads) == 2
    included.write_text('mode strict {\n  deny fs:write:/tests/** because "strict"\n}\n')
    assert effect(str(root), "strict") == "allow" and len(loads) == 3  # an edited include misses
    assert effect(str(root)) == "allow" and len(loads) == 4  # and so does the default mode's entry
    with pytest.raises(BgcError):
        effect(str(root), "no-such-mode")  # an unknown mode is an error, never an entry
    assert len(loads) == 5


def _gate_call(plan: Path, lines: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bgc", "gate", str(plan), "--call", *extra], input="\n".join(lines) + "\n",
        capture_output=True, text=True, timeout=120,
    )


@pytest.mark.e2e
def test_gate_call_answers_one_line_per_call(tmp_path: Path, policy) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(implicit_plan(policy, None).to_data()))
    lines = [
        '{"tool": "fs.write", "params": {"path": "/src/a.py"}}',
        '{"tool": "fs.write", "server": "evil-server", "params": {"path": "/src/a.py"}}',
        '{"tool": "net.fetch", "server": "local", "params": {"url": "https://x.example/"}}',
        '{"tool": "search", "server": "gitlab", "params": {"repo": "a"}}',
        "not json",
        '{"tool": "fs.write", "tool": "fs.read"}',
        '{"tool": "fs.read", "params": {"path": "/src/a.py", "more": {"path": "/.env"}}}',
    ]
    done = _gate_call(plan, lines)
    assert done.returncode == 4, done.stderr  # some call denied
    assert done.stdout.splitlines() == [
        "allow\tfs.write@local\tfs:write:/src/a.py: granted by p.bgp:8",
        "deny\tfs.write@evil-server\ttool 'fs.write' is not declared on server 'evil-server' (only on local), "
        "and no rule names mcp:call:evil-server/fs.write",
        "deny\tnet.fetch@local\tnet:connect:https://x.example/: no rule allows it",
        "ask\tsearch@gitlab\tnet:connect:https://code.example.com/a: awaits 1 approval (ask p.bgp:11)",
        "deny\t?@?\tnot a call: <stdin>:5:1: invalid JSON: Expecting value",
        "deny\t?@?\tnot a call: <stdin>:6:22: tool: duplicate key 'tool'",
        "deny\tfs.read@local\trefused: parameter 'more' is not one the declaration names or ignores",
    ]
    as_json = _gate_call(plan, lines[:1], "--format", "json")
    assert json.loads(as_json.stdout)["atoms"] == [
        {"atom": "fs:write:/src/a.py", "effect": "allow", "reason": "granted by p.bgp:8", "rule": "p.bgp:8"}
    ]
    assert as_json.returncode == 0
    assert _gate_call(plan, lines[3:4]).returncode == 3  # asked, none denied
    assert _gate_call(plan, ['{"tool": "fs.read"}'], "fs:read:/x").returncode == 2  # atoms and --call: usage


FOLDING_POLICY = """filesystem case-insensitive
tool Bash needs proc:exec:{command}
allow proc:exec:**
deny proc:exec:rm/**
"""


@st.composite
def _rm_spelled(draw: st.DrawFn) -> str:
    """``rm`` with at least one capital, maybe by a path, maybe behind a wrapper, with arguments."""
    name = "".join(draw(st.sampled_from([c, c.upper()])) for c in "rm")
    if name == "rm":
        name = draw(st.sampled_from(["RM", "Rm", "rM"]))
    path = draw(st.sampled_from(["", "/bin/", "/usr/bin/", "./"]))
    wrapper = draw(st.sampled_from(["", "sudo ", "doas ", "nohup ", "env ", "SUDO ", "Nice "]))
    return f"{wrapper}{path}{name} -rf /tmp/x"


@settings(max_examples=examples(200), deadline=None)
@given(_rm_spelled())
def test_a_program_named_in_capitals_is_never_allowed_where_names_fold_case(command: str) -> None:
    """On a case-insensitive file system ``RM``, ``/bin/Rm`` and ``SUDO rm`` run ``rm``, which the
    deny rule (matched as written) does not name: such a command is at best asked there. Where
    names do not fold, ``RM`` is another program, decided by its own name as before."""
    folding = CallDecider([implicit_plan(parse_policy(FOLDING_POLICY, "p.bgp"), None)])
    assert folding.decide_shell(command, "/w").effect in ("ask", "deny"), command
    plain = CallDecider([implicit_plan(parse_policy(FOLDING_POLICY.split("\n", 1)[1], "p.bgp"), None)])
    assert plain.decide_shell("rm -rf /tmp/x", "/w").effect == "deny"
    assert plain.decide_shell(command, "/w").effect == "allow"  # not rm there: decided by its own name, as before


def test_lowercase_programs_are_decided_as_before_where_names_fold_case() -> None:
    folding = CallDecider([implicit_plan(parse_policy(FOLDING_POLICY, "p.bgp"), None)])
    assert folding.decide_shell("git status && ls -la /tmp", "/w").effect == "allow"
    assert folding.decide_shell("rm -rf /tmp/x", "/w").effect == "deny"


FALLBACK_POLICY = """\
tool Bash needs proc:exec:{command}
tool fs.write needs fs:write:{path}
allow proc:exec:pytest, pytest/** because "the tests"
allow proc:exec:git/status
deny proc:exec:git/push, git/push/** because "a person pushes"
otherwise ask proc:exec:** because "any other command needs a person"
allow fs:write:/src/**
otherwise ask fs:write:/** approvals 1 of [alice] because "other files are reviewed"
"""


def test_a_call_no_rule_matches_is_asked_naming_the_fallback() -> None:
    """At run time (issue 29): allowed commands run, the rest is asked of a person, naming the
    fallback and its reason, and a deny still wins."""
    decider = CallDecider([implicit_plan(parse_policy(FALLBACK_POLICY, "p.bgp"), None)])
    assert decider.decide_shell("pytest -x && git status", "/w").effect == "allow"
    asked = decider.decide_shell("make build", "/w")
    assert asked.effect == "ask" and asked.atoms[0].reason == "awaits 1 approval (otherwise ask p.bgp:6) (in `make build`)"
    assert asked.atoms[0].rule is not None and asked.atoms[0].rule.reason == "any other command needs a person"
    assert decider.decide_shell("pytest && git push origin main", "/w").effect == "deny"
    readme = decider.decide_call("fs.write", None, {"path": "/README.md"})
    assert readme.effect == "ask" and readme.atoms[0].reason == "awaits 1 of [alice] (otherwise ask p.bgp:8)"
    assert decider.decide_call("fs.write", None, {"path": "/src/a.py"}).effect == "allow"
