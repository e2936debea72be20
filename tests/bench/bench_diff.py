"""Benchmark: `bgc diff` of two N-rule policies that differ in one rule, in fresh processes.

Run on demand (not part of the test suite):

    python tests/bench/bench_diff.py                 # N = 250, 500, 1000, 2000
    python tests/bench/bench_diff.py 1000            # some sizes

Each policy has N rules over N directories, mixing allows, asks and denies with nested and
wildcard patterns (`allow fs:write:/dI/**`, `deny fs:write:/dI/secrets/**`, `ask fs:write:/dI/*.cfg`,
`allow net:connect:https://hI.example.com/**`, a few conditions and one mode), the shape of a
large real policy. NEW changes one deny into a narrower one (the common widening). For
reference the same command is timed on a policy against itself (no difference: no question
is asked), and `bgc check` of the NEW policy (parsing and linting) gives a peer in the same run.
The table: wall seconds (best of 3), the diff alone (the two policies already loaded, in a fresh
process: what the algebra costs, without parsing), and the ratio of the whole command to the
first N, to show how the cost grows.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

BGC = [sys.executable, "-c", "from bgc.app.launch import main; main()"]


def policy(n: int, widened: bool) -> str:
    lines = ["default mode edit", "mode edit {", "  allow fs:write:/tmp/**", "}"]
    for i in range(n):
        kind = i % 5
        if kind == 0:
            lines.append(f"allow fs:write:/d{i}/**")
        elif kind == 1:
            narrowed = widened and i == (n // 2) - (n // 2) % 5 + 1
            lines.append(f"deny fs:write:/d{i - 1}/secrets/{'*.key' if narrowed else '**'}")
        elif kind == 2:
            lines.append(f"ask fs:write:/d{i - 2}/*.cfg")
        elif kind == 3:
            lines.append(f'allow net:connect:https://h{i}.example.com/** when intent.kind == "k{i % 7}"')
        else:
            lines.append(f"allow fs:read:/d{i - 4}/**/*.py")
    return "\n".join(lines) + "\n"


def best(command: list[str], cwd: Path, runs: int = 3) -> tuple[float, int]:
    times, code = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        code = subprocess.run(command, cwd=cwd, capture_output=True, timeout=900).returncode
        times.append(time.perf_counter() - start)
    return min(times), code


ALGEBRA_ONLY = """
import sys, time
from bgc.analysis.diff import diff_policies
from bgc.core.policy.loader import load_policy
old, new = load_policy(sys.argv[1]), load_policy(sys.argv[2])
start = time.perf_counter()
diff_policies(old, new)
print(time.perf_counter() - start)
"""


def algebra(cwd: Path, runs: int = 3) -> float:
    out = [subprocess.run([sys.executable, "-c", ALGEBRA_ONLY, "old.bgp", "new.bgp"], cwd=cwd, capture_output=True,
                          text=True, timeout=900).stdout for _ in range(runs)]  # fmt: skip
    return min(float(text) for text in out)


def main(sizes: list[int]) -> None:
    print("| rules | bgc diff (1 rule changed) | exit | diff alone, loaded | bgc diff (identical) | bgc check NEW | ÷ first N |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    first = None
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "old.bgp").write_text(policy(n, False))
            (work / "new.bgp").write_text(policy(n, True))
            changed, code = best([*BGC, "diff", "old.bgp", "new.bgp"], work)
            same, _ = best([*BGC, "diff", "old.bgp", "old.bgp"], work)
            check, _ = best([*BGC, "check", "new.bgp"], work, runs=1)
            alone = algebra(work)
            first = first or changed
            print(f"| {n:,} | {changed:.2f} s | {code} | {alone:.2f} s | {same:.2f} s | {check:.2f} s | {changed / first:.1f}× |")


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [250, 500, 1000, 2000])
