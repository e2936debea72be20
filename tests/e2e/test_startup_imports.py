"""What a cold process of a per-call command imports: the part of its start-up cost that a test
can pin without a clock (the times themselves are measured by tests/bench/run.py --only startup).

A hook runs before every tool call an agent makes, and ``bgc gate`` in every enforcer's loop:
each module here that they do not need is a dependency loaded that every call would pay for. Each case runs the real command in a fresh process and
lists the modules it must not have loaded; a first, cold-cache run shows that the probe spells
right the names it must not see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HEAVY = (
    "typer", "click", "rich", "pydantic", "lark", "yaml", "cbor2", "importlib.resources",
    "bgc.core.policy.ast", "bgc.core.policy.parser", "bgc.core.policy.loader", "bgc.core.compiler",
    "bgc.core.values.model", "bgc.analysis.config",
)  # fmt: skip
"""Never needed to decide one call from a cached policy: the command line (typer and what it
brings), parsing (lark, the grammar's resources), YAML and CBOR, the policy AST, the compiler, the
order model and the configuration. The standard library is not listed: bgc uses it plainly
(DESIGN §5), and the decision server, not a trimmed import list, makes the per-call path fast."""

PROBE = (
    "import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', *sys.argv[1:]]\n"
    "try:\n    main()\nfinally:\n"
    f"    print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
)


def _loaded(
    args: list[str], env: dict[str, str], stdin: str = ""
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``bgc ARGS`` in a fresh process: what it did, and which of :data:`HEAVY` it loaded."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], input=stdin, env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    line = next(line for line in done.stderr.splitlines() if line.startswith("LOADED "))
    return done, json.loads(line.removeprefix("LOADED ").replace("'", '"'))


def test_a_cold_hook_on_a_cached_policy_loads_no_parser_compiler_or_ast(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    env = {**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache"), "CLAUDE_PROJECT_DIR": str(project)}
    policy = project / ".claude" / "bgc" / "policy.bgp"
    subprocess.run([sys.executable, "-m", "bgc", "init", "claude-code", "--dir", str(project)], env=env,
                   capture_output=True, check=True, timeout=120)  # fmt: skip
    call = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": str(project),
                       "tool_input": {"file_path": f"{project}/src/app.py"}})  # fmt: skip
    hook = ["hook", "claude-code", "-p", str(policy)]
    cold, cold_loaded = _loaded(hook, {**env, "BGC_CACHE_DIR": ""}, call)
    warm, warm_loaded = _loaded(hook, env, call)
    unrecorded, unrecorded_loaded = _loaded([*hook, "--store", "none"], env, call)
    for done in (cold, warm, unrecorded):
        assert done.returncode == 0 and '"permissionDecision": "allow"' in done.stdout, done
    assert {"lark", "bgc.core.compiler", "bgc.core.policy.ast", "bgc.core.policy.parser"} <= set(cold_loaded), cold_loaded
    # the ledger's entry and the call's digest are canonical CBOR, written without cbor2
    assert warm_loaded == [], warm_loaded
    assert unrecorded_loaded == [], unrecorded_loaded


def test_a_cold_gate_loads_no_parser_compiler_or_ast(tmp_path: Path) -> None:
    env = {**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache")}
    plan = tmp_path / "plan.json"
    subprocess.run([sys.executable, "-m", "bgc", "compile", "examples/orders/overreach.yaml", "-p", "policies/default.bgp",
                    "--format", "json", "-o", str(plan), "--fail-on", "never"], env=env, cwd=ROOT, check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    done, loaded = _loaded(["gate", str(plan), "fs:write:/src/parse.py"], env)
    assert done.returncode == 0 and done.stdout.startswith("allow"), done
    assert loaded == [], loaded  # a plan's id is canonical CBOR, written by bgc.core.values.canonical without cbor2 (or typing)


def test_a_cold_compile_of_an_order_the_cache_has_not_seen_imports_no_parser_or_command_line(tmp_path: Path) -> None:
    """The policy parsed by another order's compile comes from the cache (no lark), and the plan
    is rendered as text without the command line's libraries."""
    env = {**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-m", "bgc", "compile", "examples/orders/overreach.yaml", "-p", "policies/default.bgp",
                    "--fail-on", "never"], env=env, cwd=ROOT, check=True, capture_output=True, timeout=120)  # fmt: skip
    done, loaded = _loaded(["compile", "examples/orders/fix-bug.yaml", "-p", "policies/default.bgp"], env)
    assert done.returncode == 1, done  # the order asks
    assert done.stdout.startswith("examples/orders/fix-bug.yaml\n  plan sha256:"), done
    assert not {"typer", "click", "rich", "lark"} & set(loaded), loaded


def test_a_warm_check_loads_no_policy_ast_parser_or_command_line(tmp_path: Path) -> None:
    """A check of unchanged files is read back from the cache: its result holds counts and file
    digests, never the policy, so no AST class is made and nothing is parsed."""
    env = {**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache")}
    cold, cold_loaded = _loaded(["check", "policies/default.bgp"], env)
    warm, warm_loaded = _loaded(["check", "policies/default.bgp"], env)
    for done in (cold, warm):
        assert done.returncode == 0 and "22/22 expects hold" in done.stdout, done
    assert {"lark", "bgc.core.policy.ast", "bgc.core.policy.parser"} <= set(cold_loaded), cold_loaded
    assert warm_loaded == ["bgc.analysis.config"], warm_loaded  # check reads [tool.bgc]; a hook or gate does not
