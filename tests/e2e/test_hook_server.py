"""The decision server (`bgc serve`) and the hook's way to it (bgc/adapters/agents/client.py), run as Claude
Code runs the hook: a subprocess, JSON on stdin.

What must hold: a server's answer is the answer the hook gives alone (the hook tables run both
ways: test_hook_claude_code.py, test_hook_gemini_cli_codex.py, test_hook_approvals.py); what can change under
a running server (the policy, its includes, bgc's own code) is seen on the very next call; and
whatever goes wrong on the way to a server — stopped, killed, not ours, answering garbage — the
hook decides in its own process with the same answer, never allows for the failure. Expected
answers are written by hand from the starter policy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bgc.adapters.agents import client
from tests.e2e.test_hook_claude_code import TIMEOUT, _input, run_hook
from tests.samples import bgc
from tests.server_support import Server, private_runtime, served, status

ROOT = Path(__file__).resolve().parents[2]
READ_SOURCE = ("Read", {"file_path": "{P}/src/a.py"})  # allowed by the starter
READ_ENV = ("Read", {"file_path": "{P}/.env"})  # denied by base.bgp


@pytest.fixture()
def project(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A project set up by `bgc init claude-code`, in a private runtime directory of its own."""
    with private_runtime():
        yield _project(tmp_path)


@pytest.fixture(scope="module")
def shared_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """:func:`project` for the tests that change nothing in it but the ledger."""
    with private_runtime():
        yield _project(tmp_path_factory.mktemp("shared"))


