"""The MCP stdio proxy: every ``tools/call`` decided before a server sees it.

An MCP client starts a server as a command and speaks JSON-RPC to it over the child's standard
streams, one message per line (https://modelcontextprotocol.io/specification/draft/basic/transports/stdio:
"Messages are delimited by newlines, and MUST NOT contain embedded newlines"). The proxy is that
command: it starts the real server as its own child and copies lines both ways, so the client
and the server speak to each other exactly as before, except for one method.

Fail-closed rules, stated once:

- A client line is forwarded only if bgc could read it and, when it is a ``tools/call``, the
  decision was ``allow``. A line that is not one strict JSON object (invalid UTF-8 or JSON, a
  duplicate key anywhere, ``NaN``, a batch array, larger than :data:`MAX_MESSAGE_BYTES`) is never
  forwarded: a parser differential between bgc and the server (which duplicate key wins?) is how
  an argument check is bypassed. A request among them gets a JSON-RPC error.
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
- Where the client declared the ``elicitation`` capability and the ask is one any one person may
  answer (``approvals 1``, no names), the proxy also asks the person at the client
  (``elicitation/create``, a yes/no form): accepted with ``allow`` true → the call runs once;
  declined → refused. An elicitation answer is unsigned and says nothing of *who* answered, so it
  never meets a rule that names approvers or needs more than one. The client's answer to the
  proxy's own request is never forwarded to the server.
- Every other message passes through untouched, byte for byte, in both directions: ids,
  notifications, cancellations, progress and server-to-client requests included.
- The decision function raising is a deny, never a forward.
- When the server exits, requests still waiting for it get an error response; the proxy exits
  with the server's status. When the client goes away, the server's input is closed, and a
  server that does not exit within :data:`SHUTDOWN_GRACE_SECONDS` is terminated, then killed.
"""

from __future__ import annotations

import itertools
import json
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from dataclasses import dataclass

#: The largest message the proxy reads from the client: larger lines are drained and refused.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
#: How long a server may take to exit after its input is closed before it is terminated.
SHUTDOWN_GRACE_SECONDS = 5.0

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


@dataclass(frozen=True, slots=True)
class ToolVerdict:
    """What the policy says about one ``tools/call``: ``allow``, ``ask`` or ``deny``, and why."""

    effect: str
    reason: str
    request: str | None = None
    """For ``ask``: the permission request people answer."""
    anyone: bool = False
    """For ``ask``: any one person may answer it (the person at the client, by elicitation)."""


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

    def elicited(self, request: str, allowed: bool) -> bool:
        """The person at the client answered: use the request (allowed) or end it (declined),
        and record it; False when it can no longer be answered (used, gone, rejected by a
        signed answer, cancelled, expired) or an unsigned answer cannot meet it (named approvers)."""
        raise NotImplementedError


#: Whether a tool may be offered in ``tools/list`` at all (used only with ``filter_tools``).
Offered = Callable[[str], bool]


