"""Benchmark: run-time call decisions (issue 12's speed bars). Run on demand, not in the suite:

    python tests/bench/bench_calls.py

1. In-process ``CallDecider.decide_call`` on the bundled starter policy
   (policies/claude-code-starter.bgp, with base.bgp and the Claude Code mapping), warm: a mix of
   Claude Code tool calls (reads, writes, secrets, outside paths, the network, sub-agents, MCP),
   once as workspace paths and once as host paths placed in a workspace (what the hook does).
   The calls are as distinct as a session's are: each round names other files, URLs and
   directories (1,000 variants of each call, built before the clock starts), so nothing a
   decider remembers of one value answers the next; a Grep searches one of a few directories,
   as a session's do. The host paths exist in the project (its links are resolved by looking
   at them), except the files a Write creates. Target: at least 50,000 calls/s. For host paths
   it also prints the ``lstat`` calls a decision makes and their share of its time, measured
   the same minutes.
2. A whole ``bgc hook claude-code`` process deciding one Read with no decision server (the
   hook's fallback), the policy compiled and cached beforehand (``bgc init`` does that), against
   a bare ``python -c pass``, each in fresh processes, interleaved, medians of the same run.
   Informational: the hook's bar is the served hook's, in ``tests/bench/run.py --only startup``.

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

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "policies" / "claude-code-starter.bgp"
RUNS = 21

VARIANTS = 1000

CALLS = [
    ("Read", {"file_path": "{P}/src/pkg{i}/mod{i}.py"}),
    ("Read", {"file_path": "{P}/services/s{i}/.env"}),
    ("Read", {"file_path": "/etc/app{i}.conf"}),
    ("Write", {"file_path": "{P}/src/pkg{i}/new{i}.py", "content": "x"}),
    ("Edit", {"file_path": "{P}/.git/hooks/hook{i}", "old_string": "a", "new_string": "b"}),
    ("Write", {"file_path": "{P}/package.json", "content": "{i}"}),
    ("Grep", {"pattern": "x{i}", "path": "{P}/docs/d{j}"}),
    ("WebFetch", {"url": "https://example.com/a/{i}", "prompt": "p"}),
    ("Task", {"subagent_type": "general-purpose", "description": "d{i}", "prompt": "p"}),
    ("read_file@filesystem", {"path": "{P}/src/pkg{i}/mod{i}.py"}),
]
"""Ten Claude Code calls; ``{P}`` is the project (empty for workspace paths), ``{i}`` the round
(of VARIANTS), ``{j}`` one of GREP_DIRECTORIES."""

GREP_DIRECTORIES = 4


def _calls(project: str) -> list[tuple[str, str | None, dict[str, object]]]:
    out = []
    for i in range(VARIANTS):
        for name, params in CALLS:
            tool, _, server = name.partition("@")
            fill = {"P": project, "i": str(i), "j": str(i % GREP_DIRECTORIES)}
            out.append((tool, server or None, {k: v.format_map(fill) for k, v in params.items()}))
    return out


def _project(project: Path) -> None:
    """The files the host-path calls name, as a project holds them (a Write's new file aside)."""
    for i in range(VARIANTS):
        for file in (f"src/pkg{i}/mod{i}.py", f"services/s{i}/.env", f".git/hooks/hook{i}"):
            (project / file).parent.mkdir(parents=True, exist_ok=True)
            (project / file).write_text("x")
    for j in range(GREP_DIRECTORIES):
        for k in range(3):
            (project / f"docs/d{j}/page{k}.md").parent.mkdir(parents=True, exist_ok=True)
            (project / f"docs/d{j}/page{k}.md").write_text("x")
    (project / "package.json").write_text("{}")


def _rate(decider: object, calls: list[tuple[str, str | None, dict[str, object]]], seconds: float) -> tuple[float, float]:
    """Calls decided a second, of wall time and of this process's CPU time (which other
    processes on a loaded machine disturb far less)."""
    decide = decider.decide_call  # type: ignore[attr-defined]
    for tool, server, params in calls:  # warm: every tool compiled, the gate's caches as a session has them
        decide(tool, server, params)
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for tool, server, params in calls:
            decide(tool, server, params)
        done += len(calls)
    return done / (time.perf_counter() - start), done / (time.process_time() - cpu)


def in_process(seconds: float = 2.0) -> list[tuple[str, tuple[float, float]]]:
    from bgc.runtime.calls import CallDecider, Workspace, implicit_plan
    from bgc.core.policy.loader import load_policy

    plan = implicit_plan(load_policy(str(STARTER)), None)
    results = []
    with tempfile.TemporaryDirectory() as base:
        project = os.path.realpath(base)
        _project(Path(project))
        host = CallDecider([plan], workspace=Workspace.at(project))
        results.append(("workspace paths", _rate(CallDecider([plan]), _calls(""), seconds)))
        rates = _rate(host, _calls(project), seconds)
        results.append(("host paths placed in a workspace", rates))
        lstats, each = _syscalls(host, _calls(project))
    print(f"host paths: {lstats:.2f} lstat a call, {each * 1e6:.2f} µs each: {lstats * each * rates[0]:.0%} of a call's wall time")
    return results


def _syscalls(decider: object, calls: list[tuple[str, str | None, dict[str, object]]]) -> tuple[float, float]:
    """The ``lstat`` calls one decision makes (counted over the calls) and what one costs here
    now (the same paths, timed alone)."""
    made: list[str] = []
    real = os.lstat

    def counted(path: str) -> os.stat_result:
        made.append(path)
        return real(path)

    os.lstat = counted  # type: ignore[assignment]
    try:
        for tool, server, params in calls:
            decider.decide_call(tool, server, params)  # type: ignore[attr-defined]
    finally:
        os.lstat = real
    start = time.perf_counter()
    for path in made:
        try:
            real(path)
        except OSError:
            pass
    return len(made) / len(calls), (time.perf_counter() - start) / max(len(made), 1)


def whole_process() -> tuple[float, float, str]:
    with tempfile.TemporaryDirectory() as base:
        project = Path(base) / "project"
        project.mkdir()
        env = {**os.environ, "BGC_CACHE_DIR": str(Path(base) / "cache"), "CLAUDE_PROJECT_DIR": str(project)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        bgc = str(Path(sys.executable).parent / "bgc")
        subprocess.run([bgc, "init", "claude-code", "--dir", str(project)], env=env, check=True, capture_output=True)
        hook = [bgc, "hook", "claude-code", "-p", str(project / ".claude" / "bgc" / "policy.bgp")]
        call = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": str(project),
                           "tool_input": {"file_path": f"{project}/src/app.py"}}).encode()
        subprocess.run(hook, input=call, env=env, check=True, capture_output=True)  # byte-compile, warm the OS cache
        bare, hooked = [], []
        for _ in range(RUNS):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            bare.append(time.perf_counter() - start)
            start = time.perf_counter()
            done = subprocess.run(hook, input=call, env=env, capture_output=True)
            hooked.append(time.perf_counter() - start)
            assert done.returncode == 0 and b'"allow"' in done.stdout, done
        return statistics.median(bare), statistics.median(hooked), " ".join(hook)


def main() -> None:
    print(f"load average before: {os.getloadavg()}")
    for label, (wall, cpu) in in_process():
        print(f"decide_call, {label}: {wall:,.0f} calls/s, {cpu:,.0f} a CPU second (target >= 50,000)")
    bare, hooked, command = whole_process()
    print(f"python -c pass: median {bare * 1000:.1f} ms; `{command}`: median {hooked * 1000:.1f} ms; "
          f"ratio {hooked / bare:.2f}x (no server), {RUNS} runs each, interleaved")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
