"""The settings file of Anthropic's sandbox runtime (``srt --settings FILE``; npm
``@anthropic-ai/sandbox-runtime``, whose ``SandboxRuntimeConfigSchema`` it validates against).

Read from the runtime's README and schema (version 0.0.83): ``filesystem.denyRead`` and
``allowRead`` (reads are allowed by default; an ``allowRead`` re-opens a shallower ``denyRead``,
a deeper ``denyRead`` stays denied; ``denyRead: ["/"]`` denies each directory of ``/`` but
``/proc``, ``/dev`` and ``/sys``), ``allowWrite`` and ``denyWrite`` (writes are denied by default;
a deny wins), ``network.allowedDomains`` (``host[:port]``, ``*.`` for every subdomain; a host no
entry names is refused) and ``deniedDomains``. Every path is written as a path, never as a
pattern: an entry with ``*``, ``?``, ``[`` or ``]`` in it is the object ``{"path": …, "literal":
true}``, which the runtime never reads as a pattern (and on Linux ``allowWrite`` takes no pattern
at all, and a ``denyRead`` pattern is expanded once, against what exists).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bgc.core.plan import Plan
from bgc.runtime.sandbox.exports.common import Dropped, RuntimeAccess, View, common_fs, destinations, read_domain, spelled
from bgc.runtime.sandbox.mapping import SandboxRefused

NOTES = (
    "the runtime keeps /tmp/claude and the command's standard streams writable whatever the settings say "
    "(its home-directory log paths are dropped because the home directory is read-denied)",
    "the runtime leaves /dev and /sys readable and mounts its own /proc whatever denyRead says",
    "the environment is passed to the command as the runtime passes it: bgc's own sandbox clears it, an export cannot",
    "a tool the runtime itself needs inside the sandbox (its seccomp helper when it is installed outside /usr) must be shown: --runtime DIR",
)


def render(view: View, plans: Sequence[Plan]) -> tuple[str, list[Dropped], list[str]]:
    found, dropped = destinations(view, plans)
    fs = {key: [_entry(path) for path in paths] for key, paths in common_fs(view).items()}
    document = {
        "filesystem": fs,
        "network": {"allowedDomains": [spelled(host, port) for host, port in found], "deniedDomains": []},
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n", dropped, list(NOTES)


def _entry(path: str) -> str | dict[str, Any]:
    return {"path": path, "literal": True} if any(c in path for c in "*?[]") else path


def interpret(text: str, project: str) -> RuntimeAccess:
    return read_settings(json.loads(text))


def read_settings(document: dict[str, Any]) -> RuntimeAccess:
    """The runtime's reading of a ``filesystem`` and ``network`` pair (also Claude Code's
    ``sandbox``, once its paths are absolute)."""
    fs = document.get("filesystem") or {}
    network = document.get("network") or {}

    literal = set()

    def paths(key: str) -> tuple[str, ...]:
        values = fs.get(key) or []
        if not isinstance(values, list):
            raise SandboxRefused(f"filesystem.{key} is not a list")
        read = []
        for value in values:
            if isinstance(value, dict) and value.get("literal") is True and isinstance(value.get("path"), str):
                literal.add(value["path"])
                read.append(value["path"])
            elif isinstance(value, str):
                read.append(value)
            else:
                raise SandboxRefused(f"a filesystem entry is neither a path nor a literal path: {value!r}")
        return tuple(read)

    allowed = network.get("allowedDomains") or []
    return RuntimeAccess(
        deny_read=paths("denyRead"), allow_read=paths("allowRead"), allow_write=paths("allowWrite"),
        deny_write=paths("denyWrite"), domains=tuple(read_domain(entry) for entry in allowed), literal=frozenset(literal),
    )  # fmt: skip
