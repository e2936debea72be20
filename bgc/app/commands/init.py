"""``bgc init AGENT``: a project's first enforced agent session (Claude Code, Gemini CLI, Codex), in one command.

Writes a starter policy into the agent's directory (``.claude/bgc/``, ``.gemini/bgc/``,
``.codex/bgc/``: ``policy.bgp``, which includes the bundled ``base.bgp`` and the agent's tool
mapping, copied beside it with the ``agents.bgp`` they share) and merges ``bgc hook AGENT`` into
the agent's hook settings as a hook for every tool, as the agent's row in
:data:`bgc.adapters.agents.AGENTS` says. The project's state
directory ``.bgc/`` (the hook's store and ledger, private keys) gets a ``.gitignore`` of ``*``.

Safe to run again: a file that already holds what would be written is left alone, a policy file
someone edited is kept (and said so), and the hook is added only when no hook runs that command
yet (bgc's hook as an earlier ``bgc init`` wrote it, :func:`_earlier_form`, is brought up to date
in place). The settings are read strictly (invalid JSON is refused with its line and column, nothing
written), everything else in them is kept as it was, the old file is saved as ``….bak``, and the
new one is written atomically.
"""

from __future__ import annotations

import os
import shlex
import sys
from importlib import resources
from typing import Any

from bgc.adapters.agents import AGENTS, Agent
from bgc.errors import ExitCode, UsageError

STARTER = "claude-code-starter.bgp"
"""The bundled starter policy; it includes ``claude-code.bgp``, which names another agent's mapping
for that agent (:func:`_starter`)."""
STARTER_INCLUDE = 'include "claude-code.bgp"'

def run(agent: str, *, directory: str = ".") -> ExitCode:
    """Set up ``directory`` (a project) for ``agent``; prints one line per file."""
    from bgc.app.commands import io

    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r} (bgc init: {', '.join(AGENTS)}, mcp)")
    if not os.path.isdir(directory):
        raise UsageError(f"{directory!r} is not a directory")
    check_isolated(directory)
    row = AGENTS[agent]
    setup = row.setup
    settings_path = os.path.join(directory, setup.directory, setup.settings)
    settings, original = _read_settings(settings_path, (setup.event, *(event for event, _ in setup.lifecycle)))
    for line in _write_policies(directory, row):
        io.write_line(line)
    io.write_line(_ignore_state(directory))
    io.write_line(_merge_hook(directory, settings_path, settings, original, agent))
    io.write_line(_warm(directory, row))
    return ExitCode.OK


def _ignore_state(directory: str) -> str:
    """Make the project's state directory (``.bgc/``: the hook's store and ledger, ``bgc key
    new``'s private keys) with its ``.gitignore`` of ``*``, or add that file to one made before;
    a ``.gitignore`` already there is kept as it is."""
    from bgc.core.values.files import STATE_DIRECTORY, STATE_IGNORE, ignore_state, make_directories

    state = os.path.join(directory, STATE_DIRECTORY)
    shown = os.path.join(STATE_DIRECTORY, ".gitignore")
    existed = os.path.lexists(os.path.join(state, ".gitignore"))
    make_directories(state)
    ignore_state(state)
    if not existed:
        return f"wrote {shown} (bgc's state there, private keys too, is never committed)"
    with open(os.path.join(state, ".gitignore"), encoding="utf-8", errors="replace") as handle:
        return f"unchanged {shown}" if handle.read() == STATE_IGNORE else f"kept {shown} (yours)"


def _warm(directory: str, agent: Agent) -> str:
    """Compile the policy once now, so the session's first tool call finds it in the cache."""
    from bgc.runtime.calls import policy_decider

    path = os.path.join(directory, agent.setup.directory, "bgc", "policy.bgp")
    policy_decider(path)  # a policy that does not load is an error here, before any session
    return f"checked {os.path.relpath(path, directory)}: it loads, and is compiled for the hook"


