"""The MCP stdio proxy: every ``tools/call`` decided before a server sees it.

An MCP client starts a server as a command and speaks JSON-RPC to it over the child's standard
streams, one message per line (https://modelcontextprotocol.io/specification/draft/basic/transports/stdio:
"Messages are delimited by newlines, and MUST NOT contain embedded newlines"). The proxy is that
command: it starts the real server as its own child and copies lines both ways, so the client
and the server speak to each other exactly as before, except for one method.

Fail-closed rules, stated once:

- A client message is forwarded only if bgc could read it and, when it is a ``tools/call``, the
  decision was ``allow``; what is forwarded is the value that was decided, re-serialised
  (:mod:`bgc.core.values.jsonline`), never the client's bytes. A line that is not one strict
  JSON object (:func:`bgc.core.values.jsonline.parse`: a carriage return, invalid UTF-8 or JSON,
  a duplicate key anywhere, ``NaN``, out-of-range numbers, deep nesting), a batch array, a line
  larger than :data:`MAX_MESSAGE_BYTES`, a request whose id not every reader reads alike
  (:func:`bgc.adapters.jsonrpc.valid_request_id`) or that is still outstanding is never forwarded: a parser
  differential between bgc and the server (where does a line end? which duplicate key wins?)
  is how an argument check is bypassed. A request among them gets a JSON-RPC error, with its own
  id wherever it can be found.
- ``deny`` and ``ask`` are answered by the proxy with a tool result whose ``isError`` is true and
  whose text names the rule that decided (the shape the MCP specification prescribes for tool
  errors, so the model sees the reason). A ``tools/call`` sent as a notification (no id) that is
  not allowed is dropped.
- An ``ask`` is a permission request people answer (``bgc approve ID``). With
  ``wait_seconds`` the call is held that long (other messages keep flowing) while the request
  is pending: approved → decided again (which uses the approval, once) and forwarded only if that
  decision allows; rejected, expired or still pending at the deadline → refused with the
  request's id. A client that cancels the held call (``notifications/cancelled``) or goes away
  cancels the request (PermissionCancelled): later answers no longer count.
- With :attr:`ProxyOptions.elicit` (an opt-in), where the client declared the ``elicitation``
  capability and the ask is one any one person may answer (``approvals 1``, no names), the
  proxy also asks the person at the client
  (``elicitation/create``, a yes/no form): accepted with ``allow`` true → the call runs once;
  declined → refused. An elicitation answer is unsigned and says nothing of *who* answered, so it
  never meets a rule that names approvers or needs more than one. The client's answer to the
  proxy's own request is never forwarded to the server.
- Every other message passes through, re-serialised, in both directions: ids, notifications,
  cancellations, progress and server-to-client requests included. A server line bgc cannot read
  is not passed on (a request it answered gets an error). With ``filter_tools`` every answer
  that lists ``tools`` is filtered, whatever it answers.
- Results the proxy writes itself for a request under the stateless protocol (2026-07-28) carry
  ``resultType``, as that version requires.
- The decision function raising is a deny, never a forward.
- When the server exits, requests still waiting for it get an error response; the proxy exits
  with the server's status. When the client goes away, the server's input is closed, and a
  server that does not exit within :data:`SHUTDOWN_GRACE_SECONDS` is terminated, then killed.
  SIGTERM, SIGINT and SIGHUP are passed to the server's process group, which is killed when it
  outlives its grace after one.
"""

from __future__ import annotations

import itertools
import json
import secrets
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from bgc.adapters.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    Refused,
    read_message,
    valid_request_id,
)
from bgc.adapters.relay import SHUTDOWN_GRACE_SECONDS, Relay
from bgc.core.values.jsonline import (
    MAX_LINE_BYTES,
    LineReader,
    TooLong,
    Unreadable,
    dumps,
    parse,
    partial_reader,
    top_level_id,
)