class _Unreadable(Exception):
    """A client line bgc cannot read as one strict JSON-RPC message."""

    def __init__(self, code: int, message: str, request_id: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def read_message(line: bytes) -> dict[str, Any]:
    """One client line as a JSON-RPC object, or :class:`_Unreadable` saying why not."""
    try:
        text = line.decode("utf-8")
        value = json.loads(text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as error:
        raise _Unreadable(PARSE_ERROR, f"not a JSON-RPC message: {error}") from None
    if isinstance(value, list):
        raise _Unreadable(INVALID_REQUEST, "JSON-RPC batches are not accepted (MCP removed them in 2025-06-18)")
    if not isinstance(value, dict):
        raise _Unreadable(INVALID_REQUEST, "a JSON-RPC message is an object")
    return value


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
    elicit: bool = True
    """Offer an ask any one person may answer to the client's own dialog (when it has one)."""
    elicit_seconds: float = 120.0
    """How long that dialog may stay open when ``wait_seconds`` is shorter."""


class McpProxy:
    """One client, one server child, two pumps; see the module docstring for the rules."""

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
        self.command = list(command)
        self.decide = decide
        self.offered = offered
        self.approvals = approvals
        self.options = options
        self.client_in = client_in if client_in is not None else sys.stdin.buffer
        self.client_out = client_out if client_out is not None else sys.stdout.buffer
        self.log = log if log is not None else sys.stderr
        self._out_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._waiting: dict[str, object] = {}  # json key of id → id, client requests the server owes
        self._tool_lists: set[str] = set()  # ids of client tools/list requests (filtered answers)
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

    def _say(self, message: str) -> None:
        try:
            print(f"bgc mcp-proxy: {message}", file=self.log, flush=True)
        except (OSError, ValueError):
            pass

    def _to_client(self, data: bytes) -> None:
        with self._out_lock:
            try:
                self.client_out.write(data)
                self.client_out.flush()
            except (BrokenPipeError, OSError, ValueError):
                self._client_gone.set()

    def _send(self, message: Mapping[str, Any]) -> None:
        self._to_client(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n")

    def _error(self, request_id: object, code: int, message: str) -> None:
        self._send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    # ---- client → server -------------------------------------------------------------------------

    def _client_lines(self):  # type: ignore[no-untyped-def]
        """Lines from the client, each at most ``max_message_bytes``; an oversized one is drained."""
        limit = self.options.max_message_bytes
        while True:
            line = self.client_in.readline(limit + 1)
            if not line:
                return
            if len(line) > limit and not line.endswith(b"\n"):
                while True:  # drain the rest of the oversized line without holding it
                    rest = self.client_in.readline(1 << 16)
                    if not rest or rest.endswith(b"\n"):
                        break
                yield None
                continue
            yield line

    def _decide(self, tool: str, arguments: Mapping[str, Any]) -> ToolVerdict:
        try:
            verdict = self.decide(tool, arguments)
        except Exception as error:  # noqa: BLE001 - a failing decision is a deny, never a forward
            return ToolVerdict("deny", f"bgc could not decide this call ({type(error).__name__}: {error})")
        if verdict.effect not in ("allow", "ask", "deny"):
            return ToolVerdict("deny", f"bgc could not decide this call (unknown effect {verdict.effect!r})")
        return verdict

    def _tool_call(self, message: dict[str, Any], line: bytes, server_in: IO[bytes]) -> None:
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
            self._forward(message, line, server_in)
            return
        elicit = self._client_elicits and self.options.elicit and verdict.anyone
        if (
            verdict.effect == "ask" and verdict.request is not None and is_request and self.approvals is not None
            and (self.options.wait_seconds > 0 or elicit)
        ):  # fmt: skip
            self._hold(message, line, server_in, verdict, elicit)
            return
        self._refuse(message, name, verdict)

    def _refuse(self, message: dict[str, Any], name: str, verdict: ToolVerdict) -> None:
        reason = verdict.reason
        if verdict.effect == "ask" and not reason.startswith("needs approval"):
            reason = f"needs approval: {reason}"
        self._say(f"{verdict.effect} {self.options.server}/{name}: {reason}")
        if "id" in message:
            text = f"bgc refused this call to {name!r} on {self.options.server!r}: {reason}"
            self._send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"content": [{"type": "text", "text": text}], "isError": True},
                }
            )

    def _hold(
        self, message: dict[str, Any], line: bytes, server_in: IO[bytes], verdict: ToolVerdict, elicit: bool
    ) -> None:
        """Hold a call that needs approval in its own thread, so other messages keep flowing."""
        key = json.dumps(message["id"], sort_keys=True)
        cancelled = threading.Event()
        with self._state_lock:
            self._held[key] = cancelled
        self._say(f"holding {self.options.server}/{message['params']['name']} for approval: {verdict.reason}")
        answer = self._elicit(message, verdict) if elicit else None
        threading.Thread(
            target=self._await_approval, args=(message, line, server_in, verdict, key, cancelled, answer), daemon=True,
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
        self, message: dict[str, Any], line: bytes, server_in: IO[bytes], verdict: ToolVerdict, key: str,
        cancelled: threading.Event, elicitation: list[Any] | None,
    ) -> None:  # fmt: skip
        import time

        assert self.approvals is not None and verdict.request is not None
        name, arguments = message["params"]["name"], message["params"].get("arguments", {})
        wait = self.options.wait_seconds
        deadline = time.monotonic() + (max(wait, self.options.elicit_seconds) if elicitation is not None else wait)
        try:
            while True:
                if cancelled.wait(self.options.poll_seconds):
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
                self._forward(message, line, server_in)
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

    def _forward(self, message: dict[str, Any], line: bytes, server_in: IO[bytes]) -> None:
        if "method" in message and "id" in message:
            key = json.dumps(message["id"], sort_keys=True)
            with self._state_lock:
                self._waiting[key] = message["id"]
                if message["method"] == "tools/list" and self.options.filter_tools:
                    self._tool_lists.add(key)
        if not line.endswith(b"\n"):
            line += b"\n"
        with self._server_lock:
            server_in.write(line)
            server_in.flush()

    def _pump_client(self, server_in: IO[bytes]) -> None:
        try:
            for line in self._client_lines():
                if line is None:
                    self._error(None, INVALID_REQUEST, f"message larger than {self.options.max_message_bytes} bytes")
                    self._say("refused a message larger than the limit")
                    continue
                if not line.strip():
                    continue
                try:
                    message = read_message(line)
                except _Unreadable as refusal:
                    self._error(refusal.request_id, refusal.code, refusal.message)
                    self._say(f"refused a client line: {refusal.message}")
                    continue
                if message.get("method") == "initialize":
                    self._note_capabilities(message)
                if "method" not in message and self._elicited(message):
                    continue  # the answer to the proxy's own question: the server never asked it
                if message.get("method") == "tools/call":
                    self._tool_call(message, line, server_in)
                elif message.get("method") == "notifications/cancelled" and self._cancel_held(message):
                    continue  # the server never saw the held call: nothing to tell it
                else:
                    self._forward(message, line, server_in)
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
        result = message.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list) or self.offered is None:
            return message
        kept = [
            tool
            for tool in tools
            if isinstance(tool, dict) and isinstance(tool.get("name"), str) and self.offered(tool["name"])
        ]
        return {**message, "result": {**result, "tools": kept}}

    def _pump_server(self, server_out: IO[bytes]) -> None:
        for line in iter(server_out.readline, b""):
            try:
                message = json.loads(line) if self._waiting else None
            except ValueError:
                message = None
            if isinstance(message, dict) and "method" not in message and "id" in message:
                key = json.dumps(message["id"], sort_keys=True)
                with self._state_lock:
                    self._waiting.pop(key, None)
                    filtered = key in self._tool_lists
                    self._tool_lists.discard(key)
                if filtered:
                    self._send(self._filter_tool_list(message))
                    continue
            self._to_client(line if line.endswith(b"\n") else line + b"\n")

    # ---- the whole ------------------------------------------------------------------------------

    def run(self) -> int:
        """Proxy until the server exits; returns the exit status to exit with."""
        try:
            child = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError as error:
            self._say(f"cannot start the server {self.command[0]!r}: {error.strerror or error}")
            return 127
        assert child.stdin is not None and child.stdout is not None
        client = threading.Thread(target=self._pump_client, args=(child.stdin,), daemon=True, name="client→server")
        client.start()
        watcher = threading.Thread(target=self._stop_when_client_leaves, args=(child, client), daemon=True)
        watcher.start()
        self._pump_server(child.stdout)
        status = self._reap(child, "closed its output")
        with self._state_lock:
            owed = list(self._waiting.values())
            self._waiting.clear()
        for request_id in owed:
            self._error(request_id, INTERNAL_ERROR, f"the MCP server exited (status {status}) before answering")
        if not self._client_gone.is_set() and client.is_alive():
            self._say(f"the MCP server exited with status {status}")
        return status if status >= 0 else 128 - status

    def _stop_when_client_leaves(self, child: subprocess.Popen[bytes], client: threading.Thread) -> None:
        client.join()
        self._reap(child, "did not exit after its input closed")

    def _reap(self, child: subprocess.Popen[bytes], why: str) -> int:
        """The server's status: it gets its grace, then is terminated, then killed."""
        try:
            return child.wait(timeout=self.options.shutdown_grace_seconds)
        except subprocess.TimeoutExpired:
            self._say(f"the server {why}: terminating it")
        child.terminate()
        try:
            return child.wait(timeout=self.options.shutdown_grace_seconds)
        except subprocess.TimeoutExpired:
            child.kill()
            return child.wait()


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
