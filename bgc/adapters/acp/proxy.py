"""The ACP proxy: an editor's agent behind a policy.

An editor (Zed, a JetBrains IDE, a Neovim client) starts an ACP agent as a command and speaks
JSON-RPC 2.0 to it over the child's standard streams, one message per line (ACP v1, "Transports:
stdio"). The proxy is that command: it starts the real agent as its own child
(:class:`bgc.adapters.relay.Relay`: a process group of its own, signals passed on, never left
running) and relays lines both ways, deciding by policy what the agent asks of the editor
(:mod:`bgc.adapters.acp.mapping` reads each message; a :class:`Guard` decides and records).

Fail-closed rules, stated once:

- **Framing, both ways.** A line is one strict JSON-RPC object
  (:func:`bgc.adapters.jsonrpc.read_message`: no carriage return, duplicate key, ``NaN``, deep
  nesting, batch; at most ``max_message_bytes``, a longer line consumed without being held), or
  it is refused and never passed on; a request among them gets a JSON-RPC error, the session
  goes on. What is passed on is the value that was decided, re-serialised
  (:func:`bgc.core.values.jsonline.dumps`). A request id still outstanding is refused; an answer
  to no outstanding request is dropped (an answer bgc already gave is never given twice).
- **Files** (``fs/read_text_file``, ``fs/write_text_file``): decided before the editor sees the
  request: ``fs:read`` / ``fs:write`` of the path, in the session's project. Not allowed: a
  JSON-RPC error to the agent (:data:`POLICY_REFUSED`), and the editor never serves the buffer
  or writes the file.
- **Permission requests** (``session/request_permission``): the tool call mapped to a call
  (:func:`bgc.adapters.acp.mapping.agent_use`, else its kind and locations). ``deny``: bgc
  answers the agent's ``reject_once`` itself, and the editor never sees the request.
  ``allow``: bgc answers ``allow_once``, **never** ``allow_always`` (an agent told "always"
  stops asking, and bgc would go blind). ``ask`` any one person may answer: forwarded to the
  editor with every ``allow_always`` option removed; the person's pick is read back and checked
  (an option never shown, an answer bgc cannot read: refused). ``ask`` that names approvers or
  needs more than one: held as a permission request for ``bgc approve`` up to
  ``wait_seconds``, then refused.
- **Cancel** (``session/cancel`` from the editor): every permission request of the session still
  waiting (held, or before the person) is cancelled in the store and answered ``cancelled`` to
  the agent (PermissionCancelled); a later answer does not count.
- **Modes.** ``session/set_mode`` from the editor (a person clicked it) is forwarded and
  recorded; a ``current_mode_update`` the agent announces on its own is passed on (the editor
  shows what the agent does) and recorded as refused: bgc's decisions never read the agent's
  mode. bgc never sends a mode change itself.
- **Terminals** (``terminal/create``): decided as the command it runs (every reading of it:
  :class:`bgc.adapters.acp.mapping.TerminalCommand`), in a directory inside the session's
  project, its environment accounted for; later ``terminal/*`` calls only name terminals bgc
  allowed.
- **initialize**: ACP version 1 only (an editor offering a later one is negotiated down to 1; an
  agent answering another is refused); the agent is told only the editor capabilities bgc
  mediates, and the editor that the agent takes no remote MCP server.
- **Sessions.** ``session/new``, ``load``, ``resume``: the ``cwd`` the editor gives is the
  session's project; each stdio MCP server it lists starts behind ``bgc mcp-proxy``, a remote
  one is left out. A request naming a session the editor never opened is refused.
- **Anything else the agent asks of the editor** (an unknown method, an extension, an
  elicitation) is declined (:data:`bgc.adapters.jsonrpc.METHOD_NOT_FOUND`); an unknown
  notification is dropped. Every tool call the agent ran without asking (``session/update``
  shows it running) is recorded.
- The :class:`Guard` raising is a deny, never a forward.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import IO, Any

from bgc.adapters.acp import mapping
from bgc.adapters.acp.mapping import AcpInputError, PermissionOptions, TerminalCommand, ToolCallInfo
from bgc.adapters.agents.protocol import ToolUse
from bgc.adapters.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Refused,
    id_key,
    read_message,
    valid_request_id,
)
from bgc.adapters.relay import SHUTDOWN_GRACE_SECONDS, Relay
from bgc.core.values.jsonline import LineReader, TooLong, dumps, partial_reader

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message read from either side by default: prompts carry images, writes files."""
POLICY_REFUSED = -32001
"""The JSON-RPC error code of a request the policy did not allow (a server error, as JSON-RPC
reserves -32000 to -32099 for them)."""
MAX_REMEMBERED = 4096
"""Tool calls remembered per kind (names announced, calls asked about, calls recorded as run
without asking, answers still owed by the editor): the oldest is forgotten past it."""

