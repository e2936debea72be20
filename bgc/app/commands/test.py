"""``bgc test [PATH...]``: policy tests (``*.bgt.yaml``) and the policies' inline expects,
reported like pytest (text, json, sarif, github, junit).

:func:`run` returns what to print, the exit code and the JUnit report to write
(``--junit-xml``); the argument adapter (:mod:`bgc.app.cli`) hands that to
:func:`bgc.app.commands.io.deliver`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NoReturn

from bgc.app.commands.io import Result, machine_error
from bgc.errors import BgcError, ExitCode, Span, UsageError


def find_in(paths: Iterable[str | Path]) -> tuple[list[Path], list[Path]]:
    """Split command-line paths into test files and policy files; directories are searched."""
    from bgc.analysis.config import split_paths

    def other(entry: str) -> NoReturn:
        raise UsageError("not a test file (*.bgt.yaml), a policy (*.bgp) or a directory", Span(entry))

    policies, tests, _ = split_paths(paths, orders=False, must_exist=True, other=other)
    return [Path(test) for test in tests], [Path(policy) for policy in policies]



def run(
    paths: Sequence[str],
    *,
    keyword: str | None = None,
    coverage: bool = False,
    output_format: str = "text",
    junit_xml: str | None = None,
    quiet: bool = False,
    color_choice: str = "auto",
) -> Result:
    """``bgc test``: what to print, the exit code and the JUnit report to write.

    Without paths, the configuration's ``tests`` directories and policies are run. With a
    configuration, the tests run from the repository root (:func:`bgc.analysis.config.at_root`), so ids
    and every printed path are repository-relative. A ``-k`` that selects nothing is a usage
    error: a typo in it must not turn CI green by running no test at all. Bad input raises
    :class:`BgcError` with the text format; a machine format carries it instead. ``quiet`` keeps
    only the failures of the text report (and the rules ``coverage`` finds unexercised);
    ``color_choice`` is ``--color`` (the text report on stdout only:
    :func:`bgc.app.render.color.use_color`).
    """
    from bgc.app.render.color import use_color
    from bgc.app.render.machine import FORMATS

    if output_format not in ("text", "junit", *FORMATS):
        raise UsageError(f"unknown --format {output_format!r} (expected text, junit, {', '.join(FORMATS)})")
    try:
        color = output_format == "text" and use_color(color_choice, sys.stdout)
        text, code, junit = _run(paths, keyword, coverage, output_format, junit_xml is not None, quiet, color)
    except BgcError as error:
        if output_format not in FORMATS:
            raise
        return machine_error(error, output_format)
    # written by the adapter, back where bgc was started: the path is as the user gave it
    files = ((junit_xml, junit.encode("utf-8")),) if junit_xml is not None and junit is not None else ()
    return Result(code, text.encode("utf-8"), files)


def _run(
    paths: Sequence[str], keyword: str | None, coverage: bool, output_format: str, want_junit: bool, quiet: bool,
    color: bool,
) -> tuple[str, ExitCode, str | None]:
    """The body of :func:`run`, run at the repository root: the text, the exit code and, when
    ``want_junit``, the JUnit report."""
    from bgc.analysis.config import at_root, find_config, local_path
    from bgc.app.render.machine import render
    from bgc.app.render.test_report import junit_cases, report, summary
    from bgc.analysis.testing.runner import run_tests
    from bgc.analysis.testing.selection import keyword_filter

    config = find_config(".")
    with at_root(config, paths) as paths:
        if config is not None:
            config.check_mode()
        if paths:
            tests, policies = find_in(paths)
        elif config is not None:
            tests = [Path(local_path(path)) for path in config.test_files()]
            policies = [Path(local_path(path)) for path in config.policy_files()]
        else:
            raise UsageError(
                "nothing to test: pass test files (*.bgt.yaml), policies or directories, or configure [tool.bgc]"
            )
        root = config.root if config is not None else Path.cwd()
        select = keyword_filter(keyword) if keyword else (lambda name: True)
        run = run_tests(tests, policies, config=config, select=select)
        if keyword and not run.cases:
            raise UsageError(f"no test matches -k {keyword!r}")
        if not run.cases:  # a green run that tested nothing would hide a misconfiguration
            raise UsageError("no tests found: no *.bgt.yaml test cases and no inline expects in the given paths")
        code = ExitCode.FINDINGS if run.failed else ExitCode.OK
        junit = None
        if want_junit or output_format == "junit":
            from bgc.app.render.junit import render_junit

            junit = render_junit(junit_cases(run), root=root)
        if output_format == "text":
            return report(run, coverage=coverage, quiet=quiet, color=color), code, junit
        if junit is not None and output_format == "junit":
            return junit, code, junit
        return render(run.findings, output_format, root=root, summary=summary(run, coverage=coverage)), code, junit
