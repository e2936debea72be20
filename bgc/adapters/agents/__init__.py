"""The agents whose hooks bgc answers, one row each in :data:`AGENTS`.

Adding an agent is three things: its adapter module here (its hook protocol read and answered,
:mod:`bgc.adapters.agents.protocol`), one :class:`Agent` row below, and its mapping policy under
``policies/`` (the tool declarations of its built-in tools, which ``bgc init`` copies beside the
starter). The command line's choices (:mod:`bgc.app.cli`), ``bgc init`` (:mod:`bgc.app.commands.init`),
the hook (:mod:`bgc.adapters.agents.hook`) and the hook's client (:mod:`bgc.adapters.agents.client`)
all read the row.

The client reads this module before anything else on a hook the decision server answers, so a
row is a plain class (no :mod:`typing`, :mod:`dataclasses` or :mod:`collections` to import) and
an adapter is imported only when a hook decides in this process.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is never imported on a served hook's path (it brings re): annotations only
if TYPE_CHECKING:
    from collections.abc import Callable

    from bgc.adapters.agents.protocol import Adapter


class Setup:
    """Where an agent keeps its hooks and how it runs one: what ``bgc init AGENT`` writes (each
    agent's hooks reference is cited in its adapter module)."""

    __slots__ = ("directory", "event", "lifecycle", "local", "project", "settings", "timeout")

    def __init__(
        self, directory: str, settings: str, event: str, timeout: int, project: str | None,
        lifecycle: tuple[tuple[str, str], ...] = (), local: str | None = None,
    ) -> None:  # fmt: skip
        self.directory = directory
        """The agent's directory in a project; the policy goes into its ``bgc/``."""
        self.settings = settings
        """The settings file in that directory a team commits: whose ``hooks`` get the hooks with
        ``bgc init --team`` (or always, when the agent has no settings of one's own)."""
        self.local = local
        """The settings file in that directory that is one person's, on one machine, which the
        agent merges with :attr:`settings` (Claude Code's ``settings.local.json``), where the
        hooks go by default; None when the agent has none."""
        self.event = event
        """The event that fires before every tool call."""
        self.timeout = timeout
        """The hook's timeout, in the agent's unit."""
        self.project = project
        """How the hook command names the project directory (None: the agent names none, and runs
        its hooks in the session's working directory, which is taken as the project: ``.``)."""
        self.lifecycle = lifecycle
        """``(event, bgc serve option)``: the session events that start and stop the project's
        decision server (``bgc serve``), where the agent has them."""


class Agent:
    """One agent bgc speaks to through its hooks."""

    __slots__ = ("adapter", "mapping", "name", "project_env", "setup")

    def __init__(
        self, name: str, adapter: Callable[[], Adapter], project_env: tuple[str, ...], mapping: str, setup: Setup
    ) -> None:
        self.name = name
        """What ``bgc hook`` and ``bgc init`` call it (``claude-code``)."""
        self.adapter = adapter
        """Its hook protocol (imported when called: a hook the server answers never needs it)."""
        self.project_env = project_env
        """Environment variables the agent sets to the project directory, first found wins (else
        the hook input's ``cwd`` is the project, and the working directory names its server)."""
        self.mapping = mapping
        """Its bundled mapping policy (``policies/``): its tools as bgc's resources."""
        self.setup = setup
        """What ``bgc init`` writes for it."""


HOOK_TIMEOUT = 30
"""Seconds the agent waits for the hook (every agent here lets the call through when they pass);
bgc's own deadline (:data:`bgc.adapters.agents.client.DEFAULT_TIMEOUT`) blocks the call before."""


def _claude_code() -> Adapter:
    from bgc.adapters.agents.claude_code import ADAPTER

    return ADAPTER


def _gemini_cli() -> Adapter:
    from bgc.adapters.agents.gemini_cli import ADAPTER

    return ADAPTER


def _codex() -> Adapter:
    from bgc.adapters.agents.codex import ADAPTER

    return ADAPTER


AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        # CLAUDE_PROJECT_DIR in the hook's environment, timeout in seconds. SessionStart starts the
        # decision server (its stdout would become context: --quiet), SessionEnd stops it. Hooks of
        # settings.local.json run beside those of settings.json (code.claude.com/docs/en/settings).
        Agent("claude-code", _claude_code, ("CLAUDE_PROJECT_DIR",), "claude-code.bgp",
              Setup(".claude", "settings.json", "PreToolUse", HOOK_TIMEOUT, '"$CLAUDE_PROJECT_DIR"',
                    (("SessionStart", "--detach"), ("SessionEnd", "--stop")), "settings.local.json")),
        # Gemini CLI writes $GEMINI_PROJECT_DIR into the command itself, already shell-quoted (so it
        # stands unquoted here: in double quotes its quotes would be literal), and also sets it in
        # the environment; timeout in milliseconds. SessionStart and SessionEnd as Claude Code's (its
        # hooks must print nothing but JSON: --quiet).
        Agent("gemini-cli", _gemini_cli, ("GEMINI_PROJECT_DIR",), "gemini-cli.bgp",
              Setup(".gemini", "settings.json", "BeforeTool", HOOK_TIMEOUT * 1000, "$GEMINI_PROJECT_DIR",
                    (("SessionStart", "--detach"), ("SessionEnd", "--stop")))),
        # Codex names no project directory to its hooks (they run in the session's working
        # directory, taken as the project: the commands name it `.`); timeout in seconds. Codex has
        # a SessionStart but no SessionEnd: its server exits when idle (bgc serve --idle). Neither
        # Gemini CLI nor Codex has project settings of one's own: their hooks go where a team's do.
        Agent("codex", _codex, (), "codex.bgp",
              Setup(".codex", "hooks.json", "PreToolUse", HOOK_TIMEOUT, None, (("SessionStart", "--detach"),))),
    )
}  # fmt: skip
"""Every agent, by name, in the order people see them listed."""
