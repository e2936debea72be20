"""``bgc gate PLAN [ATOM...]``: decide concrete atoms against a plan, one line each."""

from __future__ import annotations

import os
from collections.abc import Sequence

from bgc.errors import ExitCode, UsageError


def run(
    plan: str,
    atoms: Sequence[str],
    *,
    root: str | None = None,
    output_format: str = "text",
    input_format: str | None = None,
    policy: str | None = None,
    expect_plan: Sequence[str] = (),
) -> ExitCode:
    """Read and pin the plan, then decide each atom (from ``atoms``, else stdin's lines).

    Nothing is decided when the plan, a pin or ``root`` is bad (exit 2); 0 when every atom was
    allowed, 1 otherwise.
    """
    from bgc.commands import io
    from bgc.documents import read_document
    from bgc.model import Digest, ModelError
    from bgc.plan import Gate, plans_from_data

    if root is not None and not os.path.isdir(root):
        raise UsageError(f"--root {root!r} is not a directory")
    if plan == "-" and not atoms:
        raise UsageError("the plan is read from stdin, so the atoms must be given as arguments")
    try:
        pinned = [Digest(text) for text in expect_plan]
    except ModelError as error:
        raise UsageError(f"--expect-plan: {error.message}") from None
    from_policy = Digest(io.load_policy(policy, None)[0].id()) if policy is not None else None
    document = read_document(plan, input_format)
    plans = document.build(lambda data: plans_from_data(data, expect_policy=from_policy, expect_plans=pinned))
    checker = Gate(plans, root)
    texts = list(atoms) if atoms else [line for line in io.stdin_lines() if line.strip()]
    if not texts:
        raise UsageError("no atoms to decide: give ATOM arguments or lines on stdin")
    if output_format == "json":
        import json

        def line(decision) -> str:  # type: ignore[no-untyped-def]
            return json.dumps(decision.to_data(), sort_keys=True)
    else:
        from bgc.render.gate import gate_line as line
    allowed = True
    for text in texts:
        decision = checker.decide(text)
        allowed &= decision.effect == "allow"
        io.write_line(line(decision))
    return ExitCode.OK if allowed else ExitCode.FINDINGS
