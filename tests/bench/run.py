"""bgc's benchmarks, one entry point. Run on demand, never as timed tests:

    python3 -m venv /tmp/vplain && /tmp/vplain/bin/pip install '.[bench]'   # plain install, peers
    /tmp/vplain/bin/python tests/bench/run.py           # everything (minutes on 2 cores)
    /tmp/vplain/bin/python tests/bench/run.py --quick   # fewer rounds, shorter limits
    /tmp/vplain/bin/python tests/bench/run.py --only gate,startup
    /tmp/vplain/bin/python tests/bench/run.py --table docs/performance.md   # and write its table there

Sections (each prints its workload, then one table whose peer/yardstick column was measured in
the same run, the ratio, the bar and PASS/FAIL):

- ``gate``: workload W through a long-lived ``bgc.core.gate.Gate`` (in-process, warm) against one
  combined ``re``, pathspec and cedarpy; agreement with two glob references; a new gate's
  first 1,000 decisions (fresh process each round); peak RSS of ``bgc gate`` on 100,000 atoms.
- ``compile``: ``bgc compile`` in fresh processes — a broad order against a realistic 1,000-rule
  policy, 1,000 orders at N = 10 vs N = 1,000, a pathological policy under a time limit.
- ``startup``: cold ``bgc hook claude-code`` (the command ``bgc init`` writes, with the
  project's decision server running and without) against ``python -c pass``; ``bgc gate`` with
  no cache, ``bgc compile`` and ``bgc check`` against importing bgc's five dependencies; each
  command paired with its yardstick, round by round. Run it with a plain install's interpreter
  for a user's figures (docs/performance.md says why).
- ``adversarial``: nanoseconds per character for backtracking-hostile patterns, against
  fnmatch, a naive regex translation and pathspec (each in a killable subprocess).
- ``growth``: ``bgc check`` at 4,000 rules against itself at 1,000, and an order of 750 requests
  past its work budget against importing bgc's five dependencies (fresh processes, no cache).
- ``parser``: the policy front end (informational; tests/bench/bench_policy_parser.py).
- ``sandbox``: what ``bgc sandbox`` adds to starting ``true`` and ``python -c pass``, paired with
  the same commands unconfined (tests/bench/bench_sandbox.py).

Commands are timed in fresh processes (several rounds, commands alternating; median and min),
each round with a private ``BGC_CACHE_DIR``: empty (``""``, no cache) or a private copy of a
cache primed by an untimed command that is named in the table. A missing peer is reported as
skipped. Exit status 0, or with ``--strict`` 1 when a bar is missed. ``--table DOC`` writes the
summary table between the table markers of DOC (docs/performance.md's "Last run").
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))

import workloads  # noqa: E402
from bench_sandbox import section_sandbox  # noqa: E402
from common import (  # noqa: E402
    ANSWERED,
    FIVE,
    ROOT,
    Case,
    PrimedCache,
    Row,
    base_env,
    bgc_script,
    ms,
    peak_rss,
    print_table,
    race,
    rate,
    ratio,
    run_once,
    timing,
    verdict,
)

MIB = 1024 * 1024


class Context:
    """Shared state of one run: settings, the work directory, files made once."""

    def __init__(self, quick: bool, rounds: int | None, workdir: Path) -> None:
        self.quick = quick
        self.rounds = rounds or (5 if quick else 15)
        self.heavy_rounds = max(1, min(self.rounds, 2 if quick else 3))
        self.dir = workdir
        self.bgc = bgc_script()
        self.results: list[tuple[str, Row]] = []
        self._plans: dict[int, Path] = {}

    def file(self, name: str, text: str) -> Path:
        path = self.dir / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return path

    def compile_plan(self, order: Path, policy: Path, out: Path) -> float:
        run = run_once([self.bgc, "compile", str(order), "-p", str(policy), "--format", "json", "-o", str(out),
                        "--fail-on", "never"], base_env(), 1800)  # fmt: skip
        if run.code != 0:
            raise RuntimeError(f"compiling {order.name} against {policy.name}: exit {run.code}: {run.stderr}")
        return run.seconds or 0.0

    def w_plan(self, n: int) -> Path:
        """The plan of W(n)'s order (every project's tree and API) against W(n)'s policy."""
        if n not in self._plans:
            out = self.dir / f"w{n}-plan.json"
            self.compile_plan(self.file(f"w{n}-order.json", workloads.w_order(n)), self.w_policy(n), out)
            self._plans[n] = out
        return self._plans[n]

    def w_policy(self, n: int) -> Path:
        return self.file(f"w{n}.bgp", workloads.w_policy(n))

    def record(self, section: str, rows: list[Row]) -> None:
        self.results += [(section, row) for row in rows if row.result in ("PASS", "FAIL")]


def available(module: str | None) -> bool:
    return module is None or importlib.util.find_spec(module) is not None


# --- gate ---------------------------------------------------------------------------------------


