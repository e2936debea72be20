"""``bgc check [PATH...]``: policies, policy tests and recorded work orders, at once.

With paths, each is checked by kind: ``*.bgp`` policies (lints and inline expects),
``*.bgt.yaml`` test files, work orders (compiled under the configured policy and compared with
their recorded expectations), and directories (their policies and test files). Without paths
the configuration (``[tool.bgc]`` / ``bgc.toml``) says what the repository holds, and every
part of it is checked, including recordings whose order is gone.

Everything becomes :class:`bgc.analysis.findings.Finding`s (for the machine formats) plus one text
report for people. A file that cannot be read is reported and checking goes on, so one bad
file does not hide the state of the rest; the exit code is then 2. With a configuration, the
check runs from the repository root (:func:`bgc.analysis.config.at_root`), so every path it prints is
repository-relative, whichever directory it was started in.

:func:`run` returns what to print, the exit code and the recordings to write or remove
(``--update``); the argument adapters (:mod:`bgc.app.cli`, :mod:`bgc.app.launch`) hand that to
:func:`bgc.app.commands.io.deliver`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from bgc import codes
from dataclasses import dataclass
from bgc.app.commands.io import Result, machine_error
from bgc.errors import BgcError, ExitCode, Span, UsageError
from bgc.analysis.findings import Finding, Severity
from bgc.analysis.findings import exit_code as findings_exit_code
from bgc.text import escape_field
from bgc.text import count

if TYPE_CHECKING:
    from bgc.analysis.config import Config
    from bgc.analysis.selection import Selection


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of a ``bgc check``: findings, the bad-input errors, the report for people and
    the recordings to write or remove (``--update``, only when every file could be read)."""

    findings: tuple[Finding, ...]
    errors: tuple[BgcError, ...]
    text: str
    summary: dict[str, Any]
    recordings: Recordings | None = None

    @property
    def exit_code(self) -> ExitCode:
        return findings_exit_code(self.findings, self.errors)


class _Plan(NamedTuple):
    """What one ``bgc check`` run will look at, sorted into kinds."""

    policies: list[str]
    tests: list[str]
    orders: list[Path]
    whole_repository: bool


def _sort(paths: Sequence[str], config: Config | None, orders_only: bool) -> _Plan:
    from bgc.analysis.config import EXPECTED_SUFFIX, is_order_file, local_path, split_paths

    if not paths:
        if config is None:
            raise UsageError(
                "nothing to check: pass policies, tests or orders, or configure [tool.bgc] in "
                "pyproject.toml (or bgc.toml) so `bgc check` knows the repository",
            )
        orders = [Path(local_path(path)) for path in config.order_files()]
        if orders_only:
            if config.orders is None:
                raise config.error("orders", "`bgc check --orders` needs the orders directory: set `orders`")
            return _Plan([], [], orders, True)
        return _Plan(
            [local_path(path) for path in config.policy_files()],
            [local_path(path) for path in config.test_files()],
            orders,
            True,
        )
    if orders_only and not all(is_order_file(entry) for entry in paths):
        raise UsageError("with --orders, every path must be a work order (.yaml, .yml, .json, .cbor)")

    def other(entry: str) -> NoReturn:
        if entry.endswith(EXPECTED_SUFFIX):
            raise UsageError(
                "a recorded expectation, not a work order: it is checked together with its order",
                Span(entry),
                hint=f"check the order it records ({_recorded_order(Path(entry), config)}); "
                "`bgc check --update` rewrites recordings",
            )
        raise UsageError(
            "not a policy (.bgp), a test file (.bgt.yaml), a work order (.yaml, .yml, .json, .cbor) or a directory",
            Span(entry),
        )

    policies, tests, found = split_paths(paths, orders=True, must_exist=False, other=other)
    return _Plan(policies, tests, [Path(order) for order in found], False)


def _recorded_order(recording: Path, config: Config | None) -> str:
    """The order a recording belongs to (:meth:`Config.expectation_for` backwards), as shown."""
    from bgc.analysis.config import EXPECTED_SUFFIX, local_path

    recording = recording.resolve()
    name = recording.name.removesuffix(EXPECTED_SUFFIX)
    if config is not None and config.expectations is not None and config.orders is not None:
        try:
            return local_path(config.orders / recording.parent.relative_to(config.expectations) / name)
        except ValueError:
            pass
    return local_path(recording.with_name(name))


