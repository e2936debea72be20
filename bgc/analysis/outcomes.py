"""What commands found, as findings for CI, and the recorded expectations of work orders.

**Findings** (``bgc compile --format sarif|github``): every request not granted as
asked and every call not covered becomes a finding located at the request or call in the order
file. Those at or above the ``--fail-on`` level are errors (they make the exit code 1); the
others are notes, so "exit 1 ⇔ a non-note finding" holds for every command. ``bgc fmt --check`` reports each
file that would change (``codes.UNFORMATTED``).

**Recorded expectations** (``bgc check`` in a repository): each order under the configured
orders directory has a ``<order file name>.expected.json`` holding the *semantic* outcome of
compiling it: the mode, each requested atom's verdict and parts (``atom``, ``except``,
``approvals``), each call's tool, server and status. Ids and rule locations are deliberately left
out, so reformatting or reordering a policy does not churn every recording, while any change in
what is granted does. ``bgc check --update`` rewrites recordings, like a snapshot tool.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bgc import codes
from bgc.errors import Span
from bgc.analysis.findings import Finding, Severity
from bgc.core.plan import FAIL_ON

if TYPE_CHECKING:
    from bgc.core.compiler import Compiler
    from bgc.analysis.config import Config
    from bgc.core.values.documents import Document
    from bgc.core.plan import Part, Plan

_VERDICT_RULE = {"narrowed": codes.NARROWED, "ask": codes.ASKED, "denied": codes.DENIED}
_CALL_RULE = {"pending": codes.CALL_PENDING, "uncovered": codes.CALL_UNCOVERED}
EXPECTATION_VERSION = 1


# --- plans as findings --------------------------------------------------------------------------


def plan_findings(plan: Plan, document: Document, fail_on: str = "narrowed") -> list[Finding]:
    """Findings for everything in ``plan`` not granted as asked, located in the order ``document``.

    ``fail_on`` is ``bgc compile --fail-on``: the levels it counts are errors, the rest notes, so
    a plan has an error finding exactly when :func:`bgc.core.plan.fails` says so.
    """
    bad_verdicts, bad_calls = FAIL_ON[fail_on]
    requests = _request_positions(document)
    findings = []
    for request in plan.requests:
        if request.verdict == "granted":
            continue
        granted = ", ".join(str(part) for part in request.granted) or "nothing"
        detail = {"narrowed": f"only {granted} is granted", "ask": "it awaits approval", "denied": "nothing is granted"}
        message = f"{request.atom}: {request.verdict}, {detail[request.verdict]}"
        if request.unknown:
            message += " (a part could not be decided within bounds and was not granted)"
        severity = Severity.ERROR if request.verdict in bad_verdicts else Severity.NOTE
        span = document.span(("requests", requests[request.atom])) if request.atom in requests else Span(document.path)
        findings.append(Finding(_VERDICT_RULE[request.verdict], severity, message, span))
    for index, call in enumerate(plan.calls):
        if call.status == "covered":
            continue
        severity = Severity.ERROR if call.status in bad_calls else Severity.NOTE
        message = f"call {index + 1} ({call.tool}): {call.status}: {call.reason}"
        findings.append(Finding(_CALL_RULE[call.status], severity, message, document.span(("calls", index))))
    return findings


def _request_positions(document: Document) -> dict[str, int]:
    """Index of each request in the file, by its normalised atom (plans list them sorted)."""
    from bgc.core.values.model import GrantAtom, ModelError

    positions: dict[str, int] = {}
    raw = document.data.get("requests", []) if isinstance(document.data, dict) else []
    for index, text in enumerate(raw if isinstance(raw, list) else []):
        try:
            positions.setdefault(str(GrantAtom.parse(text)), index)
        except ModelError:
            continue
    return positions


def unformatted_finding(path: str, original: str, formatted: str) -> Finding:
    """``bgc fmt --check``: a file that would change, located at its first line that would."""
    before, after = original.splitlines(), formatted.splitlines()
    line = next((n for n, (a, b) in enumerate(zip(before, after), start=1) if a != b), min(len(before), len(after)) + 1)
    return Finding(codes.UNFORMATTED, Severity.ERROR, "not in the canonical layout: `bgc fmt` would change this file",
                   Span(path, line, 1), f"run `bgc fmt {path}`")  # fmt: skip


# --- recorded expectations ----------------------------------------------------------------------


def expectation_data(plan: Plan) -> dict[str, Any]:
    """The semantic outcome of a plan: what is recorded and compared (see the module doc)."""

    def parts(items: Iterable[Part]) -> list[dict[str, Any]]:
        # a part as the plan writes it, less its rules: rule locations stay out (module doc)
        return [{key: value for key, value in part.to_data().items() if key != "rules"} for part in items]

    return {
        "version": EXPECTATION_VERSION,
        "mode": plan.mode,
        "requests": [
            {
                "atom": request.atom,
                "verdict": request.verdict,
                "granted": parts(request.granted),
                "ask": parts(request.ask),
                "denied": parts(request.denied),
            }
            for request in plan.requests
        ],
        "calls": [{"tool": call.tool, "server": call.server, "status": call.status} for call in plan.calls],
    }


def expectation_text(plan: Plan) -> str:
    return json.dumps(expectation_data(plan), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def differences(recorded: Mapping[str, Any], actual: Mapping[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """What changed between a recording (as :func:`_read_recording` checked it) and a fresh
    result, as (place in the order, message)."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    if recorded["mode"] != actual["mode"]:
        found.append(((), f"recorded in mode {recorded['mode']!r}, now compiled in mode {actual['mode']!r}"))
    before = {entry["atom"]: entry for entry in recorded["requests"]}
    after = {entry["atom"]: entry for entry in actual["requests"]}
    for atom, entry in after.items():
        old = before.get(atom)
        if old is None:
            found.append((("requests", atom), f"{atom}: not in the recording (now {_outcome(entry)})"))
        elif old != entry:
            found.append((("requests", atom), f"{atom}: recorded {_outcome(old)}, now {_outcome(entry)}"))
    for atom in before.keys() - after.keys():
        found.append(((), f"{atom}: recorded, but the order no longer requests it"))
    old_calls = recorded["calls"]
    new_calls = actual["calls"]
    for index, call in enumerate(new_calls):
        old = old_calls[index] if index < len(old_calls) else None
        if old != call:
            was = f"{old['tool']} {old['status']}" if old is not None else "not recorded"
            found.append((("calls", index), f"call {index + 1}: recorded {was}, now {call['tool']} {call['status']}"))
    if len(old_calls) > len(new_calls):
        found.append(((), f"{len(old_calls) - len(new_calls)} recorded calls are no longer in the order"))
    return found


