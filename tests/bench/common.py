"""Helpers for the benchmark entry point: fresh-process timing, peak memory, tables."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIVE = "import typer, rich, lark, yaml, cbor2"
sys.path.insert(1, str(ROOT))
from bgc.errors import ExitCode  # noqa: E402

ANSWERED = tuple(int(code) for code in (ExitCode.OK, ExitCode.FINDINGS, ExitCode.ASK, ExitCode.DENIED))
"""Exit codes of a command that did its work (a deciding command refines findings into ask and deny)."""


def bgc_script() -> str:
    """The installed console script (what users and hooks run), next to this interpreter."""
    script = Path(sys.executable).with_name("bgc")
    if script.exists():
        return str(script)
    found = shutil.which("bgc")
    if found is None:
        sys.exit("bench: the `bgc` console script is not installed (pip install '.[bench]')")
    return found


def base_env() -> dict[str, str]:
    """The environment of every timed command: bytecode caching on, as in a normal install
    (some sandboxes set PYTHONDONTWRITEBYTECODE), and no inherited bgc cache."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "BGC_CACHE_DIR")}
    env["BGC_CACHE_DIR"] = ""
    return env


@dataclass
class Run:
    seconds: float | None  # None: stopped at the time limit
    code: int | None
    max_rss_kib: int
    stderr: str


def run_once(argv: Sequence[str], env: dict[str, str], timeout: float, stdin: str | None = None, cwd: Path = ROOT) -> Run:
    """Run a command in a fresh process: wall time, exit code and the child's own peak RSS."""
    with tempfile.TemporaryFile() as err, open(stdin or os.devnull, "rb") as inp:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=inp, stdout=subprocess.DEVNULL, stderr=err)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        killed = not timer.is_alive()
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")[-400:]
    return Run(None if killed else elapsed, None if killed else proc.returncode, usage.ru_maxrss, text)


_PEAK = """
import os, sys
out, argv = sys.argv[1], sys.argv[2:]
pid = os.posix_spawn(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


def peak_rss(argv: Sequence[str], env: dict[str, str], timeout: float, stdin: str | None = None) -> tuple[Run, int]:
    """``(run, peak RSS in KiB)`` of a command, through a small spawner.

    A child's ``ru_maxrss`` includes the memory of the process it was forked from until its
    exec (Linux keeps the high-water mark of the old address space), so a command spawned
    straight from this (large) process would report this process's size. The spawner is a bare
    ``python -c`` (about 10 MiB, the floor of what can be measured); the command's own peak is
    what it reports.
    """
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out:
        run = run_once([sys.executable, "-c", _PEAK, out.name, *argv], env, timeout, stdin)
        text = out.read().split()
    if not text:
        return run, 0
    run.code = int(text[1])
    return run, int(text[0])


@dataclass
class Case:
    """A command timed in fresh processes. ``setup`` runs before each round, untimed, and
    returns extra environment (e.g. a private copy of a primed cache). A case with a
    ``yardstick`` is timed in pairs: each round runs the yardstick right before or right after it
    (in turn), and its ratio is the median of the rounds' ratios, so a ratio never spans two
    stretches of the machine's load."""

    name: str
    argv: list[str]
    setup: Callable[[], dict[str, str]] = lambda: {}
    ok: tuple[int, ...] = ANSWERED
    timeout: float = 60.0
    budget: float = 120.0
    stdin: str | None = None
    yardstick: Case | None = None
    times: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    stopped: bool = False
    runs: list[Run] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return None if self.stopped or not self.times else statistics.median(self.times)

    @property
    def min(self) -> float | None:
        return None if self.stopped or not self.times else min(self.times)

    @property
    def ratio(self) -> float | None:
        """The median of the paired rounds' ratios to the yardstick."""
        return None if self.stopped or not self.ratios else statistics.median(self.ratios)


def race(cases: list[Case], rounds: int) -> list[Case]:
    """Each round runs every case once, in a rotating order, so a noisy neighbour slows all
    alike; a case with a yardstick runs next to a run of its yardstick (before it in even
    rounds, after it in odd ones). A case stopped at its time limit or over its budget is not
    run again."""
    env = base_env()
    for round_ in range(rounds):
        order = cases[round_ % len(cases):] + cases[: round_ % len(cases)]
        for case in order:
            if case.stopped or (case.times and sum(case.times) > case.budget):
                continue
            if case.yardstick is None:
                _time(case, env)
                continue
            first, second = (case.yardstick, case) if round_ % 2 == 0 else (case, case.yardstick)
            pair = [_time(first, env), _time(second, env)]
            mine, theirs = pair if first is case else pair[::-1]
            if mine is not None and theirs is not None:
                case.ratios.append(mine / theirs)
    return cases


def _time(case: Case, env: dict[str, str]) -> float | None:
    """One fresh-process run of a case: its seconds, or None when it was stopped at its limit."""
    run = run_once(case.argv, {**env, **case.setup()}, case.timeout, case.stdin)
    case.runs.append(run)
    if run.seconds is None:
        case.stopped = True
    elif run.code not in case.ok:
        raise RuntimeError(f"{' '.join(case.argv)} exited {run.code}: {run.stderr}")
    else:
        case.times.append(run.seconds)
    return run.seconds


class PrimedCache:
    """A bgc cache directory warmed once by a command; each round gets a private copy, so no
    round sees what an earlier timed round wrote."""

    def __init__(self, workdir: Path, name: str, argv: list[str]) -> None:
        self.template = workdir / f"cache-{name}"
        self.workdir = workdir
        self.count = 0
        self.template.mkdir(mode=0o700)
        run = run_once(argv, {**base_env(), "BGC_CACHE_DIR": str(self.template)}, 600)
        if run.code not in ANSWERED:
            raise RuntimeError(f"priming {name}: {' '.join(argv)} exited {run.code}: {run.stderr}")

    def fresh(self) -> dict[str, str]:
        self.count += 1
        target = self.workdir / f"{self.template.name}-{self.count}"
        shutil.copytree(self.template, target)
        return {"BGC_CACHE_DIR": str(target)}


# --- numbers and tables ------------------------------------------------------------------------


def ms(seconds: float | None, limit: float | None = None) -> str:
    if seconds is None:
        return f"> {limit:.0f} s (stopped)" if limit else "—"
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def timing(case: Case) -> str:
    """``median (min)`` of a case, or how it was stopped."""
    if case.stopped:
        return f"> {case.timeout:.0f} s (stopped)"
    return f"{ms(case.median)} (min {ms(case.min)}, n={len(case.times)})"


def rate(per_second: float) -> str:
    return f"{per_second:,.0f}/s"


def ratio(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}×"


@dataclass
class Row:
    measure: str
    value: str
    peer: str = ""
    ratio: str = ""
    target: str = ""
    result: str = "info"  # PASS, FAIL, info, skipped


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else "PASS" if ok else "FAIL"


def print_table(rows: list[Row], peer_header: str = "peer / baseline (same run)") -> None:
    print(f"| measure | bgc | {peer_header} | ratio | bar | result |")
    print("|---|---:|---:|---:|---|---|")
    for row in rows:
        print(f"| {row.measure} | {row.value} | {row.peer} | {row.ratio} | {row.target} | {row.result} |")
    sys.stdout.flush()
