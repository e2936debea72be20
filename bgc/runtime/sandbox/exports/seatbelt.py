"""A macOS seatbelt profile (SBPL, for ``sandbox-exec -f PROFILE CMD``) of the confinement.

**Untested on a real Mac**: written after the profiles Codex and the sandbox runtime generate
(``(version 1)``, ``(deny default)``, ``file-read*``/``file-write*`` with ``literal`` and
``subpath`` filters, a later rule winning over an earlier one), and checked here only as text.

The profile denies everything, allows the processes of the sandbox itself and a few devices, then
reads of what the confinement shows (the toolchain and the interpreter as the mapping found them,
:data:`MACOS_SYSTEM`, host grants, the project) and writes below the writable directories, and
only then, so that they win, denies reading and writing every masked path and writing every
frozen one and each writable directory itself (it cannot be removed or renamed, as a mount point
cannot). No network rule is written: seatbelt cannot tell one host from another, and bgc's proxy
is not wired on macOS, so a network grant is dropped. Paths are written as the Mac resolves them
(``/tmp`` is ``/private/tmp``); a path with a control character is refused.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bgc.core.plan import Plan
from bgc.runtime.sandbox import mapping
from bgc.runtime.sandbox.exports.common import Dropped, View
from bgc.runtime.sandbox.mapping import SandboxRefused

MACOS_SYSTEM = ("/System", "/Library/Developer/CommandLineTools", "/private/var/db/dyld", "/private/var/db/timezone")
"""What a program needs on macOS besides the toolchain the mapping shows, read-only: the system
frameworks and libraries, the command-line developer tools, the dynamic linker's cache, time
zones."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/dtracehelper")
WRITABLE_DEVICES = ("/dev/null", "/dev/tty", "/dev/dtracehelper")
BASE = """(version 1)
(deny default)

; the sandbox's own processes
(allow process-exec)
(allow process-fork)
(allow process-info* (target same-sandbox))
(allow signal (target same-sandbox))
(allow sysctl-read)
(allow file-ioctl (literal "/dev/tty"))
"""
NOTES = (
    "untested on a real Mac: the profile is checked as text only",
    "no temporary directory is writable (macOS's $TMPDIR is not the plan's); the environment is not part of a profile",
)


def render(view: View, plans: Sequence[Plan]) -> tuple[str, list[Dropped], list[str]]:
    dropped = [Dropped(f"net:connect:{pattern}", "seatbelt cannot tell one host from another") for pattern in view.net]
    shown = [_real(path) for path in view.shown]
    lines = [
        "; Written by `bgc export --target seatbelt`: the plan's sandbox as a seatbelt profile, proven never wider",
        "; than the plan. Untested on a real Mac. Run: sandbox-exec -f THIS_FILE COMMAND",
        BASE,
        _rule("allow", "file-read*", [("literal", d) for d in DEVICES]),
        _rule("allow", "file-write*", [("literal", d) for d in WRITABLE_DEVICES]),
        "",
        "; what the plan lets be read: the toolchain, the system, host grants, the project",
        _rule("allow", "file-read*", [("subpath", p) for p in (*shown, *MACOS_SYSTEM, _real(view.project))]),
        "; what the plan lets be written",
        _rule("allow", "file-read* file-write*", [("subpath", _real(p)) for p in view.written]),
        "",
        "; refusals, after the grants (a later rule wins)",
        _rule("deny", "file-read* file-write*", [(_filter(p), _real(p)) for p in view.masked]),
        _rule("deny", "file-write*", [(_filter(p), _real(p)) for p in view.frozen] + [("literal", _real(p)) for p in view.written]),
    ]
    return "\n".join(line for line in lines if line is not None) + "\n", dropped, list(NOTES)


def _real(path: str) -> str:
    """``path`` as the Mac resolves it (``/tmp`` to ``/private/tmp``), where it exists here."""
    return os.path.realpath(path)


def _filter(path: str) -> str:
    return "subpath" if os.path.isdir(path) and not os.path.islink(path) else "literal"


def _rule(effect: str, operations: str, filters: Sequence[tuple[str, str]]) -> str | None:
    if not filters:
        return None
    parts = "\n".join(f"  ({kind} {_string(path)})" for kind, path in filters)
    return f"({effect} {operations}\n{parts})"