def _gate_decider(plan: Path) -> Callable[[list[str]], list[bool]]:
    from bgc.core.gate import Gate
    from bgc.core.plan import plans_from_data

    gate = Gate(plans_from_data(json.loads(plan.read_text())))
    return lambda atoms: [gate.decide(atom).effect == "allow" for atom in atoms]


COLD_GATE = """
import json, sys, time
from bgc.core.plan import plans_from_data
from bgc.core.gate import Gate
plans = plans_from_data(json.loads(open(sys.argv[1]).read()))
atoms = open(sys.argv[2]).read().split("\\n")
t0 = time.perf_counter(); gate = Gate(plans); t1 = time.perf_counter()
for atom in atoms: gate.decide(atom)
t2 = time.perf_counter()
print(json.dumps({"build": t1 - t0, "decide": t2 - t1, "count": len(atoms)}))
"""


def section_gate(ctx: Context) -> list[Row]:
    from peers import PEERS, reference_bgc_glob, reference_translation

    from bgc.core.gate import WARM_AFTER

    sizes = (10, 100, 1000)
    count = 1000
    rounds = ctx.rounds
    warm_sets = -(-WARM_AFTER // count) + 1  # more than a gate decides before it builds its warm path
    print(f"Workload W: N rules in groups of four per project g (`allow fs:write:/p{{g}}/src/**`, `deny fs:write:/p{{g}}/src/secrets/**`, "
          f"`allow fs:read:/p{{g}}/**`, `allow net:connect:https://api{{g}}.example.com/*`), N = {', '.join(map(str, sizes))}. "
          f"The gate holds the plan of an order asking each project's `fs:write:/p{{g}}/**`, `fs:read:/p{{g}}/**` and "
          f"`net:connect:https://api{{g}}.example.com/**`; the peers hold the rules.")  # fmt: skip
    print(f"Requests: sets of {count:,} distinct concrete atoms (9 kinds, ~52% allowed, 10% outside every project); "
          f"untimed warm-up sets ({warm_sets:,}: a gate builds its warm path after {WARM_AFTER:,} decisions), then {rounds} rounds of fresh sets (no atom repeats), every N and peer in each round, in turn; rate = median over sets. "
          f"In-process, warm: one long-lived `Gate` / peer object per N.\n")  # fmt: skip
    rows: list[Row] = []
    agreement: dict[int, dict[str, str]] = {}
    rates: dict[int, dict[str, float]] = {}
    skipped = [name for name, (_, module) in PEERS.items() if not available(module)]
    deciders: dict[int, dict[str, Callable[[list[str]], list[bool]]]] = {}
    for n in sizes:
        rules = workloads.w_rules(n)
        deciders[n] = {"Gate": _gate_decider(ctx.w_plan(n))}
        for name, (build, module) in PEERS.items():
            if available(module):
                deciders[n][name] = build(rules)
        for seed in range(warm_sets):
            warm = workloads.w_requests(n, count, seed=100 - seed)
            for decide in deciders[n].values():
                decide(warm)
    # every size and every peer in the same rounds, so that a ratio never spans two stretches of the machine's load
    samples: dict[int, dict[str, list[float]]] = {n: {name: [] for name in deciders[n]} for n in sizes}
    first: dict[int, dict[str, list[bool]]] = {n: {} for n in sizes}
    for r in range(rounds):
        for n in sizes:
            atoms = workloads.w_requests(n, count, seed=101 + r)
            names = list(deciders[n])
            for name in names[r % len(names):] + names[: r % len(names)]:
                started = time.perf_counter()
                answers = deciders[n][name](atoms)
                samples[n][name].append(count / (time.perf_counter() - started))
                if r == 0:
                    first[n][name] = answers
    for n in sizes:
        rules = workloads.w_rules(n)
        atoms = workloads.w_requests(n, count, seed=101)
        reference = reference_bgc_glob(rules)(atoms)
        first[n]["translation (reference 2)"] = reference_translation(rules)(atoms)
        agreement[n] = {name: f"{sum(a == b for a, b in zip(answers, reference))}/{count}" for name, answers in first[n].items()}
        rates[n] = {name: statistics.median(values) for name, values in samples[n].items()}
        print(f"  N={n:,}: " + ", ".join(f"{name} {rate(value)}" for name, value in rates[n].items()), file=sys.stderr)

    for n in sizes:
        gate = rates[n]["Gate"]
        for name in PEERS:
            if name in skipped:
                module = PEERS[name][1]
                rows.append(Row(f"warm Gate vs {name}, N={n:,}", rate(gate), f"skipped (pip install {module})", "", "", "skipped"))
                continue
            peer = rates[n][name]
            target = n == 1000 and name == "one combined re"
            ok = gate / peer >= 1.2 if target else None
            rows.append(Row(f"warm Gate vs {name}, N={n:,} (atoms/s)", rate(gate), rate(peer), ratio(gate / peer),
                            "≥ 1.20×" if target else "", verdict(ok) if target else "info"))  # fmt: skip
    slow = rates[10]["Gate"] / rates[1000]["Gate"]
    rows.append(Row("warm Gate N=1,000 vs its own N=10 rate (slowdown)", rate(rates[1000]["Gate"]), rate(rates[10]["Gate"]),
                    ratio(slow), "≤ 1.50×", verdict(slow <= 1.5)))  # fmt: skip

    # a new gate in a fresh process: its first 1,000 decisions
    plan = ctx.w_plan(1000)
    atoms_file = ctx.file("w1000-set101.txt", "\n".join(workloads.w_requests(1000, count, seed=101)))
    builds, firsts = [], []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", COLD_GATE, str(plan), str(atoms_file)], env=base_env(), cwd=ROOT,
                             capture_output=True, text=True, check=True)  # fmt: skip
        data = json.loads(out.stdout)
        builds.append(data["build"])
        firsts.append(data["count"] / data["decide"])
    cold = statistics.median(firsts)
    warm_rate = rates[1000]["Gate"]
    rows.append(Row(f"new Gate's first 1,000 decisions, N=1,000 (fresh process ×{rounds}; vs warm)", rate(cold), rate(warm_rate),
                    ratio(cold / warm_rate), "≥ 0.50×", verdict(cold / warm_rate >= 0.5)))  # fmt: skip
    rows.append(Row("  building that Gate from the loaded plan (not in the rate above)", ms(statistics.median(builds))))

    # peak memory of the real process
    big = ctx.file("w1000-100k.txt", "\n".join(workloads.w_requests(1000, 100_000, seed=7)) + "\n")
    memory_rounds = ctx.heavy_rounds
    gate_runs, gate_peaks, five_peaks, pass_peaks = [], [], [], []
    for _ in range(memory_rounds):
        run, peak = peak_rss([ctx.bgc, "gate", str(plan)], base_env(), 600, stdin=str(big))
        if run.code not in ANSWERED:
            raise RuntimeError(f"bgc gate on 100,000 atoms exited {run.code}: {run.stderr}")
        gate_runs.append(run.seconds or 0.0)
        gate_peaks.append(peak)
        five_peaks.append(peak_rss([sys.executable, "-c", FIVE], base_env(), 60)[1])
        pass_peaks.append(peak_rss([sys.executable, "-c", "pass"], base_env(), 60)[1])
    rss, base, floor = max(gate_peaks) * 1024, max(five_peaks) * 1024, max(pass_peaks) * 1024
    rows.append(Row(f"`bgc gate PLAN` deciding 100,000 atoms (stdin), N=1,000 plan: peak RSS (max of {memory_rounds})",
                    f"{rss / MIB:.1f} MiB", f"{base / MIB:.1f} MiB (import five deps; `python -c pass` {floor / MIB:.1f} MiB)",
                    ratio(rss / base), "≤ 64 MiB", verdict(rss <= 64 * MIB)))  # fmt: skip
    wall = statistics.median(gate_runs)
    rows.append(Row("  that process's wall time (whole command, through the spawner)", ms(wall), "", "", "",
                    f"info: {100_000 / wall:,.0f} atoms/s"))  # fmt: skip
    print_table(rows)
    unknown = {n: _unknown_requests(ctx.w_plan(n)) for n in sizes}
    print("\nAgreement with reference 1 (bgc.core.patterns.glob, rule by rule, deny-overrides) on the first timed set. The gate holds "
          "the compiled plan, not the rules: a request whose compile hit its work bound is unknown, denied whole (never "
          "widened), and its allowed atoms count as disagreements here. Unknown requests in the plans: "
          + ", ".join(f"N={n:,}: {count}/{total}" for n, (count, total) in unknown.items()) + ".\n")  # fmt: skip
    names = list(agreement[sizes[0]])
    print("| N | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for n in sizes:
        print(f"| {n:,} | " + " | ".join(agreement[n].get(name, "skipped") for name in names) + " |")
    return rows


def _unknown_requests(plan: Path) -> tuple[int, int]:
    requests = json.loads(plan.read_text())["requests"]
    return sum(bool(request["unknown"]) for request in requests), len(requests)


# --- compile ------------------------------------------------------------------------------------


def section_compile(ctx: Context) -> list[Row]:
    rounds = ctx.heavy_rounds
    limit = 120.0 if ctx.quick else 300.0
    realistic = ctx.file("realistic.bgp", workloads.realistic_policy())
    broad = ctx.file("broad.json", workloads.broad_order())
    primer = ctx.file("primer.json", workloads.primer_order())
    print(f"Broad: order `fs:write:/**`, `fs:read:/**` against a realistic 1,000-rule policy ({len(workloads.FLOATING)} floating "
          f"denies `fs:*:/**/secrets/**`, `/**/*.key`…, 100 asks `fs:write:/p{{k}}/**/migrations/**`, 864 allows "
          f"`fs:write:/p{{g}}/src/**`, `fs:write:/p{{g}}/**/tests/**`, `fs:read:/p{{g}}/**`).")  # fmt: skip
    print("Scaling: 1,000 orders × 10 atoms over 250 projects of W, in one `bgc compile o/*.json -p wN.bgp`, N = 10 vs 1,000. "
          "Pathological: 300 allows `/**/a{i}/**` and 300 denies `/**/d{i}/**`, order `fs:write:/**`.")  # fmt: skip
    print(f"Fresh process per round ({rounds} rounds, alternating, limit {limit:.0f} s each; a command slower than "
          f"{limit / 2:.0f} s runs once); each round has a private copy "
          f"of a cache primed by compiling an unrelated order (`proc:exec:bench-primer`) against the same policy — "
          f"parser tables and the parsed policy, no answer of the timed order. \"answers kept\" rows are primed instead "
          f"by another order asking the same atoms (another intent: not the same output, the same algebra questions), "
          f"whose answers bgc keeps in the cache.\n")  # fmt: skip
    rows: list[Row] = []

    def compile_case(name: str, order_args: list[str], policy: Path, primed_by: Path = primer) -> Case:
        cache = PrimedCache(ctx.dir, name, [ctx.bgc, "compile", str(primed_by), "-p", str(policy), "--fail-on", "never"])
        argv = [ctx.bgc, "compile", *order_args, "-p", str(policy), "--format", "json", "-o", str(ctx.dir / f"{name}.out.json"),
                "--fail-on", "never"]  # fmt: skip
        # a command slower than half the limit runs once: far off its target, more rounds add little
        return Case(name, argv, setup=cache.fresh, ok=(0,), timeout=limit, budget=limit / 2)

    five = Case("import-five", [sys.executable, "-c", FIVE])
    broad_case = compile_case("broad", [str(broad)], realistic)
    race([broad_case, five], rounds)
    value = broad_case.median if broad_case.median is not None else broad_case.timeout
    r = value / five.median
    rows.append(Row("broad order vs realistic 1,000-rule policy", timing(broad_case), timing(five) + " (import five deps)",
                    ("> " if broad_case.stopped else "") + ratio(r, 1), "≤ 15×", verdict(not broad_case.stopped and r <= 15)))  # fmt: skip
    twin = ctx.file("broad-twin.json", workloads.order(["fs:write:/**", "fs:read:/**"], seed=7))
    kept_case = compile_case("broad-kept", [str(broad)], realistic, primed_by=twin)
    race([kept_case, broad_case], rounds)
    if kept_case.median and broad_case.median:
        rows.append(Row("  the same, answers kept by an earlier compile", timing(kept_case), timing(broad_case) + " (none kept)",
                        ratio(kept_case.median / broad_case.median)))  # fmt: skip

    orders = ctx.dir / "orders"
    if not orders.exists():
        orders.mkdir()
        for index, text in enumerate(workloads.w_orders(1000)):
            (orders / f"o{index:04d}.json").write_text(text)
    files = sorted(str(path) for path in orders.glob("*.json"))
    small = compile_case("orders-n10", files, ctx.w_policy(10))
    large = compile_case("orders-n1000", files, ctx.w_policy(1000))
    race([small, large], rounds)
    if small.median and large.median:
        r = large.median / small.median
        rows.append(Row("1,000 orders × 10 atoms, N=1,000 vs N=10", timing(large), timing(small) + " (N=10)", ratio(r),
                        "≤ 2.00×", verdict(r <= 2)))  # fmt: skip
        rows.append(Row("  per order at N=1,000 (whole command / 1,000)", ms(large.median / 1000)))
    else:
        rows.append(Row("1,000 orders × 10 atoms, N=1,000 vs N=10", timing(large), timing(small) + " (N=10)", "—", "≤ 2.00×",
                        "FAIL"))  # fmt: skip

    patho = ctx.file("pathological.bgp", workloads.pathological_policy())
    out = ctx.dir / "pathological.out.json"
    run = run_once([ctx.bgc, "compile", str(broad_order_write(ctx)), "-p", str(patho), "--format", "json", "-o", str(out),
                    "--fail-on", "never"], base_env(), 60.0)  # fmt: skip
    if run.seconds is None:
        how = "stopped at the 60 s limit"
    elif run.code == 0:
        unknown = any(request.get("unknown") for request in json.loads(out.read_text()).get("requests", []))
        how = "finished" + (", a work bound hit (verdict marked unknown)" if unknown else "")
    else:
        how = f"exit {run.code}: {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ''}"
    ok = run.seconds is not None and run.seconds <= 30 and run.code in (0, 2)
    rows.append(Row("pathological policy (no cache, one run)", ms(run.seconds, 60), how, "", "≤ 30 s, answered", verdict(ok)))
    twin = ctx.file("broad-write-twin.json", workloads.order(["fs:write:/**"], seed=7))
    kept = PrimedCache(ctx.dir, "pathological-kept", [ctx.bgc, "compile", str(twin), "-p", str(patho), "--fail-on", "never"])
    again = run_once([ctx.bgc, "compile", str(broad_order_write(ctx)), "-p", str(patho), "--format", "json", "-o", str(out),
                      "--fail-on", "never"], {**base_env(), **kept.fresh()}, 60.0)  # fmt: skip
    if run.seconds is not None and again.seconds is not None:
        rows.append(Row("  the same, answers kept by an earlier compile (one run)", ms(again.seconds, 60),
                        ms(run.seconds, 60) + " (none kept)", ratio(again.seconds / run.seconds)))  # fmt: skip
    print_table(rows)
    return rows


def broad_order_write(ctx: Context) -> Path:
    return ctx.file("broad-write.json", workloads.order(["fs:write:/**"]))


# --- startup ------------------------------------------------------------------------------------


def _hook_argv(project: Path) -> list[str]:
    """The PreToolUse command ``bgc init claude-code`` wrote into ``project``, as the argv the shell
    would run (``$CLAUDE_PROJECT_DIR`` expanded), so the bench times the hook a user's agent starts,
    whatever form ``bgc init`` gives it: its launcher's ``/bin/sh`` included, the agent's own shell
    left out (``python -c pass`` has none)."""
    settings = json.loads((project / ".claude/settings.local.json").read_text())
    command = next(hook["command"] for entry in settings["hooks"]["PreToolUse"] for hook in entry["hooks"])
    variables = {"CLAUDE_PROJECT_DIR": str(project)}
    return [re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), m.group(0)), word) for word in shlex.split(command)]


