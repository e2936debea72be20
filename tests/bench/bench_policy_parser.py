"""Benchmark: the policy front end — building vs loading the LALR tables, parsing, formatting.

Run on demand (not part of the test suite), from an installed checkout:

    python tests/bench/bench_policy_parser.py             # 21 rounds
    python tests/bench/bench_policy_parser.py --rounds 5

Each figure is the median of fresh runs in this process (the parser's in-process memo is
cleared before each build/load). "build" is Lark analysing the grammar; "load" is reading the
tables back from bgc's on-disk cache (a fresh temporary directory); the parse and format rows
use the bundled policies and a generated policy of 1,000 rules. Prints a Markdown table
(docs/policy-language.md, "Performance", records the last run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def median_ms(action: Callable[[], object], rounds: int, before: Callable[[], None] = lambda: None) -> float:
    samples = []
    for _ in range(rounds):
        before()
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def generated_policy(rules: int) -> str:
    lines = ["tool fs.write needs fs:write:{path}", "mode edit {}"]
    for index in range(rules):
        effect = ("allow", "ask", "deny")[index % 3]
        lines.append(
            f'{effect} fs:write:/src/pkg{index}/**, "/docs/part {index}/*.md" '
            f'when intent.kind == "k{index % 7}" and not (origin.model in ["a", "b"]) because "rule {index}"'
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--rounds", type=int, default=21)
    rounds = arguments.parse_args().rounds

    os.environ["BGC_CACHE_DIR"] = tempfile.mkdtemp(prefix="bgc-bench-")
    started = time.perf_counter()
    import lark  # noqa: F401 - measured: the import cost every parse pays once

    import_ms = (time.perf_counter() - started) * 1000
    from bgc.core.policy import loader
    from bgc.core.policy import parser as policy_parser
    from bgc.core.policy.format import format_text

    def uncached() -> None:
        policy_parser.parser.cache_clear()
        os.environ["BGC_CACHE_DIR"] = ""

    def cached() -> None:
        policy_parser.parser.cache_clear()
        os.environ["BGC_CACHE_DIR"] = cache

    cache = tempfile.mkdtemp(prefix="bgc-bench-")
    build = median_ms(policy_parser.parser, rounds, uncached)
    cached()
    policy_parser.parser()  # warm the cache
    load = median_ms(policy_parser.parser, rounds, cached)

    default = ROOT / "policies" / "default.bgp"
    big = generated_policy(1000)
    rows = [
        ("import lark", import_ms),
        ("build the LALR tables (no cache)", build),
        ("load the tables from the cache", load),
        ("load_policy(policies/default.bgp) incl. base.bgp", median_ms(lambda: loader.load_policy(default), rounds)),
        (f"parse_policy of 1,000 rules ({len(big) // 1024} KiB)", median_ms(lambda: loader.parse_policy(big, "big.bgp"), rounds)),
        ("format_text of 1,000 rules", median_ms(lambda: format_text(big, "big.bgp"), rounds)),
    ]
    print(f"Python {sys.version.split()[0]}, lark {__import__('lark').__version__}, median of {rounds} rounds\n")
    print("| step | ms |\n|---|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:.1f} |")


if __name__ == "__main__":
    main()
