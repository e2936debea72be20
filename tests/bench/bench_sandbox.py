"""The sandbox's start-up: what confining a command adds to starting it (``run.py --only sandbox``).

Each confined command is timed in fresh processes, paired round by round with the same command
unconfined (its own yardstick, so the rounds pair up); the added time is the median of the
rounds' differences. "Confinement" is bubblewrap with the Landlock launcher inside, as
``bgc sandbox`` runs it for a small project (the mapping built and proven once, outside the
timing); "whole command" adds bgc's own start-up, compiling the policy, mapping the project and
proving the mapping (informational).
"""

from __future__ import annotations

import shutil
import statistics
import sys

from common import Case, Row, ms, print_table, race, timing, verdict

POLICY = """\
deny fs:*:/**/.env, /**/*.pem because "secrets"
deny fs:*:/.git, /.git/** because "VCS internals"
allow fs:read:/**
allow fs:write:/src/**, /tests/**
"""
BAR = 0.050


def added(case: Case) -> float | None:
    yardstick = case.yardstick
    if case.stopped or yardstick is None or not case.times or len(case.times) != len(yardstick.times):
        return None
    return statistics.median(mine - theirs for mine, theirs in zip(case.times, yardstick.times))


def section_sandbox(ctx) -> list[Row]:  # type: ignore[no-untyped-def]
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed: skipped.\n")
        return [Row("confined start-up", "—", result="skipped")]
    import os

    from bgc.app.commands.sandbox import plans_for
    from bgc.runtime.sandbox import bwrap, mapping, prove

    project = ctx.dir / "sandbox-project"
    for directory in ("src", "tests", ".git"):
        (project / directory).mkdir(parents=True, exist_ok=True)
    (project / ".env").write_text("SECRET=1\n")
    (project / "src" / "app.py").write_text("x = 1\n")
    (project / "policy.bgp").write_text(POLICY)
    here = os.getcwd()
    os.chdir(project)
    try:
        plans = plans_for(None, "policy.bgp", None)
        confinement, entries = mapping.build(
            plans, str(project.resolve()), environ=dict(os.environ), extra_read=mapping.interpreter_paths()
        )  # type: ignore[arg-type]
        prove.prove(confinement, plans, entries)  # type: ignore[arg-type]
        layers = bwrap.available_layers()
    finally:
        os.chdir(here)

    def argv(command: list[str]) -> list[str]:
        return bwrap.bwrap_argv(layers.bwrap or "bwrap", confinement, command, layers.landlock is not None)

    rounds = ctx.rounds + (ctx.rounds + 1) % 2
    print(__doc__.split("\n\n", 1)[1].strip() + f"\n\nLayers: {layers.describe()}; {rounds} rounds.\n")
    true, python = ["true"], [sys.executable, "-c", "pass"]
    cases = {
        "true": Case("sandbox-true", argv(true), yardstick=Case("true", true)),
        "python": Case("sandbox-python", argv(python), yardstick=Case("python", python)),
        "whole": Case("bgc-sandbox-true", [ctx.bgc, "sandbox", "--root", str(project), "-p", str(project / "policy.bgp"), "--", "true"],
                      yardstick=Case("true-2", true)),
    }  # fmt: skip
    race(list(cases.values()), rounds)

    def row(measure: str, name: str, bar: float | None) -> Row:
        case = cases[name]
        extra = added(case)
        value = f"+{ms(extra)}" if extra is not None else "—"
        if bar is None:
            return Row(f"  {measure}", f"{timing(case)}", f"{timing(case.yardstick)}", value)  # type: ignore[arg-type]
        return Row(measure, timing(case), timing(case.yardstick), value, f"≤ +{bar * 1000:.0f} ms",  # type: ignore[arg-type]
                   verdict(extra is not None and extra <= bar))  # fmt: skip

    rows = [
        row("confined `true` (bubblewrap + Landlock launcher) vs `true`", "true", BAR),
        row("confined `python -c pass` vs `python -c pass`", "python", BAR),
        row("`bgc sandbox -p POLICY -- true` (compile, map, prove, confine) vs `true`", "whole", None),
    ]
    print_table(rows, "unconfined (same run)")
    return rows