def section_startup(ctx: Context) -> list[Row]:
    rounds = ctx.rounds + (ctx.rounds + 1) % 2  # odd, for a clean median
    example_plan = ctx.dir / "example-plan.json"
    overreach = ROOT / "examples/orders/overreach.yaml"
    default = ROOT / "policies/default.bgp"
    if not example_plan.exists():
        ctx.compile_plan(overreach, default, example_plan)
    primer = ctx.file("primer.json", workloads.primer_order())
    project = ctx.dir / "hook-project"
    (project / "src").mkdir(parents=True, exist_ok=True)
    call = ctx.file("hook-call.json", json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": str(project),
                                                  "tool_input": {"file_path": f"{project}/src/app.py"}}))  # fmt: skip
    print("Cold whole-process commands, timed from spawn to exit, each in a fresh process. Each measured command runs in "
          f"pairs with its yardstick (`python -c pass`, or `python -c \"{FIVE}\"`: importing bgc's five dependencies), "
          f"the yardstick first in even rounds and second in odd ones, {rounds} rounds, the commands in a rotating order; "
          "times are medians (min), a ratio is the median of the rounds' ratios. "
          "`bgc hook claude-code` decides one Read (allowed) on the starter policy `bgc init claude-code` writes, run as the "
          "PreToolUse command that `bgc init` wrote (without the shell), its cache primed by that `bgc init`: with the "
          "project's decision server running (`bgc serve`, which `bgc init` starts at SessionStart; the bench checks that "
          "it answered every call), and without one (the hook decides in its own process, its fallback). "
          "`bgc gate` decides one atom against the plan of examples/orders/overreach.yaml with no cache "
          "(`BGC_CACHE_DIR=\"\"`); compile runs examples/orders/fix-bug.yaml against policies/default.bgp, its cache "
          "primed by the same compile once (what CI has from its second run on while the orders and the policy are "
          "unchanged: bgc keeps the output), and for an order the cache has not seen by an unrelated order against "
          "the same policy (parser tables, parsed policy); check's cache is primed by the same check once (what a "
          "pre-commit hook has from its second commit on). Each round gets a private copy of the primed cache.\n")  # fmt: skip
    compile_argv = [ctx.bgc, "compile", "examples/orders/fix-bug.yaml", "-p", "policies/default.bgp"]
    compile_cache = PrimedCache(ctx.dir, "startup-compile", compile_argv)
    unseen_cache = PrimedCache(ctx.dir, "startup-unseen", [ctx.bgc, "compile", str(primer), "-p", "policies/default.bgp"])
    check_cache = PrimedCache(ctx.dir, "startup-check", [ctx.bgc, "check", "policies/default.bgp"])
    hook_cache = PrimedCache(ctx.dir, "startup-hook", [ctx.bgc, "init", "claude-code", "--dir", str(project)])
    served_runtime, alone_runtime = ctx.dir / "run-served", ctx.dir / "run-alone"
    for directory in (served_runtime, alone_runtime):
        directory.mkdir(mode=0o700, exist_ok=True)
    hook_env = {"CLAUDE_PROJECT_DIR": str(project), "XDG_RUNTIME_DIR": str(alone_runtime)}  # no server there
    served_env = {**hook_env, "XDG_RUNTIME_DIR": str(served_runtime)}
    serve = [ctx.bgc, "serve", "--dir", str(project)]
    hook_argv = _hook_argv(project)
    print(f"The hook, as `bgc init claude-code` wrote it: `{shlex.join(hook_argv)}`\n")
    bare = Case("pass", [sys.executable, "-c", "pass"])
    five = Case("five", [sys.executable, "-c", FIVE])
    cases = {
        "pass": bare,
        "five": five,
        "hook-served": Case("hook-served", hook_argv, setup=lambda: {**hook_cache.fresh(), **served_env}, ok=(0,),
                            stdin=str(call), yardstick=bare),
        "hook": Case("hook", hook_argv, setup=lambda: {**hook_cache.fresh(), **hook_env}, ok=(0,), stdin=str(call),
                     yardstick=bare),
        "gate": Case("gate", [ctx.bgc, "gate", str(example_plan), "fs:write:/src/parse.py"], yardstick=five),
        "gate-w": Case("gate-w", [ctx.bgc, "gate", str(ctx.w_plan(1000)), "fs:write:/p7/src/a.py"], yardstick=five),
        "compile": Case("compile", compile_argv, setup=compile_cache.fresh, yardstick=five),
        "compile-unseen": Case("compile-unseen", compile_argv, setup=unseen_cache.fresh, yardstick=five),
        "compile-nocache": Case("compile-nocache", compile_argv, yardstick=five),
        "check": Case("check", [ctx.bgc, "check", "policies/default.bgp"], setup=check_cache.fresh, yardstick=five),
        "check-nocache": Case("check-nocache", [ctx.bgc, "check", "policies/default.bgp"], yardstick=five),
    }  # fmt: skip
    try:  # the server stops whatever happens once it is started
        subprocess.run([*serve, "--detach", "--quiet"], env={**base_env(), **hook_cache.fresh(), **served_env}, check=True,
                       capture_output=True)  # fmt: skip
        race(list(cases.values()), rounds)
        status = subprocess.run([*serve, "--status"], env={**base_env(), **served_env}, capture_output=True, text=True)
    finally:
        subprocess.run([*serve, "--stop", "--quiet"], env={**base_env(), **served_env}, capture_output=True)
    served = int(next(iter(re.findall(r"(\d+) requests served", status.stdout)), "0"))
    if served < len(cases["hook-served"].times):  # a call the server did not answer was decided by the hook alone
        raise RuntimeError(f"the decision server answered {served} of {len(cases['hook-served'].times)} hook calls: {status.stdout}{status.stderr}")

    def row(measure: str, name: str, bar: float | None = None) -> Row:
        case = cases[name]
        yardstick = "`python -c pass`" if case.yardstick is bare else "import five deps"
        value = case.ratio
        if bar is None:
            return Row(f"  {measure}", timing(case), f"({yardstick})", ratio(value))
        return Row(measure, timing(case), f"{timing(case.yardstick)} ({yardstick})", ratio(value), f"≤ {bar:.2f}×",
                   verdict(value is not None and value <= bar))  # fmt: skip

    rows = [
        row("`bgc hook claude-code` (a Read, starter policy), its decision server running", "hook-served", 1.3),
        row("the same, no decision server (the hook decides in its own process)", "hook"),
        row('`bgc gate PLAN ATOM` (example plan, `BGC_CACHE_DIR=""`: no cache)', "gate", 0.6),
        row(f"the same with the W N=1,000 plan ({ctx.w_plan(1000).stat().st_size // 1024:,} KiB)", "gate-w"),
        row("`bgc compile fix-bug.yaml -p default.bgp` (warm cache: compiled before)", "compile", 0.8),
        row("the same, an order the cache has not seen (parsed policy only)", "compile-unseen"),
        row('the same, `BGC_CACHE_DIR=""` (no cache)', "compile-nocache"),
        row("`bgc check policies/default.bgp` (warm cache)", "check", 0.5),
        row('the same, `BGC_CACHE_DIR=""` (no cache)', "check-nocache"),
    ]
    print_table(rows, "yardstick (same run)")
    return rows


