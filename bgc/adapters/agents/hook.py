"""An agent's hook as a function: a tool call's hook input in, the hook's exit code and output out.

The agent runs its hook before every tool call with the call on stdin; the agent's adapter (its
:data:`~bgc.adapters.agents.AGENTS` row) reads it. The call is decided by :mod:`bgc.runtime.calls`
against the configured policy (``-p``, else ``policy`` in ``[tool.bgc]`` / ``bgc.toml`` of the
project) or against plans (``--plan``), the same way for every agent, settled and recorded by a
:class:`~bgc.runtime.session.Session` in the store (``--store``; by default ``.bgc/kernel.db`` in
the project, ``none`` for no store), and answered in the agent's own format, the reason naming the
rule (file:line) that decided.

An agent that says it is planning (``permission_mode: "plan"``) may only look: :func:`planning`
denies what its call writes and asks about anything else that may change something. What a
person reads for an ask — why, the call, its parts, the request — is
:func:`bgc.adapters.agents.prompt.prompt`'s.

An ``ask`` becomes a permission request people answer with ``bgc approve`` / ``bgc reject``. With
``--asks agent`` (the default) an ask that any one person may answer (``approvals 1``, no names)
is also put to the agent's own permission dialog, the person at the session being that one
approval (Codex's PreToolUse has none: there it is denied); a requirement that names approvers or
counts more than one is met only by their signed answers, so until then the call is denied with
the request to answer.

:func:`decide` is the whole hook: ``bgc hook AGENT`` (:mod:`bgc.app.commands.hook`) calls it with
its own stdin, environment and working directory, the decision server (:mod:`bgc.app.server`) with
those a hook's client sent, and each writes back what it returns. It reads the agent's project
directory from ``env`` and anchors relative paths (``-p``, ``--plan``, ``--store``) to ``cwd``;
it changes no process-wide state but the deadline's alarm, which it puts back.

Fail closed: input that cannot be read, a policy that does not load, a bug, or no answer within
``--timeout`` seconds blocks the call (exit 2, the reason on stderr: the blocking answer of every
agent here, whatever the event), never allows it. A tool no declaration covers gets ``--unknown``
(ask by default). The agents let a call through when a hook times out, so the deadline here is
bgc's own, shorter than the hook timeout ``bgc init`` configures.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bgc.adapters.agents import AGENTS, Agent
from bgc.adapters.agents.client import DEFAULT_TIMEOUT, MAX_INPUT
from bgc.adapters.agents.protocol import HookInputError, ToolUse
from bgc.core.values.documents import parse_document
from bgc.errors import BgcError, ExitCode, UsageError
from bgc.runtime.calls import CallDecider, CallDecision, Workspace
from bgc.runtime.isolation import imports_inside
from bgc.runtime.session import NO_STORE, Sources
from bgc.runtime.store import URLS

UNKNOWN_ANSWERS = ("ask", "deny")
ASKS = ("agent", "bgc")
MAX_TIMEOUT = 600.0
"""Seconds ``--timeout`` may give at most."""


class HookTimeout(Exception):
    """bgc's own deadline passed before a decision."""


@dataclass(frozen=True)
class Options:
    """How ``bgc hook`` decides, checked (:meth:`of`)."""

    policy: str | None = None
    plan: str | None = None
    mode: str | None = None
    unknown: str = "ask"
    """The answer for a tool no declaration covers."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds before the call is blocked."""
    store: str | None = None
    asks: str = "agent"

    @classmethod
    def of(
        cls, *, policy: str | None = None, plan: str | None = None, mode: str | None = None, unknown: str = "ask",
        timeout: str | float = DEFAULT_TIMEOUT, store: str | None = None, asks: str = "agent",
    ) -> Options:  # fmt: skip
        """The options as given on the command line; :class:`UsageError` says what is wrong."""
        if unknown not in UNKNOWN_ANSWERS:
            raise UsageError(f"--unknown must be ask or deny, not {unknown!r}")
        if asks not in ASKS:
            raise UsageError(f"--asks must be agent or bgc, not {asks!r}")
        if policy is not None and plan is not None:
            raise UsageError("give -p POLICY or --plan PLAN, not both")
        return cls(policy, plan, mode, unknown, seconds(timeout), store, asks)


