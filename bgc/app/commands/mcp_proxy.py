"""``bgc mcp-proxy -p POLICY --server NAME -- COMMAND ARGS…`` (or ``--url URL``): run an MCP server
behind the policy.

The server is a command the proxy starts (stdio), or a remote server reached over Streamable
HTTP (``--url``, with ``--bearer-env VAR`` naming the environment variable that holds its
token). The policy is read and compiled, and the store opened, before the server starts: a policy or a
store that cannot be read is exit 2 and no server, never a server running unguarded. Each
``tools/call`` is then the call ``(params.name, NAME, params.arguments)`` decided by
:mod:`bgc.runtime.calls`, the one decision every
enforcer shares, then settled and recorded (:mod:`bgc.runtime.session`) in the store (``--store``,
``.bgc/kernel.db`` by default, ``none`` for neither): an ``ask`` is a permission request people
answer with ``bgc approve``, held up to ``--wait`` seconds. The rules live in
:mod:`bgc.adapters.mcp.mediator`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from bgc.errors import UsageError
from bgc.runtime.session import DEFAULT_STORE, NO_STORE

if TYPE_CHECKING:
    from bgc.runtime.session import Session


DEFAULT_TOKEN_FILE = os.path.join(".bgc", "mcp-proxy.token")
"""Where ``--listen`` writes its per-start token unless ``--token-file`` says elsewhere."""


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
    server: str | None,
    mode: str | None,
    filter_tools: bool,
    store: str = DEFAULT_STORE,
    wait: float = 0.0,
    url: str | None = None,
    bearer_env: str | None = None,
    timeout: float | None = None,
    listen: str | None = None,
    token_file: str = DEFAULT_TOKEN_FILE,
    allow_origins: Sequence[str] = (),
    closed: bool = False,
    redact: bool = False,
    gateway: str | None = None,
) -> int:
    """Start the proxy; returns the server's exit status (2 when nothing could start)."""
    from bgc.adapters.mcp.proxy import run_proxy

    if not 0 <= wait <= 3600:
        raise UsageError(f"--wait must be from 0 to 3600 seconds, not {wait:g}")
    if gateway is not None:
        if command or url is not None or server is not None or bearer_env is not None:
            raise UsageError("--gateway FILE names every server: give no --server, --url, --bearer-env or command")
        if listen is None:
            raise UsageError("--gateway serves its servers over HTTP: give --listen HOST:PORT")
        return run_gateway(gateway, policy=policy, mode=mode, store=store, wait=wait, timeout=timeout, listen=listen,
                           token_file=token_file, allow_origins=allow_origins)  # fmt: skip
    remote = remote_server(url, bearer_env, timeout) if url is not None else None
    if command and remote is not None:
        raise UsageError("give the server's command after -- or its --url, not both")
    if not command and remote is None:
        raise UsageError(
            "no server to run: give its command after --, e.g. `bgc mcp-proxy -p p.bgp --server files -- npx server`, "
            "or its --url"
        )
    if not server:
        raise UsageError("--server NAME is missing or empty: it names the server in the policy's `tool … on NAME` "
                         "declarations")  # fmt: skip
    address = listen_address(listen) if listen is not None else None
    stores = StorePool(None if store == NO_STORE else store)
    stores.check()  # a store that cannot be opened stops the proxy before the server starts
    try:
        guard = ServerGuard(proxy_session(policy, mode), server, stores, filter_tools=filter_tools, wait=wait,
                            closed=closed, redact=redact)  # fmt: skip
        if address is None:
            return run_proxy(remote or command, guard.decide, guard.options, offered=guard.offered,
                             approvals=guard.approvals, pins=guard.pins(), decide_message=guard.decide_message,
                             redact=guard.redacting)  # fmt: skip
        route = _route(guard, list(command), url, bearer_env, timeout)
        return serve_front(address, token_file, allow_origins, {"/mcp": route})
    finally:
        stores.close()