# --- adversarial patterns -----------------------------------------------------------------------


def section_adversarial(ctx: Context) -> list[Row]:
    import bench_glob  # the cases and the killable competitors live there (bench_glob.py runs them alone too)

    from bgc.core.patterns import glob

    sizes = (1024, 4096, 16384) if ctx.quick else (1024, 4096, 16384, 65536)
    bench_glob.LIMIT_S = 3.0 if ctx.quick else 10.0
    names = ["naive regex", "fnmatch"] + (["pathspec"] if available("pathspec") else [])
    print(f"Near-miss texts of {', '.join(f'{n:,}' for n in sizes)} characters: `/**/a/**/b/**/c/**/d` against `/a/b/c` "
          f"repeated, `*a*a*a*a*a*b` against `aaa…`. bgc warm = median of 20 matches on a parsed pattern whose states "
          f"a first match built; cold = a new `glob.Pattern` per match (median of 5). Peers run in a subprocess "
          f"killed after {bench_glob.LIMIT_S:.0f} s (and not tried on longer texts after that); ratio = peer / bgc warm."
          + ("" if "pathspec" in names else " pathspec: skipped (pip install pathspec).") + "\n")  # fmt: skip
    rows: list[Row] = []
    summary: list[Row] = []  # one row a pattern, every length: what the run's summary shows
    for label, (pattern, make) in bench_glob.adversarial_cases().items():
        dead: set[str] = set()
        rates: list[float] = []
        for n in sizes:
            text = make(n)
            compiled = glob.Pattern(pattern)
            compiled.matches(text)
            warm = bench_glob._time(lambda: compiled.matches(text), 20)
            cold = bench_glob._time(lambda: glob.Pattern(pattern).matches(text), 5)
            cells = []
            for name in names:
                seconds = None if name in dead else bench_glob.competitor(name, pattern, text)
                if seconds is None:
                    dead.add(name)
                    cells.append(f"{name} > {bench_glob.LIMIT_S:.0f} s")
                else:
                    cells.append(f"{name} {seconds * 1e9 / n:,.0f} ns/char ({seconds / warm:,.1f}×)")
            per_char = warm * 1e9 / n
            rates.append(per_char)
            rows.append(Row(f"`{label}`, {n:,} chars: warm (cold {cold * 1e9 / n:,.0f}) ns/char", f"{per_char:,.0f}",
                            "; ".join(cells), "", "≤ 30 ns/char", verdict(per_char <= 30)))  # fmt: skip
        summary.append(Row(f"`{label}`, {sizes[0]:,} to {sizes[-1]:,} chars: warm ns/char",
                           "–".join(dict.fromkeys(f"{rate:,.0f}" for rate in (min(rates), max(rates)))), target="≤ 30 ns/char", result=verdict(max(rates) <= 30)))  # fmt: skip
    print_table(rows, "peers (same run): ns/char (peer / bgc warm)")
    return summary


