"""From `ask` to a person's decision through `bgc hook claude-code`, run as Claude Code runs it.

The hook gets the hook input on stdin (as in test_hook_claude_code.py); people answer with
`bgc approve` / `bgc reject` and their own keys. Every expected answer is written by hand from the
policy below. Every test runs twice: the hook deciding alone (its entry point in this process,
tests/server_support.py ``run_in_process``), and the hook as a subprocess handing the call to the
project's running decision server (`bgc serve`), where approvals, rejections and modes given
meanwhile must count from the very next call.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.samples import bgc
from tests.server_support import SERVING, run_in_process, served, serving
from tests.store_support import Scene, store_tamperings

TIMEOUT = 120

POLICY = """\
include "claude-code.bgp"
trust approver alice {alice}
trust approver bob {bob}
allow fs:read:/**
allow fs:write:/src/** because "source is the agent's work"
ask fs:write:/migrations/** approvals 2 of [alice, bob] because "schema changes are reviewed by two"
ask fs:write:/package.json because "dependency changes need a human"
mode release approvals 1 of [alice] {{
  allow fs:write:/dist/** because "release builds"
}}
trust approver carol {carol}
"""


@pytest.fixture(params=SERVING)
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("alice", "bob", "carol", "mallory"):
        assert bgc("key", "new", name, "--dir", str(keys)).exit_code == 0
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    for name in ("claude-code.bgp", "agents.bgp"):  # the mapping, and what every agent's mapping includes
        (root / name).write_bytes((Path(__file__).resolve().parents[2] / "policies" / name).read_bytes())
    public = {name: (keys / f"{name}.pub").read_text().strip() for name in ("alice", "bob", "carol")}
    (root / "policy.bgp").write_text(POLICY.format(**public))
    found = {"root": str(root.resolve()), "keys": keys, "policy": str(root / "policy.bgp"),
             "store": str(root / ".bgc" / "kernel.db"), "cache": str(tmp_path / "cache")}  # fmt: skip
    with serving(request.param, found["root"], found["cache"]) as server:
        counted = {**found, "server": server, "calls": 0}
        yield counted
        assert served(server) == (counted["calls"] if server else 0)  # every call was the server's: none fell back


def hook(project: dict[str, Any], tool: str, tool_input: dict[str, Any], *options: str,
         event: str = "PreToolUse", session: str = "sess-1") -> tuple[str, str, subprocess.CompletedProcess[bytes]]:  # fmt: skip
    """The answer (allow/ask/deny/block), its reason, and the process."""
    data = {"session_id": session, "transcript_path": "/dev/null", "cwd": project["root"],
            "permission_mode": "default", "hook_event_name": event, "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": "toolu_1"}  # fmt: skip
    added = {"CLAUDE_PROJECT_DIR": project["root"], "BGC_CACHE_DIR": project["cache"]}
    argv = [sys.executable, "-I", "-m", "bgc", "hook", "claude-code", "-p", project["policy"], *options]
    project["calls"] += 1
    if project["server"] is None:  # the hook alone: its entry point in this process (run_in_process says why)
        done = run_in_process(shlex.join(argv), json.dumps(data).encode(), added, project["root"])
    else:  # served: a process per call, as Claude Code runs the hook
        done = subprocess.run(argv, input=json.dumps(data).encode(), env={**os.environ, **added}, cwd=project["root"],
                              capture_output=True, timeout=TIMEOUT)  # fmt: skip
    assert b"Traceback" not in done.stderr, done.stderr
    if done.returncode == 2:
        return "block", done.stderr.decode(), done
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    if answer == {}:
        return "ask", "", done
    output = answer["hookSpecificOutput"]
    if event == "PermissionRequest":
        return output["decision"]["behavior"], output["decision"].get("message", ""), done
    return output["permissionDecision"], output["permissionDecisionReason"], done


def request_id(reason: str) -> str:
    found = re.search(r"bgc approve (sha256:[0-9a-f]{64})", reason)
    assert found, reason
    return found.group(1)


def answer(project: dict[str, Any], verb: str, request: str, person: str, *extra: str) -> Any:
    return bgc(verb, request, "--key", str(project["keys"] / f"{person}.key"), "--store", project["store"],
               "-p", project["policy"], *extra)  # fmt: skip


def log(project: dict[str, Any]) -> list[dict[str, Any]]:
    shown = bgc("log", "show", "--store", project["store"], "--format", "json")
    assert shown.exit_code == 0, shown.output
    return [json.loads(line) for line in shown.stdout.splitlines()]


def test_two_named_approvers_allow_the_exact_call_once(project: dict[str, Any]) -> None:
    write = {"file_path": f"{project['root']}/migrations/001.sql", "content": "create table t();"}
    effect, reason, _ = hook(project, "Write", write)
    # named approvers: Claude Code's own dialog cannot stand for them, so the call waits, denied
    assert effect == "deny" and "needs approval" in reason and "2 of [alice, bob]" in reason
    first = request_id(reason)
    pending = bgc("pending", "--store", project["store"], "-p", project["policy"])
    assert first in pending.stdout and "Write on local" in pending.stdout

    assert answer(project, "approve", first, "alice").exit_code == 0
    effect, reason, _ = hook(project, "Write", write)
    assert (effect, request_id(reason)) == ("deny", first)  # the same call finds the same request; 1 of 2

    other = {**write, "content": "drop table t;"}  # a changed parameter is another request
    effect, reason, _ = hook(project, "Write", other)
    assert effect == "deny" and request_id(reason) != first

    assert answer(project, "approve", first, "bob").exit_code == 0
    effect, reason, _ = hook(project, "Write", write)
    assert effect == "allow" and "approved once by alice, bob" in reason
    effect, reason, _ = hook(project, "Write", write)  # once: the next attempt is a new request
    assert effect == "deny" and request_id(reason) != first

    entries = [entry for entry in log(project) if entry["kind"] == "hook"]
    # the ledger says what the policy and the people said: asked (the request waits), then allowed
    assert [entry["decision"] for entry in entries] == ["ask", "ask", "ask", "allow", "ask"]
    allowed = entries[3]
    assert allowed["request"] == first and allowed["approvers"] == ["alice", "bob"]
    assert allowed["rule"].endswith("policy.bgp:6") and allowed["session"] == "sess-1"
    assert allowed["atom"] == "fs:write:/migrations/001.sql" and allowed["tool"] == "Write"
    assert bgc("log", "verify", "--store", project["store"]).exit_code == 0


def test_a_rejection_ends_the_request(project: dict[str, Any]) -> None:
    write = {"file_path": f"{project['root']}/migrations/002.sql", "content": "x"}
    _, reason, _ = hook(project, "Write", write)
    request = request_id(reason)
    assert answer(project, "approve", request, "alice").exit_code == 0
    assert answer(project, "reject", request, "bob").exit_code == 0
    effect, reason, _ = hook(project, "Write", write)
    assert effect == "deny" and "rejected by bob" in reason


def test_a_key_the_policy_does_not_trust_never_counts(project: dict[str, Any]) -> None:
    write = {"file_path": f"{project['root']}/migrations/003.sql", "content": "x"}
    _, reason, _ = hook(project, "Write", write)
    request = request_id(reason)
    refused = answer(project, "approve", request, "mallory", "--as", "alice")
    assert refused.exit_code == 2 and "trusts no key" in refused.output
    assert answer(project, "approve", request, "alice").exit_code == 0
    effect, _, _ = hook(project, "Write", write)
    assert effect == "deny"


def test_an_ask_anyone_may_answer_goes_to_claude_codes_dialog_unless_asks_is_bgc(project: dict[str, Any]) -> None:
    write = {"file_path": f"{project['root']}/package.json", "content": "{}"}
    effect, reason, _ = hook(project, "Write", write)
    assert effect == "ask" and "bgc approve" in reason  # the dialog, and the request for a signed answer
    effect, _, _ = hook(project, "Write", write, event="PermissionRequest")
    assert effect == "ask"  # no decision: Claude Code shows its dialog
    effect, reason, _ = hook(project, "Write", write, "--asks", "bgc")
    assert effect == "deny" and "needs approval" in reason
    assert answer(project, "approve", request_id(reason), "alice").exit_code == 0
    effect, reason, _ = hook(project, "Write", write, "--asks", "bgc")
    assert effect == "allow" and "approved once by alice" in reason


def test_every_decision_is_in_the_ledger_with_its_rule(project: dict[str, Any]) -> None:
    hook(project, "Read", {"file_path": f"{project['root']}/src/a.py"})
    hook(project, "Write", {"file_path": f"{project['root']}/etc.txt", "content": ""})
    entries = [entry for entry in log(project) if entry["kind"] == "hook"]
    assert [(entry["decision"], entry["tool"]) for entry in entries] == [("allow", "Read"), ("deny", "Write")]
    assert entries[0]["rule"].endswith("policy.bgp:4") and entries[0]["params"].startswith("sha256:")
    assert "rule" not in entries[1]  # no rule allows the write: denied by default
    stats = bgc("log", "stats", "--per-rule", "--store", project["store"], "-p", project["policy"])
    assert stats.exit_code == 0 and re.search(r"policy\.bgp:4\t1\t", stats.stdout), stats.stdout


def test_a_store_that_cannot_record_never_lets_a_call_through(project: dict[str, Any], tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    effect, reason, _ = hook(project, "Read", {"file_path": f"{project['root']}/src/a.py"}, "--store",
                             str(blocker / "kernel.db"))  # fmt: skip
    assert effect in ("deny", "block") and "store" in reason
    effect, _, _ = hook(project, "Read", {"file_path": f"{project['root']}/src/a.py"}, "--store", "none")
    assert effect == "allow"  # no store asked for: nothing recorded, nothing to fail


def test_a_mode_a_trusted_person_chose_for_the_session_applies_to_that_session_only(project: dict[str, Any]) -> None:
    write = {"file_path": f"{project['root']}/dist/app.tar", "content": "x"}
    assert hook(project, "Write", write)[0] == "deny"
    chosen = bgc("mode", "set", "sess-1", "release", "--key", str(project["keys"] / "alice.key"), "-p", project["policy"],
                 "--store", project["store"])  # fmt: skip
    assert chosen.exit_code == 0, chosen.output
    assert hook(project, "Write", write)[0] == "allow"
    assert hook(project, "Write", write, session="sess-2")[0] == "deny"
    refused = bgc("mode", "set", "sess-1", "release", "--key", str(project["keys"] / "mallory.key"), "--as", "alice",
                  "-p", project["policy"], "--store", project["store"])  # fmt: skip
    assert refused.exit_code == 2  # mallory's key does not speak for alice


# ---- nothing unsigned in the store decides an allow ------------------------------------------------


def hook_scene(project: dict[str, Any], location: str) -> tuple[Scene, dict[str, Any], dict[str, Any]]:
    """Two writes under /migrations (2 of [alice, bob]) asked through the hook with the store at
    ``location``, the first approved by alice and bob; carol is trusted and named by no rule.
    The scene and the two calls."""
    import time

    from bgc.runtime.approvals import encode_answer, load_request, sign_answer
    from bgc.runtime.kernel.keys import load_private
    from bgc.runtime.store import open_store

    calls = [{"file_path": f"{project['root']}/migrations/{name}.sql", "content": name} for name in ("020", "021")]
    asked = [request_id(hook(project, "Write", call, "--store", location)[1]) for call in calls]
    keys = {name: load_private(str(project["keys"] / f"{name}.key")) for name in ("alice", "bob", "carol", "mallory")}
    store = open_store(location)
    try:
        first, second = (load_request(store, found)[0] for found in asked)
        for name in ("alice", "bob"):
            signed = sign_answer(first.id, "allow-once", name, keys[name], first.created)
            assert store.add_answer(first.id, name, "allow-once", encode_answer(signed))
    finally:
        store.close()
    scene = Scene(location, first, second, ("alice", "bob"), "carol", keys, keys["mallory"], now=int(time.time()))
    return scene, calls[0], calls[1]


def test_the_hook_scene_untouched_allows_the_approved_call(project: dict[str, Any], store_location: str) -> None:
    _, approved, target = hook_scene(project, store_location)
    assert hook(project, "Write", target, "--store", store_location)[0] == "deny"
    effect, reason, _ = hook(project, "Write", approved, "--store", store_location)
    assert effect == "allow" and "approved once by alice, bob" in reason


@pytest.mark.parametrize("tampering", sorted(store_tamperings(("alice", "bob"))))
def test_no_write_to_the_store_makes_the_hook_allow(project: dict[str, Any], store_location: str, tampering: str) -> None:
    scene, approved, target = hook_scene(project, store_location)
    asked = store_tamperings(scene.named)[tampering](scene)
    effect, reason, _ = hook(project, "Write", approved if asked == "approved" else target, "--store", store_location)
    assert effect == "deny", reason