class ServerGuard:
    """Everything the sessions of one server decide with: the policy's session, the server's
    name in it (``tool … on NAME``, ``mcp:…:NAME/…``), the store, and the proxy's options."""

    def __init__(
        self, session: Session, server: str, stores: StorePool, *, filter_tools: bool, wait: float, closed: bool,
        redact: bool,
    ) -> None:  # fmt: skip
        from bgc.adapters.mcp.mediator import ProxyOptions

        self.session = session
        self.server = server
        self.stores = stores
        self.closed = closed
        from bgc.app.store_watch import POLL_SECONDS

        self.options = ProxyOptions(server=server, filter_tools=filter_tools, wait_seconds=wait,
                                    elicit=session.elicitation, poll_seconds=POLL_SECONDS)  # fmt: skip
        self.approvals = StoreApprovals(stores, session.trusted)
        self.redacting = self.redact_message if redact else None

    def decide(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        from bgc.adapters.mcp.mediator import ToolVerdict

        with self.stores.lease() as opened:
            enforced = self.session.using(opened).decide_call(tool, self.server, arguments)
        anyone = enforced.effect == "ask" and enforced.anyone_may_answer()
        return ToolVerdict(enforced.effect, enforced.reason, enforced.request, anyone)

    def offered(self, tool: str) -> bool:
        return self.session.decider.decide_call(tool, self.server, {}).declared

    def decide_message(self, method: str, action: str, subject: str, params: Mapping[str, Any]) -> Any:
        """A message other than a call, on its atom: a rule decides it (settled and recorded as a
        call is); no rule → passed as before, or refused with ``--closed``."""
        from bgc.adapters.mcp.mediator import ToolVerdict

        decision = self.session.decider.decide_mcp_message(method, action, self.server, subject)
        if not decision.declared:
            if not self.closed:
                return ToolVerdict("allow", decision.reason)
            decision = decision._replace(reason=f"{decision.reason}, and the proxy runs --closed")
        with self.stores.lease() as opened:
            enforced = self.session.using(opened).enforce(decision, params)
        return ToolVerdict(enforced.effect, enforced.reason, enforced.request)

    def redact_message(self, message: dict[str, Any], what: str) -> dict[str, Any]:
        """Credentials in what the server sent replaced (:mod:`bgc.runtime.redact`), said on
        stderr and recorded in the ledger: a redaction that cannot be recorded passes nothing."""
        import time

        from bgc.runtime import ledger
        from bgc.runtime.redact import redact as replaced

        found: dict[str, int] = {}
        changed = {key: replaced(value, found) if key in ("result", "params", "error") else value
                   for key, value in message.items()}  # fmt: skip
        if not found:
            return message
        counted = ", ".join(f"{count} × {kind}" for kind, count in sorted(found.items()))
        reason = f"replaced {counted} in what {self.server} sent ({what})"
        _say(reason)
        with self.stores.lease() as opened:
            if opened is not None:
                ledger.append(opened, ledger.Record("proxy", "redacted", int(time.time()), server=self.server,
                                                    tool=what, reason=reason))  # fmt: skip
        return changed

    def pins(self) -> Any:
        """The tool pins of one session (None without a store)."""
        return StorePins(self.stores, self.server, self.session.trusted) if self.stores.location is not None else None

    def mediator(self, to_server: Any, to_client: Any) -> Any:
        """A client session's mediator (:class:`bgc.adapters.mcp.mediator.Mediator`)."""
        from bgc.adapters.mcp.mediator import Mediator

        return Mediator(self.decide, self.options, to_server=to_server, to_client=to_client, offered=self.offered,
                        approvals=self.approvals, pins=self.pins(), decide_message=self.decide_message,
                        redact=self.redacting)  # fmt: skip


def _route(guard: ServerGuard, command: list[str], url: str | None, bearer_env: str | None, timeout: float | None) -> Any:
    """The front's route to one server: a child started per client session, or a session with
    the remote server at ``url``."""
    from bgc.adapters.mcp.front import Route

    def make_upstream() -> Any:
        from bgc.adapters.mcp.upstream import ChildServer

        if url is not None:
            return remote_server(url, bearer_env, timeout)
        return ChildServer(command, guard.options.shutdown_grace_seconds, _say)

    return Route(guard.mediator, make_upstream)


GATEWAY_KEYS = frozenset({"command", "args", "url", "bearerEnv", "policy", "mode", "closed", "redact", "filterTools"})
"""What a gateway entry may say; any other key is refused (a misspelt ``closed`` must not run open)."""
SERVER_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
"""A gateway server's name: its path (``/mcp/NAME``) and its name in its policy."""


def run_gateway(
    config: str, *, policy: str | None, mode: str | None, store: str, wait: float, timeout: float | None, listen: str,
    token_file: str, allow_origins: Sequence[str],
) -> int:  # fmt: skip
    """Serve every server of the gateway file ``config`` behind one HTTP front, each at
    ``/mcp/NAME`` under its own policy (the entry's ``policy``, relative to the file, else ``-p``
    or the project's); every policy and entry is read before anything listens."""
    import re

    from bgc.core.values.documents import read_document
    from bgc.errors import InputError, Span

    data = read_document(config, "json").data
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers or set(data) != {"servers"}:
        raise InputError('a gateway file is {"servers": {NAME: {...}, ...}} with at least one server', Span(config))
    address = listen_address(listen)
    base = os.path.dirname(os.path.abspath(config))
    stores = StorePool(None if store == NO_STORE else store)
    stores.check()
    try:
        routes: dict[str, Any] = {}
        for name, entry in servers.items():
            where = f"servers.{name}"
            if not re.fullmatch(SERVER_NAME, name):
                raise InputError(f"{where}: a server name is letters, digits, _ . - (at most 64)", Span(config))
            if not isinstance(entry, dict) or set(entry) - GATEWAY_KEYS:
                unknown = sorted(set(entry) - GATEWAY_KEYS) if isinstance(entry, dict) else []
                raise InputError(f"{where}: an object of {', '.join(sorted(GATEWAY_KEYS))}"
                                 + (f"; not {', '.join(unknown)}" if unknown else ""), Span(config))  # fmt: skip
            command = [entry["command"], *entry.get("args", [])] if "command" in entry else []
            url = entry.get("url")
            if (url is None) == (not command) or not all(isinstance(word, str) for word in command):
                raise InputError(f"{where}: give a command (and its args, strings) or a url, one of them", Span(config))
            flags = {key: entry.get(key, False) for key in ("closed", "redact", "filterTools")}
            texts = {key: entry.get(key) for key in ("url", "bearerEnv", "policy", "mode")}
            if not all(isinstance(flag, bool) for flag in flags.values()) or not all(
                text is None or isinstance(text, str) for text in texts.values()
            ):
                raise InputError(f"{where}: closed, redact and filterTools are true or false; url, bearerEnv, "
                                 "policy and mode are strings", Span(config))  # fmt: skip
            named = entry.get("policy")
            session = proxy_session(os.path.join(base, named) if named is not None else policy, entry.get("mode", mode))
            guard = ServerGuard(session, name, stores, filter_tools=flags["filterTools"], wait=wait,
                                closed=flags["closed"], redact=flags["redact"])  # fmt: skip
            if url is not None:
                remote_server(url, entry.get("bearerEnv"), timeout)  # its URL and token checked now, not per session
            routes[f"/mcp/{name}"] = _route(guard, command, url, entry.get("bearerEnv"), timeout)
        return serve_front(address, token_file, allow_origins, routes)
    finally:
        stores.close()


def _say(message: str) -> None:
    import sys

    print(f"bgc mcp-proxy: {message}", file=sys.stderr, flush=True)


def listen_address(listen: str) -> tuple[str, int]:
    """``--listen``'s ``HOST:PORT`` (or ``PORT``): a loopback address only (the front speaks plain
    HTTP, without TLS); port 0 picks a free one."""
    import ipaddress

    host, colon, port = listen.rpartition(":")
    if not colon:
        host, port = "127.0.0.1", listen
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if bare == "localhost":
        bare = "127.0.0.1"
    try:
        loopback = ipaddress.ip_address(bare).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(f"--listen {listen}: bgc listens on a loopback address only (127.0.0.1, [::1])")
    if not (port.isascii() and port.isdigit() and int(port) <= 65535):
        raise UsageError(f"--listen {listen}: the port is a number from 0 to 65535")
    return bare, int(port)


def serve_front(address: tuple[str, int], token_file: str, allow_origins: Sequence[str], routes: Mapping[str, Any]) -> int:
    """Serve the HTTP front (:mod:`bgc.adapters.mcp.front`) until SIGTERM, SIGINT or SIGHUP; 0."""
    import secrets
    import signal
    import threading

    from bgc.adapters.mcp.front import TOKEN_HEADER, FrontOptions, HttpFront
    from bgc.errors import InputError, Span

    token = secrets.token_urlsafe(32)
    options = FrontOptions(address[0], address[1], token, frozenset(allow_origins))
    try:
        front = HttpFront(options, routes, _say)
    except OSError as error:
        raise InputError(f"cannot listen there: {error.strerror or error}", Span(f"{address[0]}:{address[1]}")) from None
    try:
        replace_secret(token_file, token)
    except OSError as error:
        front.server.server_close()
        raise InputError(f"cannot write the token: {error.strerror or error}", Span(token_file)) from None
    for path in routes:
        _say(f"listening on {front.url(path)}; send the token in {token_file} as the {TOKEN_HEADER} header")
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, lambda _number, _frame: front.stop())
    front.serve()
    return 0


