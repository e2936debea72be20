"""``bgc mcp-proxy -p POLICY --server NAME -- COMMAND ARGS…``: run an MCP server behind the policy.

The policy is read and compiled before the server starts: a policy that cannot be read is exit 2
and no server, never a server running unguarded. Each ``tools/call`` is then the call
``(params.name, NAME, params.arguments)`` decided by :mod:`bgc.calls`, the one decision every
enforcer shares; the transport rules live in :mod:`bgc.mcp_proxy`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from bgc.errors import UsageError


def configured_policy_path(policy: str | None) -> str:
    """``-p`` when given, else ``policy`` from ``[tool.bgc]`` / ``bgc.toml``."""
    if policy is not None:
        return policy
    from bgc.config import find_config

    config = find_config(".")
    if config is None or config.policy is None:
        raise UsageError(
            "no policy: pass -p POLICY, or name one as `policy` in [tool.bgc] of pyproject.toml or in bgc.toml"
        )
    return os.path.relpath(config.policy)


def run(command: Sequence[str], *, policy: str | None, server: str, mode: str | None, filter_tools: bool) -> int:
    """Start the proxy; returns the server's exit status (2 when nothing could start)."""
    from bgc.calls import policy_decider
    from bgc.mcp_proxy import ProxyOptions, ToolVerdict, run_proxy

    if not command:
        raise UsageError(
            "no server to run: give its command after --, e.g. `bgc mcp-proxy -p p.bgp --server files -- npx server`"
        )
    if not server:
        raise UsageError("--server NAME is empty: it names the server in the policy's `tool … on NAME` declarations")
    decider = policy_decider(configured_policy_path(policy), mode)

    def decide(tool: str, arguments: Mapping[str, Any]) -> ToolVerdict:
        decision = decider.decide_call(tool, server, arguments)
        return ToolVerdict(decision.effect, decision.explanation())

    def offered(tool: str) -> bool:
        return decider.decide_call(tool, server, {}).declared

    return run_proxy(command, decide, ProxyOptions(server=server, filter_tools=filter_tools), offered=offered)
