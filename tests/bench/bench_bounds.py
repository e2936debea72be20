"""Benchmark: the issue's adversarial orders, each timed as `bgc compile` in a fresh process.

Run on demand (not part of the test suite):

    python tests/bench/bench_bounds.py            # every case
    python tests/bench/bench_bounds.py deep many  # some of them

Each case is written to a temporary directory and compiled by a new `bgc` process (so nothing
is cached), with the command shown; the table gives the wall time, the exit code and what the
plan or the error says. Past a structural limit the order is refused (exit 2, located); past
the order's work budget the undecided requests are `unknown` and not granted (exit 1). The
cases of issue 9, item 9, and variants that stay just inside the structural limits, so that
the budget is what bounds them:

- deep:     one request of 1,000 `/*a` segments (RecursionError before the bound)
- deep-max: one request of 128 segments, 32 of them `/*a` (the segment and wildcard limits)
- wild:     ten 345-byte requests of repeated `/**/*a?????????????????/**` (52 s before)
- wild-max: ten 345-byte requests `/**/*a?????????????????/**/…`, 20 wildcards each
- many:     2,000 requests `/src/dN/**/*.py` (160 s before)
- many-max: 1,000 such requests (the request limit)
- denies:   `fs:write:/**` against 600 disjoint denies (minutes before)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "policies" / "default.bgp"
PROMPT = "sha256:" + "0" * 64
#: What `bgc` runs (the console script's own line), so that PYTHONPATH can point at another
#: checkout to measure it: `PYTHONPATH=/tmp/old python tests/bench/bench_bounds.py`.
BGC = [sys.executable, "-c", "from bgc.app.launch import main; main()"]
TIMEOUT = 600


def _order(requests: list[str]) -> str:
    return json.dumps({"intent": {"kind": "patch.apply"}, "calls": [], "requests": requests,
                       "origin": {"model": "m", "parents": [], "prompt": PROMPT}})


def _padded(head: str, index: int, size: int = 345) -> str:
    """``head`` then a literal segment, to ``size`` bytes in all (a distinct request per index)."""
    tail = f"/x{index}"
    return head + "p" * (size - len(head) - len(tail)) + tail


def _cases() -> dict[str, tuple[list[str], str | None]]:
    """name -> (requests, policy text or None for the bundled default policy)."""
    wild = "/**/*a" + "?" * 17 + "/**"
    denies = 'allow fs:write:/** because "all"\n' + "".join(
        f'deny fs:write:/d{i}/** because "no {i}"\n' for i in range(600)
    )
    return {
        "deep": (["fs:write:" + "/*a" * 1000], None),
        "deep-max": (["fs:write:" + "/*a" * 32 + "/a" * 96], None),
        "wild": ([("fs:write:" + wild * 14)[:335] + f"/x{i}" for i in range(10)], None),
        "wild-max": ([_padded("fs:write:" + wild + "/", i) for i in range(10)], None),
        "many": ([f"fs:write:/src/d{i}/**/*.py" for i in range(2000)], None),
        "many-max": ([f"fs:write:/src/d{i}/**/*.py" for i in range(1000)], None),
        "denies": (["fs:write:/**"], denies),
    }


def run(name: str, requests: list[str], policy_text: str | None, where: Path) -> str:
    order = where / f"{name}.json"
    order.write_text(_order(requests))
    policy = DEFAULT
    if policy_text is not None:
        policy = where / f"{name}.bgp"
        policy.write_text(policy_text)
    command = [*BGC, "compile", str(order), "-p", str(policy), "--format", "json", "-o", str(where / f"{name}.plan.json")]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"| {name} | > {TIMEOUT} s | - | still running, killed |"
    elapsed = time.perf_counter() - start
    if done.returncode == 2:
        first = done.stderr.splitlines()[0] if done.stderr else done.stdout.splitlines()[0]
        outcome = "refused: " + first.split(": error: ", 1)[-1][:90]
    else:
        plan = json.loads((where / f"{name}.plan.json").read_text())
        verdicts = [request["verdict"] for request in plan["requests"]]
        unknown = sum(request["unknown"] for request in plan["requests"])
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("granted", "narrowed", "ask", "denied") if v in verdicts)
        outcome = f"{counts}; {unknown} unknown"
    if "Traceback" in done.stderr or "internal error" in done.stderr:
        outcome = "CRASH: " + done.stderr.strip().splitlines()[-1]
    return f"| {name} | {elapsed:.2f} s | {done.returncode} | {outcome} |"


def main() -> None:
    cases = _cases()
    chosen = sys.argv[1:] or list(cases)
    print("| case | wall time | exit | result |")
    print("|---|---:|---:|---|")
    with tempfile.TemporaryDirectory() as temporary:
        for name in chosen:
            requests, policy = cases[name]
            print(run(name, requests, policy, Path(temporary)), flush=True)


if __name__ == "__main__":
    main()
