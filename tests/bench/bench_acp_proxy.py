"""What `bgc acp-proxy` adds to each message it relays (issue 30): run on demand, never as a test.

    python tests/bench/bench_acp_proxy.py [--rounds 2000]

Workload: tests/acp/echo_agent.py (a stand-in agent on raw lines that answers at once), driven on
raw lines by this script as the editor, directly and through ``bgc acp-proxy`` (recording every
decision in a SQLite ledger, its default, and with ``--store none``), **paired**: each round
times the same exchange once directly and once through each proxy, one after the other, so load
that comes and goes weighs on all alike; the medians of the per-round differences are reported.

- a prompt round trip relays four messages: the editor's ``session/prompt``, the agent's
  ``fs/read_text_file`` (decided by the policy, and recorded), the editor's answer, the agent's
  answer to the prompt;
- a ``session/set_mode`` round trip relays two, decided by nothing (recorded in the ledger, when there is one).

The target: at most 1 ms added per relayed message (median).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENT = str(ROOT / "tests" / "acp" / "echo_agent.py")
POLICY = 'allow fs:read:/src/**\ndeny fs:read:/src/secrets/** because "keys"\n'


class Editor:
    """An editor on raw lines, speaking to one agent command."""

    def __init__(self, command: list[str], env: dict[str, str], project: str) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.project = project
        self.next_id = 0
        self.ask("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}})
        self.ask("session/new", {"cwd": project, "mcpServers": []})

    def send(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict:
        assert self.process.stdout is not None
        return json.loads(self.process.stdout.readline())  # type: ignore[no-any-return]

    def ask(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("method") == "fs/read_text_file":  # serve the agent's read, then wait on
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"content": "x = 1\n"}})
                continue
            assert message.get("id") == self.next_id and "result" in message, message
            return message

    def prompt(self) -> float:
        started = time.perf_counter()
        self.ask("session/prompt", {"sessionId": "session-1", "prompt": [{"type": "text", "text": self.project}]})
        return time.perf_counter() - started

    def set_mode(self) -> float:
        started = time.perf_counter()
        self.ask("session/set_mode", {"sessionId": "session-1", "modeId": "default"})
        return time.perf_counter() - started

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        project = os.path.realpath(work)
        (Path(work) / "src").mkdir()
        (Path(work) / "src" / "a.py").write_text("x = 1\n")
        policy = Path(work) / "p.bgp"
        policy.write_text(POLICY)
        env = {**os.environ, "BGC_CACHE_DIR": str(Path(work) / "cache")}
        direct = [sys.executable, AGENT]
        proxy = [sys.executable, "-m", "bgc", "acp-proxy", "-p", str(policy)]
        editors = {
            "direct": Editor(direct, env, project),
            "bgc acp-proxy": Editor([*proxy, "--store", str(Path(work) / "kernel.db"), "--", *direct], env, project),
            "--store none": Editor([*proxy, "--store", "none", "--", *direct], env, project),
        }
        for editor in editors.values():  # warm: compiled policy, store, caches
            for _ in range(50):
                editor.prompt()
                editor.set_mode()
        prompts: dict[str, list[float]] = {name: [] for name in editors}
        modes: dict[str, list[float]] = {name: [] for name in editors}
        for _ in range(options.rounds):  # paired: every editor once per round, one after the other
            for name, editor in editors.items():
                prompts[name].append(editor.prompt())
                modes[name].append(editor.set_mode())
        for editor in editors.values():
            editor.close()
    print(f"workload: {options.rounds} paired rounds of a prompt (4 relayed messages, 1 decided) and a set_mode "
          f"(2 relayed, recorded only); load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'':16} {'prompt median':>14} {'p99':>10} {'set_mode median':>16}")
    for name in editors:
        print(f"{name:16} {statistics.median(prompts[name]) * 1e3:12.3f}ms {sorted(prompts[name])[int(len(prompts[name]) * 0.99)] * 1e3:8.3f}ms "
              f"{statistics.median(modes[name]) * 1e3:14.3f}ms")  # fmt: skip
    for name in ("bgc acp-proxy", "--store none"):
        per_prompt = statistics.median(p - d for p, d in zip(prompts[name], prompts["direct"])) * 1e3 / 4
        per_mode = statistics.median(p - d for p, d in zip(modes[name], modes["direct"])) * 1e3 / 2
        verdict = "PASS" if per_prompt <= 1 else "FAIL"
        print(f"{name}: added per relayed message (median of paired differences): {per_prompt:.3f} ms in a prompt "
              f"(target <= 1 ms: {verdict}), {per_mode:.3f} ms passing set_mode through")  # fmt: skip


if __name__ == "__main__":
    main()