ISOLATED = "-I"
"""How every command ``bgc init`` registers starts Python: isolated from the environment and the
project (no ``PYTHON*`` variables such as ``PYTHONPATH``, no user site directory, neither the
working directory nor a script's on ``sys.path``), so nothing an agent may write in the project
(a ``sitecustomize.py``, a module shadowing one bgc imports, a ``bgc/``) is imported by the
process that decides its calls. The console script pip writes starts Python without it."""

HOOK_ENTRY = "from bgc.app.launch import console; console()"
"""What the hook's interpreter runs (``-c``), rather than ``-m bgc``: :mod:`runpy` imports more
than a call a decision server answers needs."""
EARLIER_ENTRIES = (HOOK_ENTRY, "from bgc.launch import console; console()")
"""What the hook's interpreter ran in the ``-c`` forms earlier versions of ``bgc init`` wrote
(the launcher was ``bgc.launch`` before the package took its layers)."""
EARLIER_FLAGS = ([], ["-P"], [ISOLATED])
"""The interpreter options of the forms earlier versions of ``bgc init`` wrote, and today's."""


def bgc_program() -> list[str]:
    """How a registered command starts bgc (``bgc serve``, ``bgc mcp-proxy``): this environment's
    interpreter, isolated (:data:`ISOLATED`), running the package."""
    return [_interpreter(), ISOLATED, "-m", "bgc"]


def hook_program() -> list[str]:
    """How the hook starts bgc: as :func:`bgc_program`, running :data:`HOOK_ENTRY`."""
    return [_interpreter(), ISOLATED, "-c", HOOK_ENTRY]


def _interpreter() -> str:
    if not os.path.isabs(sys.executable or ""):
        raise UsageError("this Python does not know its own interpreter's path: nothing to register")
    return sys.executable


ISOLATION_PROBE = (
    "import os, sys, bgc\n"
    "from bgc.runtime.isolation import imports_inside\n"
    "print(os.path.dirname(os.path.abspath(bgc.__file__)))\n"
    "print(imports_inside(sys.argv[1]) or '')\n"
)
"""Run by :func:`check_isolated` in the interpreter the registered commands start: which bgc it
imports, and why it would refuse to decide for the project (an empty line: it would not)."""


