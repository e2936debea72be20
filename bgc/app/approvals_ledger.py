"""The approvals page's other views: the ledger (filtered, each entry's place in the chain and
whether the chain holds there, counts per rule as a chart), and "make this a rule" (the
narrowest rule that would have allowed a call, with the ``bgc diff`` of adding it).

Both only read: the ledger is verified as ``bgc log verify`` verifies it, and a proposed rule is
text for a person to review and put in the policy themselves; bgc never edits the policy from a
page, so there is no one-click "always".
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from typing import Any

SHOWN_ENTRIES = 200
"""The newest matching entries listed (the counts and the chart cover every match)."""
CHART_RULES = 12
"""Rules drawn in the chart, the busiest first."""
CHART_BUCKETS = 24
"""Time slices of each rule's line over the filtered span."""
DECISION_COLOURS = (("allow", "#0b6b2e"), ("ask", "#8a5a00"), ("deny", "#a4001d"))
OTHER_COLOUR = "#4a4a4a"
FILTERS = ("session", "rule", "decision", "kind", "since", "until")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _when(epoch: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch))


def ledger_view(rows: Sequence[tuple[int, str, bytes]], filters: Mapping[str, str]) -> str:
    """The ledger section: the filter form, the chain's state, the chart and the entries."""
    from bgc.app.commands.log import _seconds
    from bgc.runtime import ledger

    verification = ledger.verify(rows)
    broken = verification.problem.seq if verification.problem else None
    entries = [entry for entry in (ledger.decode_entry(*row) for row in rows) if isinstance(entry, ledger.Entry)]
    given = {name: filters.get(name, "").strip() for name in FILTERS}
    try:
        chosen = list(ledger.matching(
            entries, session=given["session"] or None, rule=given["rule"] or None,
            decision=given["decision"] or None, kind=given["kind"] or None,
            since=_seconds(given["since"] or None, "since"), until=_seconds(given["until"] or None, "until"),
        ))  # fmt: skip
        refused = None
    except Exception as error:  # noqa: BLE001 - a filter that is not a time: said, nothing listed
        chosen, refused = [], getattr(error, "message", str(error))
    parts = [_filter_form(given), _chain_state(verification)]
    if refused:
        parts.append(f'<p class="notice" role="alert">{_e(refused)}</p>')
    parts.append(f"<p>{len(chosen):,} matching entries" + (f"; the newest {SHOWN_ENTRIES} listed" if len(chosen) > SHOWN_ENTRIES else "") + ".</p>")  # fmt: skip
    parts.append(rule_chart(chosen))
    parts.append(_entries_table(chosen[-SHOWN_ENTRIES:][::-1], broken))
    return "".join(parts)


def _filter_form(given: Mapping[str, str]) -> str:
    hints = {"session": "a session id", "rule": "file:line", "decision": "allow, ask, deny, …",
             "kind": "hook, proxy, approve, …", "since": "2026-11-30 or …T12:00:00Z", "until": "inclusive"}  # fmt: skip
    fields = "".join(
        f'<label>{name.capitalize()} <input type="text" name="{name}" value="{_e(given[name])}" '
        f'placeholder="{_e(hints[name])}"></label>'
        for name in FILTERS
    )
    return (f'<form method="get" action="/ledger" class="filters" aria-label="Filter the ledger">{fields}'
            '<button type="submit" class="plain">Filter</button></form>')  # fmt: skip


def _chain_state(verification: Any) -> str:
    if verification.ok:
        return (f'<p class="chain ok">The chain verifies: {verification.entries:,} entries, head '
                f"<code>{_e(verification.head)}</code>.</p>")  # fmt: skip
    return (f'<p class="chain broken" role="alert">The chain does not verify at entry {verification.problem.seq}: '
            f"{_e(verification.problem.message)}. Entries from there on are not vouched for.</p>")  # fmt: skip