#: The largest message the proxy reads from the client: larger lines are consumed and refused.
MAX_MESSAGE_BYTES = MAX_LINE_BYTES
#: The largest message the proxy reads from the server (tool results carry images and files).
MAX_SERVER_MESSAGE_BYTES = 64 * 1024 * 1024
#: The ``_meta`` key of a request made under the stateless protocol (2026-07-28 and later), whose
#: results must each carry ``resultType``.
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
#: Why a batch is refused.
BATCHES = "JSON-RPC batches are not accepted (MCP removed them in 2025-06-18)"


@dataclass(frozen=True, slots=True)
class ToolVerdict:
    """What the policy says about one ``tools/call``: ``allow``, ``ask`` or ``deny``, and why."""

    effect: str
    reason: str
    request: str | None = None
    """For ``ask``: the permission request people answer."""
    anyone: bool = False
    """For ``ask``: any one person may answer it (the person at the client, by elicitation)."""


ELICITATION_LOOK_SECONDS = 0.25
"""While the client's dialog is open, how often the holder looks for its answer (in memory)."""

#: Decides one call: (tool name, its arguments) → verdict. The proxy supplies the server's name.
Decide = Callable[[str, Mapping[str, Any]], ToolVerdict]


class Approvals:
    """How the proxy follows a permission request while it holds a call: where it stands
    (``pending``, ``approved``, ``rejected``, ``cancelled``, ``expired``), and cancelling it.
    Both are called from the thread that holds the call."""

    def state(self, request: str) -> str:
        raise NotImplementedError

    def cancel(self, request: str) -> None:
        raise NotImplementedError

    def wait(self, cancelled: threading.Event, seconds: float) -> bool:
        """Up to ``seconds`` for a sign that a request's standing may have changed (then the
        holder reads :meth:`state`); True as soon as ``cancelled`` is set. This one waits the
        whole time; one over a store that tells of changes returns when it does."""
        return cancelled.wait(seconds)

    def elicited(self, request: str, allowed: bool) -> bool:
        """The person at the client answered: use the request (allowed) or end it (declined),
        and record it; False when it can no longer be answered (used, gone, rejected by a
        signed answer, cancelled, expired) or an unsigned answer cannot meet it (named approvers)."""
        raise NotImplementedError


#: Whether a tool may be offered in ``tools/list`` at all (used only with ``filter_tools``).
Offered = Callable[[str], bool]


def modern(message: Mapping[str, Any]) -> bool:
    """Whether a request was made under the stateless protocol (its ``params._meta`` names its
    version), whose every result carries ``resultType``."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META in meta


@dataclass(frozen=True, slots=True)
class ProxyOptions:
    """How the proxy behaves beyond its defaults."""

    server: str
    filter_tools: bool = False
    max_message_bytes: int = MAX_MESSAGE_BYTES
    shutdown_grace_seconds: float = SHUTDOWN_GRACE_SECONDS
    wait_seconds: float = 0.0
    """How long a call that needs approval is held for people to answer (0: refused at once)."""
    poll_seconds: float = 0.5
    """The longest a held call goes without reading where its request stands (an
    :class:`Approvals` that tells of changes wakes it sooner)."""
    elicit: bool = False
    """Offer an ask any one person may answer to the client's own dialog (when it has one): an
    opt-in, since the client's answer is unsigned and says nothing of who gave it."""
    elicit_seconds: float = 120.0
    """How long that dialog may stay open when ``wait_seconds`` is shorter."""


