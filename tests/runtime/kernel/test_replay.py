"""Replay: eight processes present the same nonce at the same moment; exactly one is allowed.

Real processes, each with its own connection to one SQLite file, released together by a
barrier so their consumes overlap; the store's one transaction per consume must let exactly one
of them record the nonce.
"""

from __future__ import annotations

import json
import multiprocessing

import pytest

from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.messages import read_message
from bgc.runtime.store.sqlite import SqliteStore
from tests.kernel_support import ISSUER, KERNEL, NOW, make_token, request

RACERS = 8


def _race(path: str, line: str, barrier, results) -> None:  # type: ignore[no-untyped-def]
    store = SqliteStore(path)
    kernel = Kernel([ISSUER.public], KERNEL, store, clock=lambda: NOW + 10)
    kernel.authorize_line(json.dumps("Heartbeat"))
    barrier.wait()
    decision = kernel.authorize_line(line)
    results.put((decision.decision, decision.code))
    store.close()


@pytest.mark.e2e
def test_eight_processes_racing_for_one_nonce_get_one_allow(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "kernel.db")
    setup = SqliteStore(path)
    kernel = Kernel([ISSUER.public], KERNEL, setup, clock=lambda: NOW + 10)
    message = request(make_token(nonce=True))
    decision, nonce = kernel.preflight(read_message(json.dumps(message)))
    assert decision.decision == "allow" and nonce
    message["ToolCallRequest"]["execution_nonce"] = nonce
    setup.close()
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(RACERS), context.Queue()
    racers = [context.Process(target=_race, args=(path, json.dumps(message), barrier, results)) for _ in range(RACERS)]
    for racer in racers:
        racer.start()
    outcomes = [results.get(timeout=120) for _ in racers]
    for racer in racers:
        racer.join(timeout=60)
        assert racer.exitcode == 0
    assert sorted(outcomes) == [("allow", "BGC530")] + [("deny", "BGC523")] * (RACERS - 1)
