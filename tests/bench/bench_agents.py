"""Benchmark: the agents' hooks and the on-disk decision of a search. Run on demand, not in the suite:

    python tests/bench/bench_agents.py

1. A whole ``bgc hook AGENT`` process (claude-code, gemini-cli, codex) deciding one file read, run
   as ``bgc init AGENT`` installs it (the policy compiled and cached by init, the default store),
   against a bare ``python -c pass``: fresh processes, interleaved, medians of the same run. The
   three adapters share one engine, so their ratios should be the same.
2. In-process ``decide_call`` of a search (Claude Code's ``Grep``) over a clean tree of N files,
   which the starter's floating secret denies make the hook decide file by file
   (bgc/runtime/trees.py), against a ``Read`` of one file: microseconds per call, for N = 100, 1,000 and
   10,000 (the bound).

The machine's load is printed with the results: on a shared machine compare the ratios, not
the absolute times.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 15
AGENTS = {
    "claude-code": (".claude/settings.local.json", "PreToolUse", "Read", {"file_path": "src/a.py"}),
    "gemini-cli": (".gemini/settings.json", "BeforeTool", "read_file", {"file_path": "src/a.py"}),
    "codex": (".codex/hooks.json", "PreToolUse", "mcp__filesystem__read_file", {"path": "src/a.py"}),
}


def _project(base: Path) -> Path:
    root = base / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    for agent in AGENTS:
        subprocess.run([sys.executable, "-m", "bgc", "init", agent], cwd=root, check=True, capture_output=True)
    return root


def _timed(command: list[str], data: bytes, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, input=data, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    return elapsed


def cold_hooks() -> list[tuple[str, float, float]]:
    with tempfile.TemporaryDirectory() as temp:
        root = _project(Path(temp))
        env = {**os.environ, "BGC_CACHE_DIR": str(Path(temp) / "cache"), "CLAUDE_PROJECT_DIR": str(root),
               "GEMINI_PROJECT_DIR": str(root)}  # fmt: skip
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        runs: dict[str, list[float]] = {name: [] for name in ("python -c pass", *AGENTS)}
        commands = {"python -c pass": ([sys.executable, "-c", "pass"], b"")}
        for agent, (settings, event, tool, tool_input) in AGENTS.items():
            command = json.loads((root / settings).read_text())["hooks"][event][0]["hooks"][0]["command"]
            command = command.replace("$GEMINI_PROJECT_DIR", str(root))
            data = {"session_id": "s", "cwd": str(root), "hook_event_name": event, "tool_name": tool, "tool_input": tool_input}
            commands[agent] = (["sh", "-c", command], json.dumps(data).encode())
        for name, (command, data) in commands.items():
            _timed(command, data, env, root)  # warm the cache and the page cache
        for _ in range(RUNS):
            for name, (command, data) in commands.items():
                runs[name].append(_timed(command, data, env, root))
        base = statistics.median(runs["python -c pass"])
        return [(name, statistics.median(times), statistics.median(times) / base) for name, times in runs.items()]


def searches() -> list[tuple[int, float, float]]:
    from bgc.runtime.calls import Workspace, policy_decider

    root_policy = Path(__file__).resolve().parents[2] / "policies" / "claude-code-starter.bgp"
    results = []
    for count in (100, 1_000, 10_000 - 200):
        with tempfile.TemporaryDirectory() as temp:
            root = Path(temp)
            for index in range(count):
                directory = root / "src" / f"d{index // 100}"
                directory.mkdir(parents=True, exist_ok=True)
                (directory / f"f{index}.py").write_text("")
            decider = policy_decider(str(root_policy), None, Workspace.at(str(root)))
            grep = {"path": str(root / "src"), "pattern": "x"}
            read = {"file_path": str(root / "src" / "d0" / "f0.py")}
            assert decider.decide_call("Grep", None, grep).effect == "allow"
            per_call = []
            for tool, params, repeat in (("Grep", grep, 5), ("Read", read, 2000)):
                start = time.perf_counter()
                for _ in range(repeat):
                    decider.decide_call(tool, None, params)
                per_call.append((time.perf_counter() - start) / repeat * 1e6)
            results.append((count, per_call[0], per_call[1]))
    return results


def main() -> None:
    print(f"load average: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")
    print("cold hook process (median of fresh processes), against python -c pass:")
    for name, seconds, ratio in cold_hooks():
        print(f"  {name:16} {seconds * 1000:7.1f} ms  {ratio:5.2f}x")
    print("search decided on the files below it (in-process), against a Read:")
    for count, grep, read in searches():
        print(f"  {count:6,} files  Grep {grep / 1000:8.2f} ms  Read {read:6.1f} us  ({grep / count:5.1f} us per file)")


if __name__ == "__main__":
    main()