def check_agent(agent: str, extra: tuple[str, ...] | list[str] = ()) -> None:
    """:class:`UsageError` unless ``agent`` is one bgc hooks and nothing follows it."""
    if extra:
        raise UsageError(f"unexpected argument {extra[0]!r}: the hook reads the call on stdin")
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r} (bgc hooks: {', '.join(AGENTS)})")


def seconds(timeout: str | float) -> float:
    """``--timeout`` as seconds; :class:`UsageError` unless more than 0 and at most 600."""
    try:
        value = float(timeout)
    except ValueError:
        raise UsageError(f"--timeout must be a number of seconds, not {timeout!r}") from None
    if not 0 < value <= MAX_TIMEOUT:
        raise UsageError(f"--timeout must be more than 0 and at most 600 seconds, not {timeout!r}")
    return value


def decide(
    agent: str, options: Options, stdin: bytes, env: Mapping[str, str], cwd: str | None, *,
    sources: Sources | None = None, started: float | None = None, imports: Sequence[str] = (),
) -> tuple[int, bytes, bytes]:  # fmt: skip
    """The hook of ``agent`` run on ``stdin`` (the hook input's bytes, at most
    :data:`~bgc.adapters.agents.client.MAX_INPUT` of them read, one more to tell it was too
    long), in environment ``env`` and working directory ``cwd`` (None: it was removed, so a
    relative path option names nothing): its exit code, stdout and stderr.

    0 with the agent's answer (one line of JSON in UTF-8, or nothing: the agent's way of saying
    "no objection"), or 2 with the reason on stderr when the call is blocked because something
    failed or no decision came within ``options.timeout`` seconds of ``started`` (a
    ``time.monotonic()``; now when None). ``sources``: where compiled policies and stores come
    from (the decision server's kept ones; else this process's, opened for the call). Never
    raises for anything the call, the environment or the policy holds."""
    try:
        with deadline(options.timeout, started):
            answer = _answer(AGENTS[agent], options, stdin, env, cwd, sources, imports)
        # None: the agent's way of saying "no objection" is to say nothing. UTF-8, as every agent
        # reads its hooks' JSON; a lone surrogate in a reason becomes "?" (written as is, it would
        # not be UTF-8)
        stdout = b"" if answer is None else (json.dumps(answer, ensure_ascii=False) + "\n").encode("utf-8", "replace")
    except HookTimeout:
        return blocked(f"no decision within {options.timeout:g} s: the call is blocked")
    except Exception as error:  # noqa: BLE001 - the hook's edge: every failure blocks the call
        return blocked(failure(error))
    return ExitCode.OK, stdout, b""


def _answer(
    agent: Agent, options: Options, data: bytes, env: Mapping[str, str], cwd: str | None, sources: Sources | None,
    imports: Sequence[str],
) -> dict[str, Any] | None:  # fmt: skip
    adapter = agent.adapter()
    if len(data) > MAX_INPUT:
        raise HookInputError(f"the hook input is larger than {MAX_INPUT:,} bytes")
    document = parse_document(data, "<stdin>", "json").data
    use = adapter.tool_use(document)
    project = next((env[name] for name in agent.project_env if env.get(name)), None) or use.cwd
    if not project or not project.startswith("/"):
        raise HookInputError(f"no project directory ({' or '.join((*agent.project_env, 'cwd'))})")
    # the caller's relative entries ("" first) are its working directory's; a removed one, the project's
    refusal = imports_inside(project, imports, cwd or project)
    if refusal is not None:
        raise UsageError(f"no decision: {refusal}")
    workspace = Workspace.at(project, use.cwd, env.get("HOME"))  # the home a path beginning with ~ names
    here = (sources or Sources(durable=True)).project_session(
        "hook", policy=_anchored(options.policy, cwd), plan=_anchored(options.plan, cwd), mode=options.mode,
        store=_anchored_store(options.store, cwd), project=project, workspace=workspace, session=use.session,
    )  # fmt: skip
    with here as session:
        # the answer that runs a command under bgc sandbox, where this event can carry one
        confining = adapter.confined if use.shell and use.event in adapter.confining and session.confinement else None
        decision = decide_use(session.decider, use, workspace.cwd, options.unknown, confines=confining is not None)
        params = use.params
        if decision.confined:  # allowed only in the sandbox: what runs, and what the ledger records, is bgc sandbox
            params = {**document["tool_input"], "command": confined_command(session.confinement, project, use.params["command"])}
        enforced = session.enforce(decision, params)
    if confining is not None and decision.confined and enforced.effect == "allow":
        return confining(use.event, enforced.reason, params)
    effect = enforced.effect
    person = options.asks == "agent" and (enforced.request is None or enforced.anyone_may_answer())
    if effect == "ask" and not person:
        effect = "deny"  # named or several approvers: only their signed answers can settle it
    if enforced.effect == "ask":  # what a person reads: why, the call, its parts, the request
        from bgc.adapters.agents.prompt import prompt

        answer = _answering(enforced, person and use.event in adapter.asking)
        return adapter.answer(use.event, effect, prompt(use, enforced.decision, enforced.request, answer))
    if not decision.declared:
        return adapter.answer(use.event, effect, f"{use.tool_name}: {enforced.reason}")
    return adapter.answer(use.event, effect, enforced.reason)