MAX_ANNOUNCED_INPUT = 64 * 1024
"""The largest tool input kept from the update that announced a call (for a permission request
that names none, or a call run without asking): a larger one is not kept."""

SESSION_OPENERS = ("session/new", "session/load", "session/resume", "session/fork")
"""Editor requests whose ``cwd`` is a session's project (load, resume and fork name the session)."""
TERMINAL_CALLS = ("terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release")
RUNNING = frozenset({"in_progress", "completed", "failed"})
"""Tool call states that say the call ran (or runs)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the policy (and people) said of one request: ``allow``, ``ask`` or ``deny``, why, the
    permission request an ask is bound to, and whether any one person may answer it."""

    effect: str
    reason: str
    request: str | None = None
    anyone: bool = False


@dataclass(frozen=True, slots=True)
class AcpSession:
    """An ACP session the editor opened: its id and the project directory it gave (``cwd``)."""

    id: str
    root: str


@dataclass(frozen=True, slots=True)
class Asked:
    """A tool call the agent asks (or tells) about, as bgc reads it: the agent's own call
    (``use``) where its adapter carries the tool's input, else what its kind and locations
    touch (``needs``); neither: bgc cannot tell what it does (``unreadable`` says why, when the
    agent's input could not be read as its tool's: refused)."""

    call: ToolCallInfo
    use: ToolUse | None
    needs: tuple[tuple[str, str, str], ...]
    unreadable: str | None = None


