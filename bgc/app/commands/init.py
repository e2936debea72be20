"""``bgc init AGENT``: a project's first enforced agent session (Claude Code, Gemini CLI, Codex), in one command.

Writes a starter policy into the agent's directory (``.claude/bgc/``, ``.gemini/bgc/``,
``.codex/bgc/``: ``policy.bgp``, which includes the bundled ``base.bgp`` and the agent's tool
mapping, copied beside it with the ``agents.bgp`` they share) and merges ``bgc hook AGENT`` into
the agent's hook settings as a hook for every tool, as the agent's row in
:data:`bgc.adapters.agents.AGENTS` says. The project's state
directory ``.bgc/`` (the hook's store and ledger, private keys) gets a ``.gitignore`` of ``*``.

Where the hooks go, and how they start bgc (:mod:`bgc.app.commands.launcher`: never an exit code
the agent would let a call through on): by default into the agent's settings of one's own
(Claude Code's ``settings.local.json``), starting this machine's interpreter by its path; with
``team`` (``--team``), or for an agent with no such file, into the settings a team commits, in a
form with nothing of this machine in it (the ``bgc`` on the agent's ``PATH``). bgc's hooks in a
machine's form found in the team's file are moved out of it (they would exit 127 on every other
machine); in the default mode, the team's own bgc hooks are left as they are and none is added
beside them (every call would be decided twice); with ``team``, bgc's hooks in the file of one's
own are removed for the same reason.

Safe to run again: a file that already holds what would be written is left alone, a policy file
someone edited is kept (and said so), and a hook is added only when no hook runs that command
yet (bgc's hook as an earlier ``bgc init`` wrote it, :func:`registered_form`, is brought up to
date in place). The settings are read strictly (invalid JSON is refused with its line and column,
nothing written), everything else in them is kept as it was, the old file is saved as ``….bak``,
and the new one is written atomically.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from bgc.adapters.agents import AGENTS, Agent
from bgc.app.commands import launcher
from bgc.errors import ExitCode, UsageError

STARTER = "claude-code-starter.bgp"
"""The bundled starter policy; it includes ``claude-code.bgp``, which names another agent's mapping
for that agent (:func:`_starter`)."""
STARTER_INCLUDE = 'include "claude-code.bgp"'


def run(agent: str, *, directory: str = ".", team: bool = False) -> ExitCode:
    """Set up ``directory`` (a project) for ``agent``; prints one line per file. ``team``: the
    hooks go into the settings the team commits, in the form every machine runs."""
    from bgc.app.commands import io

    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r} (bgc init: {', '.join(AGENTS)}, mcp)")
    if not os.path.isdir(directory):
        raise UsageError(f"{directory!r} is not a directory")
    check_isolated(directory)
    row = AGENTS[agent]
    registration = Registration.of(directory, row, team)
    for line in _write_policies(directory, row):
        io.write_line(line)
    io.write_line(_ignore_state(directory))
    for line in registration.merge():
        io.write_line(line)
    io.write_line(_warm(directory, row))
    if registration.program is None:
        io.write_line(_from_path_here(directory))
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

HOOK_ENTRY = launcher.ENTRY
EARLIER_ENTRIES = (HOOK_ENTRY, "from bgc.launch import console; console()")
"""What the hook's interpreter ran in the ``-c`` forms earlier versions of ``bgc init`` wrote
(the launcher was ``bgc.launch`` before the package took its layers)."""
EARLIER_FLAGS = ([], ["-P"], [ISOLATED])
"""The interpreter options of the forms earlier versions of ``bgc init`` wrote."""


def bgc_program() -> list[str]:
    """How bgc starts itself again (``bgc serve --detach``'s server): this environment's
    interpreter, isolated (:data:`ISOLATED`), running the package."""
    return [interpreter(), ISOLATED, "-m", "bgc"]


def interpreter() -> str:
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
    """:class:`UsageError` unless the registered commands' interpreter (:func:`interpreter`),
    started as they start it, imports this very bgc and takes no code from inside ``directory``
    (:func:`bgc.runtime.isolation.imports_inside`): a hook that would only refuse every call, or
    that the agent could change, is not registered."""
    import subprocess

    import bgc

    here = os.path.dirname(os.path.abspath(bgc.__file__))
    try:
        probe = subprocess.run(
            [interpreter(), ISOLATED, "-c", ISOLATION_PROBE, os.path.realpath(directory)], cwd=directory,
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


def _from_path_here(directory: str) -> str:
    """What the commands that find bgc on ``PATH`` do on this machine, found by running the
    launcher as they run it (``bgc --version``, in the project): the bgc they start, or a warning
    with the launcher's own message (every call would be blocked here)."""
    import subprocess

    argv = [*launcher.words(None), "--version"]
    try:
        done = subprocess.run(argv, cwd=directory, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"warning: the hooks could not be tried here ({error})"
    said = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode == 0 and said.startswith("bgc "):
        return f"the hooks find {said} on PATH here"
    why = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"warning: on this machine the hooks block every call until bgc is on PATH: {why[-1] if why else said}"


def _project_word(agent: Agent) -> str:
    """The project directory as the registered commands write it (the agent's variable, or
    ``.``: the agent runs hooks in the project and names it no other way)."""
    return agent.setup.project or "."


def hook_command(agent: str, program: str | None) -> str:
    """The command the agent runs before a tool call: the launcher starting ``program`` (an
    interpreter's path; None: the bgc on ``PATH``, for the team's settings), the policy under the
    project."""
    return launcher.command(program, _project_word(AGENTS[agent]), _hook_arguments(agent))


def _hook_arguments(agent: str) -> str:
    """``hook AGENT -p POLICY``: the policy under the project, however the agent names it."""
    setup = AGENTS[agent].setup
    policy = f"{setup.directory}/bgc/policy.bgp"
    if setup.project is None:
        return f"hook {agent} -p {policy}"  # the hook runs in the project: relative to it
    if setup.project.startswith('"'):
        return f'hook {agent} -p "{setup.project[1:-1]}/{policy}"'
    return f"hook {agent} -p {setup.project}/{policy}"


def serve_command(agent: str, option: str, program: str | None) -> str:
    """The command that starts (``--detach``) or stops (``--stop``) the project's decision server
    (``program`` as :func:`hook_command`'s)."""
    return launcher.command(program, _project_word(AGENTS[agent]), _serve_arguments(agent, option))


def _serve_arguments(agent: str, option: str) -> str:
    """``serve OPTION --quiet --dir PROJECT``."""
    return f"serve {option} --quiet --dir {_project_word(AGENTS[agent])}"


def registered_form(command: object, arguments: list[str], agent: Agent) -> str | None:
    """Whether ``command`` is bgc's hook (or lifecycle command) with ``arguments`` (as words), in
    which form: ``"shared"`` (the launcher finding bgc on ``PATH``: what a team's settings hold),
    ``"machine"`` (anything naming one machine's bgc: the launcher with an interpreter's path, an
    earlier ``bgc init``'s ``python [-P|-I] -m bgc`` or ``python -P|-I -c ENTRY``, or a ``bgc``
    console script's absolute path, :func:`_bgc_script`), or None: not bgc's. The policy or
    project an earlier form named by an absolute path (Codex's, before the launcher) counts as
    the same arguments. Any other program named ``bgc`` (a wrapper of the user's at another path,
    which may set up what bgc runs with) is theirs: kept as it is."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    started = launcher.parse(words)
    if started is not None:
        program, rest = started
        if not _same_arguments(rest, arguments, agent):
            return None
        return "shared" if program is None else "machine"
    for size in (1, 3, 4):
        program, rest = words[:size], words[size:]
        if _same_arguments(rest, arguments, agent) and _earlier_program(program):
            return "machine"
    return None


def _same_arguments(rest: list[str], arguments: list[str], agent: Agent) -> bool:
    """``rest`` is ``arguments``, or differs only in the policy or project named by an absolute
    path (the form Codex's hooks had before they named the project ``.``)."""
    if len(rest) != len(arguments) or not rest:
        return False
    policy = f"/{agent.setup.directory}/bgc/policy.bgp"
    for given, wanted in zip(rest[:-1], arguments[:-1]):
        if given != wanted:
            return False
    last, wanted = rest[-1], arguments[-1]
    return last == wanted or (last.startswith("/") and (wanted.endswith(policy[1:]) == last.endswith(policy)))


def _earlier_program(program: list[str]) -> bool:
    """Whether ``program`` started bgc in a form an earlier ``bgc init`` wrote."""
    if len(program) in (3, 4) and program[1:-2] in EARLIER_FLAGS and program[-2:] == ["-m", "bgc"]:
        return True
    if len(program) == 4 and program[1:2] in EARLIER_FLAGS[1:] and program[2] == "-c" and program[3] in EARLIER_ENTRIES:
        return True
    return len(program) == 1 and os.path.isabs(program[0]) and os.path.basename(program[0]) == "bgc" and _bgc_script(program[0])


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


CASE_INSENSITIVE = (
    "\n# this project's file system is case-insensitive (`bgc init` found it so): deny and ask rules\n"
    "# also catch /.ENV, /.Git/config\nfilesystem case-insensitive\n"
)
"""Added after the starter's includes on a case-insensitive file system (macOS, Windows), where
``/.ENV`` opens ``/.env``: without it, ``deny fs:*:/**/.env`` would not stop that read."""


def _starter(agent: Agent, case_insensitive: bool = False, approver: Approver | None = None) -> bytes:
    """The starter policy for an agent: the bundled one, including that agent's tool mapping,
    declaring a case-insensitive file system when the project's is one, and trusting the user's
    own key to answer asks (``approver``) when there is one."""
    text = (resources.files("bgc.policies") / STARTER).read_text(encoding="utf-8")
    include = f'include "{agent.mapping}"'
    text = text.replace(STARTER_INCLUDE, include + (CASE_INSENSITIVE if case_insensitive else ""), 1)
    if approver is not None:
        text += (f"\n# you, answering what asks with `bgc approve REQUEST --key {approver.private}` (bgc init made\n"
                 f"# the key outside the project, where the agent reads nothing)\ntrust approver {approver.name} {approver.public}\n")  # fmt: skip
    return text.encode("utf-8")


@dataclass(frozen=True)
class Approver:
    """The user's own approver key: its name, public key text and private key's path."""

    name: str
    public: str
    private: str


def key_directory() -> str:
    """Where the user's own keys live: ``$XDG_CONFIG_HOME/bgc/keys``, else ``~/.config/bgc/keys``:
    outside every project, so no agent's grant of its project reaches them."""
    return os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config"), "bgc", "keys")


def user_approver() -> Approver | None:
    """The user's approver key, made on first use (``NAME.key``, mode 600, in
    :func:`key_directory`, NAME the login name); None when there is no home to keep it in."""
    import getpass
    import re

    from bgc.runtime.kernel.keys import key_paths, load_public, new_key

    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "me"
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", login).lstrip(".-")[:64] or "me"
    directory = key_directory()
    if not os.path.isabs(directory):
        return None
    private, _ = key_paths(name, directory)
    if not private.exists():
        os.makedirs(directory, mode=0o700, exist_ok=True)
        new_key(name, directory)
    return Approver(name, load_public(str(private)).text, str(private))


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
    approver = user_approver()
    lines = []
    for name, source in files.items():
        data = _starter(agent, case_insensitive(target_dir), approver) if source is None else (bundled / source).read_bytes()
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
        if source == STARTER and approver is not None:
            lines.append(f"  trusting you as approver {approver.name}: answer an ask the agent cannot put to you (Codex) "
                         f"with bgc approve REQUEST --key {approver.private}")  # fmt: skip
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


@dataclass
class Settings:
    """One of the agent's settings files, read (:func:`_read_settings`) and changed in memory."""

    path: str
    shown: str
    data: dict[str, Any]
    original: bytes | None
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, directory: str, agent: Agent, name: str) -> Settings:
        setup = agent.setup
        path = os.path.join(directory, setup.directory, name)
        data, original = _read_settings(path, (setup.event, *(event for event, _ in setup.lifecycle)))
        return cls(path, f"{setup.directory}/{name}", data, original)

    def entries(self, event: str) -> list[Any]:
        return self.data.get("hooks", {}).get(event, [])

    def hooks(self, event: str) -> list[dict[str, Any]]:
        return [hook for entry in self.entries(event) if isinstance(entry, dict) for hook in entry.get("hooks", [])
                if isinstance(hook, dict)]  # fmt: skip

    def remove(self, event: str, doomed: Any) -> None:
        """Take out the hooks ``doomed(command)`` says are to go, and an entry left with none."""
        entries = self.entries(event)
        kept = []
        for entry in entries:
            hooks = entry.get("hooks", []) if isinstance(entry, dict) else None
            if not hooks:
                kept.append(entry)
                continue
            left = [hook for hook in hooks if not (isinstance(hook, dict) and doomed(hook.get("command")))]
            if len(left) < len(hooks):
                if event not in self.removed:
                    self.removed.append(event)
                if not left:
                    continue
                entry["hooks"] = left
            kept.append(entry)
        if self.removed and entries:
            self.data["hooks"][event] = kept

    def save(self) -> str | None:
        """Write the file when something changed (the previous one kept as ``….bak``); what was done."""
        import json

        from bgc.core.values.files import write_atomic

        if not (self.added or self.updated or self.removed):
            return None
        if self.original is not None:
            write_atomic(self.path + ".bak", self.original)
        write_atomic(self.path, (json.dumps(self.data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        said = []
        for verb, events, where in (("added", self.added, "to"), ("updated", self.updated, "in"), ("removed", self.removed, "from")):
            if events:
                named = " and ".join(", ".join(events).rsplit(", ", 1))
                said.append(f"{verb} the {named} hook{'s' if len(events) > 1 else ''} {where} {self.shown}")
        saved = f" (the previous file is {self.shown}.bak)" if self.original is not None else ""
        return " and ".join(said) + saved


@dataclass
class Registration:
    """Where ``bgc init`` puts an agent's hooks and how they start bgc (the module docstring)."""

    agent: Agent
    directory: str
    program: str | None
    """The interpreter's path, or None: the bgc on ``PATH`` (the team's settings)."""
    target: Settings
    other: Settings | None
    """The agent's other settings file, where bgc's hooks in the wrong form are taken out."""

    @classmethod
    def of(cls, directory: str, agent: Agent, team: bool) -> Registration:
        setup = agent.setup
        shared = Settings.read(directory, agent, setup.settings)
        if setup.local is None:
            return cls(agent, directory, None, shared, None)
        local = Settings.read(directory, agent, setup.local)
        if team:
            return cls(agent, directory, None, shared, local)
        return cls(agent, directory, interpreter(), local, shared)

    def wanted(self) -> list[tuple[str, dict[str, Any], str, str]]:
        """``(event, matcher, command, arguments)`` of each hook to register."""
        name, setup = self.agent.name, self.agent.setup
        hooks = [(setup.event, {"matcher": "*"}, hook_command(name, self.program), _hook_arguments(name))]
        hooks += [(event, {}, serve_command(name, option, self.program), _serve_arguments(name, option))
                  for event, option in setup.lifecycle]  # fmt: skip
        return hooks

    def merge(self) -> list[str]:
        """Register the hooks; one line per settings file changed."""
        kept = []
        for event, matcher, command, arguments in self.wanted():
            words = shlex.split(arguments)
            if self.other is not None and self.program is None:
                # --team: bgc's hooks of one's own would decide every call a second time
                self.other.remove(event, lambda found: self._form(found, words) is not None)
            elif self.other is not None:
                # a machine's form in the team's file exits 127 on every other machine
                self.other.remove(event, lambda found: self._form(found, words) == "machine")
                if any(self._form(hook.get("command"), words) == "shared" for hook in self.other.hooks(event)):
                    self.target.remove(event, lambda found: self._form(found, words) is not None)
                    kept.append(event)  # the team's own hook runs bgc already: once per call is enough
                    continue
            self._place(event, matcher, command, words)
        lines = [line for line in (self.target.save(), self.other.save() if self.other else None) if line]
        if kept and self.other is not None:
            named = " and ".join(", ".join(kept).rsplit(", ", 1))
            lines.append(f"kept the team's {named} hook{'s' if len(kept) > 1 else ''} in {self.other.shown}: "
                         "they run the bgc on PATH, so none is added here")  # fmt: skip
        if not lines:
            count = len(self.wanted())
            return [f"unchanged {self.target.shown} (the hook{'s are' if count > 1 else ' is'} already there)"]
        return lines

    def _form(self, command: object, words: list[str]) -> str | None:
        return registered_form(command, words, self.agent)

    def _place(self, event: str, matcher: dict[str, Any], command: str, words: list[str]) -> None:
        """Today's ``command`` for ``event`` in the target file: already there, or in the place of
        the first of bgc's hooks in another form (two would run it twice), or added."""
        target = self.target
        hooks = target.hooks(event)
        if any(hook.get("command") == command for hook in hooks):
            return
        for hook in hooks:
            if self._form(hook.get("command"), words) is not None:
                hook["command"] = command
                target.updated.append(event)
                return
        target.data.setdefault("hooks", {}).setdefault(event, []).append(
            {**matcher, "hooks": [{"type": "command", "command": command, "timeout": self.agent.setup.timeout}]}
        )
        target.added.append(event)