# --- parser (informational) ---------------------------------------------------------------------


def section_growth(ctx: Context) -> list[Row]:
    rounds = ctx.heavy_rounds + (ctx.heavy_rounds + 1) % 2
    small, large = ctx.w_policy(1000), ctx.w_policy(4000)
    policy = ctx.file("realistic.bgp", workloads.realistic_policy())
    over = ctx.file("over-budget-750.json", workloads.over_budget_order(750))
    print("Work that grows with the policy and the order, whole commands in fresh processes with no cache "
          f"(`BGC_CACHE_DIR=\"\"`), paired round by round, {rounds} rounds. `bgc check` of W at N = 4,000 rules next "
          "to the same at N = 1,000 (its lints compare rules with rules: the ratio is how the check grows with the "
          "policy, 4 for linear growth). `bgc compile` of an order of 750 requests `fs:write:/**/*a?????????????????/**/xI` "
          "against the realistic 1,000-rule policy: the order's work budget is spent within the first request and "
          f"every request is answered unknown; next to `python -c \"{FIVE}\"`.\n")  # fmt: skip
    five = Case("five", [sys.executable, "-c", FIVE])
    check_small = Case("check-1000", [ctx.bgc, "check", str(small)], ok=(0, 1))
    cases = [
        five,
        check_small,
        Case("check-4000", [ctx.bgc, "check", str(large)], ok=(0, 1), yardstick=check_small, timeout=300, budget=900),
        Case("over-budget", [ctx.bgc, "compile", str(over), "-p", str(policy), "--format", "json", "-o",
                             str(ctx.dir / "over-budget-plan.json"), "--fail-on", "never"], yardstick=five, timeout=300,
             budget=900),
    ]  # fmt: skip
    race(cases, rounds)
    unknown, total = _unknown_requests(ctx.dir / "over-budget-plan.json")
    rows = [
        Row("`bgc check` of W, N = 4,000 rules, to the same at N = 1,000", timing(cases[2]), timing(check_small),
            ratio(cases[2].ratio), "≤ 5.00×", verdict(cases[2].ratio is not None and cases[2].ratio <= 5)),
        Row(f"`bgc compile` of 750 requests past the work budget ({unknown} of {total} unknown)", timing(cases[3]),
            f"{timing(five)} (import five deps)", ratio(cases[3].ratio), "≤ 10.00×",
            verdict(cases[3].ratio is not None and cases[3].ratio <= 10)),
    ]  # fmt: skip
    print_table(rows, "yardstick (same run)")
    return rows