def check(
    paths: Sequence[str], *, config: Config | None, update: bool = False, orders_only: bool = False,
    baseline: str | None = None, color: bool = False, selection: Selection | None = None,
) -> Outcome:
    """Check ``paths`` (or, with none, the configured repository); ``update`` rewrites recordings;
    ``orders_only`` leaves policies and tests out (the ``bgc-compile`` pre-commit hook);
    ``baseline`` diffs each policy against that git revision (new access is a finding);
    ``selection`` the lints reported (default: every lint)."""
    from dataclasses import replace

    from bgc.analysis.checks import CheckResult, cached_check
    from bgc.app.render.findings_text import findings_text

    targets = _sort(paths, config, orders_only)
    if not (targets.policies or targets.tests or targets.orders or targets.whole_repository):
        raise UsageError("nothing to check in " + ", ".join(paths))
    findings: list[Finding] = []
    errors: list[BgcError] = []
    sections: list[str] = []
    summary: dict[str, Any] = {}

    if targets.policies:
        merged = CheckResult.merged([cached_check(path) for path in targets.policies])
        if selection is not None:
            merged = replace(merged, findings=tuple(selection.kept(merged.findings)))
        findings.extend(merged.findings)
        errors.extend(merged.errors)
        sections.append(findings_text(merged, color))
        summary["policies"] = len(targets.policies)

    if baseline is not None and targets.policies:
        from bgc.app.commands.diff import check_section

        sections.append(check_section(baseline, targets.policies, findings, errors))

    if targets.tests:
        sections.append(_tests(targets.tests, config, findings, errors, summary, color))

    recordings = None
    if targets.orders or (targets.whole_repository and config is not None and config.orders is not None):
        text, recordings = _orders(targets, config, update, findings, errors, summary, color)
        sections.append(text)
        if errors and recordings:
            sections.append("nothing was recorded: fix the files that could not be read first")
            recordings = None
        elif recordings:
            sections.extend(recordings.lines())

    outcome_line = _closing_line(findings, errors, color)
    text = "\n".join([*filter(None, sections), outcome_line]) + "\n"
    return Outcome(tuple(findings), tuple(errors), text, summary, recordings)


def _tests(
    tests: Sequence[str],
    config: Config | None,
    findings: list[Finding],
    errors: list[BgcError],
    summary: dict[str, Any],
    color: bool,
) -> str:
    """Run each test file on its own, so a malformed one is reported and the others still run."""
    from bgc.app.render.test_report import report
    from bgc.analysis.testing.results import PolicyTestRun
    from bgc.analysis.testing.runner import run_tests

    cases = []
    lines: list[str] = []
    for path in tests:
        try:
            run = run_tests([path], config=config, expects=False)
        except BgcError as error:
            not_run = escape_field(f"{path}: not run (the error above)", backslash=False)
            lines.append(_report(error, path, errors, findings, color) or not_run)
            continue
        cases.extend(run.cases)
    total = PolicyTestRun(tuple(cases), ())
    findings.extend(total.findings)
    summary["tests"] = {"passed": total.passed, "failed": total.failed}
    return "\n".join([*lines, report(total, color=color).rstrip("\n")])


