"""``bgc gate``'s text answer: one tab-separated line per decision, every field escaped
(:func:`bgc.render.fields.escape_field`), so a program can split it and no atom can forge a
field or a line."""

from __future__ import annotations

from bgc.plan import GateDecision, approvals_text
from bgc.render.fields import escape_field


def gate_line(decision: GateDecision) -> str:
    """The tab-separated line ``bgc gate`` prints for a decision, every field escaped."""
    atom = escape_field(decision.atom)
    if decision.effect == "allow":
        return f"allow\t{atom}"
    if decision.effect == "ask":
        return f"ask\t{atom}\t" + escape_field(approvals_text(decision.approvals))
    return f"deny\t{atom}\t{escape_field(decision.reason)}"
