"""``bgc hook AGENT``: decide the tool call an agent (Claude Code, Gemini CLI, Codex) is about to make.

The hook is :func:`bgc.adapters.agents.hook.decide`, which says what it decides and how; this is
its process: the arguments checked, the hook input read from stdin within the deadline (or taken
from the hook's client, which read it trying the project's decision server first), the call
decided with this process's environment and working directory, and the answer written out byte
for byte.

An answer that cannot be written (stdout closed, the agent gone) blocks: exit 2, the one code
every agent takes as a block, never the guard's 141 for a reader gone, which lets the call through.
"""

from __future__ import annotations

import os
import sys
import time

from bgc.adapters.agents.client import DEFAULT_TIMEOUT, MAX_INPUT, Fallback
from bgc.adapters.agents.hook import HookTimeout, Options, blocked, check_agent, deadline, decide, failure
from bgc.errors import ExitCode


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
    received: Fallback | None = None,
) -> ExitCode:
    """Read one hook input from stdin and write the agent's answer; exit 0 with an answer, 2 when
    the call is blocked because something failed (the reason on stderr).

    ``received``: what the hook's client read of stdin while it tried a server (the deadline then
    counts from the hook's start, when the client began)."""
    check_agent(agent, extra)
    options = Options.of(policy=policy, plan=plan, mode=mode, unknown=unknown, timeout=timeout, store=store, asks=asks)
    started = time.monotonic() if received is None else received.started
    try:
        with deadline(options.timeout, started):
            data = sys.stdin.buffer.read(MAX_INPUT + 1) if received is None else received.read()
    except HookTimeout:
        answer = blocked(f"no decision within {options.timeout:g} s: the call is blocked")
    except Exception as error:  # noqa: BLE001 - the hook's edge: every failure blocks the call
        answer = blocked(failure(error))
    else:
        try:
            cwd: str | None = os.getcwd()
        except OSError:  # removed while the agent runs: absolute options still decide
            cwd = None
        answer = decide(agent, options, data, os.environ, cwd, started=started)
    return write_answer(*answer)


def write_answer(code: int, stdout: bytes, stderr: bytes) -> ExitCode:
    """Write a hook's answer to this process's stdout and stderr; its exit code, or 2 when the
    answer could not be delivered."""
    if stdout:
        try:
            sys.stdout.flush()
            sys.stdout.buffer.write(stdout)
            sys.stdout.buffer.flush()
        except OSError as error:  # not delivered: block (2); the guard's 141 for a reader gone lets the call through
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is left in the buffer goes nowhere
            code, _, stderr = blocked(f"cannot write the answer: {error.strerror or error}")
    if stderr:
        sys.stderr.flush()
        sys.stderr.buffer.write(stderr)
        sys.stderr.buffer.flush()
    return ExitCode(code)