def check_isolated(directory: str) -> None:
    """:class:`UsageError` unless the registered commands' interpreter (:func:`bgc_program`),
    started as they start it, imports this very bgc and takes no code from inside ``directory``
    (:func:`bgc.runtime.isolation.imports_inside`): a hook that would only refuse every call, or
    that the agent could change, is not registered."""
    import subprocess

    import bgc

    here = os.path.dirname(os.path.abspath(bgc.__file__))
    try:
        probe = subprocess.run(
            [_interpreter(), ISOLATED, "-c", ISOLATION_PROBE, os.path.realpath(directory)], cwd=directory,
            stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UsageError(f"cannot start {sys.executable} {ISOLATED}: {error}") from None
    lines = probe.stdout.decode("utf-8", "replace").splitlines()
    if probe.returncode != 0 or len(lines) != 2:
        raise UsageError(
            f"{sys.executable} {ISOLATED} cannot import bgc (installed for the user or through PYTHONPATH?): "
            "install it in a virtual environment or with pipx, outside the project"
        )
    found, refusal = lines
    if not os.path.exists(found) or not os.path.samefile(found, here):
        raise UsageError(f"{sys.executable} {ISOLATED} imports another bgc ({found}, not {here})")
    if refusal:
        raise UsageError(refusal)


def hook_command(agent: str, directory: str = ".") -> str:
    """The command the agent runs: this installation's bgc (:func:`hook_program`), the policy
    under the project."""
    return f"{shlex.join(hook_program())} {_hook_arguments(agent, directory)}"


def _hook_arguments(agent: str, directory: str) -> str:
    """``hook AGENT -p POLICY``: what every form of the hook command ends with."""
    setup = AGENTS[agent].setup
    policy = f"{setup.directory}/bgc/policy.bgp"
    if setup.project is None:
        where = shlex.quote(os.path.join(os.path.realpath(directory), policy))
    elif setup.project.startswith('"'):
        where = f'"{setup.project[1:-1]}/{policy}"'
    else:
        where = f"{setup.project}/{policy}"
    return f"hook {agent} -p {where}"


def _earlier_form(command: object, arguments: str) -> bool:
    """Whether ``command`` is bgc's hook (or lifecycle command) with these arguments as an earlier
    ``bgc init`` wrote it: a ``bgc`` console script's absolute path (:func:`_bgc_script`),
    ``python [-P|-I] -m bgc`` or ``python -P|-I -c ENTRY`` (:data:`EARLIER_ENTRIES`, another
    installation's interpreter too) before them, and nothing else. Any other program named
    ``bgc`` (a wrapper of the user's at another path, which may set up what bgc runs with) is
    theirs: kept as it is, today's command added beside it."""
    if not isinstance(command, str) or not command.endswith(arguments):
        return False
    program = command[: -len(arguments)]
    try:
        words = shlex.split(program)
    except ValueError:
        return False
    if len(words) in (3, 4) and words[1:-2] in EARLIER_FLAGS and words[-2:] == ["-m", "bgc"]:
        return True
    if len(words) == 4 and words[1:2] in EARLIER_FLAGS[1:] and words[2] == "-c" and words[3] in EARLIER_ENTRIES:
        return True
    return len(words) == 1 and os.path.isabs(words[0]) and os.path.basename(words[0]) == "bgc" and _bgc_script(words[0])


def _bgc_script(path: str) -> bool:
    """Whether ``path`` is a console script pip wrote for bgc (it imports bgc's entry point), or
    nothing any more (an installation since removed: a hook through it can only fail)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return any(b"\nfrom " + module + b" import " in head for module in SCRIPT_MODULES)


SCRIPT_MODULES = (b"bgc.app.launch", b"bgc.app.cli", b"bgc.launch", b"bgc.cli")
"""The modules a console script pip wrote for bgc imports its entry point from, today's and
earlier versions' (before the package took its layers)."""


def serve_command(agent: str, option: str, directory: str = ".") -> str:
    """The command that starts (``--detach``) or stops (``--stop``) the project's decision server."""
    return f"{shlex.join(bgc_program())} {_serve_arguments(agent, option, directory)}"


def _serve_arguments(agent: str, option: str, directory: str) -> str:
    """``serve OPTION --quiet --dir PROJECT``: what every form of a lifecycle command ends with."""
    setup = AGENTS[agent].setup
    where = shlex.quote(os.path.realpath(directory)) if setup.project is None else setup.project
    return f"serve {option} --quiet --dir {where}"


CASE_INSENSITIVE = (
    "\n# this project's file system is case-insensitive (`bgc init` found it so): deny and ask rules\n"
    "# also catch /.ENV, /.Git/config\nfilesystem case-insensitive\n"
)
"""Added after the starter's includes on a case-insensitive file system (macOS, Windows), where
``/.ENV`` opens ``/.env``: without it, ``deny fs:*:/**/.env`` would not stop that read."""


def _starter(agent: Agent, case_insensitive: bool = False) -> bytes:
    """The starter policy for an agent: the bundled one, including that agent's tool mapping,
    declaring a case-insensitive file system when the project's is one."""
    text = (resources.files("bgc.policies") / STARTER).read_text(encoding="utf-8")
    include = f'include "{agent.mapping}"'
    return text.replace(STARTER_INCLUDE, include + (CASE_INSENSITIVE if case_insensitive else ""), 1).encode("utf-8")


def case_insensitive(directory: str) -> bool:
    """Whether file names in ``directory`` are case-insensitive: a new file is found by its
    name's other case. When that cannot be found out, it is taken as case-insensitive (a
    declaration that only makes deny and ask rules stricter)."""
    import tempfile

    try:
        handle, path = tempfile.mkstemp(prefix="bgc-case-probe-", dir=directory)
    except OSError:
        return True
    try:
        os.close(handle)
        folder, name = os.path.split(path)
        return os.path.exists(os.path.join(folder, name.swapcase()))
    finally:
        os.unlink(path)


def _write_policies(directory: str, agent: Agent) -> list[str]:
    from bgc.core.values.files import write_atomic

    target_dir = os.path.join(directory, agent.setup.directory, "bgc")
    os.makedirs(target_dir, exist_ok=True)
    bundled = resources.files("bgc.policies")
    files = {"policy.bgp": None, "base.bgp": "base.bgp", agent.mapping: agent.mapping, "agents.bgp": "agents.bgp"}
    lines = []
    for name, source in files.items():
        data = _starter(agent, case_insensitive(target_dir)) if source is None else (bundled / source).read_bytes()
        source = source or STARTER
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


def _read_settings(path: str, events: tuple[str, ...]) -> tuple[dict[str, Any], bytes | None]:
    """The settings as data (empty when there is no file) and the file's bytes; a file that is
    not a JSON object with the expected shape is refused, located."""
    if not os.path.exists(path):
        return {}, None
    from bgc.core.values.documents import parse_document, read_bytes

    original = read_bytes(path)
    document = parse_document(original, path, "json")
    data = document.data
    if not isinstance(data, dict):
        raise document.error_at((), "expected a JSON object of settings")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise document.error_at(("hooks",), "expected an object of hook events")
    for event in events:
        entries = hooks.get(event, [])
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            raise document.error_at(("hooks", event), "expected a list of matcher objects")
        for index, entry in enumerate(entries):
            if not isinstance(entry.get("hooks", []), list):
                raise document.error_at(("hooks", event, index, "hooks"), "expected a list of hooks")
    return data, original


def _merge_hook(directory: str, path: str, settings: dict[str, Any], original: bytes | None, agent: str) -> str:
    import json

    from bgc.core.values.files import write_atomic

    setup = AGENTS[agent].setup
    shown = os.path.join(setup.directory, setup.settings)
    wanted = [(setup.event, {"matcher": "*"}, hook_command(agent, directory), _hook_arguments(agent, directory), setup.timeout)]
    wanted += [
        (event, {}, serve_command(agent, option, directory), _serve_arguments(agent, option, directory), setup.timeout)
        for event, option in setup.lifecycle
    ]
    added, updated = [], []
    for event, matcher, command, arguments, timeout in wanted:
        entries = settings.setdefault("hooks", {}).setdefault(event, [])
        hooks = [hook for entry in entries if isinstance(entry, dict) for hook in entry.get("hooks", []) if isinstance(hook, dict)]
        present = any(hook.get("command") == command for hook in hooks)
        if not present:  # bgc's command as an earlier bgc wrote it (not isolated, the script): now this one
            for hook in hooks:
                if _earlier_form(hook.get("command"), f" {arguments}"):  # the first only: two would run it twice
                    hook["command"], present = command, True
                    updated.append(event)
                    break
        if not present:
            entries.append({**matcher, "hooks": [{"type": "command", "command": command, "timeout": timeout}]})
            added.append(event)
    if not added and not updated:
        return f"unchanged {shown} (the hook{'s are' if len(wanted) > 1 else ' is'} already there)"
    if original is not None:
        write_atomic(path + ".bak", original)
    write_atomic(path, (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    saved = f" (the previous file is {shown}.bak)" if original is not None else ""
    said = []
    for verb, events, where in (("added", added, "to"), ("updated", updated, "in")):
        if events:
            named = " and ".join(", ".join(events).rsplit(", ", 1))
            said.append(f"{verb} the {named} hook{'s' if len(events) > 1 else ''} {where} {shown}")
    return " and ".join(said) + saved
