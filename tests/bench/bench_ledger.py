"""The ledger's speed (issue 14): run on demand, never as a test.

    python tests/bench/bench_ledger.py [--appends 5000] [--verify 100000] [--postgres URL]

Workload: hook-shaped decisions (a call, its params digest, the deciding rule) appended one
transaction each by one process, then `bgc log verify` of a ledger of ``--verify`` entries in a
fresh process (the command a user runs). Targets: at least 2,000 appends/s on SQLite; verify of
100,000 entries in seconds. PostgreSQL is measured too when a server URL is given.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bgc.runtime import ledger  # noqa: E402
from bgc.runtime.store import GENESIS, open_store  # noqa: E402


def record(number: int) -> ledger.Record:
    return ledger.Record("hook", ("allow", "deny", "ask")[number % 3], 1_764_500_000 + number, session="s",
                         tool="Write", server="local", params="sha256:" + f"{number:064x}", rule=f"p.bgp:{number % 40}")  # fmt: skip


def appends_per_second(location: str, count: int) -> float:
    store = open_store(location)
    started = time.perf_counter()
    for number in range(count):
        ledger.append(store, record(number))
    elapsed = time.perf_counter() - started
    store.close()
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=5000)
    parser.add_argument("--verify", type=int, default=100_000)
    parser.add_argument("--postgres", default=os.environ.get("BGC_TEST_POSTGRES"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        rate = appends_per_second(str(Path(work) / "a.db"), options.appends)
        print(
            f"SQLite appends: {rate:,.0f}/s over {options.appends} (target >= 2,000/s): {'PASS' if rate >= 2000 else 'FAIL'}"
        )
        if options.postgres:
            import psycopg

            name = f"bgc_bench_{os.getpid()}"
            with psycopg.connect(options.postgres, autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{name}"')
            try:
                url = options.postgres.rsplit("/", 1)[0] + "/" + name
                print(f"PostgreSQL appends: {appends_per_second(url, options.appends):,.0f}/s over {options.appends}")
            finally:
                with psycopg.connect(options.postgres, autocommit=True) as admin:
                    admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        big = str(Path(work) / "big.db")
        store = open_store(big)
        prev, rows = GENESIS, []
        for seq in range(1, options.verify + 1):  # built in one transaction: the workload, not the subject
            data = ledger.encode_entry(record(seq), seq, prev)
            prev = ledger.canonical.digest_text(data)
            rows.append((seq, prev, data))
        store._write(
            lambda: store._db.executemany("INSERT INTO bgc_ledger (seq, digest, entry) VALUES (?, ?, ?)", rows)
        )
        store.close()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "bgc", "log", "verify", "--store", big], capture_output=True, text=True, env=env
        )
        elapsed = time.perf_counter() - started
        print(
            f"bgc log verify of {options.verify:,} entries: {elapsed:.2f} s (fresh process): {result.stdout.strip()[:60]}"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
