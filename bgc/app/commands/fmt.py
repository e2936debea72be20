"""``bgc fmt [FILE|DIR...]``: policy files in their one canonical layout, comments kept."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bgc.app.commands.io import Result
from bgc.errors import ExitCode, UsageError


def policy_paths(paths: Sequence[str]) -> list[str]:
    """The files ``bgc fmt`` formats: each file named (whatever its extension), every ``.bgp``
    below each directory named (sorted, as ``bgc check`` finds them), and with no path at all the
    configured policies (``policy`` and ``policies`` of ``[tool.bgc]`` / ``bgc.toml``).

    Nothing to format is an error (exit 2), not a quiet success: a CI job whose path or glob is
    mistyped must not pass by formatting nothing.
    """
    from bgc.analysis.config import find_config, policies_below

    if not paths:
        config = find_config(".")
        if config is None:
            raise UsageError(
                "no files to format: name policy files or directories, "
                "or configure `policy`/`policies` in [tool.bgc] of pyproject.toml or in bgc.toml"
            )
        found = [os.path.relpath(path) for path in config.policy_files()]
        if not found:
            raise config.error("policies", "configures no policy file to format")
        return found
    found = []
    for entry in paths:
        below = policies_below(Path(entry)) if entry != "-" and Path(entry).is_dir() else None
        if below is not None and not below:
            raise UsageError(f"no policy files (.bgp) below {entry!r}")
        found.extend(below if below is not None else [entry])
    return found


def run(
    paths: Sequence[str],
    *,
    check: bool = False,
    diff: bool = False,
    output_format: str = "text",
    quiet: bool = False,
    verbose: bool = False,
    color_choice: str = "auto",
) -> Result:
    """Format every file (:func:`policy_paths`); ``-`` is stdin, formatted to stdout.

    Every file is parsed before any is written: if one does not parse, the command raises (exit
    2) and nothing is written. ``check`` and ``diff`` write nothing and exit 1 when a file would
    change; ``output_format`` (json, sarif, github) reports ``check``'s findings for CI.
    ``quiet`` prints only what was asked for on stdout (the formatted text of ``-``, the diff);
    ``verbose`` names the files left unchanged too.
    """
    from bgc.core.policy.format import format_file
    from bgc.text import escape_field

    if output_format != "text" and not check:
        raise UsageError(
            f"--format {output_format} reports what --check finds, and --check is missing: "
            f"run `bgc fmt --check --format {output_format}` (it writes nothing), "
            "or drop --format to rewrite the files"
        )
    results = [format_file(path) for path in policy_paths(paths)]
    changed = [result for result in results if result.changed]
    code = ExitCode.FINDINGS if changed and (check or diff) else ExitCode.OK
    if output_format != "text":
        from bgc.analysis.config import repository_root
        from bgc.analysis.outcomes import unformatted_finding
        from bgc.app.render.machine import render

        findings = [unformatted_finding(r.path, r.original, r.formatted) for r in changed]
        return Result(code, render(findings, output_format, root=repository_root()).encode())
    lines: list[str] = []
    files: list[tuple[str, bytes]] = []
    for result in results:
        shown = escape_field(result.path, backslash=False)
        if diff:
            lines.append(_painted_diff(result.diff(), color_choice))
        elif result.path == "-" and not check:
            lines.append(result.formatted)
        elif result.changed:
            if not check:
                files.append((result.path, result.formatted.encode("utf-8")))
            if not quiet:
                lines.append(f"{'would reformat' if check else 'reformatted'} {shown}\n")
        elif verbose:
            lines.append(f"unchanged {shown}\n")
    return Result(code, "".join(lines).encode(), tuple(files))


_DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def _painted_diff(diff: str, color_choice: str) -> str:
    """A unified diff, its added, removed and hunk lines coloured on a terminal (headers too:
    ``---``/``+++`` begin with the same characters). Lines come from policy files: escaped."""
    from bgc.app.render.color import paint, use_color
    from bgc.text import escape_field

    color = use_color(color_choice, sys.stdout)
    out = []
    for line in diff.splitlines(keepends=True):
        body = escape_field(line.rstrip("\r\n"), backslash=False)
        out.append((paint(body, _DIFF_STYLES.get(line[:1], "")) if color else body) + "\n")
    return "".join(out)
