"""What `bgc mcp-proxy` adds to an MCP session over Streamable HTTP (issue 32): run on demand,
never as a test.

    python tests/bench/bench_mcp_http.py [--calls 1000]

Workload: tests/mcp/http_server.py (the SDK's Streamable HTTP server on uvicorn, a remote
server's stand-in) reached directly, and through ``bgc mcp-proxy --listen … --url …`` with a
three-rule policy (every call recorded in a SQLite ledger, its default, and with ``--store
none``). One client per endpoint, each on a kept-alive connection, sending sequential allowed
``tools/call`` requests; the three endpoints take turns call by call (paired, same run), so a
change in the machine's load touches them alike. Reported: the median and 99th percentile of
each, and what the proxy adds to the median (the target: at most 3 ms). Every tool is pinned
on its first call, as in use.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = str(ROOT / "tests" / "mcp" / "http_server.py")
POLICY = (
    'tool read_file on files needs fs:read:{path}\nallow fs:read:/src/**\ndeny fs:read:/src/secrets/** because "keys"\n'
)
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


class Endpoint:
    """One MCP session on one kept-alive connection, speaking raw JSON-RPC over HTTP."""

    def __init__(self, url: str, token: str | None) -> None:
        rest = url.split("://", 1)[1]
        self.address, _, self.path = rest.partition("/")
        self.path = "/" + self.path
        host, _, port = self.address.rpartition(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if token is not None:
            self.headers["Bgc-Token"] = token
        answer, _ = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        assert "result" in answer, answer
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.post({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})

    def post(self, message: dict) -> tuple[dict, float]:
        """The answer, and when it arrived (an event stream's answer is taken as its event
        arrives, as a client does; the rest of the stream is read after)."""
        self.connection.request("POST", self.path, json.dumps(message), self.headers)
        response = self.connection.getresponse()
        if "Mcp-Session-Id" not in self.headers and response.getheader("Mcp-Session-Id"):
            self.headers["Mcp-Session-Id"] = response.getheader("Mcp-Session-Id")  # type: ignore[assignment]
            self.headers["MCP-Protocol-Version"] = "2025-11-25"
        if not response.getheader("Content-Type", "").startswith("text/event-stream"):
            body = response.read()
            return (json.loads(body) if body else {}), time.perf_counter()
        while True:
            line = response.readline()
            if line.startswith(b"data:") and line[5:].strip():
                arrived = time.perf_counter()
                response.read()
                return json.loads(line[5:]), arrived


def start(args: list[str], env: dict[str, str], marker: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    line = process.stderr.readline()
    assert marker in line, line
    return process, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        base = Path(work)
        (base / "p.bgp").write_text(POLICY)
        env = {**os.environ, "BGC_TEST_MCP_RECORD": os.devnull, "BGC_CACHE_DIR": str(base / "cache")}
        upstream = subprocess.Popen([sys.executable, UPSTREAM, str(base / "port")], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        while not (base / "port").exists():
            time.sleep(0.05)
        url = f"http://127.0.0.1:{(base / 'port').read_text()}/mcp"
        fronts = []
        endpoints = {}
        for name, store in (("bgc mcp-proxy", str(base / "kernel.db")), ("--store none", "none")):
            token = base / f"{len(fronts)}.token"
            process, line = start(
                [sys.executable, "-m", "bgc", "mcp-proxy", "-p", str(base / "p.bgp"), "--server", "files", "--store",
                 store, "--listen", "127.0.0.1:0", "--token-file", str(token), "--url", url],
                env, "listening on",
            )  # fmt: skip
            fronts.append(process)
            endpoints[name] = Endpoint(line.split("listening on ", 1)[1].split(";")[0], token.read_text().strip())
        endpoints = {"direct": Endpoint(url, None), **endpoints}  # last: a server closes a connection idle a few seconds
        seconds: dict[str, list[float]] = {name: [] for name in endpoints}
        try:
            for number in range(options.calls + 50):
                call = {"jsonrpc": "2.0", "id": number + 1, "method": "tools/call",
                        "params": {"name": "read_file", "arguments": {"path": f"/src/d{number % 97}/a.py"}}}  # fmt: skip
                for name, endpoint in endpoints.items():
                    started = time.perf_counter()
                    answer, arrived = endpoint.post(call)
                    elapsed = arrived - started
                    assert answer["result"]["isError"] is False, answer
                    if number >= 50:  # the first calls warm the caches and pin the tool
                        seconds[name].append(elapsed)
        finally:
            for process in fronts:
                process.terminate()
                process.wait(30)
            upstream.terminate()
            upstream.wait(30)
    print(f"workload: {options.calls} sequential allowed tools/call round trips, paired; load {os.getloadavg()[0]:.1f}")
    print(f"{'':16} {'median':>10} {'p99':>10}")
    medians = {}
    for name, found in seconds.items():
        medians[name] = statistics.median(found)
        print(f"{name:16} {medians[name] * 1e3:8.3f}ms {sorted(found)[int(len(found) * 0.99)] * 1e3:8.3f}ms")
    added = (medians["bgc mcp-proxy"] - medians["direct"]) * 1e3
    bare = (medians["--store none"] - medians["direct"]) * 1e3
    print(f"added median latency per tools/call over HTTP: {added:.3f} ms (target <= 3 ms): {'PASS' if added <= 3 else 'FAIL'}")
    print(f"  of which recording it in the ledger: {added - bare:.3f} ms ({bare:.3f} ms with --store none)")


if __name__ == "__main__":
    main()