def _orders(
    targets: _Plan,
    config: Config | None,
    update: bool,
    findings: list[Finding],
    errors: list[BgcError],
    summary: dict[str, Any],
    color: bool,
) -> tuple[str, Recordings | None]:
    """Compare each order with its recording; with ``update``, say what would be written (a
    recording that is missing or out of date) and removed (a stale one) instead, leaving the
    writing to the caller (nothing is written when input was bad)."""
    from bgc.core.compiler import Compiler
    from bgc.analysis.config import local_path
    from bgc.analysis.outcomes import compare, recording, stale_finding, stale_recordings
    from bgc.core.policy.loader import cached_policy
    from bgc.app.render.findings_text import render_finding

    if config is None or config.policy is None:
        message = "checking work orders needs the policy to compile them against: set `policy` in [tool.bgc]"
        raise config.error("orders", message) if config is not None else UsageError(message)
    policy = local_path(config.policy)
    try:
        compiler = Compiler(cached_policy(policy))
    except BgcError as error:
        rendered = _report(error, policy, errors, findings, color)
        closing = escape_field(f"orders: not checked, the policy {policy} does not load", backslash=False)
        return (f"{rendered}\n{closing}" if rendered else closing), None
    lines: list[str] = []
    writes: list[tuple[Path, str]] = []
    missing = 0  # recordings --update creates: their order had none
    order_findings: list[Finding] = []
    differing = 0  # orders compared and found to differ from their recording
    unreadable = 0  # orders (or their recordings) that could not be read: not compared
    for path in targets.orders:
        try:
            if update:
                pending = recording(path, compiler, config, mode=config.mode)
                if pending is not None:
                    missing += not pending[0].is_file()
                    writes.append(pending)
                continue
            found = compare(path, compiler, config, mode=config.mode)
        except BgcError as error:
            not_checked = escape_field(f"{path}: not checked (the error above)", backslash=False)
            lines.append(_report(error, str(path), errors, findings, color) or not_checked)
            unreadable += 1
            continue
        order_findings.extend(found)
        differing += bool(found)
    stale = stale_recordings(config, targets.orders) if targets.whole_repository else []
    if not update:
        order_findings.extend(stale_finding(Path(local_path(path))) for path in stale)
    findings.extend(order_findings)
    lines.extend(render_finding(finding, None, color) for finding in sorted(order_findings, key=Finding.sort_key))
    checked = len(targets.orders) - unreadable
    not_read = f", {count(unreadable, 'order')} could not be read" if unreadable else ""
    if update:
        lines.append(
            f"orders: {checked} checked{not_read}, {count(missing, 'recording')} missing, "
            f"{len(writes) - missing} out of date, {len(stale)} stale"
        )
        summary["orders"] = {"checked": checked, "unreadable": unreadable, "recorded": len(writes), "removed": len(stale)}
        return "\n".join(lines), Recordings(tuple(writes), tuple(stale))
    lines.append(f"orders: {checked} checked{not_read}, {checked - differing} match their recorded expectations")
    summary["orders"] = {"checked": checked, "unreadable": unreadable, "differ": differing, "stale": len(stale)}
    return "\n".join(lines), None


@dataclass(frozen=True, slots=True)
class Recordings:
    """What ``bgc check --update`` writes (recordings missing or out of date: target, text) and
    removes (stale ones), written by the argument adapter once everything could be read."""

    written: tuple[tuple[Path, str], ...]
    removed: tuple[Path, ...]

    def __bool__(self) -> bool:
        return bool(self.written or self.removed)

    def lines(self) -> list[str]:
        """The report's lines that say what changed (paths as this process names them)."""
        from bgc.analysis.config import local_path

        said = [f"recorded {local_path(target)}" for target, _ in self.written]
        said += [f"removed {local_path(path)}" for path in self.removed]
        return [escape_field(line, backslash=False) for line in said]

    def result(self, code: ExitCode, output: str) -> Result:
        """The command's result: paths made absolute, since they are written after the command
        has left the repository root it ran from."""
        return Result(
            code,
            output.encode("utf-8"),
            tuple((str(target.resolve()), text.encode("utf-8")) for target, text in self.written),
            tuple(sorted({str(target.resolve().parent) for target, _ in self.written})),
            tuple(str(path.resolve()) for path in self.removed),
        )


def _report(error: BgcError, path: str, errors: list[BgcError], findings: list[Finding], color: bool) -> str | None:
    """Record a file that could not be read and return its rendering, or ``None`` when the same
    error is already recorded (a broken policy that several tests use is one error, not many).
    It is rendered as the finding it becomes, id included (``error[BGC099]``), like a policy
    that does not load (``error[BGC001]``)."""
    from bgc.analysis.checks import error_finding
    from bgc.app.render.findings_text import render_finding

    where = error.span or Span(path)
    key = (os.path.realpath(where.file), where.line, where.col, error.message)
    for known in errors:
        seen = known.span or Span("")
        if (os.path.realpath(seen.file), seen.line, seen.col, known.message) == key:
            return None
    errors.append(error)
    finding = error_finding(error, path, codes.UNREADABLE_FILE)
    findings.append(finding)
    return render_finding(finding, error.source, color)


def _closing_line(findings: Sequence[Finding], errors: Sequence[BgcError], color: bool) -> str:
    """The verdict of the whole check; with ``color``, green when it passed, else in the colour
    of the worst finding."""
    line, style = _closing(findings, errors)
    if not color:
        return line
    from bgc.app.render.color import paint

    return paint(line, style)


