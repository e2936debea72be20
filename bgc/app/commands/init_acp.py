"""``bgc init zed|jetbrains -p POLICY [-- AGENT…]``: an editor's ACP agents behind ``bgc acp-proxy``.

An editor keeps the ACP agents it starts in one map, ``agent_servers``, of entries ``{"command":
…, "args": […], "env": {…}}``:

- Zed: ``~/.config/zed/settings.json`` (``$XDG_CONFIG_HOME/zed`` when set), custom agents with
  ``"type": "custom"`` (https://zed.dev/docs/ai/external-agents, "Custom Agents"); the file is
  JSON with comments and trailing commas;
- JetBrains IDEs (AI Assistant): ``~/.jetbrains/acp.json``
  (https://www.jetbrains.com/help/ai-assistant/acp.html), the same entries without a type.

Every entry the editor starts as a command becomes ``bgc acp-proxy -p POLICY --store STORE
[--agent AGENT] -- COMMAND ARGS…`` (its name, environment and other fields kept); with ``--
AGENT…`` a new entry ``--name NAME`` runs that agent so. An entry already behind the proxy is left
as it is (running it again changes nothing). An agent the editor installs and starts itself (Zed's
``"type": "registry"`` or ``"extension"``, a built-in agent's settings with no ``command``) cannot
be put behind the proxy: it is listed as UNGUARDED and the exit status is 1.

Never fail open: the entry starts bgc's interpreter, isolated (``-I``), by its absolute path. If it
cannot start, the editor reports the agent failed; if the policy or the store cannot be read, the
proxy starts no agent and answers every request with the reason
(:func:`bgc.adapters.acp.proxy.blocked`). The bare agent never runs in its place. The policy is
compiled before anything is written (a policy that does not load is an error, nothing written); the
file is read strictly (a JSON error is located; comments and trailing commas, which Zed allows,
are read and not written back: the original is kept as ``FILE.bgc-backup``), and written
atomically.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from bgc.errors import ExitCode, InputError, Span, UsageError


@dataclass(frozen=True, slots=True)
class EditorSetup:
    """Where an editor keeps its ACP agents, and how it names a custom one."""

    name: str
    settings: str
    """The file, ``~`` for the home directory."""
    custom_type: str | None
    """The ``type`` of an agent entry that is a command (Zed: ``custom``; None: no type)."""


EDITORS = {
    "zed": EditorSetup("Zed", "~/.config/zed/settings.json", "custom"),
    "jetbrains": EditorSetup("JetBrains AI Assistant", "~/.jetbrains/acp.json", None),
}
COMMAND_TYPES = (None, "custom")
"""The ``type`` of an entry the editor starts as a command."""


def settings_path(editor: str) -> str:
    """The editor's settings file for this user (``~/.config`` is ``$XDG_CONFIG_HOME`` when set)."""
    settings = EDITORS[editor].settings
    config = os.environ.get("XDG_CONFIG_HOME")
    if config and settings.startswith("~/.config/"):
        return os.path.join(config, settings[len("~/.config/") :])
    return os.path.expanduser(settings)


