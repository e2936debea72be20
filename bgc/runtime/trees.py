"""A file-tree need decided on the files that exist: what a search tool reads, now.

A search tool (Claude Code's ``Grep``, Gemini CLI's ``grep_search``) reads every file below the
directory it names, so its mapping declares a pattern need, ``fs:read:{path}/**``, which the
algebra grants only when every path the pattern can name is granted. Policies deny secrets
wherever they may lie (``/**/.env``, ``/**/secrets/**``), so such a pattern is hardly ever
granted whole, although the tree may hold no secret at all. An enforcer that works on a real
project (:class:`bgc.runtime.calls.Workspace`) then decides the files that exist: :func:`files_reached`
lists every file below the pattern's fixed directory that the pattern matches, and each is
decided as the gate decides a concrete value (symbolic links resolved under the project, so a
link to ``.env`` is ``.env``). The call reads nothing denied only if none of them is denied.

Exact for the tree as it is when the hook runs (a file created between the decision and the
search is not seen, as for any path), and bounded: past :data:`MAX_ENTRIES` entries, or at a
linked directory (a search may follow it anywhere), the files are not listed and the pattern's
own answer stands (fail closed). So it does at a directory that cannot be listed for a reason
other than permission (a path past PATH_MAX, which a search walking by directory handles still
reads); one the user may not read the search cannot read either, and is passed over.
"""

from __future__ import annotations

import errno
import os
import stat
from functools import lru_cache
from typing import NamedTuple

from bgc.core.patterns import glob
from bgc.core.gate import no_link_below

MAX_ENTRIES = 10_000
"""Directory entries walked at most for one pattern need."""


class FileReached(NamedTuple):
    """A file a pattern need reaches: its workspace path, and whether no symbolic link lies on
    its way from ``/`` (then it lands where it reads, and the gate need not resolve it). A named
    tuple rather than a frozen dataclass, as the gate's decisions are: a search builds one a
    file, and it is just as immutable."""

    path: str
    link_free: bool


def is_pattern(text: str) -> bool:
    """Whether need text (parameters escaped) is a valid pattern with a wildcard of its own
    (a malformed one was already refused by the gate, and stays refused)."""
    try:
        return glob.parse(text).literal is None
    except glob.PatternError:
        return False


def files_reached(root: str, pattern: str, *, directories: bool = False) -> list[FileReached] | str:
    """The files under the host directory ``root`` that the workspace pattern ``pattern``
    matches, by workspace path (``/src/a.py``), or why they cannot be listed exactly.
    ``directories``: the directories it matches too (a glob's words name directories as well as
    files: ``ls src/*`` lists each directory, ``rm -r src/*`` removes it).

    What it costs: one ``lstat`` a segment of the fixed directory's host path, from ``/`` (so a
    link anywhere above it, an ancestor of the project swapped for a link included, is seen),
    and one ``scandir`` a directory below, whose entry types (``d_type``) say which entries are
    links with no further call. A file with no link on its way is marked ``link_free``; a file
    link, an entry whose type cannot be read, or a name that is not text (a lone surrogate) is
    left for the gate to resolve. When the fixed directory's path holds a link, it is judged as
    before by ``os.path.realpath`` (a name that cannot be read ends the proof, as it ends
    ``realpath``'s look: nothing below it can be read either).
    """
    compiled = glob.parse(pattern)
    fixed = _fixed_directory(pattern)
    below = fixed.lstrip("/")
    start = root + below if not root or root.endswith("/") else f"{root}/{below}"  # os.path.join(root, below)
    try:
        top = os.lstat(start)
    except (FileNotFoundError, NotADirectoryError, PermissionError, ValueError):
        return []  # nothing there, or nothing the search may open either
    except OSError as error:
        if error.errno == errno.ELOOP:  # a link loop on the way: the search cannot open it either
            return []
        # past PATH_MAX: a search run in the project reads it by a relative path
        return f"{fixed} cannot be listed ({error.strerror}): its files are not listed"
    proven = not stat.S_ISLNK(top.st_mode) and no_link_below("/", os.path.dirname(start))
    if proven:
        is_directory = stat.S_ISDIR(top.st_mode)
    elif os.path.realpath(start) != os.path.normpath(start):
        return f"{fixed} is a linked directory: its files are not listed"
    else:
        is_directory = os.path.isdir(start)
    if not is_directory:
        return [FileReached(fixed, proven)] if compiled.matches(fixed) else []
    found: list[FileReached] = []
    seen, matches = 0, compiled.matches
    pending = [(start, fixed.rstrip("/"))]  # host directory, its workspace path ("" for "/")
    while pending:  # depth first, each directory's entries in the order listed (as os.walk)
        directory, workspace = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except PermissionError:
            continue  # unreadable: what the search cannot read either (as os.walk)
        except OSError as error:  # too deep to list by its path (grep -r lists it by handle), gone, ...
            return f"a directory below {fixed} cannot be listed ({error.strerror}): its files are not listed"
        seen += len(entries)
        if seen > MAX_ENTRIES:
            return f"more than {MAX_ENTRIES:,} entries below {fixed}: its files are not listed one by one"
        subdirectories = []
        for entry in entries:  # a directory is gone into below, a file is listed when the pattern matches it
            if _is_directory(entry):
                if _is_link(entry):
                    return f"{workspace}/{entry.name} is a linked directory: its files are not listed"
                subdirectories.append(entry)
                if directories and matches(f"{workspace}/{entry.name}"):
                    found.append(FileReached(f"{workspace}/{entry.name}", proven and _plain_file(entry)))
                continue
            path = f"{workspace}/{entry.name}"
            if matches(path):
                found.append(FileReached(path, proven and _plain_file(entry)))
        if subdirectories:
            pending.extend((entry.path, f"{workspace}/{entry.name}") for entry in reversed(subdirectories))
    found.sort()
    return found


def _is_directory(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is a directory or a link to one (os.walk's test: an error is not)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is a symbolic link, read from its directory entry's type when the
    file system gives one (os.path.islink's answer: an error is not)."""
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _plain_file(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is proven not a symbolic link (an error proves nothing) and its name
    is text (not bytes a non-UTF-8 name smuggles in as lone surrogates)."""
    try:
        if entry.is_symlink():
            return False
        if not entry.name.isascii():  # ASCII is text
            entry.name.encode()
    except (OSError, UnicodeEncodeError):
        return False
    return True


@lru_cache(maxsize=256)
def _fixed_directory(pattern: str) -> str:
    """The directory a pattern's leading wildcard-free segments name (``/src`` of ``/src/**/*.py``);
    remembered, as :func:`bgc.core.patterns.glob.parse` remembers patterns: a session searches the same few."""
    fixed = []
    for segment in pattern.split("/")[1:]:
        if glob.parse("/" + segment).literal is None:
            break
        fixed.append(glob.parse("/" + segment).literal[1:])
    return "/" + "/".join(fixed)