def decide_use(decider: CallDecider, use: ToolUse, cwd: str, unknown: str, *, confines: bool = False) -> CallDecision:
    """What the policy says of one tool call an agent announced, as every enforcer of an agent's
    calls decides it (the hook; ``bgc acp-proxy`` for a permission request): a shell command
    command by command, run in ``cwd``; any other call through its declaration. A tool no
    declaration covers gets ``unknown`` (``ask``: the person decides, ``deny``); a call the agent
    asks its person about anyway is at best asked (:attr:`ToolUse.asks_anyway`); an agent that is
    planning may only look (:func:`planning`). ``confines``: the enforcer runs a shell command
    allowed only ``in sandbox`` under ``bgc sandbox`` (:func:`confined_command`); without it such
    a command is asked."""
    if use.shell:
        decision = decider.decide_shell(use.params.get("command"), cwd, confines=confines)
    else:
        decision = decider.decide_call(use.tool, use.server, use.params)
    if not decision.declared and unknown == "ask":
        decision = decision._replace(effect="ask")
    if use.asks_anyway and decision.effect == "allow":  # the agent asks its person; no approval of atoms settles it
        decision = decision._replace(effect="ask", reason=f"{use.asks_anyway}; {decision.reason}", understood=False)
    if use.mode == PLAN_MODE:
        decision = planning(decision)
    return decision


def confined_command(confinement: Sequence[str], project: str, command: str) -> str:
    """``command`` (a shell command string) as a command that runs it under ``bgc sandbox``,
    confined to what the session's policy or plans grant in ``project``, with the interpreter
    running this hook started isolated (``-I``: no ``PYTHONPATH``, nothing imported from the
    project); ``bash -c``, as the agents here run their shell commands."""
    if not sys.executable:
        raise UsageError("no decision: this Python cannot name its own interpreter, so the command cannot be confined")
    argv = [sys.executable, "-I", "-m", "bgc", "sandbox", *confinement, "--root", project, "--", "bash", "-c", command]
    return shlex.join(argv)


def _answering(enforced: Any, dialog: bool) -> str | None:
    """How the request of a call still waiting may be answered: in the agent's dialog (``dialog``)
    or by ``bgc approve``, then the agent tries the call again; None without a request."""
    if enforced.request is None:
        return None
    if dialog:
        if enforced.standing is None:
            return "answer here (no bgc approve can: the policy trusts no approver)"
        return f"answer here, or with bgc approve ({enforced.standing})"
    if enforced.standing is None:
        return "no bgc approve can answer it (the policy trusts no approver), and no dialog here can"
    return f"approve it with bgc approve {enforced.request} ({enforced.standing}), then the agent tries the call again"


PLAN_MODE = "plan"
"""The ``permission_mode`` of an agent that is planning (Claude Code's plan mode; Codex's hook
input names the same values)."""
READING = frozenset({("fs", "read"), ("host", "read"), ("proc", "read"), ("search", "glob"), ("search", "web"),
                     ("net", "connect")})  # fmt: skip
"""What a call may need while its agent plans and still be decided by the policy alone: reading
files, searching, fetching, a background task's output; and the agent's own bookkeeping (every
``agent`` atom: plans, to-do lists, questions, sub-agents, whose own calls come through the hook)."""
PLANNING_DENY = (
    'the session is in plan mode (permission_mode "plan"): nothing is written until the plan is approved '
    '(bgc\'s plan-mode rule, docs/agents.md "Plan mode")'
)
PLANNING_ASK = (
    'the session is in plan mode (permission_mode "plan"), and this may change something: a person decides '
    '(bgc\'s plan-mode rule, docs/agents.md "Plan mode")'
)


