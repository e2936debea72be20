"""Rendering plans: the asked-vs-granted text people read, and the data formats machines read.

The text form is built as lines of (text, style) segments, so the same content prints plain
(pipes, files, ``NO_COLOR``, golden tests) or coloured with plain ANSI styles on a terminal
(:mod:`bgc.app.render.color`); every segment is escaped on the way out. Data
formats (json, yaml, cbor) are deterministic: sorted keys, fixed layout, canonical CBOR, so
equal plans give equal bytes, and they carry values raw (their encoders escape).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bgc.core.values import canonical
from dataclasses import replace
from bgc.core.plan import Approvals, CallResult, Part, Plan, RequestResult, approvals_text
from bgc.text import escape_field

if TYPE_CHECKING:
    from bgc.core.compiler import Explanation

Segment = tuple[str, str]
Line = list[Segment]

MARKS = {"granted": ("✓", "green"), "narrowed": ("~", "yellow"), "ask": ("?", "cyan"), "denied": ("✗", "red")}
CALL_MARKS = {"covered": ("✓", "green"), "pending": ("?", "cyan"), "uncovered": ("✗", "red")}


def _rules(part: Part) -> Line:
    if not part.rules:
        return [("  no rule allows it (default deny)", "dim")]
    out: Line = []
    for rule in part.rules:
        out.append((f"  {rule.keyword} {rule}{rule.clause}", "dim"))
        if rule.reason:
            out.append((f" “{rule.reason}”", "italic"))
    return out


HEADER_EXCEPTS = 3
"""How many excepts the one-line ``asked → granted`` header shows before it abbreviates."""


def _short(part: Part) -> str:
    """A part for the header line: long except lists are abbreviated (the part lines are full)."""
    if len(part.excepts) <= HEADER_EXCEPTS:
        return str(part)
    shown = ", ".join(part.excepts[:HEADER_EXCEPTS])
    return f"{part.atom} except {shown}, … (+{len(part.excepts) - HEADER_EXCEPTS})"


Entry = tuple[Part, str]
"""A part as shown, and what a value in it needs in words (empty for granted and denied parts)."""


def _asks(parts: Sequence[Part]) -> list[Entry]:
    """Ask parts with their requirement in words. Parts of one term (the same pattern and
    excepts, from several ask rules) are one entry: their values need every rule's approvals."""
    terms: dict[tuple[str, tuple[str, ...]], list[Part]] = {}
    for part in parts:
        terms.setdefault((part.pattern, part.excepts), []).append(part)
    return [
        (
            replace(same[0], rules=tuple(sorted({rule for part in same for rule in part.rules})), approvals=None),
            approvals_text(part.approvals or Approvals(1) for part in same),
        )
        for same in terms.values()
    ]


def _grouped(entries: Sequence[Entry]) -> list[tuple[str, Part, str]]:
    """Parts with the same rules and needs and no excepts shown on one line: ``fs:read:/a, /b``."""
    groups: dict[tuple[object, ...], list[Part]] = {}
    out: list[tuple[str, Part, str]] = []
    for part, needs in entries:
        if part.excepts:
            out.append((str(part), part, needs))
        else:
            groups.setdefault((part.rules, needs), []).append(part)
    for (_, needs), members in groups.items():
        out.append((members[0].atom + "".join(f", {m.pattern}" for m in members[1:]), members[0], needs))
    return sorted(out, key=lambda item: item[0])


def _needs(needs: str) -> Line:
    return [(f"  needs {needs}", "cyan")] if needs else []


def _request_lines(request: RequestResult) -> list[Line]:
    mark, style = MARKS[request.verdict]
    head: Line = [(f"  {mark} ", style), (request.atom, "bold")]
    if request.verdict == "narrowed":
        head += [(" → ", ""), ("; ".join(_short(part) for part in request.granted), style)]
    else:
        head.append((f"  {request.verdict}", style))
    if request.unknown:
        head.append(("  (undecided parts were not granted)", "red"))
    asks = _asks(request.ask)
    entries = [*((part, "") for part in request.granted), *asks, *((part, "") for part in request.denied)]
    if len(entries) == 1 and str(entries[0][0]) == request.atom:  # one part, the request itself: one line
        part, needs = entries[0]
        return [[*head, *_needs(needs), *_rules(part)]]
    lines = [head]
    for part in request.granted:
        lines.append([("      ✓ ", "green"), (str(part), ""), *_rules(part)])
    for text, part, needs in _grouped(asks):
        lines.append([("      ? ", "cyan"), (text, ""), *_needs(needs), *_rules(part)])
    if len({needs for _, needs in asks}) > 1:
        lines.append([("      (a value in several of these ask parts needs the approvals of each)", "dim")])
    for text, part, _ in _grouped([(part, "") for part in request.denied]):
        lines.append([("      ✗ ", "red"), (text, ""), *_rules(part)])
    return lines


def _call_lines(call: CallResult) -> list[Line]:
    mark, style = CALL_MARKS[call.status]
    server = f" @{call.server}" if call.server else ""
    lines: list[Line] = [[(f"    {mark} ", style), (f"{call.tool}{server}", "bold"), (f"  {call.status}", style)]]
    if not call.needs:
        lines[0].append((f": {call.reason}", "dim"))
    for need in call.needs:
        need_mark, need_style = {"allow": ("✓", "green"), "ask": ("?", "cyan"), "deny": ("✗", "red")}[need.effect]
        detail = "" if need.effect == "allow" else f"  {need.reason}"
        lines.append([(f"        {need_mark} ", need_style), (need.atom, ""), (detail, "dim")])
    return lines