def _project(tmp_path: Path) -> dict[str, Any]:
    root = tmp_path / "p"
    for directory in (root / "src", root / "docs"):
        directory.mkdir(parents=True)
    (root / ".env").write_text("TOKEN=x\n")
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "docs" / "guide.md").write_text("# guide\n")
    done = bgc("init", "claude-code", cwd=root, env={"BGC_CACHE_DIR": str(tmp_path / "cache")})  # in this process: init is not tested here
    assert done.exit_code == 0, done.output
    command = json.loads((root / ".claude" / "settings.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    return {"root": str(root.resolve()), "outside": str(tmp_path), "command": command, "cache": str(tmp_path / "cache")}


@pytest.fixture()
def server(project: dict[str, Any]) -> Iterator[Server]:
    running = Server(project["root"], {**os.environ, "BGC_CACHE_DIR": project["cache"]})
    try:
        yield running
    finally:
        running.stop()


def ask(project: dict[str, Any], call: tuple[str, dict[str, str]], **options: Any) -> str:
    answer, _ = run_hook(project, _input(project, "PreToolUse", *call), **options)
    return answer


def test_answers_come_from_the_server_and_match_the_hook_alone(project: dict[str, Any], server: Server) -> None:
    assert (ask(project, READ_SOURCE), ask(project, READ_ENV)) == ("allow", "deny")
    assert served(server) == 2
    server.stop()
    assert (ask(project, READ_SOURCE), ask(project, READ_ENV)) == ("allow", "deny")


def test_a_policy_edit_is_seen_on_the_next_call(project: dict[str, Any], server: Server) -> None:
    policies = Path(project["root"]) / ".claude" / "bgc"
    docs = ("Read", {"file_path": "{P}/docs/guide.md"})
    assert (ask(project, READ_SOURCE), ask(project, docs)) == ("allow", "allow")
    with (policies / "policy.bgp").open("a") as policy:
        policy.write('deny fs:read:/src/a.py because "edited while the server runs"\n')
    assert ask(project, READ_SOURCE) == "deny"
    with (policies / "base.bgp").open("a") as included:  # an included file, not the one -p names
        included.write('deny fs:read:/docs/** because "edited too"\n')
    assert ask(project, docs) == "deny"
    assert served(server) == 4


@pytest.mark.parametrize("clock", ["fine", "coarse"])
def test_a_kept_policy_is_checked_by_its_files_stamps_and_young_stamps_are_not_trusted(
    project: dict[str, Any], monkeypatch: pytest.MonkeyPatch, clock: str
) -> None:
    """In the server's memory a compiled policy is kept while its files' stamps hold. With a
    coarse clock an edit may keep a file's stamp (here: every stamp stays the same), so stamps
    younger than the racy window are never trusted and the contents decide."""
    from bgc.runtime.session import WarmSources, stamp

    policy = Path(project["root"]) / ".claude" / "bgc" / "policy.bgp"
    included = policy.with_name("base.bgp")
    if clock == "coarse":
        frozen = {path: stamp(path) for path in map(str, policy.parent.iterdir())}
        monkeypatch.setattr("bgc.runtime.session.stamp", lambda path: frozen.get(path) or stamp(path))
    warm = WarmSources(racy_seconds=0 if clock == "fine" else 3600)
    first = warm.compiled_policy(str(policy), None)
    assert warm.compiled_policy(str(policy), None) is first and warm.compiled_policy(str(policy), None) is first
    decide = lambda compiled: compiled.decider.decide_call("Read", None, {"file_path": "/docs/guide.md"}).effect  # noqa: E731
    assert decide(first) == "allow"
    included.write_text(included.read_text() + 'deny fs:read:/docs/** because "edited"\n')
    assert decide(warm.compiled_policy(str(policy), None)) == "deny"


def test_the_ledger_gets_the_same_entries_either_way(project: dict[str, Any]) -> None:
    calls = [READ_SOURCE, READ_ENV, ("Write", {"file_path": "{P}/package.json", "content": "{}"}), ("Bash", {"command": "ls"})]
    for call in calls:
        ask(project, call)
    running = Server(project["root"], {**os.environ, "BGC_CACHE_DIR": project["cache"]})
    try:
        for call in calls:
            ask(project, call)
        assert served(running) == len(calls)
    finally:
        running.stop()
    store = str(Path(project["root"]) / ".bgc" / "kernel.db")
    shown = subprocess.run([sys.executable, "-m", "bgc", "log", "show", "--store", store, "--format", "json"],
                           capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    entries = [json.loads(line) for line in shown.stdout.splitlines()]
    assert len(entries) == 2 * len(calls)
    varying = {"time", "seq", "prev", "id", "request"}  # when, where in the chain, and the request ids (they hold the time)
    alone, by_server = ([{k: v for k, v in entry.items() if k not in varying} for entry in half]
                        for half in (entries[: len(calls)], entries[len(calls) :]))  # fmt: skip
    assert alone == by_server


def test_a_stopped_server_is_waited_for_only_part_of_the_deadline(
    project: dict[str, Any], server: Server, tmp_path: Path
) -> None:
    """SIGSTOP: the connection is accepted by the kernel and never answered; the hook gives the
    server its share of the deadline (it did wait: the call took at least that long), then decides
    itself in time (a block would mean it did not).

    The deadline is measured, not guessed: the yardstick is the longest the same calls take here
    and now with the hook deciding alone (a runtime directory where no server listens), and what
    the server's share leaves of the deadline is several yardsticks, however loaded the machine."""
    no_server = {"XDG_RUNTIME_DIR": str(tmp_path / "no-server")}
    (tmp_path / "no-server").mkdir()
    yardstick = max(timed_ask(project, call, environ=no_server)[1] for call in (READ_SOURCE, READ_ENV))
    seconds = min(max(3.0, 5 * yardstick) / (1 - client.SERVER_SHARE), 600.0)
    command = project["command"].replace("hook claude-code", f"hook claude-code --timeout {seconds:.3f}")
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        answers = [timed_ask(project, call, command=command) for call in (READ_SOURCE, READ_ENV)]
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert [answer for answer, _ in answers] == ["allow", "deny"]
    assert all(took >= seconds * client.SERVER_SHARE for _, took in answers)


def timed_ask(project: dict[str, Any], call: tuple[str, dict[str, str]], **options: Any) -> tuple[str, float]:
    """:func:`ask`'s answer, and the seconds the hook took to give it."""
    started = time.monotonic()
    answer = ask(project, call, **options)
    return answer, time.monotonic() - started


def test_a_killed_server_leaves_a_socket_nobody_answers(project: dict[str, Any], server: Server) -> None:
    path = client.socket_path(project["root"])
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()
    assert path is not None and os.path.exists(path)  # left behind: connecting is refused
    assert (ask(project, READ_SOURCE), ask(project, READ_ENV)) == ("allow", "deny")
    again = Server(project["root"], {**os.environ, "BGC_CACHE_DIR": project["cache"]})  # takes the lock and the path
    try:
        assert ask(project, READ_ENV) == "deny" and served(again) == 1
    finally:
        again.stop()


@pytest.mark.parametrize("what", ["socket", "directory"])
def test_a_socket_or_directory_others_may_use_is_ignored(project: dict[str, Any], server: Server, what: str) -> None:
    path = client.socket_path(project["root"])
    assert path is not None
    target, mode = (path, 0o666) if what == "socket" else (os.path.dirname(path), 0o755)
    original = os.stat(target).st_mode & 0o777
    os.chmod(target, mode)
    try:
        assert (ask(project, READ_SOURCE), ask(project, READ_ENV)) == ("allow", "deny")
    finally:
        os.chmod(target, original)
    assert served(server) == 0  # nothing was handed to it


def test_a_socket_directory_or_peer_of_another_user_is_not_used(
    project: dict[str, Any], server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ownership, seen as another user would see it: the same files and peer, another uid."""
    path = client.socket_path(project["root"])
    assert path is not None and client.trusted_socket(path)
    connection = client.connect(path, 5)
    connection.close()
    other = os.getuid() + 1
    with monkeypatch.context() as patch:  # undone before the server is stopped: stopping it needs our uid
        patch.setattr(client.os, "getuid", lambda: other)
        assert not client.trusted_socket(path)
        assert client.private_dir() is None
        with pytest.raises(PermissionError):
            client.connect(path, 5)


class FakeServer:
    """Listens where the project's server would, with the right owner and mode, and answers
    every connection with ``reply(request bytes)`` (None: never answer, keep the connection)."""

    def __init__(self, project: str, reply: Callable[[bytes], bytes | None]) -> None:
        path = client.socket_path(project, create=True)
        assert path is not None
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)
        try:
            self.listener.bind(path)
        finally:
            os.umask(mask)
        self.listener.listen(8)
        self.path, self.reply, self.held, self.requests = path, reply, [], 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.requests += 1
            request = b""
            connection.settimeout(30)
            try:
                while chunk := connection.recv(1 << 16):
                    request += chunk
            except OSError:
                pass
            answer = self.reply(request)
            if answer is None:
                self.held.append(connection)
                continue
            try:
                connection.sendall(answer)
            except OSError:
                pass
            connection.close()

    def close(self) -> None:
        self.listener.close()
        os.unlink(self.path)
        for connection in self.held:
            connection.close()


ALLOW = b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "bgc: fake"}}\n'
GARBAGE: dict[str, Callable[[bytes], bytes | None]] = {
    "random bytes": lambda request: os.urandom(64),
    "nothing": lambda request: b"",
    "no reply at all": lambda request: None,
    "wrong magic": lambda request: b"bgc-serve\x002\n" + client.frame(client.encode_reply(0, ALLOW, b""))[len(client.MAGIC) :],
    "truncated": lambda request: client.frame(client.encode_reply(0, ALLOW, b""))[:-5],
    "longer than its length": lambda request: client.frame(client.encode_reply(0, ALLOW, b"")) + b"x",
    "two frames": lambda request: client.frame(client.encode_reply(0, ALLOW, b"")) * 2,
    "a length past the limit": lambda request: client.MAGIC + (client.MAX_REPLY + 1).to_bytes(8, "big") + ALLOW,
    "a refusal": lambda request: client.frame(client.REFUSED + b"no"),
    "exit code 1": lambda request: client.frame(client.encode_reply(1, ALLOW, b"")),
    "exit code 0 and stderr": lambda request: client.frame(client.encode_reply(0, ALLOW, b"bgc: what")),
    "exit code 0 and not one object": lambda request: client.frame(client.encode_reply(0, b"allow\n", b"")),
    "exit code 2 and an answer": lambda request: client.frame(client.encode_reply(2, ALLOW, b"bgc: x")),
    "a stdout length past the reply": lambda request: client.frame(client.ANSWERED + b"\x00" + (10**6).to_bytes(4, "big") + ALLOW),
}  # fmt: skip
"""Replies a broken or hostile server might send, each containing an allow where it can."""


@pytest.mark.parametrize("kind", list(GARBAGE))
def test_a_server_answering_garbage_is_never_an_answer(shared_project: dict[str, Any], kind: str) -> None:
    project = shared_project
    """The hook runs in this process (tests/server_support.py ``run_in_process``): the client and
    its fallback are the same code, and a reply taken by mistake would be written to fd 1 as a
    process would write it."""
    fake = FakeServer(project["root"], GARBAGE[kind])
    command = project["command"].replace("hook claude-code", "hook claude-code --timeout 6")
    try:
        answers = [ask(project, call, command=command, in_process=True) for call in (READ_ENV, READ_SOURCE)]
        assert answers == ["deny", "allow"]
        assert fake.requests == 2  # it was asked, and its answer was not taken
    finally:
        fake.close()


@given(st.binary(max_size=64) | st.builds(client.encode_reply, st.integers(0, 255), st.binary(max_size=16), st.binary(max_size=16)))
def test_a_reply_is_taken_only_as_a_hook_could_have_given_it(payload: bytes) -> None:
    """Decoding is a partial inverse of encoding, for the hook's exit codes and output shapes only."""
    decoded = client.decode_reply(payload)
    if decoded is not None:
        code, stdout, stderr = decoded
        assert client.encode_reply(code, stdout, stderr) == payload and code in (0, 2)
        assert (code == 0 and not stderr and (stdout == b"" or stdout.startswith(b"{") and stdout.endswith(b"}\n"))) or (
            code == 2 and not stdout and stderr
        )


def _copy_of_bgc(base: Path) -> dict[str, str]:
    """Another installation of bgc: a copy of the package, first on PYTHONPATH."""
    lib = base / "lib"
    shutil.copytree(ROOT / "bgc", lib / "bgc", ignore=shutil.ignore_patterns("__pycache__"))
    return {**os.environ, "PYTHONPATH": str(lib)}


def test_other_code_is_refused_and_a_change_of_code_stops_the_server(project: dict[str, Any], tmp_path: Path) -> None:
    copy_env = _copy_of_bgc(tmp_path)
    running = Server(project["root"], {**copy_env, "BGC_CACHE_DIR": project["cache"]})
    copy_command = project["command"].replace(project["command"].split(" hook ")[0], f"{sys.executable} -m bgc")
    try:
        assert ask(project, READ_ENV, command=copy_command, environ={"PYTHONPATH": copy_env["PYTHONPATH"]}) == "deny"
        assert served(running) == 1
        assert ask(project, READ_ENV) == "deny"  # this checkout's hook: another installation, refused
        assert served(running) == 1 and running.process.poll() is None
        with (tmp_path / "lib" / "bgc" / "names.py").open("a") as source:
            source.write("# an edit while the server runs\n")
        assert ask(project, READ_SOURCE, command=copy_command, environ={"PYTHONPATH": copy_env["PYTHONPATH"]}) == "allow"
        assert running.process.wait(timeout=TIMEOUT) == 0  # it refused that call and stopped
    finally:
        running.stop()


def test_one_server_per_project_and_the_commands_for_people(project: dict[str, Any]) -> None:
    def serve(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bgc", "serve", "--dir", project["root"], *options],
                              capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip

    assert serve("--status").returncode == 1 and serve("--stop").returncode == 0  # none runs: nothing to stop
    started = serve("--detach")
    assert started.returncode == 0 and "started the decision server" in started.stdout, started.stderr
    pid = status(project["root"])["pid"]  # type: ignore[index]
    try:
        again = serve("--detach")
        assert again.returncode == 0 and f"already serves {project['root']} (pid {pid})" in again.stdout
        second = serve()  # in the foreground: the lock is taken
        assert second.returncode == 2 and "already serves" in second.stderr
        shown = serve("--status")
        assert shown.returncode == 0 and f"pid {pid}" in shown.stdout
        assert serve("--detach", "--quiet").stdout == ""  # SessionStart's stdout would become context
    finally:
        assert serve("--stop").returncode == 0
    assert status(project["root"]) is None


def test_an_idle_server_exits_by_itself(project: dict[str, Any]) -> None:
    idle = subprocess.run([sys.executable, "-m", "bgc", "serve", "--dir", project["root"], "--idle", "0.5"],
                          capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert idle.returncode == 0, idle.stderr
    path = client.socket_path(project["root"])
    assert path is not None and not os.path.exists(path)


PROBE = (
    "import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', *sys.argv[1:]]\nbefore = set(sys.modules)\n"
    "try:\n    main()\nfinally:\n    print('LOADED', sorted(set(sys.modules) - before), file=sys.stderr)\n"
)


def test_a_hook_answered_by_the_server_imports_almost_nothing(project: dict[str, Any], server: Server) -> None:
    """The client's whole import cost: what a hook process loads beyond the launcher when the
    server answers is the client and the standard library's ``socket`` (no clock: the modules
    themselves; no json, typing, hashlib or any of bgc's deciding modules)."""
    policy = f"{project['root']}/.claude/bgc/policy.bgp"
    call = json.dumps(_input(project, "PreToolUse", *READ_SOURCE)).encode()
    done = subprocess.run([sys.executable, "-c", PROBE, "hook", "claude-code", "-p", policy], input=call, cwd=project["root"],
                          env={**os.environ, "CLAUDE_PROJECT_DIR": project["root"]}, capture_output=True, timeout=TIMEOUT)  # fmt: skip
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert served(server) == 1
    line = next(line for line in done.stderr.decode().splitlines() if line.startswith("LOADED "))
    loaded = set(json.loads(line.removeprefix("LOADED ").replace("'", '"')))
    probe = "import sys\nbefore = set(sys.modules)\nimport socket\nprint(' '.join(sorted(set(sys.modules) - before)))"
    socket_modules = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                                        timeout=TIMEOUT).stdout.split())  # fmt: skip
    assert loaded <= {"bgc.adapters", "bgc.adapters.agents", "bgc.adapters.agents.client", *socket_modules}, loaded


def test_the_hooks_stores_sync_every_commit(tmp_path: Path) -> None:
    """A ledger entry is on disk before the answer lets the call run: a connection a server keeps
    open is never checkpointed by a close, so the hook's stores, kept or one-shot, commit with
    ``synchronous = FULL`` (2); other enforcers keep ``NORMAL`` (1)."""
    from bgc.runtime.session import WarmSources
    from bgc.runtime.store import open_store

    def synchronous(store: Any) -> int:
        return int(store._db.execute("PRAGMA synchronous").fetchone()[0])

    warm = WarmSources()
    kept, plain = warm.open_store(str(tmp_path / "kept.db")), open_store(str(tmp_path / "plain.db"))
    try:
        assert (synchronous(kept), synchronous(open_store(str(tmp_path / "one.db"), durable=True)), synchronous(plain)) == (2, 2, 1)
    finally:
        warm.close()
        plain.close()


def test_an_answer_that_cannot_be_written_is_never_a_success(project: dict[str, Any], server: Server) -> None:
    """stdout closed, or the agent gone before the answer is written: exit 2, a block (not 141, the
    guard's code for a reader that went away: to every agent any code but 2 is a non-blocking
    error, the call goes through), with or without the server."""
    call = json.dumps(_input(project, "PreToolUse", *READ_SOURCE)).encode()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": project["root"], "BGC_CACHE_DIR": project["cache"]}
    closed = subprocess.run(["sh", "-c", project["command"] + " >&-"], input=call, env=env, cwd=project["root"],
                            capture_output=True, timeout=TIMEOUT)  # fmt: skip
    assert closed.returncode == 2 and b"Traceback" not in closed.stderr, closed.stderr
    gone = subprocess.Popen(["sh", "-c", project["command"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=project["root"])  # fmt: skip
    gone.stdout.close()  # type: ignore[union-attr]
    _, errors = gone.communicate(call, timeout=TIMEOUT)
    assert gone.returncode == 2 and b"Traceback" not in errors, errors
    assert served(server) == 2  # both answers were the server's: the client's write met the closed stdout, then the closed pipe
