"""Benchmark: run-time call decisions (issue 12's speed bars). Run on demand, not in the suite:

    python tests/bench/bench_calls.py

1. In-process ``CallDecider.decide_call`` on the bundled starter policy
   (policies/claude-code-starter.bgp, with base.bgp and the Claude Code mapping), warm: a mix of
   Claude Code tool calls (reads, writes, secrets, outside paths, the network, sub-agents, MCP),
   once as workspace paths and once as host paths placed in a workspace (what the hook does).
   Target: at least 50,000 calls/s.
2. A whole ``bgc hook claude-code`` process deciding one Read, the policy compiled and cached
   beforehand (``bgc init`` does that), against a bare ``python -c pass``, each in fresh
   processes, interleaved, medians of the same run. Target: at most 3x.

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

CALLS = [
    ("Read", {"file_path": "{P}/src/app.py"}),
    ("Read", {"file_path": "{P}/.env"}),
    ("Read", {"file_path": "/etc/passwd"}),
    ("Write", {"file_path": "{P}/src/new.py", "content": "x"}),
    ("Edit", {"file_path": "{P}/.git/config", "old_string": "a", "new_string": "b"}),
    ("Write", {"file_path": "{P}/package.json", "content": "{}"}),
    ("Grep", {"pattern": "x", "path": "{P}/src"}),
    ("WebFetch", {"url": "https://example.com/a", "prompt": "p"}),
    ("Task", {"subagent_type": "general-purpose", "description": "d", "prompt": "p"}),
    ("read_file@filesystem", {"path": "{P}/src/app.py"}),
]


def _calls(project: str) -> list[tuple[str, str | None, dict[str, object]]]:
    out = []
    for name, params in CALLS:
        tool, _, server = name.partition("@")
        out.append((tool, server or None, {k: v.replace("{P}", project) if isinstance(v, str) else v for k, v in params.items()}))
    return out


def in_process(seconds: float = 2.0) -> list[tuple[str, float]]:
    from bgc.calls import CallDecider, Workspace, implicit_plan
    from bgc.policy.loader import load_policy

    plan = implicit_plan(load_policy(str(STARTER)), None)
    results = []
    with tempfile.TemporaryDirectory() as project:
        for label, decider, calls in (
            ("workspace paths", CallDecider([plan]), _calls("")),
            ("host paths placed in a workspace", CallDecider([plan], workspace=Workspace.at(project)), _calls(project)),
        ):
            done, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                for tool, server, params in calls:
                    decider.decide_call(tool, server, params)
                done += len(calls)
            results.append((label, done / (time.perf_counter() - start)))
    return results


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
    for label, rate in in_process():
        print(f"decide_call, {label}: {rate:,.0f} calls/s (target >= 50,000)")
    bare, hooked, command = whole_process()
    print(f"python -c pass: median {bare * 1000:.1f} ms; `{command}`: median {hooked * 1000:.1f} ms; "
          f"ratio {hooked / bare:.2f}x (target <= 3x), {RUNS} runs each, interleaved")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
