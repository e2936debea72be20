"""``bgc hook AGENT``: decide the tool call an agent (Claude Code, Gemini CLI, Codex) is about to make.

The agent runs the hook before every tool call with the call on stdin; the agent's adapter
(:data:`ADAPTERS`, bgc/adapters/agents: each module cites its agent's format) reads it. The call is decided
by :mod:`bgc.runtime.calls` against the configured policy (``-p``, else ``policy`` in ``[tool.bgc]`` /
``bgc.toml`` of the project) or against plans (``--plan``), the same way for every agent, and
answered in the agent's own format, the reason naming the rule (file:line) that decided.

Every decision is settled and recorded by :mod:`bgc.runtime.enforce` in the store (``--store``; by
default ``.bgc/kernel.db`` in the project, ``none`` for no store): an ``ask`` becomes a
permission request people answer with ``bgc approve`` / ``bgc reject``, and the answer is
appended to the ledger. With ``--asks agent`` (the default) an ask that any one person may answer
(``approvals 1``, no names) is also put to the agent's own permission dialog, the person at the
session being that one approval (Codex's PreToolUse has none: there it is denied); a requirement that names approvers or counts more than one is
met only by their signed answers, so until then the call is denied with the request to answer.

Fail closed: input that cannot be read, a policy that does not load, a bug, or no answer within
``--timeout`` seconds blocks the call (exit 2, the reason on stderr: the blocking answer of every
agent here, whatever the event), never allows it. A tool no declaration covers gets ``--unknown``
(ask by default). The agents let a call through when a hook times out, so the deadline here is
bgc's own, shorter than the hook timeout ``bgc init`` configures.
"""

from __future__ import annotations

import os
import sys

from bgc.errors import ExitCode, UsageError
from bgc.adapters.agents.client import DEFAULT_TIMEOUT, MAX_INPUT

TYPE_CHECKING = False  # not typing's: a cold `bgc gate` or hook never imports typing (tests/test_startup_imports.py)
if TYPE_CHECKING:
    from typing import Any, Protocol

    from bgc.runtime.calls import CompiledPolicy
    from bgc.runtime.store import Store
else:  # the protocol's base at run time (a type checker reads typing's)
    Protocol = object

ADAPTERS = {"claude-code": "bgc.adapters.agents.claude_code", "gemini-cli": "bgc.adapters.agents.gemini_cli", "codex": "bgc.adapters.agents.codex"}
"""Each agent's adapter module (imported only when its hook runs), holding its ``ADAPTER``."""
UNKNOWN_ANSWERS = ("ask", "deny")
ASKS = ("agent", "bgc")
NO_STORE = "none"
DEFAULT_STORE = ".bgc/kernel.db"
"""Relative to the project directory (the starter policy denies the agent writes there)."""
# DEFAULT_TIMEOUT and MAX_INPUT live in bgc.adapters.agents.client, which the hook runs before importing
# anything: seconds before a call is blocked (``bgc init`` gives the agent's hook 30 s), and the
# bytes of hook input read at most.


class HookTimeout(Exception):
    """bgc's own deadline passed before a decision."""


class Warm(Protocol):
    """What a decision server (:mod:`bgc.app.commands.serve`) keeps between hook runs: open stores
    and compiled policies, each revalidated on every use. Without one the hook opens and closes
    its store and reads the compiled policy from the on-disk cache."""

    def open_store(self, location: str) -> Store: ...

    def release_store(self, store: Store, failed: bool) -> None: ...

    def compiled_policy(self, path: str, mode: str | None) -> CompiledPolicy: ...