def _closing(findings: Sequence[Finding], errors: Sequence[BgcError]) -> tuple[str, str]:
    if errors:
        unreadable = {_error_file(error) for error in errors if _unreadable(error)}
        unparsed = {_error_file(error) for error in errors} - unreadable
        parts = [f"{count(len(unreadable), 'file')} could not be read"] if unreadable else []
        parts += [f"{count(len(unparsed), 'file')} could not be parsed"] if unparsed else []
        return "bgc check: " + ", ".join(parts), "red"
    counted = [f for f in findings if f.severity is not Severity.NOTE]
    if not counted:
        return "bgc check: all checks passed", "green"
    errors_n = sum(f.severity is Severity.ERROR for f in counted)
    line = (
        f"bgc check: {count(len(counted), 'finding')} "
        f"({count(errors_n, 'error')}, {count(len(counted) - errors_n, 'warning')})"
    )
    return line, "red" if errors_n else "yellow"


def _unreadable(error: BgcError) -> bool:
    """Whether the file behind ``error`` could not be read at all rather than read and found
    malformed. A policy says so by its id (BGC015: missing, a directory, too large, not UTF-8);
    for test files and orders, a read error (missing, a directory, too large) is about the whole
    file and carries no line, while everything found in the content is located."""
    code = getattr(error, "code", None)
    if code is not None:
        return bool(code == codes.UNREADABLE_POLICY)
    return error.span is None or not error.span.line


def _error_file(error: BgcError) -> str:
    return os.path.realpath(error.span.file) if error.span is not None else ""


def run(
    paths: Sequence[str], *, output_format: str = "text", update: bool = False, orders_only: bool = False,
    baseline: str | None = None, quiet: bool = False, color_choice: str = "auto",
    select: Sequence[str] | None = None, ignore: Sequence[str] | None = None,
) -> Result:
    """``bgc check``: what to print, the exit code (0 passed, 1 findings, 2 bad input) and the
    recordings to write or remove; ``quiet`` keeps only the findings of the text report;
    ``color_choice`` is ``--color`` (text only, and only on stdout:
    :func:`bgc.app.render.color.use_color`); ``select``/``ignore``: ``--select``/``--ignore``, each
    value a comma-separated list of lint codes or prefixes (:mod:`bgc.analysis.selection`),
    after the configuration's.

    Shared by the typer command and the fast start-up path (:mod:`bgc.app.launch`), so both behave
    identically. A bad command line or configuration raises :class:`BgcError` with the text
    format; a machine format carries it instead (:func:`bgc.app.commands.io.machine_error`), so CI
    shows why nothing was checked rather than an empty report.
    """
    from bgc.app.render.color import use_color
    from bgc.app.render.machine import FORMATS

    if output_format != "text" and output_format not in FORMATS:
        raise UsageError(f"unknown --format {output_format!r} (expected text, {', '.join(FORMATS)})")
    color = output_format == "text" and use_color(color_choice, sys.stdout)
    try:
        return _run(paths, output_format, update, orders_only, baseline, quiet, color, select, ignore)
    except BgcError as error:
        if output_format == "text":
            raise
        return machine_error(error, output_format)


def _run(
    paths: Sequence[str], output_format: str, update: bool, orders_only: bool, baseline: str | None, quiet: bool,
    color: bool, select: Sequence[str] | None, ignore: Sequence[str] | None,
) -> Result:
    from bgc.analysis.config import at_root, find_config, git_root
    from bgc.app.render.machine import render

    config = find_config(".")
    root = config.root if config is not None else git_root(".")
    selection = _selection(config, select, ignore)
    with at_root(config, paths) as paths:
        if config is not None:
            config.check_mode()
        outcome = check(
            paths, config=config, update=update, orders_only=orders_only, baseline=baseline, color=color,
            selection=selection,
        )  # fmt: skip
        text = outcome.text
        if output_format == "text" and quiet:
            from bgc.app.render.findings_text import findings_only

            text = findings_only(outcome.findings, color)
        if output_format != "text":
            text = render(outcome.findings, output_format, root=root, summary=outcome.summary)
        recordings = outcome.recordings or Recordings((), ())
        return recordings.result(outcome.exit_code, text)


def _selection(config: Config | None, select: Sequence[str] | None, ignore: Sequence[str] | None) -> Selection:
    """The lints to report: the configuration's ``select``/``ignore``, then the command line's."""
    from bgc.analysis.selection import Layer, Selection, selector_problem, selectors

    given = {"--select": selectors(select or ()), "--ignore": selectors(ignore or ())}
    for flag, chosen in given.items():
        for selector in chosen:
            problem = selector_problem(selector)
            if problem is not None:
                raise UsageError(f"{flag}: {problem}")
    layers = [Layer(config.select, config.ignore)] if config is not None else []
    layers.append(Layer(given["--select"] or None, given["--ignore"]))
    return Selection(tuple(layers))
