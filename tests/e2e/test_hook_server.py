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

import contextlib
import json
import marshal
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bgc.adapters.agents import client
from tests.e2e.test_hook_claude_code import TIMEOUT, _input, run_hook
from tests.samples import bgc
from bgc.app import server as server_module
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
    command = json.loads((root / ".claude" / "settings.local.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
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
    assert requests_left(project) == []
    server.stop()
    assert (ask(project, READ_SOURCE), ask(project, READ_ENV)) == ("allow", "deny")


def requests_left(project: dict[str, Any]) -> list[str]:
    """The request files and reply FIFOs in the private directory: a hook removes its own
    whatever happened, so none is left once the hooks are done."""
    directory = client.private_dir()
    assert directory is not None
    return [name for name in os.listdir(directory) if name.endswith((".request", ".reply"))]


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
    from bgc.core.cache import stamp
    from bgc.runtime.session import WarmSources

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
    """SIGSTOP: the doorbell is open and rings fit in it, and nobody answers; the hook gives the
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


def test_a_killed_server_leaves_a_doorbell_nobody_answers(project: dict[str, Any], server: Server) -> None:
    path = client.doorbell_path(project["root"])
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()
    assert path is not None and os.path.exists(path)  # left behind: nobody reads it, opening it to ring fails
    assert client.exchange(path, b"", time.monotonic() + 60) is None
    assert (ask(project, READ_SOURCE), ask(project, READ_ENV)) == ("allow", "deny")
    again = Server(project["root"], {**os.environ, "BGC_CACHE_DIR": project["cache"]})  # takes the lock and the path
    try:
        assert ask(project, READ_ENV) == "deny" and served(again) == 1
    finally:
        again.stop()


def test_a_server_gone_while_a_hook_waits_is_not_waited_for(project: dict[str, Any], server: Server) -> None:
    """The server killed after the ring, before any answer: its doorbell closes with it, and the
    waiting hook decides at once, not at the end of the server's share of a long deadline."""
    os.kill(server.process.pid, signal.SIGSTOP)
    command = project["command"].replace("hook claude-code", "hook claude-code --timeout 600")
    answers: list[str] = []
    started = time.monotonic()
    asked = threading.Thread(target=lambda: answers.append(ask(project, READ_ENV, command=command)))
    asked.start()
    path = client.doorbell_path(project["root"])
    assert path is not None
    directory = os.path.dirname(path)
    deadline = time.monotonic() + TIMEOUT
    while not any(name.endswith(".request") for name in os.listdir(directory)):  # the hook rang, or is about to
        assert time.monotonic() < deadline and asked.is_alive()
        time.sleep(0.01)
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()
    asked.join(TIMEOUT)
    assert answers == ["deny"] and time.monotonic() - started < 600 * client.SERVER_SHARE / 3


@pytest.mark.parametrize("what", ["doorbell", "directory"])
def test_a_doorbell_or_directory_others_may_use_is_ignored(project: dict[str, Any], server: Server, what: str) -> None:
    path = client.doorbell_path(project["root"])
    assert path is not None
    target, mode = (path, 0o666) if what == "doorbell" else (os.path.dirname(path), 0o755)
    original = os.stat(target).st_mode & 0o777
    os.chmod(target, mode)
    try:
        assert (ask(project, READ_SOURCE), ask(project, READ_ENV)) == ("allow", "deny")
    finally:
        os.chmod(target, original)
    assert served(server) == 0  # nothing was handed to it


def test_a_doorbell_or_directory_of_another_user_is_not_used(
    project: dict[str, Any], server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ownership, seen as another user would see it: the same files, another uid."""
    path = client.doorbell_path(project["root"])
    assert path is not None and client.is_private(os.lstat(path), stat.S_IFIFO)
    request = marshal.dumps(({"kind": "status", "code": client.identity()}, b""))
    assert client.exchange(path, request, time.monotonic() + 30) is not None
    other = os.getuid() + 1
    with monkeypatch.context() as patch:  # undone before the server is stopped: stopping it needs our uid
        patch.setattr(client.os, "getuid", lambda: other)
        assert not client.is_private(os.lstat(path), stat.S_IFIFO)
        assert client.private_dir() is None
        assert client.exchange(path, request, time.monotonic() + 30) is None


def _hook_request(project: dict[str, Any], use: tuple[str, dict[str, Any]], *, seconds_left: float) -> bytes:
    """A framed request for the hook's call ``use`` in ``project``, as the client writes it, its
    deadline ``seconds_left`` from now."""
    meta = {"kind": "hook", "agent": "claude-code", "arguments": [], "cwd": project["root"], "code": client.identity(),
            "options": {"policy": f"{project['root']}/.claude/bgc/policy.bgp"},
            "deadline": time.monotonic() + seconds_left, "path": sys.path,
            "env": {**os.environ, "CLAUDE_PROJECT_DIR": project["root"], "BGC_CACHE_DIR": project["cache"]}}  # fmt: skip
    return client.frame(marshal.dumps((meta, json.dumps(_input(project, "PreToolUse", *use)).encode())))


def _writer(body: bytes, mode: int = 0o600) -> Callable[[str], None]:
    """Puts ``body`` in a new file at the path it is given, then gives the file ``mode``."""

    def write(where: str) -> None:
        descriptor = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(descriptor, body)
        os.close(descriptor)
        os.chmod(where, mode)

    return write


def ring(doorbell: str, token: str, request: Callable[[str], None], seconds: float = 30) -> bytes | None:
    """Ring the server at ``doorbell`` for ``token`` after ``request(path)`` put something at the
    request's path: the reply's payload, or None when none came within ``seconds``."""
    request_path, reply_path = client.request_paths(doorbell, token)
    os.mkfifo(reply_path, 0o600)
    reader = os.open(reply_path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        request(request_path)
        bell = os.open(doorbell, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(bell, token.encode() + b"\n")
        finally:
            os.close(bell)
        received = b""
        deadline = time.monotonic() + seconds
        while select.select([reader], [], [], max(deadline - time.monotonic(), 0))[0]:
            chunk = os.read(reader, 1 << 16)
            if not chunk:
                return client.unframe(received, client.MAX_REPLY)
            received += chunk
        return None
    finally:
        os.close(reader)
        for path in (request_path, reply_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def test_a_request_others_could_have_written_is_refused(
    project: dict[str, Any], server: Server, tmp_path: Path
) -> None:
    """The server reads a request only from a regular file this user owns that nobody else may
    read or write (what stands in for a socket's peer credentials): a request readable by others,
    a link, a FIFO (never waited on) or a file of another user's is refused, unread."""
    path = client.doorbell_path(project["root"])
    assert path is not None
    body = _hook_request(project, READ_ENV, seconds_left=10)

    def written(mode: int) -> Callable[[str], None]:
        return _writer(body, mode)

    target = tmp_path / "request"
    written(0o600)(str(target))
    refused = {
        "readable by the group": written(0o640),
        "writable by others": written(0o602),
        "a link to a private file": lambda where: os.symlink(target, where),
        "a FIFO": lambda where: os.mkfifo(where, 0o600),
        "nothing there": lambda where: None,
    }
    for number, (what, make) in enumerate(refused.items()):
        reply = ring(path, f"{number:x}-bad", make)
        assert reply is not None and reply.startswith(client.REFUSED), what
    assert served(server) == 0
    assert (ring(path, "f-600d", written(0o600)) or b"").startswith(client.ANSWERED)  # the same request, private
    assert served(server) == 1
    with pytest.MonkeyPatch.context() as patch:  # the server's check, in this process, as another user would see it
        patch.setattr(client.os, "getuid", lambda: os.stat(target).st_uid + 1)
        with pytest.raises(PermissionError):
            server_module._read_request(str(target))


def test_a_ring_that_names_no_request_is_ignored(project: dict[str, Any], server: Server) -> None:
    """A ring is a token of hex digits and dashes: anything else (a path, ``..``, a line too
    long, garbage) names nothing and gets no reply; the server keeps serving."""
    path = client.doorbell_path(project["root"])
    assert path is not None
    bell = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(bell, b"../../etc/passwd\n..\n/x\nABC\n" + b"a" * 5000 + b"\n\n\x00\n")
    finally:
        os.close(bell)
    assert ask(project, READ_ENV) == "deny" and served(server) == 1


def test_files_hooks_left_behind_are_removed_when_a_server_starts(project: dict[str, Any]) -> None:
    """A hook killed before it removed its request and reply FIFO leaves them (a request may hold
    megabytes of a memory-backed directory): a server removes those of its project whose hook
    is gone, and keeps those of running hooks and of other projects."""
    path = client.doorbell_path(project["root"], create=True)
    assert path is not None
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = [*client.request_paths(path, f"{gone.pid:x}-0123456789abcdef")]
    running = [*client.request_paths(path, f"{os.getpid():x}-0123456789abcdef")]
    other_bell = os.path.join(os.path.dirname(path), "1" + os.path.basename(path))  # another project's
    other = [*client.request_paths(other_bell, f"{gone.pid:x}-0123456789abcdef")]
    for where in (stale[0], running[0], other[0]):
        Path(where).write_bytes(b"left behind")
    for where in (stale[1], running[1], other[1]):
        os.mkfifo(where, 0o600)
    started = Server(project["root"], {**os.environ, "BGC_CACHE_DIR": project["cache"]})
    try:
        assert not any(os.path.lexists(where) for where in stale)
        assert all(os.path.lexists(where) for where in (*running, *other))
    finally:
        started.stop()
        for where in (*running, *other):
            os.unlink(where)


def test_concurrent_hooks_each_get_their_own_answer(project: dict[str, Any], server: Server) -> None:
    """Hooks ringing at once: each reply goes to the hook whose request it answers (every reason
    names the call's own file)."""
    calls = [("Read", {"file_path": f"{{P}}/src/file{number}.py"}) if number % 3 else ("Read", {"file_path": f"{{P}}/.env.{number}"})
             for number in range(12)]  # fmt: skip

    def run(call: tuple[str, dict[str, str]]) -> tuple[str, str]:
        answer, done = run_hook(project, _input(project, "PreToolUse", *call))
        return answer, json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        answers = list(pool.map(run, calls))
    for call, (answer, reason) in zip(calls, answers, strict=True):
        named = call[1]["file_path"].removeprefix("{P}")
        assert f"fs:read:{named}:" in reason and answer == ("deny" if ".env" in named else "allow"), (call, reason)
    assert served(server) == len(calls)


class FakeServer:
    """Rings where the project's server would, with the right owner and mode, and answers every
    request with ``reply(request bytes)`` (None: never answer, keep the reply FIFO open)."""

    def __init__(self, project: str, reply: Callable[[bytes], bytes | None]) -> None:
        path = client.doorbell_path(project, create=True)
        assert path is not None
        os.mkfifo(path, 0o600)
        self.bell = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        self.path, self.reply, self.held, self.requests = path, reply, [], 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            if not select.select([self.bell], [], [], 0.05)[0]:
                continue
            for token in os.read(self.bell, 1 << 16).split():
                request_path, reply_path = client.request_paths(self.path, token.decode())
                try:
                    request = Path(request_path).read_bytes()
                    replying = os.open(reply_path, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    continue  # the hook gave up
                self.requests += 1
                answer = self.reply(request)
                if answer is None:
                    self.held.append(replying)
                    continue
                os.set_blocking(replying, True)
                with contextlib.suppress(OSError):  # the hook stopped reading
                    os.write(replying, answer)
                os.close(replying)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join()
        os.unlink(self.path)
        os.close(self.bell)
        for replying in self.held:
            os.close(replying)


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
    "more than the limit, framed as such": lambda request: client.frame(client.encode_reply(0, ALLOW[:-2] + b" " * client.MAX_REPLY + b"}\n", b"")),
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
        assert requests_left(project) == []  # the fake server removes nothing: the hook did
    finally:
        fake.close()


def test_a_reply_larger_than_a_pipe_holds_is_read_whole(shared_project: dict[str, Any]) -> None:
    """A reply of a mebibyte (a pipe holds 64 KiB) is read to its end and taken as it is: the
    answer comes from the fake server (it allows what the policy denies)."""
    project = shared_project
    large = ALLOW.replace(b'"bgc: fake"', b'"bgc: ' + b"x" * (1 << 20) + b'"')
    fake = FakeServer(project["root"], lambda request: client.frame(client.encode_reply(0, large, b"")))
    try:
        answer, done = run_hook(project, _input(project, "PreToolUse", *READ_ENV), in_process=True)
        assert (answer, done.stdout, fake.requests) == ("allow", large, 1)
    finally:
        fake.close()


def test_a_reply_the_hook_does_not_take_never_holds_the_server(tmp_path: Path) -> None:
    """The server writes a reply without ever blocking: a reply larger than the pipe holds goes
    to a hook reading it; a hook that stops reading is given up on at the deadline; a hook gone
    is an error at once."""
    fifo = str(tmp_path / "reply")
    os.mkfifo(fifo, 0o600)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        large = os.urandom(1 << 20)
        received = bytearray()

        def take() -> None:
            while len(received) < len(large):
                select.select([reader], [], [], 5)
                with contextlib.suppress(BlockingIOError):
                    received.extend(os.read(reader, 1 << 16))

        taking = threading.Thread(target=take, daemon=True)
        taking.start()
        assert server_module._write_reply(writer, large, time.monotonic() + TIMEOUT)
        taking.join(TIMEOUT)
        assert bytes(received) == large
        started = time.monotonic()
        assert not server_module._write_reply(writer, large, started + 0.5)  # nobody reads: the pipe fills
        assert 0.5 <= time.monotonic() - started < TIMEOUT
        os.close(reader)
        reader = -1
        with pytest.raises(BrokenPipeError):
            server_module._write_reply(writer, b"x", time.monotonic() + TIMEOUT)
    finally:
        os.close(writer)
        if reader >= 0:
            os.close(reader)


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
    copy_command = project["command"].replace(project["command"].split(" hook ")[0], f"{sys.executable} -P -m bgc")
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
    path = client.doorbell_path(project["root"])
    assert path is not None and not os.path.exists(path)


PROBE = (
    "import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', *sys.argv[1:]]\nbefore = set(sys.modules)\n"
    "try:\n    main()\nfinally:\n    print('LOADED', sorted(set(sys.modules) - before), file=sys.stderr)\n"
)


def test_a_hook_answered_by_the_server_imports_almost_nothing(project: dict[str, Any], server: Server) -> None:
    """The client's whole import cost: what a hook process loads beyond the launcher when the
    server answers is the client and ``select`` (its timed waits: the one extension module it
    loads), nothing more — no ``socket`` (it brings enum, selectors and collections), no json,
    typing, hashlib or any of bgc's deciding modules. No clock: the modules themselves."""
    policy = f"{project['root']}/.claude/bgc/policy.bgp"
    call = json.dumps(_input(project, "PreToolUse", *READ_SOURCE)).encode()
    done = subprocess.run([sys.executable, "-I", "-c", PROBE, "hook", "claude-code", "-p", policy], input=call, cwd=project["root"],
                          env={**os.environ, "CLAUDE_PROJECT_DIR": project["root"]}, capture_output=True, timeout=TIMEOUT)  # fmt: skip
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert served(server) == 1
    line = next(line for line in done.stderr.decode().splitlines() if line.startswith("LOADED "))
    loaded = set(json.loads(line.removeprefix("LOADED ").replace("'", '"')))
    assert loaded <= {"bgc.adapters", "bgc.adapters.agents", "bgc.adapters.agents.client", "select"}, loaded


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


@pytest.mark.parametrize("left", [-1.0, 0.0, 3600.0])
def test_a_call_outside_the_hooks_share_of_its_deadline_is_not_decided(
    project: dict[str, Any], server: Server, left: float
) -> None:
    """The server decides a call only while its hook still waits for the answer (and for no
    longer than a hook's deadline): a call whose hook's share is over, or a deadline no hook sets,
    is refused unread, so the hook decides it itself and the server is free for the next call."""
    path = client.doorbell_path(project["root"])
    assert path is not None
    reply = ring(path, "d-1a7e", _writer(_hook_request(project, READ_SOURCE, seconds_left=left)))
    assert reply == client.REFUSED + b"the hook's share of its deadline is over", reply
