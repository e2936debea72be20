"""``bgc gate``'s text answer: one tab-separated line per decision, every field escaped
(:func:`bgc.text.escape_field`), so a program can split it and no atom can forge a
field or a line."""

from __future__ import annotations

from bgc.core.gate import GateDecision
from bgc.core.plan import approvals_text
from bgc.text import escape_field

GATE_STYLES = {"allow": "green", "ask": "cyan", "deny": "red"}
"""The colour of each answer's first field when ``bgc gate`` writes to a terminal."""


def gate_line(atom: str, decision: GateDecision, color: bool = False) -> str:
    """The tab-separated line ``bgc gate`` prints for ``atom``'s decision, every field escaped;
    with ``color``, the answer (the first field) painted (:func:`bgc.app.render.color.paint`)."""
    from bgc.app.render.color import paint

    atom = escape_field(atom)
    effect = paint(decision.effect, GATE_STYLES.get(decision.effect, "red")) if color else decision.effect
    if decision.effect == "allow":
        return f"{effect}\t{atom}"
    if decision.effect == "ask":
        return f"{effect}\t{atom}\t" + escape_field(approvals_text(decision.approvals))
    return f"{effect}\t{atom}\t{escape_field(decision.reason)}"
