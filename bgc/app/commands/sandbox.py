"""``bgc sandbox [--plan PLAN | -p POLICY] [--root DIR] -- CMD ARGS…``: run a command confined to
what a plan grants (docs/sandbox.md).

The plan comes from ``--plan`` (compiled plans), else from the policy (``-p``, else the
configured one) compiled for the sandbox's own order: every ``fs``, ``host``, ``net`` and
``env`` value (:data:`SANDBOX_REQUESTS`). The mapping is built, proven never wider than the plan,
and only then is the command run; the exit code is the command's. A plan granting
``net:connect`` runs with the network proxy as its only way out, and each request the proxy
refuses is reported on stderr with its reason. Anything that keeps the sandbox from being exact
(a failed proof, a network grant where there is no network namespace, a machine with neither
bubblewrap nor Landlock) refuses with exit 2 and runs nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bgc.errors import UsageError
from bgc.text import escape_field

if TYPE_CHECKING:
    from bgc.runtime.sandbox.netproxy import ProxyDecision

SANDBOX_REQUESTS = ("env:read:**", "fs:read:**", "fs:write:**", "host:read:**", "host:write:**", "net:connect:**")
"""What the sandbox asks a policy for: every value of every resource a confinement can give."""
SANDBOX_INTENT = "bgc.sandbox"


def plans_for(plan: str | None, policy: str | None, mode: str | None) -> tuple[object, ...]:
    """The plans the sandbox enforces (see the module docstring); a bad policy or plan is a
    located error (exit 2)."""
    if plan is not None:
        if policy is not None:
            raise UsageError("give --plan or -p POLICY, not both")
        from bgc.core.plan import read_plans

        return read_plans(plan)
    from bgc.core import cache
    from bgc.core.plan import Plan

    # a policy named by -p (every command an agent's hook confines) is compiled once: its plan
    # comes from bgc's verified cache while every file the policy was read from is unchanged
    keyed = cache.compiled_key(policy, f"sandbox-plan\0{mode!r}") if policy is not None else None
    if keyed is not None:
        entry = cache.load_object("sandbox-plan", keyed[0])
        valid = isinstance(entry, tuple) and len(entry) == 3 and entry[0] == keyed[0] and isinstance(entry[2], Plan)
        if valid and cache.unchanged(policy, keyed[1], entry[1]):
            return (entry[2],)
    from bgc.app.commands import io
    from bgc.core.compiler import Compiler
    from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder

    loaded, mode = io.load_policy(policy, mode)
    order = WorkOrder(
        Intent(SANDBOX_INTENT, None), (), GrantSet.of(GrantAtom.parse(text) for text in SANDBOX_REQUESTS),
        ProposalOrigin("unknown", (), Digest.of(b"")),
    )  # fmt: skip
    compiled = Compiler(loaded).compile(order, mode)
    if keyed is not None:
        cache.store_object("sandbox-plan", keyed[0], (keyed[0], loaded.file_digests(), compiled))
    return (compiled,)


def run(
    command: Sequence[str], *, plan: str | None = None, policy: str | None = None, mode: str | None = None,
    root: str | None = None, explain: bool = False, timeout: float | None = None, max_output: int | None = None,
) -> int:  # fmt: skip
    """Map, prove, then run ``command`` confined (or, with ``explain``, print the mapping and run
    nothing); the command's exit code."""
    from bgc.runtime.sandbox import bwrap, mapping, prove

    if not command and not explain:
        raise UsageError("no command: give it after --, as in `bgc sandbox -- pytest -q`")
    project = os.path.realpath(root if root is not None else os.getcwd())
    if not os.path.isdir(project):
        raise UsageError(f"--root {root!r} is not a directory")
    plans = plans_for(plan, policy, mode)
    confinement, entries = mapping.build(plans, project, environ=os.environ, extra_read=mapping.interpreter_paths())  # type: ignore[arg-type]
    prove.prove(confinement, plans, entries)  # type: ignore[arg-type]
    if explain:
        from bgc.app.commands import io
        from bgc.app.render.sandbox import explain_text

        io.write_line(explain_text(confinement).rstrip("\n"))
        return 0
    layers = bwrap.available_layers()
    if layers.bwrap is None:
        print(f"bgc sandbox: confined by {layers.describe()}", file=sys.stderr)
        code = bwrap.run_alone(confinement, entries, command, timeout=timeout, max_output=max_output)
    else:
        with bwrap.network(confinement, plans, report_refusal) as proxy:  # type: ignore[arg-type]
            argv = bwrap.bwrap_argv(
                layers.bwrap, confinement, command, layers.landlock is not None, proxy.socket_path if proxy else None
            )
            prove.prove_network(argv, confinement, plans, proxy)  # type: ignore[arg-type]
            code = bwrap.supervise(argv, None, timeout, max_output)
    for path in mapping.sweep(confinement, plans, entries):  # type: ignore[arg-type]
        print(f"bgc sandbox: removed {escape_field(path)}: the command made it, and the plan refuses to write it",
              file=sys.stderr, flush=True)  # fmt: skip
        code = code or 1
    if code != 0:
        from bgc.app.render.sandbox import failure_note

        print(failure_note(confinement, code), file=sys.stderr, flush=True)
    return code


def report_refusal(decision: ProxyDecision) -> None:
    """A request the network proxy refused, on stderr with its reason and the atom decided (an
    allowed one is the command's own business)."""
    if decision.effect != "allow":
        atom = f" ({escape_field(decision.atom)})" if decision.atom is not None else ""
        print(
            f"bgc sandbox: network refused: {escape_field(decision.request)}{atom}: {escape_field(decision.reason)}",
            file=sys.stderr, flush=True,
        )  # fmt: skip
