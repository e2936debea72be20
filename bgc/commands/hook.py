"""``bgc hook claude-code``: decide the tool call Claude Code is about to make.

Claude Code runs the hook before every tool call with the call on stdin (bgc/hooks/claude_code.py
has the format). The call is decided by :mod:`bgc.calls` against the configured policy (``-p``,
else ``policy`` in ``[tool.bgc]`` / ``bgc.toml`` of the project) or against plans (``--plan``),
and answered in Claude Code's format, the reason naming the rule (file:line) that decided.

Every decision is settled and recorded by :mod:`bgc.enforce` in the store (``--store``; by
default ``.bgc/kernel.db`` in the project, ``none`` for no store): an ``ask`` becomes a
permission request people answer with ``bgc approve`` / ``bgc reject``, and the answer is
appended to the ledger. With ``--asks agent`` (the default) an ask that any one person may answer
(``approvals 1``, no names) is also put to Claude Code's own permission dialog, the person at the
session being that one approval; a requirement that names approvers or counts more than one is
met only by their signed answers, so until then the call is denied with the request to answer.

Fail closed: input that cannot be read, a policy that does not load, a bug, or no answer within
``--timeout`` seconds blocks the call (exit 2, the reason on stderr: Claude Code's blocking
answer whatever the event), never allows it. A tool no declaration covers gets ``--unknown``
(ask by default). Claude Code itself lets a call through when a hook it runs times out, so the
deadline here is bgc's own, shorter than the hook timeout ``bgc init claude-code`` configures.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from typing import Any

from bgc.errors import ExitCode, UsageError

AGENTS = ("claude-code",)
UNKNOWN_ANSWERS = ("ask", "deny")
ASKS = ("agent", "bgc")
NO_STORE = "none"
DEFAULT_STORE = ".bgc/kernel.db"
"""Relative to the project directory (the starter policy denies the agent writes there)."""
DEFAULT_TIMEOUT = 20.0
"""Seconds; ``bgc init claude-code`` gives Claude Code's hook a longer timeout (30 s). A warm
decision takes a fraction of a second; the first one for an edited policy compiles it."""

MAX_INPUT = 32 * 1024 * 1024
"""Bytes of hook input read at most (a Write of a large file carries its content)."""


class HookTimeout(Exception):
    """bgc's own deadline passed before a decision."""


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
) -> ExitCode:
    """Read one hook input from stdin and write Claude Code's answer; exit 0 with an answer,
    2 when the call is blocked because something failed (the reason on stderr)."""
    if extra:
        raise UsageError(f"unexpected argument {extra[0]!r}: the hook reads the call on stdin")
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r} (bgc hooks: {', '.join(AGENTS)})")
    if unknown not in UNKNOWN_ANSWERS:
        raise UsageError(f"--unknown must be ask or deny, not {unknown!r}")
    if asks not in ASKS:
        raise UsageError(f"--asks must be agent or bgc, not {asks!r}")
    if policy is not None and plan is not None:
        raise UsageError("give -p POLICY or --plan PLAN, not both")
    seconds = _seconds(timeout)
    try:
        with _deadline(seconds):
            output = _decide(sys.stdin.buffer.read(MAX_INPUT + 1), policy, plan, mode, unknown, store, asks)
    except HookTimeout:
        return _block(f"no decision within {seconds:g} s: the call is blocked")
    except Exception as error:  # noqa: BLE001 - the hook's edge: every failure blocks the call
        return _block(_failure(error))
    sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return ExitCode.OK


