"""``bgc acp-proxy -p POLICY -- AGENT ARGS…``: run an ACP agent behind the policy, for an editor.

The policy is read and compiled, and the store opened, before the agent starts: a policy or a
store that cannot be read starts no agent, and the editor's requests are answered with the
reason (:func:`bgc.adapters.acp.proxy.blocked`), never the bare agent. Each request the agent
makes of the editor is then decided by :mod:`bgc.runtime.calls` for the session's project (the
``cwd`` the editor opened it with) as :class:`PolicyGuard` says, settled and recorded
(:mod:`bgc.runtime.session`) in the store (``--store``, ``.bgc/kernel.db`` by default, ``none``
for neither) under the ACP session's id, so ``bgc mode set`` and ``bgc approve`` speak of it. The
transport rules live in :mod:`bgc.adapters.acp.proxy`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bgc.adapters.acp.proxy import AcpSession, Asked, Guard, Verdict
from bgc.app.commands.mcp_proxy import StoreApprovals, ThreadStores
from bgc.errors import BgcError, UsageError
from bgc.runtime.session import DEFAULT_STORE, NO_STORE

if TYPE_CHECKING:
    from bgc.adapters.acp.mapping import TerminalCommand
    from bgc.runtime.calls import CallDecision, Workspace
    from bgc.runtime.enforce import Enforced
    from bgc.runtime.session import Session, WarmSources

EDITOR_PERSON = "(the person at the editor)"
"""How the ledger names whoever answered a permission request in the editor: unsigned, so no
approver's name."""
UNKNOWN_ANSWERS = ("ask", "deny")
SERVER = "acp"
"""The server a request the agent makes of the editor itself is a call on (``read_text_file``
on ``acp``), as the ledger names it."""


