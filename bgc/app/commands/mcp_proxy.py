"""``bgc mcp-proxy -p POLICY --server NAME -- COMMAND ARGS…``: run an MCP server behind the policy.

The policy is read and compiled, and the store opened, before the server starts: a policy or a
store that cannot be read is exit 2 and no server, never a server running unguarded. Each
``tools/call`` is then the call ``(params.name, NAME, params.arguments)`` decided by
:mod:`bgc.runtime.calls`, the one decision every
enforcer shares, then settled and recorded (:mod:`bgc.runtime.session`) in the store (``--store``,
``.bgc/kernel.db`` by default, ``none`` for neither): an ``ask`` is a permission request people
answer with ``bgc approve``, held up to ``--wait`` seconds. The transport rules live in
:mod:`bgc.adapters.mcp.proxy`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bgc.errors import UsageError
from bgc.runtime.session import DEFAULT_STORE, NO_STORE

if TYPE_CHECKING:
    from bgc.runtime.session import Session


def proxy_session(policy: str | None, mode: str | None) -> Session:
    """The proxy's session: ``-p`` in ``--mode``, else the project's configured policy in its
    configured mode (unless ``--mode`` says one), as a hook of the same project decides."""
    from bgc.runtime.session import configured_policy, policy_session

    if policy is None:
        configured, mode = configured_policy(".", mode)
        policy = os.path.relpath(configured)
    return policy_session("proxy", policy, mode)


def run(
    command: Sequence[str],
    *,
    policy: str | None,
    server: str,
    mode: str | None,
    filter_tools: bool,
    store: str = DEFAULT_STORE,
    wait: float = 0.0,
) -> int:
    """Start the proxy; returns the server's exit status (2 when nothing could start)."""
    from bgc.adapters.mcp.proxy import ProxyOptions, ToolVerdict, run_proxy

    if not command:
        raise UsageError(
            "no server to run: give its command after --, e.g. `bgc mcp-proxy -p p.bgp --server files -- npx server`"
        )
    if not server:
        raise UsageError("--server NAME is empty: it names the server in the policy's `tool … on NAME` declarations")
    if not 0 <= wait <= 3600:
        raise UsageError(f"--wait must be from 0 to 3600 seconds, not {wait:g}")
    session = proxy_session(policy, mode)
    stores = ThreadStores(None if store == NO_STORE else store)
    stores.check()  # a store that cannot be opened stops the proxy before the server starts

    def decide(tool: str, arguments: Mapping[str, Any]) -> ToolVerdict:
        enforced = session.using(stores.get()).decide_call(tool, server, arguments)
        anyone = enforced.effect == "ask" and enforced.anyone_may_answer()
        return ToolVerdict(enforced.effect, enforced.reason, enforced.request, anyone)

    def offered(tool: str) -> bool:
        return session.decider.decide_call(tool, server, {}).declared

    from bgc.app.store_watch import POLL_SECONDS

    options = ProxyOptions(server=server, filter_tools=filter_tools, wait_seconds=wait, elicit=session.elicitation,
                           poll_seconds=POLL_SECONDS)  # fmt: skip
    try:
        return run_proxy(command, decide, options, offered=offered, approvals=StoreApprovals(stores, session.trusted))
    finally:
        stores.close()


class ThreadStores:
    """One store connection per thread (SQLite connections stay in the thread that opened them;
    the proxy decides in its client thread and follows held calls in threads of their own)."""

    def __init__(self, location: str | None) -> None:
        import threading

        self.location = location
        self._local = threading.local()
        self._opened: list[Any] = []
        self._lock = threading.Lock()

    def check(self) -> None:
        if self.location is not None:
            from bgc.errors import InputError, Span
            from bgc.runtime.store import StoreError, open_store

            try:
                open_store(self.location).close()
            except StoreError as error:
                raise InputError(str(error), Span(self.location)) from None

    def get(self) -> Any:
        if self.location is None:
            return None
        found = getattr(self._local, "store", None)
        if found is None:
            from bgc.runtime.store import open_store

            found = self._local.store = open_store(self.location)
            with self._lock:
                self._opened.append(found)
        return found

    def close(self) -> None:
        with self._lock:
            for opened in self._opened:
                opened.close()
            self._opened.clear()


