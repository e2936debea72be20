"""``bgc init claude-code``: a project's first enforced Claude Code session, in one command.

Writes a starter policy into ``.claude/bgc/`` (``policy.bgp``, which includes the bundled
``base.bgp`` and the Claude Code tool mapping ``claude-code.bgp``, copied beside it) and merges
``bgc hook claude-code`` into ``.claude/settings.json`` as a PreToolUse hook for every tool.

Safe to run again: a file that already holds what would be written is left alone, a policy file
someone edited is kept (and said so), and the hook is added only when no hook runs that command
yet. The settings are read strictly (invalid JSON is refused with its line and column, nothing
written), everything else in them is kept as it was, the old file is saved as
``settings.json.bak``, and the new one is written atomically.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from importlib import resources
from typing import Any

from bgc.errors import ExitCode, UsageError

POLICY_DIR = os.path.join(".claude", "bgc")
SETTINGS = os.path.join(".claude", "settings.json")
POLICY_FILES = {"policy.bgp": "claude-code-starter.bgp", "base.bgp": "base.bgp", "claude-code.bgp": "claude-code.bgp"}
"""What is written into ``.claude/bgc/``, from which bundled policy."""

HOOK_TIMEOUT = 30
"""Seconds Claude Code waits for the hook (it lets the call through when they pass); bgc's own
deadline (20 s) blocks the call before."""


def run(agent: str, *, directory: str = ".") -> ExitCode:
    """Set up ``directory`` (a project) for ``agent``; prints one line per file."""
    from bgc.commands import io

    if agent != "claude-code":
        raise UsageError(f"unknown agent {agent!r} (bgc init: claude-code)")
    if not os.path.isdir(directory):
        raise UsageError(f"{directory!r} is not a directory")
    settings_path = os.path.join(directory, SETTINGS)
    settings, original = _read_settings(settings_path)  # before anything is written
    for line in _write_policies(directory):
        io.write_line(line)
    io.write_line(_merge_hook(settings_path, settings, original))
    io.write_line(_warm(directory))
    return ExitCode.OK


def _warm(directory: str) -> str:
    """Compile the policy once now, so the session's first tool call finds it in the cache."""
    from bgc.calls import policy_decider

    path = os.path.join(directory, POLICY_DIR, "policy.bgp")
    policy_decider(path)  # a policy that does not load is an error here, before any session
    return f"checked {os.path.relpath(path, directory)}: it loads, and is compiled for the hook"


def hook_command() -> str:
    """The command Claude Code runs: this installation's ``bgc``, the policy under the project."""
    beside = os.path.join(os.path.dirname(sys.executable), "bgc")  # this environment's script
    found = beside if os.access(beside, os.X_OK) else shutil.which("bgc")
    bgc = shlex.quote(found) if found else f"{shlex.quote(sys.executable)} -m bgc"
    return f'{bgc} hook claude-code -p "$CLAUDE_PROJECT_DIR/.claude/bgc/policy.bgp"'


def _write_policies(directory: str) -> list[str]:
    from bgc.files import write_atomic

    target_dir = os.path.join(directory, POLICY_DIR)
    os.makedirs(target_dir, exist_ok=True)
    bundled = resources.files("bgc.policies")
    lines = []
    for name, source in POLICY_FILES.items():
        data = (bundled / source).read_bytes()
        path = os.path.join(target_dir, name)
        shown = os.path.relpath(path, directory)
        if os.path.exists(path):
            with open(path, "rb") as handle:
                same = handle.read() == data
            lines.append(f"unchanged {shown}" if same else f"kept {shown} (it differs from bgc's {source}: yours is kept)")
            continue
        write_atomic(path, data)
        lines.append(f"wrote {shown}")
    return lines


def _read_settings(path: str) -> tuple[dict[str, Any], bytes | None]:
    """The settings as data (empty when there is no file) and the file's bytes; a file that is
    not a JSON object with the expected shape is refused, located."""
    if not os.path.exists(path):
        return {}, None
    from bgc.documents import parse_document, read_bytes

    original = read_bytes(path)
    document = parse_document(original, path, "json")
    data = document.data
    if not isinstance(data, dict):
        raise document.error_at((), "expected a JSON object of settings")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise document.error_at(("hooks",), "expected an object of hook events")
    entries = hooks.get("PreToolUse", [])
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise document.error_at(("hooks", "PreToolUse"), "expected a list of matcher objects")
    for index, entry in enumerate(entries):
        if not isinstance(entry.get("hooks", []), list):
            raise document.error_at(("hooks", "PreToolUse", index, "hooks"), "expected a list of hooks")
    return data, original


def _merge_hook(path: str, settings: dict[str, Any], original: bytes | None) -> str:
    import json

    from bgc.files import write_atomic

    command = hook_command()
    entries = settings.setdefault("hooks", {}).setdefault("PreToolUse", [])
    for entry in entries:
        for hook in entry.get("hooks", []):
            if isinstance(hook, dict) and hook.get("command") == command:
                return f"unchanged {SETTINGS} (the hook is already there)"
    entries.append({"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]})
    if original is not None:
        write_atomic(path + ".bak", original)
    write_atomic(path, (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    saved = f" (the previous file is {SETTINGS}.bak)" if original is not None else ""
    return f"added the PreToolUse hook to {SETTINGS}{saved}"