def section_parser(ctx: Context) -> list[Row]:
    rounds = 5 if ctx.quick else 11
    print(f"tests/bench/bench_policy_parser.py --rounds {rounds} (in-process, informational; no target).\n")
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("bench_policy_parser.py")), "--rounds", str(rounds)],
                         env={**base_env(), "BGC_CACHE_DIR": str(ctx.dir / "parser-cache")}, cwd=ROOT,
                         capture_output=True, text=True, check=True)  # fmt: skip
    print(out.stdout.rstrip())
    return []


SECTIONS: dict[str, Callable[[Context], list[Row]]] = {
    "gate": section_gate,
    "compile": section_compile,
    "startup": section_startup,
    "adversarial": section_adversarial,
    "growth": section_growth,
    "parser": section_parser,
    "sandbox": section_sandbox,
}


TABLE_START = "<!-- the table below is written by `tests/bench/run.py --table`: do not edit it by hand -->"
TABLE_END = "<!-- end of the table -->"


def describe_machine() -> str:
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return (f"{datetime.datetime.now().isoformat(timespec='minutes')}, bgc {commit or '?'}, {describe_installation()}, "
            f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load_average()} (1/5/15 min)")  # fmt: skip


def describe_installation() -> str:
    """Which bgc the timed commands run: a plain install's start-up differs from an editable one's
    (whose ``python -c pass`` also imports its path finder)."""
    found = subprocess.run([sys.executable, "-c", "import bgc; print(bgc.__file__)"], capture_output=True, text=True, cwd="/")
    where = Path(found.stdout.strip()).resolve()
    return "editable install" if where.is_relative_to(ROOT) else "plain install"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def summary_table(results: list[tuple[str, Row]]) -> str:
    lines = ["| section | measure | bgc | ratio | bar | result |", "|---|---|---:|---:|---|---|"]
    lines += [f"| {section} | {row.measure.strip()} | {row.value} | {row.ratio} | {row.target} | {row.result} |" for section, row in results]
    return "\n".join(lines)