def run(
    agent: str,
    *extra: str,
    policy: str | None = None,
    plan: str | None = None,
    mode: str | None = None,
    unknown: str = "ask",
    timeout: str | float = DEFAULT_TIMEOUT,
    store: str | None = None,
    asks: str = "agent",
    warm: Warm | None = None,
    started: float | None = None,
) -> ExitCode:
    """Read one hook input from stdin and write Claude Code's answer; exit 0 with an answer,
    2 when the call is blocked because something failed (the reason on stderr).

    ``warm``: a decision server's stores and policies; ``started``: the ``time.monotonic()``
    the deadline counts from (the hook's start, when its client tried a server first)."""
    if extra:
        raise UsageError(f"unexpected argument {extra[0]!r}: the hook reads the call on stdin")
    if agent not in ADAPTERS:
        raise UsageError(f"unknown agent {agent!r} (bgc hooks: {', '.join(ADAPTERS)})")
    if unknown not in UNKNOWN_ANSWERS:
        raise UsageError(f"--unknown must be ask or deny, not {unknown!r}")
    if asks not in ASKS:
        raise UsageError(f"--asks must be agent or bgc, not {asks!r}")
    if policy is not None and plan is not None:
        raise UsageError("give -p POLICY or --plan PLAN, not both")
    seconds = _seconds(timeout)
    try:
        with _deadline(seconds, started):
            output = _decide(agent, sys.stdin.buffer.read(MAX_INPUT + 1), policy, plan, mode, unknown, store, asks, warm)
    except HookTimeout:
        return _block(f"no decision within {seconds:g} s: the call is blocked")
    except Exception as error:  # noqa: BLE001 - the hook's edge: every failure blocks the call
        return _block(_failure(error))
    if output is not None:  # None: the agent's way of saying "no objection" is to say nothing
        from bgc.core.values.documents import json_text

        # UTF-8 bytes, as every agent reads its hooks' JSON: not the locale's encoding, which
        # (LANG=…ISO-8859-1) could not write a reason's non-ASCII text and would block the call;
        # a lone surrogate in a reason becomes "?" (written as is, it would not be UTF-8)
        try:
            sys.stdout.flush()
            sys.stdout.buffer.write((json_text(output) + "\n").encode("utf-8", "replace"))
            sys.stdout.buffer.flush()
        except OSError as error:  # not delivered: block (2); the guard's 141 for a reader gone lets the call through
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is left in the buffer goes nowhere
            return _block(f"cannot write the answer: {error.strerror or error}")
    return ExitCode.OK


def _decide(
    agent: str, data: bytes, policy: str | None, plan: str | None, mode: str | None, unknown: str, store: str | None,
    asks: str, warm: Warm | None,
) -> dict[str, Any] | None:
    from bgc.runtime.calls import Workspace
    from bgc.core.values.documents import parse_document
    from bgc.adapters.agents.protocol import Adapter, HookInputError

    adapter: Adapter = __import__(ADAPTERS[agent], fromlist=["ADAPTER"]).ADAPTER  # not importlib's: half a millisecond to import
    if len(data) > MAX_INPUT:
        raise HookInputError(f"the hook input is larger than {MAX_INPUT:,} bytes")
    use = adapter.tool_use(parse_document(data, "<stdin>", "json").data)
    project = next((os.environ[name] for name in adapter.project_env if os.environ.get(name)), None) or use.cwd
    if not project or not project.startswith("/"):
        raise HookInputError(f"no project directory ({' or '.join((*adapter.project_env, 'cwd'))})")
    workspace = Workspace.at(project, use.cwd)
    location = os.path.join(project, DEFAULT_STORE) if store is None else store
    opened = None
    if location != NO_STORE:
        from bgc.runtime.store import open_store

        # durable: the ledger entry is on disk before the answer lets a call run, whether or not
        # a decision server holds the file open too (then no close checkpoints it)
        opened = open_store(location, durable=True) if warm is None else warm.open_store(location)
    failed = True
    try:
        decider, policy_id, trusted = _decider(project, policy, plan, mode, workspace, opened, use.session, warm)
        if use.shell:
            decision = decider.decide_shell(use.params.get("command"), workspace.cwd)
        else:
            decision = decider.decide_call(use.tool, use.server, use.params)
        if not decision.declared and unknown == "ask":
            decision = decision._replace(effect="ask")
        if use.asks_anyway and decision.effect == "allow":  # the agent asks its person; no approval of atoms settles it
            decision = decision._replace(effect="ask", reason=f"{use.asks_anyway}; {decision.reason}", understood=False)
        from bgc.runtime.enforce import Context, Enforcer

        context = Context("hook", decider.plan_id, policy_id, None, use.session)
        enforced = Enforcer(opened, trusted, context).enforce(decision, use.params)
        failed = False
    finally:
        if opened is not None and warm is not None:
            warm.release_store(opened, failed)
        elif opened is not None:
            opened.close()
    if not decision.declared:
        return adapter.answer(use.event, enforced.effect, f"{use.tool_name}: {enforced.reason}")
    effect = enforced.effect
    if effect == "ask" and enforced.request is not None and not (asks == "agent" and enforced.anyone_may_answer()):
        effect = "deny"  # named or several approvers: only their signed answers can settle it
    return adapter.answer(use.event, effect, enforced.reason)


