"""Claude Code's ``sandbox`` settings (the ``sandbox`` key of ``.claude/settings.json``).

The keys are those of the settings type Claude Code's Agent SDK publishes (npm
``@anthropic-ai/claude-agent-sdk``, ``Settings["sandbox"]`` in ``sdk.d.ts``; no JSON schema of
the settings is published on npm): ``enabled``, ``failIfUnavailable`` (without it a machine that
cannot sandbox runs commands unconfined), ``allowUnsandboxedCommands`` (false: the
``dangerouslyDisableSandbox`` escape is ignored), ``filesystem.allowWrite``/``denyWrite``/
``denyRead``/``allowRead`` and ``network.allowedDomains``/``strictAllowlist``. Claude Code hands
the lists to the sandbox runtime (:mod:`~bgc.runtime.sandbox.exports.sandbox_runtime`), so they
are the same lists, with two differences:

* every path is written ``//`` + the absolute path: absolute under every reading Claude Code has
  given a ``sandbox.filesystem`` path (earlier versions read ``/path`` relative to the settings
  file, ``//path`` from the root), and a double slash is the root to the file system. The lists
  are strings only, so a name the runtime would read as a pattern (``*``, ``?``, ``[``, ``]``)
  cannot be written: such a grant is dropped, and such a refusal refuses the export;
* Claude Code always lets its working directory be written. A plan that does not grant writing
  the whole project is exported with the project in ``denyWrite``, and a deny wins: the granted
  directories below it are dropped, and reported.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bgc.core.plan import Plan
from bgc.runtime.sandbox.exports.common import Dropped, RuntimeAccess, View, common_fs, destinations, spelled
from bgc.runtime.sandbox.exports.sandbox_runtime import read_settings
from bgc.runtime.sandbox.mapping import SandboxRefused

NOTES = (
    "Claude Code lets its own temporary directory be written whatever the settings say",
    "Claude Code merges sandbox lists across its settings files and adds Edit(...) allow rules to allowWrite and "
    "excludedCommands run unconfined: what another settings file adds is not checked here",
    "strictAllowlist is honoured from user, managed or --settings settings only: in project settings a host no entry "
    "names is asked about, not refused",
    "the environment is passed to commands as Claude Code passes it: bgc's own sandbox clears it, an export cannot",
)


def render(view: View, plans: Sequence[Plan]) -> tuple[str, list[Dropped], list[str]]:
    found, dropped = destinations(view, plans)
    lists = common_fs(view)
    if view.project not in view.written:
        lists["denyWrite"] = [view.project, *(p for p in lists["denyWrite"] if not view.in_project(p))]
        for path in [p for p in lists["allowWrite"] if view.in_project(p)]:
            lists["allowWrite"].remove(path)
            dropped.append(Dropped(f"write {path}", "Claude Code always lets its working directory be written, so the "
                                   "project is denied writing, and a deny wins over every allow below it"))  # fmt: skip
    for key in ("denyRead", "denyWrite"):
        refused = [p for p in lists[key] if _pattern(p)]
        if refused:
            raise SandboxRefused(f"{refused[0]} cannot be refused in Claude Code's settings: a name with * ? [ or ] is read as a pattern")
    for key in ("allowRead", "allowWrite"):
        for path in [p for p in lists[key] if _pattern(p)]:
            lists[key].remove(path)
            dropped.append(Dropped(f"{'write' if key == 'allowWrite' else 'read'} {path}", "a name with * ? [ or ] is read as a pattern"))
    sandbox = {
        "enabled": True,
        "failIfUnavailable": True,
        "allowUnsandboxedCommands": False,
        "filesystem": {key: ["/" + path for path in paths] for key, paths in lists.items()},
        "network": {"allowedDomains": [spelled(host, port) for host, port in found], "strictAllowlist": True},
    }
    return json.dumps({"sandbox": sandbox}, indent=2, ensure_ascii=False) + "\n", dropped, list(NOTES)


def _pattern(path: str) -> bool:
    return any(c in path for c in "*?[]")


def interpret(text: str, project: str) -> RuntimeAccess:
    """The ``sandbox`` key as Claude Code applies it: ``//path`` is ``/path``, any other spelling
    is unknown (read the wide way), and the working directory (the project) is always writable."""
    sandbox: dict[str, Any] = json.loads(text)["sandbox"]
    fs = {key: [_absolute(path) for path in paths] for key, paths in (sandbox.get("filesystem") or {}).items()}
    fs["allowWrite"] = [*fs.get("allowWrite", []), project]
    if sandbox.get("enabled") is not True or sandbox.get("failIfUnavailable") is not True or sandbox.get("allowUnsandboxedCommands") is not False:
        raise SandboxRefused("the settings let commands run unconfined")
    return read_settings({"filesystem": fs, "network": sandbox.get("network") or {}})


def _absolute(path: str) -> str:
    if path.startswith("//") and not path.startswith("///"):
        return path[1:]
    return "?" + path  # not a path bgc writes: unknown

