"""Paths: the values of ``fs`` (in the workspace, ``/`` its root) and ``host`` (a path of the
machine outside the workspace, as agent hooks place it), normalised alike.

A file has many spellings (``/src//a``, ``/src/./a``, ``/x/../src/a``); a deny written for one
must stop them all, so paths are normalised lexically: ``//`` collapses, ``.`` segments drop,
``..`` removes its parent, a trailing ``/`` drops. A relative path, or a ``..`` that climbs above
``/``, is refused. On a case-insensitive file system (``filesystem case-insensitive``) the OS
also ignores spellings that no lexical rule can undo — Windows drops trailing dots and spaces,
reads ``name::$DATA`` streams and 8.3 short names (``GIT~1``), HFS+ ignores zero-width code
points — so such values are refused, as git's ``core.protectNTFS``/``protectHFS`` refuse them.

Patterns are globs over these paths (:mod:`bgc.core.patterns.glob`): ``/`` separates segments.
A call's need, a template with the call's parameters in it, is normalised as the paths it stands
for will be (:func:`normalise_fs_pattern`).
"""

from __future__ import annotations

import re
import unicodedata

from bgc.core.resources.kind import Rejection, ResourceKind

__all__ = ["FS", "HFS_IGNORED", "HOST", "alias_problem", "normalise_fs_pattern", "plain_path"]

_PLAIN_SEGMENT = r"[\x20-\x2d\x30-\x7e][\x20-\x2e\x30-\x7e]*+"  # printable ASCII, no '/', not empty, no leading '.'

_PLAIN_FS_PATTERN = re.compile(r"(?:/(?!\.\.?(?:/|\Z))[^/\\]+)+")
"""A pattern :func:`normalise_fs_pattern` leaves as it is: ``/`` segments, none empty, ``.`` or
``..``, no escape (so every ``/`` separates and every segment is kept as written)."""
_UNESCAPE = re.compile(r"\\(.)", re.S)
_WILDCARD = re.compile(r"(?<!\\)(?:\\\\)*[*?[]")
_SHORT_NAME = re.compile(r"~[0-9]")
"""An 8.3 short name's tail (``GIT~1``, ``PROGRA~2``): Windows reaches the long name through it."""

HFS_IGNORED = frozenset(
    [0x200C, 0x200D, 0x200E, 0x200F, 0xFEFF, *range(0x202A, 0x202F), *range(0x206A, 0x2070)]
)
"""Code points HFS+ ignores when it compares names (git's ``is_hfs_dotgit`` list): ``.g\\u200cit``
is ``.git`` there."""


def plain_path(value: str) -> bool:
    """Whether ``value`` is an absolute path of printable ASCII with no empty, ``.`` or ``..``
    segment (a dotfile's included): then it is its own canonical form (on a case-sensitive file
    system), and so is every part of it from one of its ``/`` on. A cheap test: a path it
    refuses may be canonical too, and takes :func:`~bgc.core.resources.normalise`."""
    return value.isascii() and value.isprintable() and _PLAIN_FS_PATTERN.fullmatch(value) is not None


def _read_path(value: str, case_insensitive: bool) -> str | Rejection:
    if not case_insensitive and _PLAIN_FS_PATTERN.fullmatch(value):
        return value  # absolute, no empty, '.' or '..' segment: what the reading below returns (a dotfile's path)
    if not value.startswith("/"):
        return Rejection(value, "is a relative path (fs paths must start with '/')")
    stack: list[str] = []
    for seg in value.split("/"):
        if seg == ".." and not stack:
            return Rejection(value, "climbs above '/' with '..'")
        if seg == "..":
            stack.pop()
        elif seg not in ("", "."):
            stack.append(seg)
    if case_insensitive:
        problem = alias_problem(value, stack)
        if problem:
            return Rejection(value, problem)
    return "/" + "/".join(stack)