def _outcome(entry: Mapping[str, Any]) -> str:
    """``narrowed (granted fs:write:/src/** except /src/secrets/**; denied ...)``."""
    pieces = []
    for kind in ("granted", "ask", "denied"):
        parts = entry[kind]
        if parts:
            shown = ", ".join(
                part["atom"] + (f" except {', '.join(part['except'])}" if part["except"] else "") for part in parts
            )
            pieces.append(f"{kind} {shown}")
    verdict = str(entry["verdict"])
    return f"{verdict} ({'; '.join(pieces)})" if pieces else verdict


def _compiled(path: Path, compiler: Compiler, mode: str | None) -> tuple[Document, Plan]:
    from bgc.core.values.documents import read_document
    from bgc.core.values.model import WorkOrder

    document = read_document(str(path))
    return document, compiler.compile(document.build(WorkOrder.from_data), mode)


def recording(path: Path, compiler: Compiler, config: Config, *, mode: str | None) -> tuple[Path, str] | None:
    """The recording ``bgc check --update`` would write for the order at ``path`` (target and
    text), or ``None`` when the recorded one is already up to date. Writes nothing."""
    _, plan = _compiled(path, compiler, mode)
    target = config.expectation_for(path)
    text = expectation_text(plan)
    if target.is_file() and target.read_text(encoding="utf-8") == text:
        return None
    return target, text