def planning(decision: Any) -> Any:
    """``decision`` for an agent that is planning: what it writes is denied; anything else that
    is not :data:`READING` (a command, an MCP tool, stopping a process, a tool no declaration
    covers) is asked of the person at the session (never of a stored approval: the call is marked
    not understood); what only reads is decided as ever, and a deny stays a deny."""
    if decision.effect == "deny":
        return decision
    atoms, effect, reason = [], decision.effect, decision.reason
    for atom in decision.atoms:
        resource, action, _ = atom.atom.split(":", 2)
        if atom.effect == "deny" or resource == "agent" or (resource, action) in READING:
            atoms.append(atom)
        elif action == "write":
            atoms.append(atom._replace(effect="deny", reason=PLANNING_DENY, rule=None, approvals=(), asked_by=()))
            effect, reason = "deny", PLANNING_DENY
        else:
            atoms.append(atom._replace(effect="ask", reason="plan mode: it may change something", rule=None, approvals=(),
                                       asked_by=()))  # fmt: skip
            if effect != "deny":
                effect, reason = "ask", PLANNING_ASK
    if atoms == list(decision.atoms) and reason == decision.reason:
        return decision
    return decision._replace(effect=effect, reason=reason, atoms=tuple(atoms), understood=effect != "ask" and decision.understood)


def _anchored(path: str | None, cwd: str | None) -> str | None:
    """A path option as the hook's caller meant it: relative to the caller's working directory,
    never to that of the process deciding (the decision server's is its own)."""
    if path is None or path.startswith("/"):
        return path
    if cwd is None:
        raise UsageError(f"{path!r} is a relative path, and the hook's working directory was removed")
    return os.path.join(cwd, path)


def _anchored_store(store: str | None, cwd: str | None) -> str | None:
    """``--store`` as :func:`_anchored` reads a path, but ``none`` and a database URL as given:
    any other text is a file's path, ``://`` in it or not."""
    if store == NO_STORE or (store is not None and store.startswith(URLS)):
        return store
    return _anchored(store, cwd)


def failure(error: Exception) -> str:
    """Why the call is blocked, in one line."""
    if isinstance(error, BgcError):
        return error.render().splitlines()[0]  # file:line:col: error: message
    if isinstance(error, HookInputError):
        return f"bad hook input: {error}"
    return f"internal error: {type(error).__name__}: {error}"


def blocked(reason: str) -> tuple[int, bytes, bytes]:
    """The call blocked with ``reason``: exit 2, the blocking exit code of every agent bgc speaks
    to, and the reason on stderr (UTF-8, as the agents read it)."""
    return ExitCode.BAD_INPUT, b"", f"bgc: {reason}\n".encode("utf-8", "backslashreplace")


class deadline:
    """Raise :class:`HookTimeout` in this (main) thread ``seconds`` after ``started`` (a
    ``time.monotonic()``; now when None), by SIGALRM; at once when that time has passed. The
    handler and timer found are put back however the block ends: a timer already running (an
    enclosing deadline's) still ends when it would have, within the block too, so no block
    outlives the deadline around it (the agent lets a call through when the hook outlives its
    own timeout)."""

    def __init__(self, seconds: float, started: float | None = None) -> None:
        if started is not None:
            seconds -= time.monotonic() - started
        self.seconds = max(seconds, 1e-6)

    def __enter__(self) -> None:
        def expire(signum: int, frame: object) -> None:
            raise HookTimeout

        self.previous = signal.signal(signal.SIGALRM, expire)
        self.entered = time.monotonic()
        self.outer = signal.setitimer(signal.ITIMER_REAL, self.seconds)
        if 0 < self.outer[0] < self.seconds:
            signal.setitimer(signal.ITIMER_REAL, self.outer[0])

    def __exit__(self, *exc: object) -> None:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # the alarm may go off here still: its handler goes all the same
            signal.signal(signal.SIGALRM, self.previous)
            left, interval = self.outer
            if left > 0:  # the timer found, for what is left of it (at once when nothing is)
                signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - self.entered), 1e-6), interval)
