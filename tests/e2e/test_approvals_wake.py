"""Enforcers wake when people answer, not on a timer: two waiting processes (as two enforcers of a
fleet would be) follow one request whose timer would read the store only once an hour; two people
approve it; both see it approved, having read the store only at the start and on a change.

On PostgreSQL the wake is the NOTIFY sent by the answer's transaction; on SQLite, the file's
change. The time from the second answer to each waiter seeing it is printed (pytest -s), never
asserted: the test counts reads instead."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bgc.app.commands.approvals import sign_and_record
from bgc.runtime.kernel.keys import load_private
from bgc.runtime.store import open_store
from tests.e2e.approvals_support import ask, people

WAITER = str(Path(__file__).with_name("approvals_waiter.py"))


def test_two_waiting_enforcers_wake_on_each_answer(store_location: str, tmp_path: Path) -> None:
    crowd = people(tmp_path)
    request = ask(store_location, crowd, "/src/release/v1")
    waiters = [
        subprocess.Popen([sys.executable, WAITER, store_location, str(crowd.policy), request],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
        for _ in range(2)
    ]  # fmt: skip
    try:
        for waiter in waiters:
            assert waiter.stdout is not None and waiter.stdout.readline().strip() == "listening", waiter.stderr
        store = open_store(store_location, create=False)
        try:
            for name in ("alice", "bob"):
                given = sign_and_record(store, request, "allow-once", load_private(str(crowd.key(name))), name,
                                        crowd.trusted())  # fmt: skip
            answered = time.time()
        finally:
            store.close()
        assert given.standing.state == "approved"
        seen = []
        for waiter in waiters:
            out, err = waiter.communicate(timeout=120)
            assert waiter.returncode == 0, err
            seen.append(json.loads(out))
    finally:
        for waiter in waiters:
            if waiter.poll() is None:
                waiter.kill()
    # at the start, then once per change: PostgreSQL notifies each answer; a SQLite file changes
    # with each answer and each ledger entry (changes close together may come as one wake)
    most = 3 if store_location.startswith("postgresql") else 5
    for found in seen:
        assert 2 <= found["reads"] <= most
    delays = ", ".join(f"{found['seen'] - answered:.3f} s" for found in seen)
    print(f"woke {delays} after the answer ({store_location.split(':')[0]})")
