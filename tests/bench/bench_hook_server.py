"""Benchmark: a cold ``bgc hook claude-code`` process with and without the project's decision server.
Run on demand, not in the suite, with the interpreter of the installation to measure:

    python tests/bench/bench_hook_server.py            # e.g. the editable dev venv
    /tmp/v/bin/python tests/bench/bench_hook_server.py # a plain install: python -m venv /tmp/v && /tmp/v/bin/pip install .

The bar (docs/performance.md) is the served hook's: at most 1.3x a bare ``python -c pass``;
``tests/bench/run.py --only startup`` checks it, without the shell. Each case is a fresh process deciding one ``Read`` (allowed) as Claude Code runs the hook (the
command ``bgc init claude-code`` wrote, through ``sh -c``, JSON on stdin), interleaved with the
others, ``RUNS`` rounds; medians:

* ``python -c pass``: the interpreter alone;
* ``hook, server``: the project's ``bgc serve`` running (started as the SessionStart hook starts it);
* ``hook, no server``: the hook decides in its own process, recording in the SQLite store (the default);
* ``hook, no server, --store none``: the same without a store.

Only this interpreter's installation is used (its ``bgc`` script; the checkout is not imported),
so a non-editable install measures itself. The load average is printed: on a shared machine
compare ratios of the same run, not absolute times.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 21


def _timed(command: list[str], data: bytes, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, input=data, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0 and b'"allow"' in done.stdout or command[-1] == "pass", (done.stdout, done.stderr)
    return elapsed


def main() -> None:
    bgc = str(Path(sys.executable).with_name("bgc"))
    base = Path(tempfile.mkdtemp(prefix="bgc-bench-", dir="/tmp"))
    try:
        root = base / "project"
        (root / "src").mkdir(parents=True)
        (root / "src" / "a.py").write_text("a = 1\n")
        served_dir, empty_dir = base / "run-served", base / "run-empty"
        for directory in (served_dir, empty_dir):
            directory.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(BGC_CACHE_DIR=str(base / "cache"), CLAUDE_PROJECT_DIR=str(root))
        subprocess.run([bgc, "init", "claude-code"], cwd=root, env=env, check=True, capture_output=True)
        settings = json.loads((root / ".claude" / "settings.local.json").read_text())
        hook = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        start = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        stop = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
        served_env, alone_env = {**env, "XDG_RUNTIME_DIR": str(served_dir)}, {**env, "XDG_RUNTIME_DIR": str(empty_dir)}
        subprocess.run(["sh", "-c", start], cwd=root, env=served_env, check=True)
        call = json.dumps({"session_id": "s", "transcript_path": "/dev/null", "cwd": str(root), "permission_mode": "default",
                           "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": f"{root}/src/a.py"},
                           "tool_use_id": "toolu_1"}).encode()  # fmt: skip
        cases = {
            "python -c pass": ([sys.executable, "-c", "pass"], b"", env),
            "hook, server": (["sh", "-c", hook], call, served_env),
            "hook, no server": (["sh", "-c", hook], call, alone_env),
            "hook, no server, --store none": (["sh", "-c", hook + " --store none"], call, alone_env),
        }
        try:
            for command, data, case_env in cases.values():
                _timed(command, data, case_env, root)  # warm the page cache and bytecode
            times: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(RUNS):
                for name, (command, data, case_env) in cases.items():
                    times[name].append(_timed(command, data, case_env, root))
        finally:
            subprocess.run(["sh", "-c", stop], cwd=root, env=served_env)
        load = os.getloadavg()
        print(f"{sys.executable} ({'editable' if _editable() else 'installed'} bgc), load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        print(f"cold process, median (min) of {RUNS} interleaved rounds, against python -c pass:")
        bare = statistics.median(times["python -c pass"])
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:32} {median * 1000:7.1f} ms ({min(values) * 1000:6.1f})  {median / bare:5.2f}x")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _editable() -> bool:
    """Whether this interpreter's bgc is the checkout itself (an editable install)."""
    found = subprocess.run([sys.executable, "-c", "import bgc; print(bgc.__file__)"], capture_output=True, text=True, cwd="/")
    return Path(found.stdout.strip()).resolve().is_relative_to(Path(__file__).resolve().parents[2])


if __name__ == "__main__":
    main()
