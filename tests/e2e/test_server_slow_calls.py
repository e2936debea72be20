"""The decision server while some of its decisions are slow: the calls of other hooks are still
decided by it, at once, and a slow decision past its deadline is refused, never answered late.

A decision is made slow by naming as its policy a FIFO nobody writes: reading it blocks until the
decision's own deadline. The other hooks run as Claude Code runs them (``sh -c``, JSON on stdin);
that the server, not the hook's own fallback, answered them is read from the server's count."""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bgc.adapters.agents import client
from bgc.app.server import WORKERS
from tests.e2e.test_hook_claude_code import _input
from tests.e2e.test_hook_server import READ_ENV, READ_SOURCE, _project, ask, ring
from tests.server_support import Server, private_runtime, served

WAIT = 120
"""Seconds a test waits for something that happens at once on an idle machine."""


@pytest.fixture()
def project(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with private_runtime():
        yield _project(tmp_path)


def _slow_request(project: dict[str, Any], fifo: str, seconds: float) -> bytes:
    """A hook's request whose policy is ``fifo`` (reading it blocks), with ``seconds`` to decide."""
    meta = {"kind": "hook", "agent": "claude-code", "arguments": [], "cwd": project["root"], "code": client.identity(),
            "options": {"policy": fifo, "timeout": str(seconds)}, "deadline": time.monotonic() + seconds, "path": [],
            "env": {**os.environ, "CLAUDE_PROJECT_DIR": project["root"], "BGC_CACHE_DIR": project["cache"]}}  # fmt: skip
    return client.frame(marshal.dumps((meta, json.dumps(_input(project, "PreToolUse", *READ_SOURCE)).encode())))


def _write(body: bytes, written: threading.Event) -> Any:
    def write(where: str) -> None:
        descriptor = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(descriptor, body)
        os.close(descriptor)
        written.set()

    return write


def _ring(doorbell: str, token: str, body: bytes, written: threading.Event, replies: dict[int, bytes | None], index: int) -> None:
    """Ring for a request, keeping its reply (None: the server ended without one)."""
    try:
        replies[index] = ring(doorbell, token, _write(body, written), seconds=WAIT + 300)
    except ValueError:  # an end without a reply: the server stopped while deciding it
        replies[index] = None


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.parametrize("slow", sorted({1, WORKERS - 1}))
def test_slow_decisions_never_stall_the_calls_of_other_hooks(project: dict[str, Any], tmp_path: Path, slow: int) -> None:
    server = Server(project["root"], {**os.environ, "BGC_CACHE_DIR": project["cache"]})
    doorbell = client.doorbell_path(project["root"])
    assert doorbell is not None
    replies: dict[int, bytes | None] = {}
    rings = []

    def hold(index: int, seconds: float) -> None:
        """A request blocked on a FIFO of its own for ``seconds``, taken by the server."""
        fifo = str(tmp_path / f"slow{index}.bgp")
        os.mkfifo(fifo, 0o600)
        token = f"{os.getpid():x}-5{index:x}"
        written = threading.Event()
        thread = threading.Thread(target=_ring, daemon=True,
                                  args=(doorbell, token, _slow_request(project, fifo, seconds), written, replies, index))  # fmt: skip
        thread.start()
        rings.append(thread)
        _wait_for(written.is_set, "the request was not written")
        request_path = client.request_paths(doorbell, token)[0]
        _wait_for(lambda: not os.path.exists(request_path), "the server did not take the slow request")

    try:
        for index in range(slow):
            hold(index, 300)
        before = served(server)
        assert ask(project, READ_SOURCE) == "allow" and ask(project, READ_ENV) == "deny"
        assert served(server) == before + 2  # decided by the server, not by the hooks' own fallback
        assert not replies  # while the slow ones still wait
        hold(slow, 5)
        rings[-1].join(WAIT + 300)
        assert replies[slow] == client.REFUSED + b"the hook's share of its deadline is over"  # refused, never late
    finally:
        server.stop()
        for thread in rings:
            thread.join(WAIT)
        for index in range(slow + 1):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_path / f"slow{index}.bgp")