def alias_problem(value: str, segments: list[str]) -> str | None:
    """Why a case-insensitive (Windows, macOS) file system could read ``value`` as another name.

    Refused by class, not by name: a rule protects ``/.git/**``, but the alias that reaches it
    could be spelt for any protected name, so every name with such a spelling is refused.
    """
    if "\\" in value:
        return "has a '\\', which Windows reads as '/' (filesystem case-insensitive)"
    for seg in segments:
        if seg[-1] in ". ":
            return f"has a segment ending in {seg[-1]!r}, which Windows drops ({seg!r}; filesystem case-insensitive)"
        if ":" in seg:
            return f"has a ':' in {seg!r}: Windows reads it as a drive or a stream (::$DATA) (filesystem case-insensitive)"
        if _SHORT_NAME.search(seg):
            return f"has {seg!r}, which reads as an 8.3 short name (GIT~1) on Windows (filesystem case-insensitive)"
        for ch in seg:
            if ord(ch) in HFS_IGNORED or unicodedata.category(ch) == "Cf":
                return (
                    f"has the invisible code point U+{ord(ch):04X}, which HFS+ ignores in names "
                    "(filesystem case-insensitive)"
                )
    return None


def normalise_fs_pattern(text: str) -> str | Rejection:
    """An fs pattern whose literal segments are normalised as the paths it stands for will be.

    A call's need is a template with the call's parameters escaped in (``{path}/*`` with
    ``path: /src//secret`` is ``/src//secret/*``); the tool touches ``/src/secret/<x>``, so the
    need must be judged as ``/src/secret/*``, or a deny of ``/src/secret/**`` is dodged by
    spelling. Empty and ``.`` segments drop, ``..`` removes the literal segment before it, a
    trailing ``/`` drops. A ``..`` after a wildcard segment is refused: what it climbs out of
    is not known (``/src/**/..`` can be ``/``). Escapes (``\\*``) are kept as written.

    A pattern with no escape and no empty, ``.`` or ``..`` segment (what a call's need almost
    always is) is its own normal form, and is handed back without being read segment by segment.
    """
    if _PLAIN_FS_PATTERN.fullmatch(text):
        return text
    return _read_fs_pattern(text)


def _read_fs_pattern(text: str) -> str | Rejection:
    """:func:`normalise_fs_pattern` without its shortcut for plain patterns: the full reading."""
    stack: list[tuple[str, bool]] = []  # (segment text, is it literal?)
    for seg in _pattern_segments(text)[1:] if text.startswith("/") else [None]:
        if seg is None:
            return Rejection(text, "is a relative path (fs paths must start with '/')")
        bare = _UNESCAPE.sub(r"\1", seg)
        literal = _WILDCARD.search(seg) is None
        if literal and bare in ("", "."):
            continue
        if literal and bare == "..":
            if not stack:
                return Rejection(text, "climbs above '/' with '..'")
            if not stack[-1][1]:
                return Rejection(text, "has a '..' after a wildcard segment: where it leads is not known")
            stack.pop()
            continue
        stack.append((seg, literal))
    return "/" + "/".join(seg for seg, _ in stack)


def _pattern_segments(text: str) -> list[str]:
    """``text`` split at its unescaped ``/`` (an escaped ``\\/`` is a separator too, as in git)."""
    segments, current, index = [], [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] == "/":
                segments.append("".join(current))
                current = []
            else:
                current.append(text[index : index + 2])
            index += 2
            continue
        if char == "/":
            segments.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    segments.append("".join(current))
    return segments


FS = ResourceKind(
    read=_read_path,
    # printable ASCII, absolute, segments that are not empty and do not start with '.' (so none is
    # '.' or '..'), no trailing '/'
    plain=f"(?:/{_PLAIN_SEGMENT})++",
    plain_split=(f"(?:/{_PLAIN_SEGMENT})*/", f"{_PLAIN_SEGMENT}(?:(/){_PLAIN_SEGMENT})*+"),
    plain_when_case_insensitive=False,
)
"""``fs``: a path in the workspace."""

HOST = ResourceKind(read=_read_path)
"""``host``: a path of the machine outside the workspace, read as ``fs`` reads its paths."""