class McpProxy(Relay):
    """One client, one server child, two pumps; see the module docstring for the rules (and
    :mod:`bgc.adapters.relay` for the child's life)."""

    prefix = "bgc mcp-proxy"
    child_name = "server"

    def __init__(
        self,
        command: Sequence[str],
        decide: Decide,
        options: ProxyOptions,
        *,
        offered: Offered | None = None,
        approvals: Approvals | None = None,
        client_in: IO[bytes] | None = None,
        client_out: IO[bytes] | None = None,
        log: IO[str] | None = None,
    ) -> None:
        super().__init__(command, options.shutdown_grace_seconds, log)
        self.decide = decide
        self.offered = offered
        self.approvals = approvals
        self.options = options
        self.client_in = client_in if client_in is not None else sys.stdin.buffer
        self.client_out = client_out if client_out is not None else sys.stdout.buffer
        self._out_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._waiting: dict[str, object] = {}  # json key of id → id, client requests the server owes
        self._held: dict[str, threading.Event] = {}  # json key of id → cancel event, calls awaiting approval
        self._elicitations: dict[str, list[Any]] = {}  # the proxy's own request id → [the client's answer]
        self._client_elicits = False
        self._elicit_ids = itertools.count(1)
        self._elicit_salt = secrets.token_hex(16)
        """Unguessable: a server that could predict the proxy's own request ids could send the
        client a request of its own with one, and have the answer to it counted as an approval."""
        self._server_lock = threading.Lock()
        self._client_gone = threading.Event()

    # ---- output -------------------------------------------------------------------------------

    def _to_client(self, data: bytes) -> None:
        with self._out_lock:
            try:
                self.client_out.write(data)
                self.client_out.flush()
            except (BrokenPipeError, OSError, ValueError):
                self._client_gone.set()

    def _send(self, message: Mapping[str, Any]) -> None:
        self._to_client(dumps(message))

    def _error(self, request_id: object, code: int, message: str) -> None:
        self._send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    # ---- client → server -------------------------------------------------------------------------

    def _client_lines(self) -> Iterator[bytes | TooLong]:
        """Lines from the client, each at most ``max_message_bytes``; a longer one is consumed
        without being held (:class:`bgc.core.values.jsonline.LineReader`)."""
        return iter(LineReader(partial_reader(self.client_in), self.options.max_message_bytes))

    def _decide(self, tool: str, arguments: Mapping[str, Any]) -> ToolVerdict:
        try:
            verdict = self.decide(tool, arguments)
        except Exception as error:  # noqa: BLE001 - a failing decision is a deny, never a forward
            return ToolVerdict("deny", f"bgc could not decide this call ({type(error).__name__}: {error})")
        if verdict.effect not in ("allow", "ask", "deny"):
            return ToolVerdict("deny", f"bgc could not decide this call (unknown effect {verdict.effect!r})")
        return verdict

    def _tool_call(self, message: dict[str, Any], server_in: IO[bytes]) -> None:
        request_id = message.get("id")
        is_request = "id" in message
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        arguments = params.get("arguments", {}) if isinstance(params, dict) else None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            if is_request:
                self._error(
                    request_id,
                    INVALID_PARAMS,
                    "tools/call needs params.name (a string) and params.arguments (an object)",
                )
            self._say("refused a tools/call without a readable name and arguments")
            return
        verdict = self._decide(name, arguments)
        if verdict.effect == "allow":
            self._forward(message, server_in)
            return
        elicit = self._client_elicits and self.options.elicit and verdict.anyone and not modern(message)
        if (
            verdict.effect == "ask" and verdict.request is not None and is_request and self.approvals is not None
            and (self.options.wait_seconds > 0 or elicit)
        ):  # fmt: skip
            self._hold(message, server_in, verdict, elicit)
            return
        self._refuse(message, name, verdict)

    def _refuse(self, message: dict[str, Any], name: str, verdict: ToolVerdict) -> None:
        reason = verdict.reason
        if verdict.effect == "ask" and not reason.startswith("needs approval"):
            reason = f"needs approval: {reason}"
        self._say(f"{verdict.effect} {self.options.server}/{name}: {reason}")
        if "id" in message:
            text = f"bgc refused this call to {name!r} on {self.options.server!r}: {reason}"
            result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
            if modern(message):
                result["resultType"] = "complete"
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _hold(self, message: dict[str, Any], server_in: IO[bytes], verdict: ToolVerdict, elicit: bool) -> None:
        """Hold a call that needs approval in its own thread, so other messages keep flowing."""
        key = json.dumps(message["id"], sort_keys=True)
        cancelled = threading.Event()
        with self._state_lock:
            self._held[key] = cancelled
        self._say(f"holding {self.options.server}/{message['params']['name']} for approval: {verdict.reason}")
        answer = self._elicit(message, verdict) if elicit else None
        threading.Thread(
            target=self._await_approval, args=(message, server_in, verdict, key, cancelled, answer), daemon=True,
            name=f"approval {verdict.request}",
        ).start()  # fmt: skip

    def _elicit(self, message: dict[str, Any], verdict: ToolVerdict) -> list[Any]:
        """Ask the person at the client (``elicitation/create``); the returned list receives
        their answer (the client's response message) when it comes."""
        with self._state_lock:
            own_id = f"bgc-elicit-{self._elicit_salt}-{next(self._elicit_ids)}"
            answer: list[Any] = []
            self._elicitations[json.dumps(own_id)] = answer
        name = message["params"]["name"]
        arguments = json.dumps(message["params"].get("arguments", {}), ensure_ascii=False, sort_keys=True)
        text = f"bgc: allow {name!r} on {self.options.server!r} once?\n{arguments[:600]}\n{verdict.reason}"
        schema = {"type": "object", "properties": {"allow": {"type": "boolean", "title": "Allow this call once",
                  "description": "Runs this exact call one time; nothing else."}}, "required": ["allow"]}  # fmt: skip
        self._send({"jsonrpc": "2.0", "id": own_id, "method": "elicitation/create",
                    "params": {"message": text, "requestedSchema": schema}})  # fmt: skip
        return answer

    def _elicited(self, message: dict[str, Any]) -> bool:
        """The client's answer to one of the proxy's own elicitations (never forwarded)."""
        with self._state_lock:
            answer = self._elicitations.pop(json.dumps(message.get("id")), None)
        if answer is None:
            return False
        answer.append(message)
        return True

    def _note_capabilities(self, message: dict[str, Any]) -> None:
        """Whether the client can show a form (``capabilities.elicitation``, form mode)."""
        params = message.get("params")
        capabilities = params.get("capabilities") if isinstance(params, dict) else None
        elicitation = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
        self._client_elicits = isinstance(elicitation, dict) and (
            "form" in elicitation or not ({"form", "url"} & set(elicitation))
        )

    def _await_approval(
        self, message: dict[str, Any], server_in: IO[bytes], verdict: ToolVerdict, key: str,
        cancelled: threading.Event, elicitation: list[Any] | None,
    ) -> None:  # fmt: skip
        import time

        assert self.approvals is not None and verdict.request is not None
        name, arguments = message["params"]["name"], message["params"].get("arguments", {})
        wait = self.options.wait_seconds
        deadline = time.monotonic() + (max(wait, self.options.elicit_seconds) if elicitation is not None else wait)
        try:
            while True:
                look = min(self.options.poll_seconds, ELICITATION_LOOK_SECONDS) if elicitation else self.options.poll_seconds
                if self.approvals.wait(cancelled, max(0.0, min(look, deadline - time.monotonic()))):
                    self.approvals.cancel(verdict.request)
                    self._say(f"cancelled permission request {verdict.request}: the client no longer waits")
                    return
                if elicitation:
                    answered = _elicitation_answer(elicitation.pop())
                    if answered is not None:
                        used = self.approvals.elicited(verdict.request, answered)
                        verdict = (
                            ToolVerdict("allow", f"approved once at the MCP client ({verdict.request})")
                            if answered and used
                            else ToolVerdict("deny", f"declined at the MCP client ({verdict.request})")
                            if not answered
                            else ToolVerdict("deny", f"permission request {verdict.request} can no longer be used")
                        )
                        break
                    elicitation = None  # closed without an answer: people may still answer with bgc approve
                state = self.approvals.state(verdict.request)
                if state == "cancelled":  # by a person (bgc cancel, the page): not asked again
                    verdict = ToolVerdict("deny", f"permission request {verdict.request} was cancelled")
                    break
                if state != "pending":
                    verdict = self._decide(name, arguments)  # uses the answer: once, and recorded
                    break
                if time.monotonic() >= deadline:
                    verdict = ToolVerdict(
                        "ask", f"{verdict.reason}; no decision within {self.options.wait_seconds:g} s"
                    )
                    break
        except Exception as error:  # noqa: BLE001 - following a request that fails is a deny
            verdict = ToolVerdict(
                "deny", f"bgc could not follow the permission request ({type(error).__name__}: {error})"
            )
        finally:
            with self._state_lock:
                self._held.pop(key, None)
        if verdict.effect == "allow" and cancelled.is_set():  # cancelled while it was decided again
            self._say(f"not forwarding {self.options.server}/{name}: the client cancelled it")
            return
        if verdict.effect == "allow":
            try:
                self._forward(message, server_in)
            except (BrokenPipeError, OSError, ValueError):
                self._error(message["id"], INTERNAL_ERROR, "the MCP server stopped reading before the approved call")
            return
        self._refuse(message, name, verdict)

    def _cancel_held(self, message: dict[str, Any]) -> bool:
        """A client's ``notifications/cancelled`` for a call held for approval: cancel it there."""
        params = message.get("params")
        if not isinstance(params, dict) or "requestId" not in params:
            return False
        with self._state_lock:
            held = self._held.get(json.dumps(params["requestId"], sort_keys=True))
        if held is None:
            return False
        held.set()
        return True

    def _forward(self, message: dict[str, Any], server_in: IO[bytes]) -> None:
        """Pass ``message`` on as the value that was decided, re-serialised
        (:func:`bgc.core.values.jsonline.dumps`): no byte of the client's line reaches the server."""
        if "method" in message and "id" in message:
            with self._state_lock:
                self._waiting[json.dumps(message["id"])] = message["id"]
        data = dumps(message)
        with self._server_lock:
            server_in.write(data)
            server_in.flush()

    def _outstanding(self, request_id: object) -> bool:
        """Whether a request with this id still waits for the server or for people."""
        key = json.dumps(request_id)
        with self._state_lock:
            return key in self._waiting or key in self._held

    def _client_message(self, line: bytes | TooLong, server_in: IO[bytes]) -> None:
        """Decide one client line: refused (answered), kept (the proxy's own business), or
        forwarded re-serialised."""
        if isinstance(line, TooLong):
            found = line.request_id
            request_id = found if valid_request_id(found) and not self._outstanding(found) else None
            self._say(f"refused a message of {line.length:,} bytes (the limit is {self.options.max_message_bytes:,})")
            self._error(request_id, INVALID_REQUEST, f"message larger than {self.options.max_message_bytes} bytes")
            return
        if not line.strip(b" \t"):
            return
        try:
            message = read_message(line, BATCHES)
            if "method" in message and "id" in message and self._outstanding(message["id"]):
                raise Refused(INVALID_REQUEST, f"request id {message['id']!r} is already in use")
        except Refused as refusal:
            self._say(f"refused a client line: {refusal.message}")
            for request_id in refusal.request_ids:
                self._error(request_id, refusal.code, refusal.message)
            return
        try:
            self._dispatch(message, server_in)
        except (OSError, ValueError):
            raise  # the server's input is gone: the session ends
        except Exception as error:  # noqa: BLE001 - a message bgc fails on is refused; the stream goes on
            self._say(f"refused a message bgc failed on ({type(error).__name__}: {error})")
            if "method" in message and "id" in message:
                self._error(message["id"], INTERNAL_ERROR, "bgc could not handle this message: it was not forwarded")

    def _dispatch(self, message: dict[str, Any], server_in: IO[bytes]) -> None:
        if message.get("method") == "initialize":
            self._note_capabilities(message)
        if "method" not in message and self._elicited(message):
            return  # the answer to the proxy's own question: the server never asked it
        if message.get("method") == "tools/call":
            self._tool_call(message, server_in)
        elif message.get("method") == "notifications/cancelled" and self._cancel_held(message):
            return  # the server never saw the held call: nothing to tell it
        else:
            self._forward(message, server_in)

    def _pump_peer(self, server_in: IO[bytes]) -> None:
        try:
            for line in self._client_lines():
                self._client_message(line, server_in)
        except (BrokenPipeError, OSError, ValueError):
            self._say("the server stopped reading its input")
        finally:
            with self._state_lock:
                held = list(self._held.values())
            for cancelled in held:  # the client is gone: nobody waits for these calls any more
                cancelled.set()
            try:
                server_in.close()
            except OSError:
                pass

    # ---- server → client -------------------------------------------------------------------------

    def _filter_tool_list(self, message: dict[str, Any]) -> dict[str, Any]:
        """An answer whose result lists ``tools``, with only the tools the policy declares on this
        server: every such answer, whatever request it answers, so no spelling of an id can
        carry an unfiltered list past the proxy."""
        result = message.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list) or self.offered is None:
            return message
        kept = [tool for tool in tools if isinstance(tool, dict) and self._offered(tool.get("name"))]
        return {**message, "result": {**result, "tools": kept}}

    def _offered(self, name: object) -> bool:
        """Whether the policy declares tool ``name`` on this server; a name it cannot decide is not."""
        assert self.offered is not None
        try:
            return isinstance(name, str) and self.offered(name)
        except Exception as error:  # noqa: BLE001 - a tool bgc cannot decide is not offered
            self._say(f"left {name!r} out of a tool list: bgc could not decide it ({type(error).__name__})")
            return False

    def _server_message(self, line: bytes | TooLong) -> None:
        """Pass one server line to the client, read as strictly as the client's and re-serialised;
        a line bgc cannot read is not passed on (a request it answered gets an error instead)."""
        if isinstance(line, TooLong):
            self._say(f"dropped a server message of {line.length:,} bytes (the limit is {MAX_SERVER_MESSAGE_BYTES:,})")
            if line.request_id is not None and self._answered(line.request_id):
                self._error(
                    line.request_id,
                    INTERNAL_ERROR,
                    f"the MCP server's answer is larger than {MAX_SERVER_MESSAGE_BYTES} bytes",
                )
            return
        if not line.strip(b" \t"):
            return
        try:
            message = parse(line)
        except Unreadable as error:
            self._say(f"dropped a server line bgc cannot read: {error}")
            request_id = top_level_id(line)
            if request_id is not None and self._answered(request_id):
                self._error(request_id, INTERNAL_ERROR, f"bgc cannot read the MCP server's answer: {error}")
            return
        if not isinstance(message, dict):
            self._say("dropped a server line that is not one JSON-RPC message")
            return
        if "method" not in message and "id" in message:
            self._answered(message["id"])
        if self.options.filter_tools and "result" in message:
            message = self._filter_tool_list(message)
        self._send(message)

    def _answered(self, request_id: object) -> bool:
        """The server answered ``request_id``: it no longer owes it (True when it did)."""
        try:
            key = json.dumps(request_id)
        except ValueError:
            return False
        with self._state_lock:
            return self._waiting.pop(key, None) is not None

    def _pump_child(self, server_out: IO[bytes]) -> None:
        for line in LineReader(partial_reader(server_out), MAX_SERVER_MESSAGE_BYTES):
            self._server_message(line)

    # ---- the server gone -------------------------------------------------------------------------

    def _child_exited(self, status: int, peer_alive: bool) -> None:
        """Requests still waiting for the server get an error; the log says the server exited."""
        with self._state_lock:
            owed = list(self._waiting.values())
            self._waiting.clear()
        for request_id in owed:
            self._error(request_id, INTERNAL_ERROR, f"the MCP server exited (status {status}) before answering")
        if not self._client_gone.is_set() and peer_alive:
            self._say(f"the MCP server exited with status {status}")


def _elicitation_answer(response: Any) -> bool | None:
    """True: accepted with ``allow`` true; False: declined (or accepted saying no); None: closed
    without an answer, or an answer bgc cannot read (never an allow)."""
    result = response.get("result") if isinstance(response, dict) else None
    if not isinstance(result, dict):
        return None
    action = result.get("action")
    content = result.get("content")
    if action == "accept" and isinstance(content, dict) and isinstance(content.get("allow"), bool):
        return content["allow"]
    return False if action == "decline" else None


def run_proxy(
    command: Sequence[str],
    decide: Decide,
    options: ProxyOptions,
    *,
    offered: Offered | None = None,
    approvals: Approvals | None = None,
) -> int:
    """Run the proxy on this process's standard streams; the exit status is the server's."""
    if not command:
        raise ValueError("no server command")
    return McpProxy(command, decide, options, offered=offered, approvals=approvals).run()