def _decider(
    project: str, policy: str | None, plan: str | None, mode: str | None, workspace: Any, store: Any, session: str | None,
    warm: Warm | None,
) -> tuple[Any, str | None, dict[str, Any]]:
    """The call decider, the policy's id (None for plans) and the approvers it trusts. The mode
    is the session's mode a trusted person chose (``bgc mode set``) when there is one, else
    ``mode`` (``-m``, or the configured one)."""
    from bgc.runtime.calls import CallDecider, compiled_policy

    if plan is not None:
        from bgc.core.plan import read_plans

        return CallDecider(read_plans(plan), workspace=workspace), None, {}
    if policy is None:
        from bgc.analysis.config import find_config

        config = find_config(project)
        if config is None or config.policy is None:
            raise UsageError(
                f"no policy: pass -p POLICY, or name one as `policy` in bgc.toml or [tool.bgc] of {project}"
            )
        policy, mode = str(config.policy), mode if mode is not None else config.mode
    compile_policy = compiled_policy if warm is None else warm.compiled_policy
    compiled = compile_policy(policy, mode)
    if not compiled.trust:  # no trust lines (the starter policy): nobody's key to parse, no mode anyone chose
        return CallDecider.reuse(compiled.decider, workspace), compiled.policy_id, {}
    from bgc.runtime.approvals import trusted_approvers

    trusted = trusted_approvers(compiled.trust)
    if trusted and store is not None and session is not None:
        from bgc.runtime.approvals import decode_mode, effective_mode

        decisions = [found for found in map(decode_mode, store.modes(session)) if found is not None]
        chosen = effective_mode(session, decisions, trusted, compiled.modes)
        if chosen is not None and chosen.mode != mode:
            compiled = compile_policy(policy, chosen.mode)
    return CallDecider.reuse(compiled.decider, workspace), compiled.policy_id, trusted


def _failure(error: Exception) -> str:
    from bgc.errors import BgcError
    from bgc.adapters.agents.protocol import HookInputError

    if isinstance(error, BgcError):
        return error.render().splitlines()[0]  # file:line:col: error: message
    if isinstance(error, HookInputError):
        return f"bad hook input: {error}"
    return f"internal error: {type(error).__name__}: {error}"


def _block(reason: str) -> ExitCode:
    sys.stderr.write(f"bgc: {reason}\n")
    sys.stderr.flush()
    return ExitCode.BAD_INPUT  # 2: the blocking exit code of every agent bgc speaks to


def _seconds(timeout: str | float) -> float:
    try:
        seconds = float(timeout)
    except ValueError:
        raise UsageError(f"--timeout must be a number of seconds, not {timeout!r}") from None
    if not 0 < seconds <= 600:
        raise UsageError(f"--timeout must be more than 0 and at most 600 seconds, not {timeout!r}")
    return seconds


class _deadline:
    """Raise :class:`HookTimeout` in this (main) thread ``seconds`` after ``started`` (a
    ``time.monotonic()``; now when None), by SIGALRM; at once when that time has passed."""

    def __init__(self, seconds: float, started: float | None = None) -> None:
        if started is not None:
            import time

            seconds -= time.monotonic() - started
        self.seconds = max(seconds, 1e-6)

    def __enter__(self) -> None:
        signal = _signal_module()

        def expire(signum: int, frame: object) -> None:
            raise HookTimeout

        self.previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        signal = _signal_module()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)


def _signal_module() -> Any:
    """CPython's ``_signal``, whose functions :mod:`signal` re-exports (the same ``signal`` and
    ``setitimer``): importing :mod:`signal` builds its enumerations, half a millisecond of every
    cold hook; elsewhere, :mod:`signal` itself."""
    try:
        import _signal
    except ImportError:
        import signal as _signal
    return _signal