def run(
    editor: str, *, settings: str | None, policy: str, store: str, name: str | None, agent: str | None,
    command: list[str],
) -> tuple[ExitCode, str]:  # fmt: skip
    """Put ``editor``'s ACP agents behind the proxy (and add ``command`` as ``name``); the exit
    code and the summary to print."""
    from bgc.adapters.agents import AGENTS
    from bgc.app.commands.init_mcp import free_backup_name, proxy_command
    from bgc.core.values.files import write_atomic
    from bgc.runtime.calls import compiled_policy

    if editor not in EDITORS:
        raise UsageError(f"unknown editor {editor!r} ({', '.join(EDITORS)})")
    if agent is not None and agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r} (--agent: {', '.join(AGENTS)})")
    if command and not name:
        raise UsageError("--name NAME: the name the editor shows for the agent you add after --")
    if not os.path.isfile(policy):
        raise InputError("no such policy file", Span(policy))
    policy = os.path.abspath(policy)
    compiled_policy(policy)  # a policy that does not load is an error now, before any editor starts it
    path = settings or settings_path(editor)
    data, original, comments = _read(path)
    setup = EDITORS[editor]
    store = store if store == "none" or "://" in store else os.path.abspath(store)
    wrapped = proxy_command(), ["-p", policy, "--store", store, *(["--agent", agent] if agent else [])]
    servers = data.setdefault("agent_servers", {})
    if not isinstance(servers, dict):
        raise InputError("agent_servers is not an object", Span(path))
    lines: list[str] = []
    unguarded = False
    for entry_name, entry in list(servers.items()):
        guarded = _guarded(entry_name, entry, wrapped, path)
        if isinstance(guarded, str):
            lines.append(f"{path}: {entry_name} is UNGUARDED: {guarded}")
            unguarded = True
        elif guarded is None:
            lines.append(f"{path}: {entry_name} already runs through bgc acp-proxy")
        else:
            servers[entry_name] = guarded
            lines.append(f"{path}: {entry_name} now runs through bgc acp-proxy")
    if command:
        assert name is not None
        if name in servers:
            raise UsageError(f"{path} already has an agent named {name!r}: choose another --name")
        entry = {"command": command[0], "args": command[1:], "env": {}}
        servers[name] = {**({"type": setup.custom_type} if setup.custom_type else {}), **_guarded(name, entry, wrapped, path)}  # type: ignore[dict-item]
        lines.append(f"{path}: {name} added, running {' '.join(command)} through bgc acp-proxy")
    changed = data != original
    if changed:
        if os.path.exists(path):
            backup = free_backup_name(path)
            with open(path, "rb") as handle:
                write_atomic(backup, handle.read())
            if comments:
                lines.append(f"{path}: its comments were not written back; the file as it was is {backup}")
        else:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        write_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    if not servers:
        lines.append(f"{path}: no agent server: add one with -- AGENT… and --name NAME")
    return (ExitCode.FINDINGS if unguarded else ExitCode.OK), "\n".join(lines)


def _guarded(name: str, entry: Any, wrapped: tuple[list[str], list[str]], path: str) -> Any:
    """The entry behind the proxy; None when it already is; a string saying why it cannot be."""
    from bgc.app.commands.init_mcp import is_proxied

    if not isinstance(entry, dict):
        raise InputError(f"agent_servers.{name} is not an object", Span(path))
    if entry.get("type") not in COMMAND_TYPES or "command" not in entry:
        return ("the editor installs and starts this agent itself (a registry, extension or built-in agent): "
                "bgc cannot stand before it; add the agent's command with -- AGENT… --name NAME instead")  # fmt: skip
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise InputError(f"agent_servers.{name}: `command` must be a string and `args` a list of strings", Span(path))
    if is_proxied(entry, "acp-proxy"):
        return None
    program, options = wrapped
    return {**entry, "command": program[0], "args": [*program[1:], "acp-proxy", *options, "--", command, *args]}


def _read(path: str) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The settings (an empty object when there is no file), a copy as read, and how many
    comments the file held."""
    from bgc.core.values.documents import decode_utf8, parse_document, read_bytes

    if not os.path.exists(path):
        return {}, {}, 0
    text, comments = json_with_comments(decode_utf8(read_bytes(path), path), path)
    data = parse_document(text.encode("utf-8"), path, "json").data
    if not isinstance(data, dict):
        raise InputError("the settings are not a JSON object", Span(path))
    return data, json.loads(json.dumps(data)), comments


def json_with_comments(text: str, path: str) -> tuple[str, int]:
    """``text`` (JSON with ``//`` and ``/* */`` comments and trailing commas, as Zed reads its
    settings) as plain JSON of the same length: every comment and trailing comma becomes blanks
    (line breaks kept), so a JSON error is located at the line and column of the file itself;
    and the number of comments. A comment never opened inside a string is read as one; an
    unclosed ``/*`` is an error."""
    chars = list(text)
    comments, index, size, in_string = 0, 0, len(text), False
    commas: list[int] = []  # a comma's index, until what follows it is known
    while index < size:
        char = text[index]
        if in_string:
            if char == "\\":
                index += 2
                continue
            in_string = char != '"'
            index += 1
            continue
        if text.startswith("//", index) or text.startswith("/*", index):
            line = text.startswith("//", index)
            end = text.find("\n", index) if line else text.find("*/", index + 2)
            if end < 0 and not line:
                before = text[:index]
                raise InputError("an unclosed /* comment", Span(path, before.count("\n") + 1, index - before.rfind("\n")))
            end = size if end < 0 else end if line else end + 2
            for blank in range(index, end):
                if chars[blank] != "\n":
                    chars[blank] = " "
            comments += 1
            index = end
            continue
        if char in "}]":
            for comma in commas:  # a trailing comma: nothing but blanks and comments after it
                chars[comma] = " "
        if not char.isspace():
            commas = [index] if char == "," else []
        in_string = char == '"'
        index += 1
    return "".join(chars), comments