def replace_secret(path: str, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600 from its creation), replacing
    what was there in one rename: a reader sees the old token or the new one, whole."""
    import tempfile

    from bgc.core.values.files import make_directories

    directory = os.path.dirname(os.path.abspath(path))
    make_directories(directory)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".token.", suffix=".tmp")  # created 0600
    try:
        with os.fdopen(handle, "w", encoding="ascii") as stream:
            stream.write(text + "\n")
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def remote_server(url: str, bearer_env: str | None, timeout: float | None) -> Any:
    """The remote server at ``url`` (:class:`bgc.adapters.mcp.upstream.RemoteServer`), its token read
    from the environment variable ``bearer_env`` (never from an argument, which other users'
    ``ps`` shows)."""
    from bgc.adapters.mcp.upstream import DEFAULT_TIMEOUT_SECONDS, RemoteServer

    authorization = None
    if bearer_env is not None:
        token = os.environ.get(bearer_env, "")
        if not token or any(not 0x20 < ord(char) < 0x7F for char in token):
            raise UsageError(f"--bearer-env {bearer_env}: the variable is not set, or holds more than one visible word")
        authorization = f"Bearer {token}"
    if timeout is not None and not 1 <= timeout <= 86400:
        raise UsageError(f"--timeout must be from 1 to 86400 seconds, not {timeout:g}")
    try:
        return RemoteServer(url, _say, authorization=authorization, timeout_seconds=timeout or DEFAULT_TIMEOUT_SECONDS)
    except ValueError as error:
        raise UsageError(f"--url: {error}") from None


class StorePool:
    """Open store connections, lent to one thread at a time (SQLite connections are used by one
    thread at a time; the proxy decides in its client thread, an HTTP front in a thread per
    connection, and held calls are followed in threads of their own). At most
    :data:`MAX_IDLE_STORES` are kept open between uses."""

    def __init__(self, location: str | None) -> None:
        import threading

        self.location = location
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def check(self) -> None:
        if self.location is not None:
            from bgc.errors import InputError, Span
            from bgc.runtime.store import StoreError, open_store

            try:
                open_store(self.location).close()
            except StoreError as error:
                raise InputError(str(error), Span(self.location)) from None

    @contextmanager
    def lease(self) -> Iterator[Any]:
        """A store for the block (None with ``--store none``); one that failed is not kept."""
        if self.location is None:
            yield None
            return
        with self._lock:
            found = self._idle.pop() if self._idle else None
        if found is None:
            from bgc.runtime.store import open_store

            found = open_store(self.location)
        try:
            yield found
        except BaseException:
            found.close()
            raise
        with self._lock:
            if len(self._idle) < MAX_IDLE_STORES:
                self._idle.append(found)
                return
        found.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for opened in idle:
            opened.close()


MAX_IDLE_STORES = 8
"""Store connections the proxy keeps open between decisions."""


class ThreadStores(StorePool):
    """A pool that also keeps one connection per thread for as long as it lives (:meth:`get`), for
    an enforcer whose session holds a store across a decision (``bgc acp-proxy``: its agent pump
    and the threads that hold requests)."""

    def __init__(self, location: str | None) -> None:
        import threading

        super().__init__(location)
        self._local = threading.local()
        self._kept: list[Any] = []

    def get(self) -> Any:
        if self.location is None:
            return None
        found = getattr(self._local, "store", None)
        if found is None:
            from bgc.runtime.store import open_store

            found = self._local.store = open_store(self.location)
            with self._lock:
                self._kept.append(found)
        return found

    def close(self) -> None:
        super().close()
        with self._lock:
            kept, self._kept = self._kept, []
        for opened in kept:
            opened.close()


class StoreApprovals:
    """:class:`bgc.adapters.mcp.proxy.Approvals` over the store: a request's standing, and cancelling it
    (recorded in the ledger as a ``cancel``, as ``bgc cancel`` records it). ``kind`` is the
    ledger kind of the enforcer, ``person`` how it names the unsigned person at its client, and
    ``client`` where that person answers."""

    def __init__(
        self, stores: StorePool, trusted: Mapping[str, Any], *, kind: str = "proxy", person: str | None = None,
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

        with self.stores.lease() as store:
            loaded = load_request(store, request) if store is not None else None
            if loaded is None:
                return "expired"  # gone or unreadable: deciding again makes and settles a fresh request
            return stored_standing(store, loaded[0], loaded[1], self.trusted, int(time.time())).state

    def cancel(self, request: str, reason: str = "the MCP client cancelled the call or went away") -> None:
        import time

        from bgc.runtime import ledger

        with self.stores.lease() as store:
            now = int(time.time())
            if store is not None and store.cancel(request, now):
                ledger.append(store, ledger.Record("cancel", "cancelled", now, request=request, reason=reason))

    def elicited(self, request: str, allowed: bool) -> bool:
        with self.stores.lease() as store:
            return self._elicited(store, request, allowed)

    def _elicited(self, store: Any, request: str, allowed: bool) -> bool:
        import time

        from bgc.runtime import ledger
        from bgc.runtime.approvals import anyone_may_answer, load_request, stored_standing, use_request

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


class StorePins:
    """:class:`bgc.adapters.mcp.mediator.Pins` over the store, for one session
    (:class:`bgc.runtime.pins.ToolPins`): a store is lent for a listing, and for a call only when
    the tool is not pinned yet."""

    def __init__(self, stores: StorePool, server: str, trusted: Mapping[str, Any]) -> None:
        from bgc.runtime.pins import ToolPins

        self.stores = stores
        self.pins = ToolPins(server, trusted, _say)

    def withheld(self, tools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        import time

        with self.stores.lease() as store:
            return self.pins.check(store, tools, int(time.time()))

    def allowed(self, tool: str) -> None:
        import time

        if tool in self.pins.pinned or tool not in self.pins.listed:
            return
        with self.stores.lease() as store:
            self.pins.first_use(store, tool, int(time.time()))


CLIENT_PERSON = "(the person at the MCP client)"
"""How the ledger names whoever answered an elicitation: unsigned, so no approver's name."""