def write_table(doc: Path, text: str) -> None:
    """Put ``text`` between the table markers of ``doc``, replacing what was there."""
    before, start, rest = doc.read_text().partition(TABLE_START)
    _, end, after = rest.partition(TABLE_END)
    doc.write_text(f"{before}{start}\n{text}\n{end}{after}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and shorter limits, for iterating")
    parser.add_argument("--only", action="append", default=[], metavar="SECTION", help=f"one of {', '.join(SECTIONS)} (repeat or comma-separate)")
    parser.add_argument("--rounds", type=int, help="rounds per measurement (default 15, --quick 5)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (workloads, plans, caches)")
    parser.add_argument("--table", type=Path, metavar="DOC",
                        help="write the summary table, in Markdown, between the table markers of DOC (docs/performance.md)")  # fmt: skip
    args = parser.parse_args(argv)
    chosen = [name for item in args.only for name in item.split(",") if name] or list(SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    if args.table and not all(marker in args.table.read_text() for marker in (TABLE_START, TABLE_END)):
        parser.error(f"{args.table} has no table markers ({TABLE_START} … {TABLE_END})")
    command = "python tests/bench/run.py" + "".join(f" {word}" for word in (argv if argv is not None else sys.argv[1:]))
    started = time.perf_counter()
    load_before = load_average()
    print(f"# bgc benchmarks{' (--quick)' if args.quick else ''}\n")
    print(f"`{command}` — {describe_machine()}")
    with tempfile.TemporaryDirectory(prefix="bgc-bench-") as tmp:
        ctx = Context(args.quick, args.rounds, Path(tmp))
        for name in chosen:
            print(f"\n## {name}\n")
            sys.stdout.flush()
            try:
                ctx.record(name, SECTIONS[name](ctx))
            except Exception as error:  # noqa: BLE001 - a benchmark reports a broken section, it goes on
                print(f"section {name} failed: {type(error).__name__}: {error}")
                ctx.results.append((name, Row(f"section {name}", "error", result="FAIL")))
            sys.stdout.flush()
        if args.keep:
            kept = Path(tempfile.mkdtemp(prefix="bgc-bench-kept-"))
            subprocess.run(["cp", "-a", f"{tmp}/.", str(kept)], check=True)
            print(f"\n(work directory kept in {kept})")
    failed = [(section, row) for section, row in ctx.results if row.result == "FAIL"]
    verdicts = f"{len(ctx.results) - len(failed)} bars met, {len(failed)} missed"
    table = summary_table(ctx.results)
    print(f"\n## summary\n\n{verdicts} ({time.perf_counter() - started:,.0f} s; load average now {load_average()})\n")
    print(table)
    if args.table:
        write_table(args.table, f"`{command}` on a {describe_installation()} (Python {platform.python_version()}, "
                                f"{os.cpu_count()} CPUs), load average {load_before} at the start and {load_average()} "
                                f"at the end (1/5/15 min): {verdicts}.\n\n{table}")  # fmt: skip
        print(f"\n(the table is written into {args.table})")
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