def _decide(
    data: bytes, policy: str | None, plan: str | None, mode: str | None, unknown: str, store: str | None, asks: str
) -> dict[str, Any]:
    from bgc.calls import Workspace
    from bgc.documents import parse_document
    from bgc.hooks import claude_code

    if len(data) > MAX_INPUT:
        raise claude_code.HookInputError(f"the hook input is larger than {MAX_INPUT:,} bytes")
    use = claude_code.tool_use(parse_document(data, "<stdin>", "json").data)
    project = os.environ.get("CLAUDE_PROJECT_DIR") or use.cwd
    if not project or not project.startswith("/"):
        raise claude_code.HookInputError("no project directory (CLAUDE_PROJECT_DIR or cwd)")
    workspace = Workspace.at(project, use.cwd)
    location = os.path.join(project, DEFAULT_STORE) if store is None else store
    opened = None
    if location != NO_STORE:
        from bgc.store import open_store

        opened = open_store(location)
    try:
        decider, policy_id, trusted = _decider(project, policy, plan, mode, workspace, opened, use.session)
        if use.server == "local" and use.tool == claude_code.SHELL_TOOL:
            decision = decider.decide_shell(use.params.get("command"), workspace.cwd)
        else:
            decision = decider.decide_call(use.tool, use.server, use.params)
        if not decision.declared and unknown == "ask":
            decision = replace(decision, effect="ask")
        from bgc.enforce import Context, Enforcer

        context = Context("hook", decider.plan_id, policy_id, None, use.session)
        enforced = Enforcer(opened, trusted, context).enforce(decision, use.params)
    finally:
        if opened is not None:
            opened.close()
    if not decision.declared:
        return claude_code.answer(use.event, enforced.effect, f"{use.tool_name}: {enforced.reason}")
    effect = enforced.effect
    if effect == "ask" and enforced.request is not None and not (asks == "agent" and enforced.anyone_may_answer()):
        effect = "deny"  # named or several approvers: only their signed answers can settle it
    return claude_code.answer(use.event, effect, enforced.reason)


def _decider(
    project: str, policy: str | None, plan: str | None, mode: str | None, workspace: Any, store: Any, session: str | None
) -> tuple[Any, str | None, dict[str, Any]]:
    """The call decider, the policy's id (None for plans) and the approvers it trusts. The mode
    is the session's mode a trusted person chose (``bgc mode set``) when there is one, else
    ``mode`` (``-m``, or the configured one)."""
    from bgc.calls import CallDecider, compiled_policy

    if plan is not None:
        from bgc.plan import read_plans

        return CallDecider(read_plans(plan), workspace=workspace), None, {}
    if policy is None:
        from bgc.config import find_config

        config = find_config(project)
        if config is None or config.policy is None:
            raise UsageError(
                f"no policy: pass -p POLICY, or name one as `policy` in bgc.toml or [tool.bgc] of {project}"
            )
        policy, mode = str(config.policy), mode if mode is not None else config.mode
    compiled = compiled_policy(policy, mode)
    if not compiled.trust:  # no trust lines (the starter policy): nobody's key to parse, no mode anyone chose
        return CallDecider.reuse(compiled.decider, workspace), compiled.policy_id, {}
    from bgc.approvals import trusted_approvers

    trusted = trusted_approvers(compiled.trust)
    if trusted and store is not None and session is not None:
        from bgc.approvals import decode_mode, effective_mode

        decisions = [found for found in map(decode_mode, store.modes(session)) if found is not None]
        chosen = effective_mode(session, decisions, trusted, compiled.modes)
        if chosen is not None and chosen.mode != mode:
            compiled = compiled_policy(policy, chosen.mode)
    return CallDecider.reuse(compiled.decider, workspace), compiled.policy_id, trusted


def _failure(error: Exception) -> str:
    from bgc.errors import BgcError
    from bgc.hooks.claude_code import HookInputError

    if isinstance(error, BgcError):
        return error.render().splitlines()[0]  # file:line:col: error: message
    if isinstance(error, HookInputError):
        return f"bad hook input: {error}"
    return f"internal error: {type(error).__name__}: {error}"


def _block(reason: str) -> ExitCode:
    sys.stderr.write(f"bgc: {reason}\n")
    sys.stderr.flush()
    return ExitCode.BAD_INPUT  # 2: Claude Code's blocking exit code


def _seconds(timeout: str | float) -> float:
    try:
        seconds = float(timeout)
    except ValueError:
        raise UsageError(f"--timeout must be a number of seconds, not {timeout!r}") from None
    if not 0 < seconds <= 600:
        raise UsageError(f"--timeout must be more than 0 and at most 600 seconds, not {timeout!r}")
    return seconds


class _deadline:
    """Raise :class:`HookTimeout` in this (main) thread after ``seconds`` (SIGALRM)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        import signal

        def expire(signum: int, frame: object) -> None:
            raise HookTimeout

        self.previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        import signal

        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