class StoreApprovals:
    """:class:`bgc.adapters.mcp.proxy.Approvals` over the store: a request's standing, and cancelling it
    (recorded in the ledger as a ``cancel``, as ``bgc cancel`` records it). ``kind`` is the
    ledger kind of the enforcer, ``person`` how it names the unsigned person at its client, and
    ``client`` where that person answers."""

    def __init__(
        self, stores: ThreadStores, trusted: Mapping[str, Any], *, kind: str = "proxy", person: str | None = None,
        client: str = "the MCP client", mechanism: str = "elicitation",
    ) -> None:  # fmt: skip
        self.stores = stores
        self.trusted = trusted
        self.kind = kind
        self.person = person or CLIENT_PERSON
        self.client = client
        self.mechanism = mechanism
        from bgc.app.store_watch import Wakes

        self._wakes = None if stores.location is None else Wakes(stores.location)

    def wait(self, cancelled: Any, seconds: float) -> bool:
        """Until the store may have changed (:mod:`bgc.app.store_watch`: PostgreSQL's notification
        of an answer, a SQLite file's change), ``cancelled`` is set, or ``seconds`` pass."""
        if self._wakes is None:
            return bool(cancelled.wait(seconds))
        return bool(self._wakes.wait(cancelled, seconds))

    def state(self, request: str) -> str:
        import time

        from bgc.runtime.approvals import load_request, stored_standing

        store = self.stores.get()
        loaded = load_request(store, request) if store is not None else None
        if loaded is None:
            return "expired"  # gone or unreadable: deciding again makes and settles a fresh request
        return stored_standing(store, loaded[0], loaded[1], self.trusted, int(time.time())).state

    def cancel(self, request: str, reason: str = "the MCP client cancelled the call or went away") -> None:
        import time

        from bgc.runtime import ledger

        store = self.stores.get()
        if store is not None:
            now = int(time.time())
            if store.cancel(request, now):
                ledger.append(store, ledger.Record("cancel", "cancelled", now, request=request, reason=reason))

    def elicited(self, request: str, allowed: bool) -> bool:
        import time

        from bgc.runtime import ledger
        from bgc.runtime.approvals import anyone_may_answer, load_request, stored_standing, use_request

        store = self.stores.get()
        loaded = load_request(store, request) if store is not None else None
        if loaded is None:
            return False
        stored, cancelled = loaded
        now = int(time.time())
        if allowed:  # unsigned: it stands only for a live request any one person may answer
            anyone = anyone_may_answer(stored.requirements)
            state = stored_standing(store, stored, cancelled, self.trusted, now).state
            if not anyone or state not in ("pending", "approved") or not use_request(store, stored):
                return False
        if not allowed:
            store.cancel(request, now)  # declined: later answers do not count
        reason = (f"approved once by the person at {self.client} ({self.mechanism}: unsigned, meets only a rule any "
                  f"one person may answer)") if allowed else f"declined by the person at {self.client} ({self.mechanism})"  # fmt: skip
        ledger.append(store, ledger.Record(
            self.kind, "allow" if allowed else "deny", now, session=stored.session, tool=stored.tool,
            server=stored.server, params=stored.params, reason=reason, request=request,
            approvers=(self.person,) if allowed else (),
            **ledger.subjects(stored.atoms, tuple(stored.rule.split(", "))),  # the rules it joined
        ))  # fmt: skip
        return True


CLIENT_PERSON = "(the person at the MCP client)"
"""How the ledger names whoever answered an elicitation: unsigned, so no approver's name."""