class PolicyGuard(Guard):
    """:class:`bgc.adapters.acp.proxy.Guard` by a policy: every decision made by a session of
    the policy (:func:`bgc.runtime.session.policy_session`) for the ACP session's project, in
    the mode a trusted person chose for that session (``bgc mode set``), else ``mode``; settled
    and recorded in the store of the calling thread."""

    def __init__(self, policy: str, mode: str | None, stores: ThreadStores, unknown: str, sources: WarmSources) -> None:
        self.policy = os.path.abspath(policy)
        self.policy_mode = mode
        self.stores = stores
        self.unknown = unknown
        self.sources = sources
        self._workspaces: dict[tuple[str, str], Workspace] = {}
        self._building = threading.Lock()
        """The proxy decides in its agent pump and in the threads that hold requests; the warm
        sources' memo is built by one of them at a time."""
        from bgc.app.store_watch import Wakes

        self._wakes = None if stores.location is None else Wakes(stores.location)

    def _session(self, acp: AcpSession) -> Session:
        from bgc.runtime.calls import Workspace
        from bgc.runtime.session import policy_session

        store = self.stores.get()
        with self._building:
            workspace = self._workspaces.get((acp.id, acp.root))
            if workspace is None:
                if len(self._workspaces) >= 256:
                    self._workspaces.clear()
                workspace = self._workspaces[(acp.id, acp.root)] = Workspace.at(acp.root, acp.root, os.environ.get("HOME"))
            return policy_session("acp", self.policy, self.policy_mode, workspace=workspace, store=store,
                                  session=acp.id, sources=self.sources)  # fmt: skip

    @staticmethod
    def _verdict(enforced: Enforced) -> Verdict:
        anyone = enforced.effect == "ask" and enforced.anyone_may_answer()
        return Verdict(enforced.effect, enforced.reason, enforced.request, anyone)

    def file(self, session: AcpSession, action: str, path: str, params: Mapping[str, Any]) -> Verdict:
        decided = self._session(session)
        decision = decided.decider.decide_values(f"{action}_text_file", SERVER, [("fs", action, path)])
        return self._verdict(decided.enforce(decision, dict(params)))

    def _call(self, decided: Session, asked: Asked) -> tuple[CallDecision, Any]:
        """What the policy says of a tool call the agent asks or tells about, and its parameters."""
        from bgc.adapters.agents.hook import decide_use
        from bgc.runtime.calls import CallDecision

        call = asked.call
        if asked.use is not None:
            cwd = os.path.realpath(asked.use.cwd) if asked.use.cwd else decided.decider.workspace.cwd  # type: ignore[union-attr]
            return decide_use(decided.decider, asked.use, cwd, self.unknown), asked.use.params
        tool = call.kind or "other"
        params = {"kind": tool, "locations": list(call.locations), "title": call.title or ""}
        if asked.needs:
            return decided.decider.decide_values(tool, SERVER, asked.needs), params
        if asked.unreadable is not None:
            return CallDecision(tool, SERVER, "deny", f"refused: {asked.unreadable}"), params
        reason = f"bgc cannot tell what this {tool!r} tool call touches (no tool input it reads, no locations)"
        decision = CallDecision(tool, SERVER, "deny", reason, declared=False)
        return (decision._replace(effect="ask") if self.unknown == "ask" else decision), params

    def permission(self, session: AcpSession, asked: Asked) -> Verdict:
        decided = self._session(session)
        decision, params = self._call(decided, asked)
        return self._verdict(decided.enforce(decision, params))

    def terminal(self, session: AcpSession, command: TerminalCommand, params: Mapping[str, Any], person: bool) -> Verdict:
        decided = self._session(session)
        decision = self._terminal(decided, session, command)
        if person and decision.effect == "ask":  # the person's answer a moment ago, to this very command
            said = "allowed once by the person at the editor (their answer to this command's permission request)"
            atoms = tuple(atom._replace(effect="allow", reason=f"{said}; {atom.reason}") if atom.effect == "ask" else atom
                          for atom in decision.atoms)  # fmt: skip
            decision = decision._replace(effect="allow", reason=said, atoms=atoms)
        return self._verdict(decided.enforce(decision, dict(params)))

    def _terminal(self, decided: Session, session: AcpSession, command: TerminalCommand) -> CallDecision:
        """Every reading of the command decided as a shell command run in its directory (which
        must be the project's or inside it); the strictest wins; an environment variable that may
        change what runs makes an allow an ask."""
        from bgc.runtime.calls import SHELL, CallDecision

        workspace = decided.decider.workspace
        assert workspace is not None
        where = os.path.realpath(command.cwd or session.root)
        if where != workspace.root and not where.startswith(workspace.root.rstrip("/") + "/"):
            return CallDecision(SHELL, SERVER, "deny", f"refused: the terminal's directory {where} is outside the "
                                f"session's project {workspace.root}")  # fmt: skip
        decisions = [decided.decider.decide_shell(reading, where) for reading in command.readings]
        worst = next((found for effect in ("deny", "ask") for found in decisions if found.effect == effect), decisions[0])
        if command.env and worst.effect == "allow":
            reason = f"it sets {', '.join(command.env)}, which may change what runs; {worst.reason}"
            return worst._replace(effect="ask", reason=reason, understood=False)
        return worst

    def state(self, request: str) -> str:
        return self._approvals().state(request)

    def cancel(self, request: str, why: str) -> None:
        self._approvals().cancel(request, why)

    def wait(self, cancelled: threading.Event, seconds: float) -> bool:
        """Until the store may have changed (:mod:`bgc.app.store_watch`), ``cancelled`` is set,
        or ``seconds`` pass."""
        return cancelled.wait(seconds) if self._wakes is None else self._wakes.wait(cancelled, seconds)

    def _approvals(self) -> StoreApprovals:
        from bgc.runtime.approvals import trusted_approvers
        from bgc.runtime.calls import compiled_policy

        trusted = trusted_approvers(compiled_policy(self.policy, self.policy_mode).trust)
        return StoreApprovals(self.stores, trusted, kind="acp", person=EDITOR_PERSON, client="the editor",
                              mechanism="session/request_permission")  # fmt: skip

    def answered(self, session: AcpSession, asked: Asked, verdict: Verdict, allowed: bool) -> bool:
        if verdict.request is not None:
            return self._approvals().elicited(verdict.request, allowed)
        store = self.stores.get()
        if store is None:
            return True  # no store: nothing to record, and nothing bound the ask to a request
        from bgc.runtime import ledger
        from bgc.runtime.enforce import params_digest

        decided = self._session(session)
        decision, params = self._call(decided, asked)
        answer = "approved once" if allowed else "refused"
        reason = f"{answer} by the person at the editor (session/request_permission); {decision.explanation()}"
        ledger.append(store, ledger.Record(
            "acp", "allow" if allowed else "deny", int(time.time()), session=session.id, tool=decision.tool,
            server=decision.server, params=params_digest(params), reason=reason,
            approvers=(EDITOR_PERSON,) if allowed else (), **ledger.subjects(tuple(a.atom for a in decision.atoms), ()),
        ))  # fmt: skip
        return True

    def unasked(self, session: AcpSession, asked: Asked) -> None:
        store = self.stores.get()
        if store is None:
            return
        from bgc.runtime import ledger
        from bgc.runtime.enforce import params_digest

        decided = self._session(session)
        decision, params = self._call(decided, asked)
        reason = (f"the agent ran {asked.call.title or decision.tool!r} without asking; the policy says "
                  f"{decision.effect}: {decision.explanation()}")  # fmt: skip
        ledger.append(store, ledger.Record(
            "acp", "unasked", int(time.time()), session=session.id, tool=decision.tool, server=decision.server,
            params=params_digest(params), reason=reason, **ledger.subjects(tuple(a.atom for a in decision.atoms), ()),
        ))  # fmt: skip

    def mode(self, session: str, mode: str, by_agent: bool) -> None:
        store = self.stores.get()
        if store is None:
            return
        now = int(time.time())
        if by_agent:
            from bgc.runtime.modes import refuse_agent_mode

            refuse_agent_mode(store, session, mode, now)
            return
        from bgc.runtime import ledger

        reason = (f"the person at the editor set the agent's own mode to {mode!r} (session/set_mode); bgc's mode "
                  "for the session is the policy's, or one a trusted person chose with bgc mode set")  # fmt: skip
        ledger.append(store, ledger.Record("mode", "agent-mode", now, session=session, reason=reason))


