"""Benchmark: the cold-process wall time of ``bgc check policies/default.bgp`` (what a pre-commit
hook pays on every commit) against ``python -c "import typer, rich, lark, yaml, cbor2"`` (what
merely importing bgc's dependencies costs), measured on the same machine in the same run.

Run on demand (not part of the test suite), from an installed checkout:

    python tests/bench/bench_startup.py            # 31 rounds
    python tests/bench/bench_startup.py --rounds 11

The goal is bgc ≤ 0.8 × the import baseline. Each round runs both commands once, in alternating
order, so a noisy neighbour slows both alike; the medians are compared. The cache directory is a
fresh temporary one, warmed by one untimed run (a hook's cache is warm from the second commit
on), with bytecode caching on; the uncached figure (``BGC_CACHE_DIR=""``) is printed too, for
information. Prints a
Markdown table (docs/ci.md records the last run) and exits 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOAL = 0.8


def bgc_command() -> list[str]:
    """The installed console script (what users and hooks run), next to this interpreter."""
    script = Path(sys.executable).with_name("bgc")
    if not script.exists():
        found = shutil.which("bgc")
        if found is None:
            sys.exit("bench_startup: the `bgc` console script is not installed (pip install -e .)")
        script = Path(found)
    return [str(script), "check", "policies/default.bgp"]


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"bench_startup: {' '.join(command)} exited {result.returncode}: {result.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    baseline = [sys.executable, "-c", "import typer, rich, lark, yaml, cbor2"]
    check = bgc_command()
    # Bytecode caching on, as in any normal install (some sandboxes set PYTHONDONTWRITEBYTECODE,
    # which would make bgc's own modules compile from source on every run, unlike its deps').
    base = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="bgc-bench-cache-") as cache:
        env = {**base, "BGC_CACHE_DIR": cache}
        uncached = {**base, "BGC_CACHE_DIR": ""}
        timed(check, env)  # warm the cache once, untimed
        times: dict[str, list[float]] = {"check": [], "import": [], "uncached": []}
        for round_ in range(args.rounds):
            pair = [("check", check, env), ("import", baseline, env)]
            for name, command, environment in pair if round_ % 2 else reversed(pair):
                times[name].append(timed(command, environment))
            if round_ % 3 == 0:
                times["uncached"].append(timed(check, uncached))
    median = {name: statistics.median(values) for name, values in times.items()}
    ratio = median["check"] / median["import"]
    print(f"{args.rounds} rounds, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs\n")
    print("| command | median | min | max |")
    print("|---|---:|---:|---:|")
    rows = [
        ("`bgc check policies/default.bgp` (warm cache)", "check"),
        ('`python -c "import typer, rich, lark, yaml, cbor2"`', "import"),
        ("`bgc check policies/default.bgp` (`BGC_CACHE_DIR=\"\"`, no cache)", "uncached"),
    ]
    for label, name in rows:
        values = times[name]
        print(f"| {label} | {median[name] * 1000:.1f} ms | {min(values) * 1000:.1f} ms | {max(values) * 1000:.1f} ms |")
    verdict = "met" if ratio <= GOAL else "MISSED"
    print(f"\nbgc / import = {ratio:.2f} (goal ≤ {GOAL}: {verdict})")
    sys.exit(0 if ratio <= GOAL else 1)


if __name__ == "__main__":
    main()
