"""What `bgc mcp-proxy` adds to an MCP session (issue 15): run on demand, never as a test.

    python tests/bench/bench_mcp_proxy.py [--calls 2000] [--pings 20000]

Workload: tests/mcp/echo_server.py (a stand-in server that answers each request at once), used
directly and through ``bgc mcp-proxy`` with a three-rule policy (recording every call in a SQLite
ledger, its default, and with ``--store none``), in the same run:

- latency: sequential ``tools/call`` round trips of an allowed call (each decided by the policy
  on the way), median and 99th percentile; the target is at most 1 ms added to the median;
- throughput: ``ping`` requests written as fast as the pipe takes them, answers read back
  (messages per second, pass-through only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ECHO = str(ROOT / "tests" / "mcp" / "echo_server.py")
POLICY = (
    'tool read_file on files needs fs:read:{path}\nallow fs:read:/src/**\ndeny fs:read:/src/secrets/** because "keys"\n'
)


def start(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def latencies(process: subprocess.Popen[bytes], calls: int) -> list[float]:
    assert process.stdin is not None and process.stdout is not None
    seconds = []
    for number in range(calls + 50):
        message = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": f"/src/d{number % 97}/a.py"}},
        }
        line = json.dumps(message).encode() + b"\n"
        started = time.perf_counter()
        process.stdin.write(line)
        process.stdin.flush()
        answer = process.stdout.readline()
        elapsed = time.perf_counter() - started
        assert b'"echo"' in answer, answer
        if number >= 50:  # the first calls warm the decision caches
            seconds.append(elapsed)
    return seconds


def throughput(process: subprocess.Popen[bytes], pings: int) -> float:
    assert process.stdin is not None and process.stdout is not None
    lines = b"".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode() + b"\n" for n in range(pings))
    writer = threading.Thread(target=lambda: (process.stdin.write(lines), process.stdin.flush()))
    started = time.perf_counter()
    writer.start()
    for _ in range(pings):
        process.stdout.readline()
    elapsed = time.perf_counter() - started
    writer.join()
    return pings / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--pings", type=int, default=20000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        policy = Path(work) / "p.bgp"
        policy.write_text(POLICY)
        env = {**os.environ, "BGC_TEST_MCP_RECORD": os.devnull, "BGC_CACHE_DIR": str(Path(work) / "cache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        direct = [sys.executable, ECHO]
        proxied = [sys.executable, "-m", "bgc", "mcp-proxy", "-p", str(policy), "--server", "files"]
        ledger = [*proxied, "--store", str(Path(work) / "kernel.db"), "--", *direct]  # the default: every call recorded
        unrecorded = [*proxied, "--store", "none", "--", *direct]
        results = {}
        for name, command in (("direct", direct), ("bgc mcp-proxy", ledger), ("--store none", unrecorded)):
            process = start(command, env)
            seconds = latencies(process, options.calls)
            rate = throughput(process, options.pings)
            process.stdin.close()
            process.wait(timeout=30)
            results[name] = (statistics.median(seconds), sorted(seconds)[int(len(seconds) * 0.99)], rate)
    print(
        f"workload: {options.calls} sequential allowed tools/call round trips, {options.pings} pipelined pings; load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'':16} {'median':>10} {'p99':>10} {'pings/s':>10}")
    for name, (median, p99, rate) in results.items():
        print(f"{name:16} {median * 1e3:8.3f}ms {p99 * 1e3:8.3f}ms {rate:10.0f}")
    added = (results["bgc mcp-proxy"][0] - results["direct"][0]) * 1e3
    bare = (results["--store none"][0] - results["direct"][0]) * 1e3
    print(f"added median latency per tools/call: {added:.3f} ms (target <= 1 ms): {'PASS' if added <= 1 else 'FAIL'}")
    print(f"  of which recording it in the ledger: {added - bare:.3f} ms ({bare:.3f} ms with --store none)")


if __name__ == "__main__":
    main()
