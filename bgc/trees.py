"""A file-tree need decided on the files that exist: what a search tool reads, now.

A search tool (Claude Code's ``Grep``, Gemini CLI's ``grep_search``) reads every file below the
directory it names, so its mapping declares a pattern need, ``fs:read:{path}/**``, which the
algebra grants only when every path the pattern can name is granted. Policies deny secrets
wherever they may lie (``/**/.env``, ``/**/secrets/**``), so such a pattern is hardly ever
granted whole, although the tree may hold no secret at all. An enforcer that works on a real
project (:class:`bgc.calls.Workspace`) then decides the files that exist: :func:`files_reached`
lists every file below the pattern's fixed directory that the pattern matches, and each is
decided as the gate decides a concrete value (symbolic links resolved under the project, so a
link to ``.env`` is ``.env``). The call reads nothing denied only if none of them is denied.

Exact for the tree as it is when the hook runs (a file created between the decision and the
search is not seen, as for any path), and bounded: past :data:`MAX_ENTRIES` entries, or at a
linked directory (a search may follow it anywhere), the files are not listed and the pattern's
own answer stands (fail closed).
"""

from __future__ import annotations

import os

from bgc import glob

MAX_ENTRIES = 10_000
"""Directory entries walked at most for one pattern need."""


def is_pattern(text: str) -> bool:
    """Whether need text (parameters escaped) is a valid pattern with a wildcard of its own
    (a malformed one was already refused by the gate, and stays refused)."""
    try:
        return glob.parse(text).literal is None
    except glob.PatternError:
        return False


def files_reached(root: str, pattern: str) -> list[str] | str:
    """The workspace paths (``/src/a.py``) of the files under the host directory ``root`` that
    the workspace pattern ``pattern`` matches, or why they cannot be listed exactly."""
    compiled = glob.parse(pattern)
    fixed = _fixed_directory(pattern)
    start = os.path.join(root, fixed.lstrip("/"))
    if not os.path.lexists(start):
        return []
    if os.path.realpath(start) != os.path.normpath(start):
        return f"{fixed} is a linked directory: its files are not listed"
    if not os.path.isdir(start):
        return [fixed] if compiled.matches(fixed) else []
    found: list[str] = []
    seen = 0
    for directory, subdirectories, files in os.walk(start):
        seen += len(subdirectories) + len(files)
        if seen > MAX_ENTRIES:
            return f"more than {MAX_ENTRIES:,} entries below {fixed}: its files are not listed one by one"
        for name in subdirectories:
            if os.path.islink(os.path.join(directory, name)):
                return f"{_workspace(root, os.path.join(directory, name))} is a linked directory: its files are not listed"
        for name in files:
            path = _workspace(root, os.path.join(directory, name))
            if compiled.matches(path):
                found.append(path)
    return sorted(found)


def _fixed_directory(pattern: str) -> str:
    """The directory a pattern's leading wildcard-free segments name (``/src`` of ``/src/**/*.py``)."""
    fixed = []
    for segment in pattern.split("/")[1:]:
        if glob.parse("/" + segment).literal is None:
            break
        fixed.append(glob.parse("/" + segment).literal[1:])
    return "/" + "/".join(fixed)


def _workspace(root: str, path: str) -> str:
    return "/" + os.path.relpath(path, root)
