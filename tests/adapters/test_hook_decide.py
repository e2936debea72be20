"""The hook as a function: :func:`bgc.adapters.agents.hook.decide` called in this process with an
environment, a working directory and stdin of its own, as the decision server calls it.

Two projects whose policies answer the same call differently are decided in turn, by one-shot
sources and by one warm server's sources alike: each call reads only the environment and working
directory it was given (the project from ``CLAUDE_PROJECT_DIR``, relative ``-p`` and ``--store``
from ``cwd``), nothing of one call leaks into the next, and this process's own environment,
working directory and streams are never touched.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bgc.adapters.agents.hook import Options, decide
from bgc.runtime.session import Sources, WarmSources
from tests.samples import bgc

POLICY = ".claude/bgc/policy.bgp"


def _project(root: Path, deny_source: bool) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    assert bgc("init", "claude-code", "--dir", str(root)).exit_code == 0
    if deny_source:
        with (root / POLICY).open("a") as policy:
            policy.write('deny fs:read:/src/** because "this project keeps its sources to itself"\n')
    return str(root.resolve())


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("decide")
    return {"open": _project(base / "open", False), "closed": _project(base / "closed", True)}


def _call(project: str, path: str = "src/a.py", *, cwd: str | None = None) -> bytes:
    """A Read of ``path`` (relative to the hook input's ``cwd``)."""
    return json.dumps({
        "session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": cwd or project,
        "tool_input": {"file_path": path},
    }).encode()  # fmt: skip


def _effect(answer: tuple[int, bytes, bytes]) -> str:
    code, out, err = answer
    if code == 2:
        assert out == b"" and err.startswith(b"bgc: "), answer
        return "block"
    assert code == 0 and err == b"", answer
    return str(json.loads(out)["hookSpecificOutput"]["permissionDecision"])


def _process_state() -> tuple[dict[str, str], str, Any, Any, Any]:
    return dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr


@pytest.mark.parametrize("sources", ["one-shot", "warm"])
def test_calls_with_different_environments_and_directories_do_not_leak(
    projects: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sources: str
) -> None:
    monkeypatch.chdir(tmp_path)  # none of the projects: relative paths must come from each call's cwd
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", projects["closed"])  # this process's own: never read
    given = WarmSources() if sources == "warm" else Sources(durable=True)
    options = Options.of(policy=POLICY)  # relative: to each call's working directory
    before = _process_state()
    try:
        answers = [
            _effect(decide("claude-code", options, _call(projects[name]), {"CLAUDE_PROJECT_DIR": projects[name]},
                           projects[name], sources=given))  # fmt: skip
            for name in ("open", "closed", "open", "closed")
        ]
    finally:
        given.close()
    assert answers == ["allow", "deny", "allow", "deny"]
    assert _process_state() == before
    for name, wanted in (("open", ["allow", "allow"]), ("closed", ["deny", "deny"])):  # each call in its own project's ledger
        shown = bgc("log", "show", "--store", f"{projects[name]}/.bgc/kernel.db", "--format", "json")
        assert shown.exit_code == 0, shown.output
        assert [json.loads(line)["decision"] for line in shown.stdout.splitlines()][-2:] == wanted
    assert not (tmp_path / ".bgc").exists() and not (tmp_path / ".claude").exists()


def test_the_project_comes_from_the_given_environment_alone(projects: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's project variable in the call's environment, else the hook input's ``cwd``;
    this process's own variable is never a fallback."""
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", projects["open"])
    options = Options.of(policy=f"{projects['open']}/{POLICY}", store="none")
    call = json.loads(_call(projects["open"], f"{projects['open']}/src/a.py"))
    del call["cwd"]
    code, out, err = decide("claude-code", options, json.dumps(call).encode(), {}, "/")
    assert (code, out) == (2, b"") and b"no project directory (CLAUDE_PROJECT_DIR or cwd)" in err
    env = {"CLAUDE_PROJECT_DIR": projects["open"]}
    assert _effect(decide("claude-code", options, json.dumps(call).encode(), env, "/")) == "allow"


def test_relative_options_are_read_from_the_given_directory(projects: dict[str, str], tmp_path: Path) -> None:
    """``-p`` and ``--store`` relative to the call's working directory, whatever this process's is."""
    env = {"CLAUDE_PROJECT_DIR": projects["closed"]}
    options = Options.of(policy=f"closed/{POLICY}", store="state/ledger.db")
    where = str(Path(projects["closed"]).parent)
    assert _effect(decide("claude-code", options, _call(projects["closed"]), env, where)) == "deny"
    assert os.path.isfile(os.path.join(where, "state", "ledger.db"))
    assert not os.path.exists(os.path.join(os.getcwd(), "state", "ledger.db"))
    missing = decide("claude-code", Options.of(policy=POLICY, store="none"), _call(projects["closed"]), env, str(tmp_path))
    assert _effect(missing) == "block" and f"{tmp_path}/{POLICY}".encode() in missing[2]


@pytest.mark.parametrize("stdin", [b"", b"{", b"[]", b"\xff", b" " * (32 * 1024 * 1024 + 1)], ids=["empty", "cut", "list", "bytes", "too-large"])
def test_unreadable_input_is_a_block_never_a_raise(projects: dict[str, str], stdin: bytes) -> None:
    env = {"CLAUDE_PROJECT_DIR": projects["open"]}
    code, out, err = decide("claude-code", Options.of(store="none"), stdin, env, projects["open"])
    assert (code, out) == (2, b"") and err.startswith((b"bgc: bad hook input: ", b"bgc: <stdin>:")) and err.endswith(b"\n")


def test_a_deadline_already_passed_blocks(projects: dict[str, str]) -> None:
    import time

    env = {"CLAUDE_PROJECT_DIR": projects["open"]}
    options = Options.of(policy=f"{projects['open']}/{POLICY}", store="none", timeout="0.5")
    code, out, err = decide("claude-code", options, _call(projects["open"]), env, "/", started=time.monotonic() - 1)
    assert (code, out, err) == (2, b"", b"bgc: no decision within 0.5 s: the call is blocked\n")


def test_the_server_answers_without_adopting_the_callers_state(projects: dict[str, str], tmp_path: Path) -> None:
    """The decision server's handler passes a request's environment and directory to the hook:
    its own environment, working directory and streams stay as they were."""
    from bgc.adapters.agents import client
    from bgc.app.server import _answer_hook

    meta = {"kind": "hook", "agent": "claude-code", "arguments": [], "options": {"policy": POLICY},
            "cwd": projects["closed"], "env": {"CLAUDE_PROJECT_DIR": projects["closed"], "ONLY_THE_CALLERS": "1"},
            "path": sys.path, "deadline": time.monotonic() + 10}  # fmt: skip
    warm = WarmSources()
    before = _process_state()
    try:
        reply = _answer_hook(meta, _call(projects["closed"]), warm)
        refused = _answer_hook({**meta, "arguments": ["extra"]}, _call(projects["closed"]), warm)
    finally:
        warm.close()
    assert _process_state() == before and "ONLY_THE_CALLERS" not in os.environ
    decoded = client.decode_reply(reply)
    assert decoded is not None and _effect(decoded) == "deny"
    assert refused.startswith(client.REFUSED)  # the client's own process says what is wrong


def test_a_relative_path_with_a_scheme_like_part_is_still_read_from_the_given_directory(
    projects: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``x://…`` is a relative path for ``-p`` and ``--store`` alike (only ``none`` and a
    PostgreSQL URL are not paths): read from the call's directory, as the hook's own process
    reads it, never from the decision server's."""
    where = tmp_path / "caller"
    where.mkdir()
    (where / "x:").symlink_to(Path(projects["closed"]) / ".claude")
    monkeypatch.chdir(tmp_path)  # the server's directory: nothing may be read or made here
    env = {"CLAUDE_PROJECT_DIR": projects["closed"]}
    options = Options.of(policy="x://bgc/policy.bgp", store="s://ledger.db")
    assert _effect(decide("claude-code", options, _call(projects["closed"]), env, str(where))) == "deny"
    assert (where / "s:" / "ledger.db").is_file() and not (tmp_path / "s:").exists()


@pytest.mark.parametrize("inner", ["ended", "longer"])
def test_an_inner_deadline_never_outlives_the_one_around_it(inner: str) -> None:
    """A deadline inside another (a decision deciding under a caller's deadline) leaves the outer
    one running: it still ends the work when it passes, after the inner block or inside it (a
    hook that outlived its agent's timeout would let the call through)."""
    import signal
    import time

    from bgc.adapters.agents.hook import HookTimeout, deadline

    started = time.monotonic()
    try:
        with pytest.raises(HookTimeout):
            with deadline(0.3):
                with deadline(60):
                    if inner == "longer":
                        time.sleep(10)
                time.sleep(10)
        assert time.monotonic() - started < 10
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def test_off_the_main_thread_the_call_is_blocked_not_decided_without_a_deadline(projects: dict[str, str]) -> None:
    """The deadline is a SIGALRM, which only the main thread may set: ``decide`` called on another
    thread (a server handling requests on threads) blocks the call and says why; it never raises
    and never decides with no deadline over it."""
    import threading

    env = {"CLAUDE_PROJECT_DIR": projects["open"]}
    options = Options.of(policy=f"{projects['open']}/{POLICY}", store="none")
    answers: list[tuple[int, bytes, bytes]] = []
    worker = threading.Thread(target=lambda: answers.append(decide("claude-code", options, _call(projects["open"]), env, "/")))
    worker.start()
    worker.join()
    code, out, err = answers[0]
    assert (code, out) == (2, b"") and err.startswith(b"bgc: internal error: ValueError: ") and b"main thread" in err
    assert _effect(decide("claude-code", options, _call(projects["open"]), env, "/")) == "allow"  # the same call, on it


def test_with_no_working_directory_only_a_relative_option_blocks(projects: dict[str, str]) -> None:
    """``cwd`` None (the hook's working directory was removed): absolute options decide as ever;
    a relative one names nothing, and says so."""
    env = {"CLAUDE_PROJECT_DIR": projects["closed"]}
    absolute = Options.of(policy=f"{projects['closed']}/{POLICY}", store="none")
    assert _effect(decide("claude-code", absolute, _call(projects["closed"]), env, None)) == "deny"
    code, out, err = decide("claude-code", Options.of(policy=POLICY, store="none"), _call(projects["closed"]), env, None)
    assert (code, out) == (2, b"") and b"relative path, and the hook's working directory was removed" in err