def summary(plan: Plan) -> str:
    """One line: non-zero verdict and call counts, in a fixed order."""
    counts = plan.counts()
    verdicts = ", ".join(f"{counts[v]} {v}" for v in ("granted", "narrowed", "ask", "denied") if counts[v])
    calls = ", ".join(f"{counts[s]} {s}" for s in ("covered", "pending", "uncovered") if counts[s])
    text = f"{verdicts or 'no requests'}"
    if plan.calls:
        text += f" · calls: {calls}"
    return text


def plan_lines(plan: Plan, source: str) -> list[Line]:
    """The asked-vs-granted view of one plan."""
    mode = plan.mode if plan.mode is not None else "(none)"
    lines: list[Line] = [
        [(source, "bold")],
        [(f"  plan {plan.id()}  order {plan.order}", "dim")],
        [(f"  policy {plan.policy}  mode {mode}", "dim")],
    ]
    for request in plan.requests:
        lines.extend(_request_lines(request))
    if plan.calls:
        lines.append([("  calls", "bold")])
        for call in plan.calls:
            lines.extend(_call_lines(call))
    lines.append([("  summary: ", "bold"), (summary(plan), "")])
    return lines


def render_lines(lines: Sequence[Line], color: bool) -> str:
    """Plain text, or text with ANSI styles when ``color`` is set (:func:`bgc.app.render.color.paint`).

    Every segment is escaped here, once for all: atoms, tool and server names, reasons and file
    names come from proposals and policies, and none may break a line or steer the terminal.
    """
    from bgc.app.render.color import paint

    escaped = [[(escape_field(text, backslash=False), style) for text, style in line] for line in lines]
    if not color:
        return "".join("".join(text for text, _ in line).rstrip() + "\n" for line in escaped)
    return "".join("".join(paint(text, style) for text, style in line) + "\n" for line in escaped)


def render_text(plans: Sequence[tuple[Plan, str]], color: bool) -> str:
    """Every plan, separated by a blank line."""
    blocks = [render_lines(plan_lines(plan, source), color) for plan, source in plans]
    return "\n".join(blocks)


def plans_data(plans: Sequence[Plan]) -> Any:
    """One plan as an object; several as a list (``bgc gate`` reads either)."""
    if len(plans) == 1:
        return plans[0].to_data()
    return [plan.to_data() for plan in plans]


def render_data(data: Any, fmt: str) -> bytes:
    """Deterministic bytes of plain data in ``fmt`` (json, yaml or cbor)."""
    if fmt == "json":
        return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    if fmt == "yaml":
        import yaml

        return yaml.dump(data, Dumper=_yaml_dumper(), sort_keys=True, allow_unicode=True, default_flow_style=False).encode()
    if fmt == "cbor":
        return canonical.encode(data)
    raise ValueError(f"unknown data format {fmt!r}")


_LINE_BREAKS = ("\x85", "\u2028", "\u2029")
"""Characters YAML reads as line breaks: in a plain or single-quoted scalar PyYAML folds them
into spaces when reading back (a NEL in a path came back as a space), so such text is written
double-quoted, where they are escapes."""


def _yaml_dumper() -> Any:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        style = '"' if any(brk in value for brk in _LINE_BREAKS) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return Dumper


def result_lines(explanation: Explanation) -> list[Line]:
    """``bgc explain``'s result alone (``--quiet``): the atom's verdict and the rule of each part."""
    return _request_lines(explanation.result)


def explanation_lines(explanation: Explanation) -> list[Line]:
    """``bgc explain``: the rules in precedence order, then the result and other modes."""
    mode = explanation.mode if explanation.mode is not None else "(none)"
    lines: list[Line] = [[(explanation.atom, "bold"), (f"  in mode {mode}", "dim")]]
    if not explanation.traces:
        lines.append([("  no rule touches this atom: denied (fail closed)", "red")])
    for trace in explanation.traces:
        mark, style = ("•", "") if trace.applies else ("-", "dim")
        reason = f" “{trace.rule.reason}”" if trace.rule.reason else ""
        lines.append(
            [(f"  {mark} ", style), (f"{trace.rule.keyword} {trace.pattern}{trace.rule.clause}", "bold" if trace.applies else "dim"),
             (f"  {trace.rule}{reason}", "dim")]
        )
        lines.append([(f"      {trace.why}", style or "dim")])
    lines.append([("result", "bold")])
    lines.extend(result_lines(explanation))
    for other, verdict in explanation.other_modes:
        mark, style = MARKS[verdict]
        lines.append([(f"  in mode {other}: ", ""), (f"{mark} {verdict}", style)])
    if explanation.other_modes and any(v in ("granted", "narrowed") for _, v in explanation.other_modes):
        lines.append([("  (a person may switch modes with --mode; the proposal cannot)", "dim")])
    if explanation.hint is not None:
        lines.append([("  hint: ", "cyan"), (str(explanation.hint), "")])
    return lines
