"""Benchmark: what deciding a Bash command's needs costs (bgc.runtime.shell.shell_atoms), in process.

Run on demand (not part of the test suite):

    python tests/bench/bench_shell.py

For each workload the table gives the median time per call over repeated runs and calls per
second, next to the bare tree-sitter parse of the same string in the same run (the part of the
cost that is the grammar's), so the ratio is comparable across machines and loads. The first
line is the one-off cost of importing the parser in a fresh process (what a cold hook pays once).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

WORKLOADS = {
    "simple": "git status",
    "typical": "cd src && npm run test -- --watch=false 2>&1 | tee ../test.log",
    "wrapped": "timeout 60 bash -c 'pytest -x tests/ && ruff check .' > out.txt",
    "heredoc": "cat <<'EOF' > notes.md\n" + "line of text\n" * 50 + "EOF",
    "chain-100": " && ".join(f"echo {i} >> log.txt" for i in range(100)),
}
REPEAT = 7


def per_call(function, argument: str, calls: int) -> float:
    runs = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        for _ in range(calls):
            function(argument)
        runs.append((time.perf_counter() - started) / calls)
    return statistics.median(runs)


def main() -> None:
    from bgc.runtime.shell import _parser, shell_atoms

    parser = _parser()
    cold = subprocess.run(
        [sys.executable, "-c", "import time; t = time.perf_counter(); import bgc.runtime.shell as s; s._parser(); print(time.perf_counter() - t)"],
        check=True, capture_output=True, text=True,
    )
    print(f"import + parser construction in a fresh process: {float(cold.stdout) * 1000:.1f} ms")
    print(f"{'workload':<12}{'chars':>7}{'shell_atoms':>14}{'calls/s':>10}{'parse only':>13}{'ratio':>7}")
    for name, command in WORKLOADS.items():
        calls = 200 if len(command) < 500 else 20
        full = per_call(lambda c: shell_atoms(c, cwd="/work/project"), command, calls)
        parse = per_call(lambda c: parser.parse(c.encode()), command, calls)
        print(f"{name:<12}{len(command):>7}{full * 1e6:>11.1f} us{1 / full:>10,.0f}{parse * 1e6:>10.1f} us{full / parse:>7.1f}")


if __name__ == "__main__":
    main()