def _string(path: str) -> str:
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):
        raise SandboxRefused(f"{path!r} has a control character a seatbelt profile cannot hold")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise SandboxRefused(f"{path!r} is not text a seatbelt profile can hold") from None
    return json.dumps(path, ensure_ascii=False)


_TOKEN = re.compile(r'\s*(?:(;[^\n]*)|(\()|(\))|("(?:[^"\\]|\\.)*")|([^\s()";]+))')


def parse(text: str) -> list[object]:
    """The profile's forms as nested lists (strings decoded, symbols as ``str``, comments
    dropped): a reader for the text this module writes, for checking it."""
    stack: list[list[object]] = [[]]
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip():
                raise SandboxRefused(f"unreadable profile text at offset {position}")
            break
        position = match.end()
        comment, opening, closing, string, symbol = match.groups()
        if opening:
            stack.append([])
        elif closing:
            if len(stack) == 1:
                raise SandboxRefused("unbalanced ) in the profile")
            form = stack.pop()
            stack[-1].append(form)
        elif string is not None:
            stack[-1].append(("string", json.loads(string)))
        elif symbol is not None:
            stack[-1].append(symbol)
    if len(stack) != 1:
        raise SandboxRefused("unbalanced ( in the profile")
    return stack[0]


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``(allow|deny OPERATION… FILTER…)`` form: its effect, operations and path filters
    (``literal``/``subpath``, a path); ``unknown`` when it has a filter this reader does not
    know (read the wide way: an allow of everything, a deny of nothing)."""

    effect: str
    operations: tuple[str, ...]
    filters: tuple[tuple[str, str], ...]
    unknown: bool = False

    def matches(self, operation: str, path: str) -> bool:
        """Whether the rule decides ``operation`` (``file-read``, ``file-write``) on ``path``,
        read the wide way: an allow of any kind of the operation counts (``file-read-data``), a
        deny only of all of it (``file-read*``, ``file*``, ``default``)."""
        whole = {operation + "*", "file*", "default"}
        if self.effect == "allow":
            relevant = any(op in whole or op.startswith(operation) for op in self.operations)
        else:
            relevant = any(op in whole for op in self.operations)
        if not relevant or (self.unknown and self.effect == "deny"):
            return False
        if self.unknown or not self.filters:
            return True
        return any(path == value if kind == "literal" else mapping.inside(path, value) for kind, value in self.filters)


def rules(text: str) -> list[Rule]:
    """Every allow and deny form of the profile, in order."""
    found = []
    for form in parse(text):
        if not isinstance(form, list) or not form or form[0] not in ("allow", "deny"):
            continue
        operations = tuple(item for item in form[1:] if isinstance(item, str))
        filters, unknown = [], False
        for item in form[1:]:
            if isinstance(item, list):
                if len(item) == 2 and item[0] in ("literal", "subpath") and isinstance(item[1], tuple):
                    filters.append((item[0], item[1][1]))
                else:
                    unknown = True
        found.append(Rule(str(form[0]), operations, tuple(filters), unknown))
    return found


@dataclass(frozen=True, slots=True)
class SeatbeltAccess:
    """The profile as seatbelt applies it: the last rule matching an operation and a path
    decides; none: denied (``(deny default)``)."""

    rules: tuple[Rule, ...]

    def _allowed(self, operation: str, path: str) -> bool:
        for rule in reversed(self.rules):
            if rule.matches(operation, path):
                return rule.effect == "allow"
        return False

    def readable(self, path: str) -> bool:
        return self._allowed("file-read", path)

    def writable(self, path: str) -> bool:
        return self._allowed("file-write", path)

    def write_roots(self) -> Sequence[str]:
        return tuple(path for rule in self.rules if rule.effect == "allow" and any(op.startswith("file-write") for op in rule.operations)
                     for kind, path in rule.filters if kind == "subpath" and self.writable(path + "/new"))  # fmt: skip

    def read_roots(self) -> Sequence[str]:
        return tuple(path for rule in self.rules if rule.effect == "allow" and any(op.startswith("file-read") for op in rule.operations)
                     for kind, path in rule.filters if path not in (*MACOS_SYSTEM, *DEVICES))  # fmt: skip

    def destinations(self) -> Sequence[tuple[str, int | None]]:
        network = any(rule.effect == "allow" and any(op.startswith("network") or op == "default" for op in rule.operations) for rule in self.rules)
        return (("*", None),) if network else ()


def interpret(text: str, project: str) -> SeatbeltAccess:
    return SeatbeltAccess(tuple(rules(text)))