def compare(path: Path, compiler: Compiler, config: Config, *, mode: str | None) -> list[Finding]:
    """Compile the order at ``path`` and compare it with its recording: one finding per change.

    Raises :class:`BgcError` for an order or a recording that cannot be read.
    """
    document, plan = _compiled(path, compiler, mode)
    target = config.expectation_for(path)
    if not target.is_file():
        return [
            Finding(codes.RECORDING_MISSING, Severity.ERROR, f"no recorded expectation {target.name} for this order",
                    Span(str(path)), "record it with `bgc check --update` and review the file it writes")
        ]  # fmt: skip
    positions = _request_positions(document)
    findings = []
    from bgc.analysis.config import local_path

    recorded = _read_recording(Path(local_path(target)))  # named as every path check prints
    for where, message in differences(recorded, expectation_data(plan)):
        if where[:1] == ("requests",):
            span = document.span(("requests", positions[where[1]])) if where[1] in positions else Span(str(path))
        else:
            span = document.span(where)
        findings.append(
            Finding(codes.RECORDING_DIFFERS, Severity.ERROR, message, span,
                    f"if the change is intended, record it with `bgc check --update` ({target.name})")
        )  # fmt: skip
    return findings


def stale_recordings(config: Config, orders: Sequence[Path]) -> list[Path]:
    """Recordings under the configured directory that no order in ``orders`` owns."""
    owned = {config.expectation_for(order) for order in orders}
    return [path for path in config.expectation_files() if path not in owned]


def stale_finding(path: Path) -> Finding:
    return Finding(codes.RECORDING_STALE, Severity.ERROR, "this recorded expectation belongs to no order", Span(str(path)),
                   "delete it, or run `bgc check --update`")  # fmt: skip


def _read_recording(path: Path) -> dict[str, Any]:
    """A recorded expectation, read with the one schema reader (:class:`bgc.core.values.schema.Fields`):
    every key, kind and enumeration of what :func:`expectation_data` writes is checked, and
    a mistake is located in the recording, with a hint to rewrite it."""
    from bgc.core.values.documents import DocumentError, read_document

    document = read_document(str(path))
    try:
        return document.build(_recording)
    except DocumentError as error:
        error.hint = "rewrite it with `bgc check --update`"
        raise


def _recording(data: Any) -> dict[str, Any]:
    from bgc.core.plan import CALL_STATUSES, VERDICTS
    from bgc.core.values.schema import Fields, ModelError

    root = Fields(data, ())
    root.only("version", "mode", "requests", "calls")
    if root.value("version", int) != EXPECTATION_VERSION:
        raise ModelError(f"not a version {EXPECTATION_VERSION} expectation recording", ("version",))
    root.value("mode", str, type(None))
    for request in root.maps("requests"):
        request.only("atom", "verdict", "granted", "ask", "denied")
        request.value("atom", str)
        request.choice("verdict", VERDICTS)
        for kind in ("granted", "ask", "denied"):
            for part in request.maps(kind):
                part.only("atom", "except", *(("approvals",) if kind == "ask" else ()))
                part.value("atom", str)
                for pattern in part.maps("except"):
                    pattern.is_kind(str)
                if kind == "ask":
                    approvals = part.map("approvals")
                    approvals.only("count", "of")
                    approvals.value("count", int)
                    for name in approvals.maps("of"):
                        name.is_kind(str)
    for call in root.maps("calls"):
        call.only("tool", "server", "status")
        call.value("tool", str)
        call.value("server", str, type(None))
        call.choice("status", CALL_STATUSES)
    return data  # type: ignore[no-any-return]  # checked above