def run(
    command: Sequence[str],
    *,
    policy: str | None,
    mode: str | None,
    agent: str | None,
    store: str = DEFAULT_STORE,
    wait: float = 0.0,
    unknown: str = "ask",
    max_message: int | None = None,
) -> int:
    """Start the proxy; returns the agent's exit status (2 when no agent could start)."""
    from bgc.adapters.acp.proxy import MAX_MESSAGE_BYTES, AcpProxy, ProxyOptions, blocked
    from bgc.adapters.agents import AGENTS

    if not command:
        raise UsageError("no agent to run: give its command after --, e.g. `bgc acp-proxy -p p.bgp -- npx claude-code-acp`")
    if agent is not None and agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r} (--agent: {', '.join(AGENTS)})")
    if unknown not in UNKNOWN_ANSWERS:
        raise UsageError(f"--unknown must be ask or deny, not {unknown!r}")
    if not 0 <= wait <= 3600:
        raise UsageError(f"--wait must be from 0 to 3600 seconds, not {wait:g}")
    if max_message is not None and not 1024 <= max_message <= 1 << 30:
        raise UsageError(f"--max-message must be from 1024 to {1 << 30} bytes, not {max_message}")
    try:
        guard, stores, wrap = _guard(policy, mode, store, unknown)
    except BgcError as error:  # no agent runs unguarded: the editor is told why, request by request
        return blocked(error.render().splitlines()[0])
    from bgc.app.store_watch import POLL_SECONDS

    options = ProxyOptions(agent=agent, wrap_mcp=wrap, wait_seconds=wait, poll_seconds=POLL_SECONDS,
                           max_message_bytes=max_message or MAX_MESSAGE_BYTES)  # fmt: skip
    try:
        return AcpProxy(list(command), guard, options).run()
    finally:
        stores.close()


def _guard(policy: str | None, mode: str | None, store: str, unknown: str) -> tuple[PolicyGuard, ThreadStores, Any]:
    """The guard, its stores, and how a session's MCP servers start behind ``bgc mcp-proxy``;
    a policy that does not compile or a store that cannot be opened is a :class:`BgcError`."""
    from bgc.app.commands.init_mcp import is_proxied, proxy_command
    from bgc.runtime.calls import compiled_policy
    from bgc.runtime.session import WarmSources, configured_policy

    if policy is None:
        policy, mode = configured_policy(".", mode)
    policy = os.path.abspath(policy)
    compiled_policy(policy, mode)  # the policy compiles, in this mode, before anything starts
    location = None if store == NO_STORE else store if "://" in store else os.path.abspath(store)
    stores = ThreadStores(location)
    stores.check()
    program = proxy_command()

    def wrap(name: str, server: str, args: list[str]) -> tuple[str, list[str]]:
        if is_proxied({"command": server, "args": args}):
            return server, args
        options = ["--mode", mode] if mode is not None else []
        wrapped = [*program[1:], "mcp-proxy", "-p", policy, "--server", name, "--store", location or NO_STORE,
                   *options, "--", server, *args]  # fmt: skip
        return program[0], wrapped

    return PolicyGuard(policy, mode, stores, unknown, WarmSources()), stores, wrap