def _entries_table(entries: Sequence[Any], broken: int | None) -> str:
    rows = []
    for entry in entries:
        body = entry.body
        subject = body.get("atom") or (f"{body['tool']} on {body.get('server', '')}" if "tool" in body
                                       else body.get("request", "—"))  # fmt: skip
        rules = ", ".join(body["rules"]) if body.get("rules") else body.get("rule", "—")
        state = ("verified" if broken is None or entry.seq < broken
                 else "breaks the chain" if entry.seq == broken else "after the break")  # fmt: skip
        signed = f", signed by {body['signer']}" if body.get("signer") else ""
        people = ", ".join(body.get("approvers") or ()) or "—"
        rows.append(
            f"<tr><td>{entry.seq}</td><td>{_e(_when(body['time']))}</td><td>{_e(body['kind'])}</td>"
            f"<td>{_e(body['decision'])}</td><td><code>{_e(subject)}</code></td><td><code>{_e(rules)}</code></td>"
            f"<td>{_e(people)}</td><td>{_e(state + signed)}</td></tr>"
        )
    head = "".join(f'<th scope="col">{name}</th>' for name in
                   ("#", "Time (UTC)", "Kind", "Decision", "Subject", "Rule", "People", "Chain"))  # fmt: skip
    return (f'<div class="scroll" tabindex="0" role="region" aria-label="Ledger entries"><table>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")  # fmt: skip


def rule_chart(entries: Sequence[Any]) -> str:
    """Each rule's decisions as a stacked bar (allow, ask, deny, other) and a line of its count
    over the span of ``entries``: inline SVG, drawn here, with a text equivalent for readers."""
    from bgc.runtime import ledger

    counts = ledger.per_rule(entries)
    if not counts:
        return ""
    busiest = sorted(counts, key=lambda rule: (-sum(counts[rule].values()), rule))[:CHART_RULES]
    times = [entry.body["time"] for entry in entries]
    start, span = min(times), max(1, max(times) - min(times))
    lines: dict[str, list[int]] = {rule: [0] * CHART_BUCKETS for rule in busiest}
    for entry in entries:
        slot = min(CHART_BUCKETS - 1, (entry.body["time"] - start) * CHART_BUCKETS // span)
        for rule in entry.body.get("rules") or [entry.body.get("rule") or "(no rule)"]:
            if rule in lines:
                lines[rule][slot] += 1
    most = max(sum(counts[rule].values()) for rule in busiest)
    label_w, bar_w, gap, line_w, row_h = 190, 300, 60, 200, 30
    width, height = label_w + bar_w + gap + line_w + 10, row_h * len(busiest) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
             f'aria-labelledby="chart-title" class="chart"><title id="chart-title">Decisions per rule, and over time '
             f"from {_e(_when(start))} to {_e(_when(start + span))} UTC</title>"]  # fmt: skip
    text = []
    for index, rule in enumerate(busiest):
        y = 10 + index * row_h
        total = sum(counts[rule].values())
        parts.append(f'<text x="0" y="{y + 17}" font-size="13" fill="#1a1a1a">{_e(rule[-28:])}</text>')
        x = float(label_w)
        known = [name for name, _ in DECISION_COLOURS]
        pieces = [(name, counts[rule].get(name, 0), colour) for name, colour in DECISION_COLOURS]
        pieces.append(("other", sum(n for d, n in counts[rule].items() if d not in known), OTHER_COLOUR))
        for name, number, colour in pieces:
            if number:
                w = bar_w * number / most
                parts.append(f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="18" fill="{colour}">'
                             f"<title>{_e(rule)}: {number} {name}</title></rect>")  # fmt: skip
                x += w
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 17}" font-size="12" fill="#1a1a1a">{total}</text>')
        peak = max(lines[rule]) or 1
        left = label_w + bar_w + gap
        points = " ".join(f"{left + line_w * i / (CHART_BUCKETS - 1):.1f},{y + 22 - 18 * n / peak:.1f}"
                          for i, n in enumerate(lines[rule]))  # fmt: skip
        parts.append(f'<polyline points="{points}" fill="none" stroke="#1a4fd6" stroke-width="1.5"/>')
        text.append(f"<li>{_e(rule)}: " + ", ".join(f"{n} {d}" for d, n in sorted(counts[rule].items())) + "</li>")
    legend_y = height - 12
    x = 0
    for name, colour in (*DECISION_COLOURS, ("other", OTHER_COLOUR)):
        parts.append(f'<rect x="{x}" y="{legend_y - 10}" width="12" height="12" fill="{colour}"/>'
                     f'<text x="{x + 16}" y="{legend_y}" font-size="12" fill="#1a1a1a">{name}</text>')  # fmt: skip
        x += 70
    parts.append(f'<text x="{label_w + bar_w + gap}" y="{legend_y}" font-size="12" fill="#1a1a1a">over time</text>')
    parts.append("</svg>")
    return (f'<figure class="chart-box"><div class="scroll" tabindex="0" role="region" aria-label="Chart">'
            f'{"".join(parts)}</div><figcaption><details><summary>The counts as text'
            f"</summary><ul>{''.join(text)}</ul></details></figcaption></figure>")  # fmt: skip


# ---- make this a rule --------------------------------------------------------------------------------------


def proposed_rule(request: Any, me: str, policy_path: str) -> str:
    """The narrowest rule for ``request``'s call, and what adding it to the policy would allow
    that the policy does not (``bgc diff``: new access, with counterexamples)."""
    from bgc.analysis.diff import diff_policies
    from bgc.app.commands.diff import Comparison, render_text
    from bgc.core.policy.loader import load_policy, parse_policy
    from bgc.errors import BgcError
    from bgc.runtime.approvals import suggest_rule

    line = suggest_rule(request, me)
    try:
        with open(policy_path, encoding="utf-8") as handle:
            text = handle.read()
        before = load_policy(policy_path)
        after = parse_policy(text.rstrip("\n") + "\n" + line + "\n", policy_path)
        report = render_text([Comparison(policy_path, f"{policy_path} with the proposed rule",
                                         diff_policies(before, after))])  # fmt: skip
    except (BgcError, OSError) as error:
        report = f"bgc diff could not compare: {getattr(error, 'message', None) or error}"
    return (f"<h2>Make this a rule</h2><p>The narrowest rule that would have allowed "
            f"<code>{_e(request.tool)}</code> on <code>{_e(request.server)}</code>, for you to review. bgc does not "
            f"change the policy: add the line to <code>{_e(policy_path)}</code> yourself, where it belongs, "
            "and commit it as any policy change.</p>"
            f'<pre class="rule">{_e(line)}</pre><h3>What it would allow that the policy does not '
            f"(<code>bgc diff</code>)</h3><pre>{_e(report)}</pre>"
            '<p><a href="/">Back to what waits</a></p>')  # fmt: skip