class Guard:
    """What the proxy asks of the policy and the store (:mod:`bgc.app.commands.acp_proxy`):
    decisions, each settled and recorded; a permission request's standing; and records."""

    def file(self, session: AcpSession, action: str, path: str, params: Mapping[str, Any]) -> Verdict:
        raise NotImplementedError

    def permission(self, session: AcpSession, asked: Asked) -> Verdict:
        raise NotImplementedError

    def terminal(self, session: AcpSession, command: TerminalCommand, params: Mapping[str, Any], person: bool) -> Verdict:
        """``person``: the person at the editor allowed this very command a moment ago (the
        permission request the agent asked about it), which an ask then counts as, once."""
        raise NotImplementedError

    def state(self, request: str) -> str:
        """Where a permission request stands (``pending``, ``approved``, …)."""
        raise NotImplementedError

    def cancel(self, request: str, why: str) -> None:
        raise NotImplementedError

    def wait(self, cancelled: threading.Event, seconds: float) -> bool:
        """Up to ``seconds`` for a sign that a request's standing may have changed (then the
        holder reads :meth:`state`); True as soon as ``cancelled`` is set. This one waits the
        whole time; one over a store that tells of changes returns when it does."""
        return cancelled.wait(seconds)

    def answered(self, session: AcpSession, asked: Asked, verdict: Verdict, allowed: bool) -> bool:
        """The person at the editor answered an ask any one person may answer: use the request
        (allowed) or end it, and record it; False when the answer can no longer count."""
        raise NotImplementedError

    def unasked(self, session: AcpSession, asked: Asked) -> None:
        """Record a tool call the agent ran without asking."""
        raise NotImplementedError

    def mode(self, session: str, mode: str, by_agent: bool) -> None:
        """Record the agent's mode set by the person at the editor, or announced by the agent."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class ProxyOptions:
    """How the proxy behaves beyond its defaults."""

    agent: str | None = None
    """Whose tool declarations map a permission request (``claude-code``); None: kinds and
    locations only."""
    wrap_mcp: Callable[[str, str, list[str]], tuple[str, list[str]]] | None = None
    """How a session's stdio MCP server is started behind ``bgc mcp-proxy``; None: every MCP
    server is left out."""
    max_message_bytes: int = MAX_MESSAGE_BYTES
    shutdown_grace_seconds: float = SHUTDOWN_GRACE_SECONDS
    wait_seconds: float = 0.0
    """How long a request that needs approval is held for ``bgc approve`` (0: refused at once)."""
    poll_seconds: float = 0.5
    """The longest a held request goes without reading where it stands (a :class:`Guard` that
    tells of changes wakes it sooner)."""


@dataclass
class _Owed:
    """A request one side made that the other still owes an answer to (an agent's request held
    by bgc is owed by bgc: ``at_editor`` False, and no answer of the editor's counts for it)."""

    method: str
    session: AcpSession | None = None
    data: Any = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    at_editor: bool = True


class _Remembered:
    """A set (or map) of keys that forgets its oldest past :data:`MAX_REMEMBERED`; both pumps
    use it, each step under its own lock."""

    def __init__(self) -> None:
        self._keys: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def add(self, key: Any, value: Any = True) -> None:
        with self._lock:
            self._keys.pop(key, None)
            self._keys[key] = value
            if len(self._keys) > MAX_REMEMBERED:
                del self._keys[next(iter(self._keys))]

    def get(self, key: Any) -> Any:
        with self._lock:
            return self._keys.get(key)

    def take(self, key: Any) -> Any:
        """The value kept for ``key`` (None when there is none), forgotten."""
        with self._lock:
            return self._keys.pop(key, None)

    def discard(self, key: Any) -> None:
        self.take(key)

    def __contains__(self, key: Any) -> bool:
        with self._lock:
            return key in self._keys


class AcpProxy(Relay):
    """One editor, one agent child, two pumps; see the module docstring for the rules."""

    prefix = "bgc acp-proxy"
    child_name = "agent"

    def __init__(
        self, command: list[str], guard: Guard, options: ProxyOptions, *, editor_in: IO[bytes] | None = None,
        editor_out: IO[bytes] | None = None, log: IO[str] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(command, options.shutdown_grace_seconds, log)
        self.guard = guard
        self.options = options
        self.editor_in = editor_in if editor_in is not None else sys.stdin.buffer
        self.editor_out = editor_out if editor_out is not None else sys.stdout.buffer
        self._editor_lock = threading.Lock()
        self._agent_lock = threading.Lock()
        self._state = threading.Lock()
        self._agent_in: IO[bytes] | None = None
        self._sessions: dict[str, AcpSession] = {}
        self._from_editor: dict[str, _Owed] = {}  # editor requests the agent owes an answer
        self._from_agent: dict[str, _Owed] = {}  # agent requests forwarded or held, the editor or bgc owes
        self._stale = _Remembered()  # agent requests bgc answered while the editor may still answer them
        self._announced = _Remembered()  # (session, toolCallId) → the tool's name and input, as announced
        self._asked = _Remembered()  # (session, toolCallId) of calls a permission request was about
        self._recorded = _Remembered()  # (session, toolCallId) recorded as run without asking
        self._commands = _Remembered()  # (session, command) a person allowed in the editor: one terminal each
        self._terminals = _Remembered()  # (session, terminalId) bgc let the editor create
        self._editor_gone = threading.Event()

    # ---- output -------------------------------------------------------------------------------

    def _to_editor(self, message: Mapping[str, Any]) -> None:
        with self._editor_lock:
            try:
                self.editor_out.write(dumps(message))
                self.editor_out.flush()
            except (BrokenPipeError, OSError, ValueError):
                self._editor_gone.set()

    def _to_agent(self, message: Mapping[str, Any]) -> None:
        data = dumps(message)
        with self._agent_lock:
            if self._agent_in is None:
                return
            try:
                self._agent_in.write(data)
                self._agent_in.flush()
            except (BrokenPipeError, OSError, ValueError):
                self._say("the agent stopped reading its input")

    @staticmethod
    def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}

    def _answer_agent(self, request_id: object, result: Mapping[str, Any]) -> None:
        self._to_agent({"jsonrpc": "2.0", "id": request_id, "result": result})

    # ---- reading ------------------------------------------------------------------------------

    def _lines(self, stream: IO[bytes]) -> Iterator[bytes | TooLong]:
        return iter(LineReader(partial_reader(stream), self.options.max_message_bytes))

    def _read(self, line: bytes | TooLong, outstanding: Callable[[object], bool], reply: Callable[[Any], None],
              side: str) -> dict[str, Any] | None:  # fmt: skip
        """One line from ``side`` as a message, or None when it is refused (answered through
        ``reply`` when it was a request) or blank."""
        if isinstance(line, TooLong):
            found = line.request_id
            request_id = found if valid_request_id(found) and not outstanding(found) else None
            self._say(f"refused a message of {line.length:,} bytes from the {side} (the limit is "
                      f"{self.options.max_message_bytes:,})")  # fmt: skip
            reply(self._error(request_id, INVALID_REQUEST, f"message larger than {self.options.max_message_bytes} bytes"))
            return None
        if not line.strip(b" \t"):
            return None
        try:
            message = read_message(line)
            if "method" in message and "id" in message and outstanding(message["id"]):
                raise Refused(INVALID_REQUEST, f"request id {message['id']!r} is already in use")
        except Refused as refusal:
            self._say(f"refused a line from the {side}: {refusal.message}")
            for request_id in refusal.request_ids:
                reply(self._error(request_id, refusal.code, refusal.message))
            return None
        return message

    # ---- editor → agent -----------------------------------------------------------------------

    def _child_started(self, child: Any) -> None:
        with self._agent_lock:
            self._agent_in = child.stdin

    def _pump_peer(self, child_in: IO[bytes]) -> None:
        try:
            for line in self._lines(self.editor_in):
                message = self._read(line, self._editor_outstanding, self._to_editor, "editor")
                if message is not None:
                    self._guarded(message, self._editor_message, self._to_editor)
        except (OSError, ValueError):
            self._say("the editor's input failed")
        finally:
            self._editor_gone.set()
            with self._state:
                owed = list(self._from_agent.values())
            for held in owed:  # the editor is gone: nobody waits for these any more
                held.cancelled.set()
            with self._agent_lock:
                self._agent_in = None
                try:
                    child_in.close()
                except OSError:
                    pass

    def _editor_outstanding(self, request_id: object) -> bool:
        with self._state:
            return id_key(request_id) in self._from_editor

    def _guarded(self, message: dict[str, Any], handle: Callable[[dict[str, Any]], None],
                 reply: Callable[[Any], None]) -> None:  # fmt: skip
        """Handle one message; a message bgc fails on is refused, and the stream goes on."""
        try:
            handle(message)
        except AcpInputError as error:
            self._say(f"refused {message.get('method', 'an answer')}: {error}")
            if "method" in message and "id" in message:
                reply(self._error(message["id"], INVALID_PARAMS, f"bgc: {error}"))
        except Exception as error:  # noqa: BLE001 - a message bgc fails on is refused; the stream goes on
            self._say(f"refused a message bgc failed on ({type(error).__name__}: {error})")
            if "method" in message and "id" in message:
                reply(self._error(message["id"], INTERNAL_ERROR, "bgc could not handle this message: it was not passed on"))

    def _editor_message(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            self._editor_answer(message)
            return
        params = message.get("params")
        owed = _Owed(method)
        if method == "initialize":
            mapping.protocol_version(params)
            capabilities = mapping.mediated_capabilities(params.get("clientCapabilities"))
            message = {**message, "params": {**params, "protocolVersion": mapping.PROTOCOL_VERSION,
                                             "clientCapabilities": capabilities}}  # fmt: skip
        elif method in SESSION_OPENERS:
            message, owed = self._opening(message, params)
        elif method == "session/set_mode" and isinstance(params, dict) and isinstance(params.get("modeId"), str):
            self.guard.mode(mapping.session_of(params), params["modeId"], by_agent=False)
        elif method == "session/cancel":
            self._cancel_session(mapping.session_of(params))
        if "id" in message:
            with self._state:
                self._from_editor[id_key(message["id"])] = owed
        self._to_agent(message)

    def _opening(self, message: dict[str, Any], params: Any) -> tuple[dict[str, Any], _Owed]:
        """A request that opens a session: its ``cwd`` (absolute) is the session's project, and
        its stdio MCP servers run behind ``bgc mcp-proxy`` (remote ones are left out)."""
        method = message["method"]
        cwd = params.get("cwd") if isinstance(params, dict) else None
        if not (isinstance(cwd, str) and cwd.startswith("/")):
            raise AcpInputError(f"{method}: cwd is not an absolute path")
        named = mapping.session_of(params) if method != "session/new" else None
        if "mcpServers" in params and params["mcpServers"] is not None:
            servers, dropped = mapping.guarded_servers(params["mcpServers"], self._wrap)
            for name in dropped:
                self._say(f"left out MCP server {name!r}: it is reached over the network, and only a stdio "
                          "server can run behind bgc mcp-proxy")  # fmt: skip
            message = {**message, "params": {**params, "mcpServers": servers}}
        return message, _Owed(method, None if named is None else AcpSession(named, cwd), cwd)

    def _wrap(self, name: str, command: str, args: list[str]) -> tuple[str, list[str]]:
        if self.options.wrap_mcp is None:
            raise AcpInputError(f"MCP server {name!r}: this proxy starts no MCP server")
        return self.options.wrap_mcp(name, command, args)

    def _editor_answer(self, message: dict[str, Any]) -> None:
        """The editor's answer to a request the agent made: passed on, except the person's
        answer to a permission request, which bgc reads and answers itself."""
        key = id_key(message.get("id"))
        with self._state:
            owed = self._from_agent.get(key)
            if owed is not None and not owed.at_editor:
                owed = None  # held by bgc: the editor was never asked, and its answer counts for nothing
            elif owed is not None:
                del self._from_agent[key]
            stale = owed is None and key in self._stale
            self._stale.discard(key)
        if owed is None:
            if not stale:
                self._say("dropped an answer from the editor to no request the agent is waiting on")
            return
        if owed.method == "session/request_permission":
            self._person_answered(message, owed)
            return
        if owed.method == "terminal/create":
            result = message.get("result")
            terminal = result.get("terminalId") if isinstance(result, dict) else None
            if isinstance(terminal, str) and owed.session is not None:
                self._terminals.add((owed.session.id, terminal))
        self._to_agent(message)

    def _cancel_session(self, session: str) -> None:
        """``session/cancel``: every permission request of the session still waiting is cancelled
        and answered ``cancelled`` (the held ones by their own thread)."""
        with self._state:
            waiting = [(key, owed) for key, owed in self._from_agent.items()
                       if owed.session is not None and owed.session.id == session and owed.data is not None]  # fmt: skip
        for key, owed in waiting:
            owed.cancelled.set()
            if isinstance(owed.data, _Before):  # before the person: bgc answers for them
                with self._state:
                    if self._from_agent.pop(key, None) is None:
                        continue  # answered meanwhile
                    self._stale.add(key)
                if owed.data.verdict.request is not None:
                    self._cancelled_request(owed.data.verdict.request)
                self._answer_agent(owed.data.request_id, mapping.CANCELLED)
                self._say(f"cancelled the permission request for {owed.data.asked.call.title or owed.data.asked.call.tool_call_id!r}")

    def _cancelled_request(self, request: str) -> None:
        try:
            self.guard.cancel(request, "the editor cancelled the turn, or went away")
        except Exception as error:  # noqa: BLE001 - the agent is answered cancelled all the same
            self._say(f"could not cancel permission request {request} ({type(error).__name__}: {error})")

    # ---- agent → editor -----------------------------------------------------------------------

    def _pump_child(self, child_out: IO[bytes]) -> None:
        for line in self._lines(child_out):
            message = self._read(line, self._agent_outstanding, self._to_agent, "agent")
            if message is not None:
                self._guarded(message, self._agent_message, self._to_agent)

    def _agent_outstanding(self, request_id: object) -> bool:
        key = id_key(request_id)
        with self._state:
            return key in self._from_agent or key in self._stale

    def _agent_message(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            self._agent_answer(message)
        elif "id" not in message:
            if method == "session/update":
                self._update(message)
            else:
                self._say(f"dropped the agent's notification {method!r}: not one bgc passes on")
        elif method in mapping.FILE_FIELDS:
            self._file(message)
        elif method == "session/request_permission":
            self._permission(message)
        elif method == "terminal/create":
            self._terminal(message)
        elif method in TERMINAL_CALLS:
            self._terminal_call(message)
        else:
            self._say(f"declined the agent's request {method!r}: bgc mediates no such request")
            self._to_agent(self._error(message["id"], METHOD_NOT_FOUND, f"bgc acp-proxy declines {method!r}: "
                                       "it passes on only requests it decides"))  # fmt: skip

    def _agent_answer(self, message: dict[str, Any]) -> None:
        """The agent's answer to an editor request: passed on; a session it opened is known from
        then on, and an ``initialize`` answer must speak version 1."""
        with self._state:
            owed = self._from_editor.pop(id_key(message.get("id")), None)
        if owed is None:
            self._say("dropped an answer from the agent to no request the editor is waiting on")
            return
        result = message.get("result")
        if owed.method == "initialize" and isinstance(result, dict):
            if result.get("protocolVersion") != mapping.PROTOCOL_VERSION:
                self._to_editor(self._error(message["id"], INTERNAL_ERROR, (
                    f"the agent speaks ACP version {result.get('protocolVersion')!r}; bgc acp-proxy mediates version "
                    f"{mapping.PROTOCOL_VERSION} only")))  # fmt: skip
                return
            capabilities = result.get("agentCapabilities")
            if isinstance(capabilities, dict):  # the agent takes no remote MCP server through bgc
                capabilities = {**capabilities, "mcpCapabilities": {"http": False, "sse": False}}
                message = {**message, "result": {**result, "agentCapabilities": capabilities}}
        elif owed.method in SESSION_OPENERS and "result" in message:
            opened = owed.session
            if opened is None or owed.method == "session/fork":
                session = result.get("sessionId") if isinstance(result, dict) else None
                opened = AcpSession(session, owed.data) if isinstance(session, str) and session else None
            if opened is not None:
                with self._state:
                    self._sessions[opened.id] = opened
        self._to_editor(message)

    def _session(self, params: Any) -> AcpSession:
        session = mapping.session_of(params)
        with self._state:
            found = self._sessions.get(session)
        if found is None:
            raise AcpInputError(f"session {session!r} is not one the editor opened")
        return found

    def _decide(self, decide: Callable[[], Verdict]) -> Verdict:
        try:
            verdict = decide()
        except Exception as error:  # noqa: BLE001 - a failing decision is a deny, never a forward
            return Verdict("deny", f"bgc could not decide this request ({type(error).__name__}: {error})")
        if verdict.effect not in ("allow", "ask", "deny"):
            return Verdict("deny", f"bgc could not decide this request (unknown effect {verdict.effect!r})")
        return verdict

    def _forward(self, message: dict[str, Any], params: dict[str, Any], session: AcpSession) -> None:
        """Pass an agent request the policy allowed to the editor, as decided."""
        with self._state:
            self._from_agent[id_key(message["id"])] = _Owed(message["method"], session)
        self._to_editor({"jsonrpc": "2.0", "id": message["id"], "method": message["method"], "params": params})

    def _refuse(self, message: dict[str, Any], verdict: Verdict, what: str) -> None:
        reason = verdict.reason if verdict.effect != "ask" or verdict.reason.startswith("needs approval") else (
            f"needs approval: {verdict.reason}")  # fmt: skip
        self._say(f"{verdict.effect} {what}: {reason}")
        self._to_agent(self._error(message["id"], POLICY_REFUSED, f"bgc refused {what}: {reason}"))

    def _file(self, message: dict[str, Any]) -> None:
        action, path, params = mapping.file_request(message["method"], message.get("params"))
        session = self._session(params)
        what = f"fs:{action} of {path}"

        def decide() -> Verdict:
            return self.guard.file(session, action, path, {k: v for k, v in params.items() if k != "sessionId"})

        self._settle(message, session, self._decide(decide), decide,
                     lambda: self._forward(message, params, session), lambda verdict: self._refuse(message, verdict, what))  # fmt: skip

    def _terminal(self, message: dict[str, Any]) -> None:
        command, params = mapping.terminal_request(message.get("params"))
        session = self._session(params)
        what = f"the terminal command {command.readings[0]!r}"
        # the person allowed this very command in the editor just now (the permission request the
        # agent asked before its terminal): it may run once, if nothing denies it
        person = len(command.readings) == 1 and self._commands.take((session.id, command.readings[0])) is not None

        def decide() -> Verdict:
            return self.guard.terminal(session, command, {k: v for k, v in params.items() if k != "sessionId"}, person)

        def forward() -> None:
            self._forward(message, params, session)

        self._settle(message, session, self._decide(decide), decide, forward, lambda verdict: self._refuse(message, verdict, what))  # fmt: skip

    def _terminal_call(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        session = self._session(params)
        terminal = params.get("terminalId")
        if set(params) - {"sessionId", "terminalId", mapping.META} or (session.id, terminal) not in self._terminals:
            raise AcpInputError(f"{message['method']}: terminal {terminal!r} is not one bgc let the editor create")
        if message["method"] == "terminal/release":
            self._terminals.discard((session.id, terminal))
        self._forward(message, {"sessionId": session.id, "terminalId": terminal}, session)

    # ---- permission requests ------------------------------------------------------------------

    def _permission(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        session = self._session(params)
        options = mapping.permission_options(params.get("options"))
        call = mapping.tool_call(params.get("toolCall"))
        self._asked.add((session.id, call.tool_call_id))
        asked = self._asked_call(session, call)
        what = f"{call.title or call.kind or 'a tool call'!r}"

        def decide() -> Verdict:
            return self.guard.permission(session, asked)

        verdict = self._decide(decide)
        if verdict.effect == "ask" and verdict.anyone and options.allow is not None:
            self._before_person(message, session, options, asked, verdict)
            return
        self._settle(message, session, verdict, decide, lambda: self._allow_once(message, options, asked, session),
                     lambda refused: self._reject(message["id"], options, refused, what))  # fmt: skip

    def _asked_call(self, session: AcpSession, call: ToolCallInfo) -> Asked:
        """The call as bgc reads it: the agent's mapping (the tool's name and input announced
        with it when the request has none), else its kind and locations."""
        announced = self._announced.get((session.id, call.tool_call_id)) or (None, None)
        if call.raw_input is None and announced[1] is not None:
            call = replace(call, raw_input=announced[1])
        try:
            use = mapping.agent_use(self.options.agent, call, announced[0], session.root, session.id)
        except AcpInputError as error:
            return Asked(call, None, (), str(error))
        needs = () if use is not None else tuple(mapping.location_needs(call.kind, call.locations))
        return Asked(call, use, needs)

    def _allow_once(self, message: dict[str, Any], options: PermissionOptions, asked: Asked, session: AcpSession) -> None:
        if options.allow is None:
            self._reject(message["id"], options, Verdict("deny", "the agent offered no allow_once option"), "the call")
            return
        self._approved_command(session, asked)
        self._answer_agent(message["id"], mapping.selected(options.allow))

    def _approved_command(self, session: AcpSession, asked: Asked) -> None:
        """A shell command allowed to run: the terminal the agent then asks the editor for runs
        this very command, once."""
        if asked.use is not None and asked.use.shell and isinstance(asked.use.params.get("command"), str):
            self._commands.add((session.id, asked.use.params["command"]))

    def _reject(self, request_id: object, options: PermissionOptions, verdict: Verdict, what: str) -> None:
        """Answer a permission request bgc refuses: the agent's ``reject_once`` (else its
        ``reject_always``, else cancelled)."""
        self._say(f"{verdict.effect} {what}: {verdict.reason}")
        self._answer_agent(request_id, mapping.selected(options.reject) if options.reject else mapping.CANCELLED)

    def _before_person(self, message: dict[str, Any], session: AcpSession, options: PermissionOptions, asked: Asked,
                       verdict: Verdict) -> None:  # fmt: skip
        """Put an ask any one person may answer to the person at the editor, without any
        ``allow_always`` option; their answer comes back through :meth:`_person_answered`."""
        params = {**message["params"], "options": list(options.shown)}
        with self._state:
            self._from_agent[id_key(message["id"])] = _Owed(
                message["method"], session, _Before(message["id"], options, asked, verdict)
            )
        self._to_editor({"jsonrpc": "2.0", "id": message["id"], "method": message["method"], "params": params})

    def _person_answered(self, message: dict[str, Any], owed: _Owed) -> None:
        """The person's answer to a permission request put to them, read back: an option they
        were shown (an allow counts once, as the store says), or cancelled; anything else refused."""
        before: _Before = owed.data
        assert owed.session is not None
        choice = mapping.editor_choice(message.get("result"), before.options)
        what = f"{before.asked.call.title or before.asked.call.tool_call_id!r}"
        if choice is None:
            refusal = Verdict("deny", "the editor's answer is not one of the options it was shown")
            self._reject(before.request_id, before.options, refusal, what)
            return
        kind, option_id = choice
        if option_id is None:  # the person closed the question
            if before.verdict.request is not None:
                self._cancelled_request(before.verdict.request)
            self._answer_agent(before.request_id, mapping.CANCELLED)
            return
        allowed = kind == mapping.ALLOW_ONCE
        try:
            counts = self.guard.answered(owed.session, before.asked, before.verdict, allowed)
        except Exception as error:  # noqa: BLE001 - an answer bgc cannot record allows nothing
            self._say(f"could not record the person's answer ({type(error).__name__}: {error})")
            counts = False
        if allowed and not counts:
            self._reject(before.request_id, before.options, Verdict("deny", "the person's answer can no longer be used"), what)
            return
        if allowed:
            self._approved_command(owed.session, before.asked)
        self._answer_agent(before.request_id, mapping.selected(option_id))  # a reject_always only ever narrows

    # ---- held for bgc approve -----------------------------------------------------------------

    def _settle(self, message: dict[str, Any], session: AcpSession, verdict: Verdict, decide: Callable[[], Verdict],
                allow: Callable[[], None], refuse: Callable[[Verdict], None]) -> None:  # fmt: skip
        """Act on a verdict: allow, refuse, or hold an ask bound to a permission request for
        ``bgc approve`` (in a thread of its own: other messages flow) when the proxy waits."""
        if verdict.effect == "allow":
            allow()
        elif verdict.effect == "ask" and verdict.request is not None and self.options.wait_seconds > 0:
            owed = _Owed(message["method"], session, verdict, at_editor=False)
            with self._state:
                self._from_agent[id_key(message["id"])] = owed
            self._say(f"holding {message['method']} for approval: {verdict.reason}")
            threading.Thread(target=self._held, args=(message, owed, verdict, decide, allow, refuse), daemon=True,
                             name=f"approval {verdict.request}").start()  # fmt: skip
        else:
            refuse(verdict)

    def _held(self, message: dict[str, Any], owed: _Owed, verdict: Verdict, decide: Callable[[], Verdict],
              allow: Callable[[], None], refuse: Callable[[Verdict], None]) -> None:  # fmt: skip
        assert verdict.request is not None
        deadline = time.monotonic() + self.options.wait_seconds
        try:
            while True:
                if self.guard.wait(owed.cancelled, max(0.0, min(self.options.poll_seconds, deadline - time.monotonic()))):
                    self._cancelled_request(verdict.request)
                    verdict = Verdict("deny", f"permission request {verdict.request} was cancelled: the editor "
                                      "cancelled the turn or went away")  # fmt: skip
                    break
                state = self.guard.state(verdict.request)
                if state == "cancelled":  # by a person (bgc cancel, the approvals page): not asked again
                    verdict = Verdict("deny", f"permission request {verdict.request} was cancelled")
                    break
                if state != "pending":
                    verdict = self._decide(decide)  # uses the answer: once, and recorded
                    break
                if time.monotonic() >= deadline:
                    verdict = Verdict("ask", f"{verdict.reason}; no decision within {self.options.wait_seconds:g} s")
                    break
        except Exception as error:  # noqa: BLE001 - following a request that fails is a deny
            verdict = Verdict("deny", f"bgc could not follow the permission request ({type(error).__name__}: {error})")
        with self._state:
            self._from_agent.pop(id_key(message["id"]), None)
        if owed.cancelled.is_set() and message["method"] == "session/request_permission":
            self._answer_agent(message["id"], mapping.CANCELLED)
        elif verdict.effect == "allow" and not owed.cancelled.is_set():
            allow()
        else:
            refuse(verdict)

    # ---- session updates ----------------------------------------------------------------------

    def _update(self, message: dict[str, Any]) -> None:
        """Pass a ``session/update`` on; note the tool names and inputs it announces, record a
        tool call that runs without having asked, and a mode the agent changed to on its own."""
        session_id, update = mapping.session_update(message.get("params"))
        kind = update["sessionUpdate"]
        if kind == "current_mode_update" and isinstance(update.get("currentModeId"), str):
            self._say(f"the agent announced mode {update['currentModeId']!r} on its own: bgc decides as before")
            self.guard.mode(session_id, update["currentModeId"], by_agent=True)
        elif kind in ("tool_call", "tool_call_update") and isinstance(update.get("toolCallId"), str):
            try:
                self._tool_update(session_id, update)
            except Exception as error:  # noqa: BLE001 - an update is passed on even when it cannot be recorded
                self._say(f"could not note a tool call's update ({type(error).__name__}: {error})")
        self._to_editor(message)

    def _tool_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        key = (session_id, update["toolCallId"])
        name, raw_input = mapping.tool_name(update), update.get("rawInput")
        if name is not None or raw_input is not None:
            known = self._announced.get(key) or (None, None)
            small = raw_input is not None and len(dumps(raw_input)) <= MAX_ANNOUNCED_INPUT
            self._announced.add(key, (name or known[0], raw_input if small else known[1]))
        with self._state:
            session = self._sessions.get(session_id)
        if update.get("status") not in RUNNING or session is None or key in self._asked or key in self._recorded:
            return
        self._recorded.add(key)
        self.guard.unasked(session, self._asked_call(session, mapping.tool_call(update)))

    # ---- the agent gone -----------------------------------------------------------------------

    def _child_exited(self, status: int, peer_alive: bool) -> None:
        """Editor requests still waiting for the agent get an error; the log says it exited."""
        with self._state:
            owed = list(self._from_editor)
            self._from_editor.clear()
        for key in owed:
            self._to_editor(self._error(_id_of(key), INTERNAL_ERROR, f"the agent exited (status {status}) before answering"))
        if not self._editor_gone.is_set() and peer_alive:
            self._say(f"the agent exited with status {status}")


@dataclass(frozen=True, slots=True)
class _Before:
    """A permission request put to the person at the editor: the agent's request id, what it
    offered, the call, and the policy's verdict (its permission request)."""

    request_id: object
    options: PermissionOptions
    asked: Asked
    verdict: Verdict


def _id_of(key: str) -> object:
    import json

    return json.loads(key)


def blocked(reason: str, editor_in: IO[bytes] | None = None, editor_out: IO[bytes] | None = None,
            log: IO[str] | None = None) -> int:  # fmt: skip
    """Stand in for an agent bgc cannot start behind its policy (a policy or store it cannot
    read): no agent runs; every request the editor makes is answered with an error saying why,
    so the editor shows it (never the bare agent, never silence); exit 2 when the editor leaves."""
    editor_in = editor_in if editor_in is not None else sys.stdin.buffer
    editor_out = editor_out if editor_out is not None else sys.stdout.buffer
    print(f"bgc acp-proxy: {reason}", file=log if log is not None else sys.stderr, flush=True)
    try:
        for line in LineReader(partial_reader(editor_in), MAX_MESSAGE_BYTES):
            if isinstance(line, TooLong):
                continue
            try:
                message = read_message(line)
            except Refused:
                continue
            if "method" in message and "id" in message:
                answer = AcpProxy._error(message["id"], INTERNAL_ERROR, f"bgc acp-proxy: the agent was not started: {reason}")
                editor_out.write(dumps(answer))
                editor_out.flush()
    except (OSError, ValueError):
        pass
    return 2
