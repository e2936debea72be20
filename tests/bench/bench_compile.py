"""Benchmark: compiling orders against policies of growing size, and the gate's throughput.

Run on demand (not part of the test suite):

    python tests/bench/bench_compile.py            # N = 10, 100, 1000 rules
    python tests/bench/bench_compile.py --quick    # smaller, for a smoke run

It compiles 1,000 orders of 10 atoms each against a policy of N rules (one Compiler per policy,
as `bgc compile` does for several orders), then decides 100,000 concrete atoms against the
resulting plans with one Gate. Figures go to stdout as a Markdown table (docs/performance.md
holds the last recorded run). Everything is generated from a fixed seed, so runs compare.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bgc.compiler import Compiler  # noqa: E402
from bgc.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder  # noqa: E402
from bgc.plan import Gate  # noqa: E402
from bgc.policy.loader import parse_policy  # noqa: E402

RESOURCES = [("fs", "read"), ("fs", "write"), ("net", "connect"), ("proc", "exec")]
WORDS = ["src", "tests", "docs", "lib", "app", "core", "api", "util", "models", "views", "migrations", "config"]
KINDS = ["patch.apply", "test.run", "deps.upgrade", "db.migration.write", "analysis.readonly"]


def _path(rnd: random.Random, depth: int) -> str:
    return "/" + "/".join(rnd.choice(WORDS) + (str(rnd.randrange(50)) if rnd.random() < 0.5 else "") for _ in range(depth))


def _pattern(rnd: random.Random) -> str:
    base = _path(rnd, rnd.randint(1, 3))
    return rnd.choice([base + "/**", base + "/*.py", base, base + "/**/*.json", base + "/*"])


def make_policy(rules: int, rnd: random.Random) -> str:
    lines = ["tool fs.write needs fs:write:{path}"]
    for i in range(rules):
        resource, action = rnd.choice(RESOURCES)
        effect = rnd.choices(["allow", "ask", "deny"], weights=[6, 2, 2])[0]
        pattern = _pattern(rnd) if resource == "fs" else f"https://host{i % 40}.example.com/**" if resource == "net" else f"tool{i % 60}"
        when = f' when intent.kind == "{rnd.choice(KINDS)}"' if rnd.random() < 0.2 else ""
        lines.append(f'{effect} {resource}:{action}:{pattern}{when} because "rule {i}"')
    return "\n".join(lines) + "\n"


def make_orders(count: int, rnd: random.Random) -> list[WorkOrder]:
    orders = []
    for i in range(count):
        atoms = set()
        while len(atoms) < 10:
            resource, action = rnd.choice(RESOURCES)
            if resource == "fs":
                pattern = rnd.choice([_pattern(rnd), _path(rnd, rnd.randint(1, 4))])
            elif resource == "net":
                pattern = f"https://host{rnd.randrange(60)}.example.com/**"
            else:
                pattern = f"tool{rnd.randrange(80)}"
            atoms.add(GrantAtom(resource, action, pattern))
        orders.append(
            WorkOrder(Intent(rnd.choice(KINDS), i), (), GrantSet.of(atoms), ProposalOrigin("bench", (), Digest.of(b"%d" % i)))
        )
    return orders


def concrete_atoms(count: int, rnd: random.Random) -> list[str]:
    out = []
    for _ in range(count):
        resource, action = rnd.choice(RESOURCES)
        if resource == "fs":
            value = _path(rnd, rnd.randint(1, 5)) + rnd.choice(["", ".py", ".json"])
        elif resource == "net":
            value = f"https://host{rnd.randrange(60)}.example.com/v1/items"
        else:
            value = f"tool{rnd.randrange(80)}"
        out.append(f"{resource}:{action}:{value}")
    return out


def run(rule_counts: list[int], orders: int, gate_atoms: int, repeats: int) -> None:
    print(f"orders: {orders} × 10 atoms; gate: {gate_atoms:,} concrete atoms; median of {repeats} runs\n")
    print("| rules | compile total (s) | per order (ms) | gate total (s) | per atom (µs) | compile vs N=smallest |")
    print("|---:|---:|---:|---:|---:|---:|")
    baseline = None
    for count in rule_counts:
        rnd = random.Random(count)
        policy = parse_policy(make_policy(count, rnd), f"bench-{count}.bgp")
        work = make_orders(orders, random.Random(1))
        atoms = concrete_atoms(gate_atoms, random.Random(2))
        compile_times, gate_times = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            compiler = Compiler(policy)
            plans = [compiler.compile(order) for order in work]
            compile_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            gate = Gate(plans)
            for atom in atoms:
                gate.decide(atom)
            gate_times.append(time.perf_counter() - start)
        c, g = statistics.median(compile_times), statistics.median(gate_times)
        baseline = baseline or c
        print(f"| {count:,} | {c:.2f} | {1000 * c / orders:.2f} | {g:.2f} | {1e6 * g / gate_atoms:.1f} | {c / baseline:.2f}× |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 orders, 10,000 gate atoms, one run")
    args = parser.parse_args()
    if args.quick:
        run([10, 100, 1000], 100, 10_000, 1)
    else:
        run([10, 100, 1000], 1000, 100_000, 3)


if __name__ == "__main__":
    main()
