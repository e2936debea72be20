"""The message-deciding core of ``bgc mcp-proxy``: one client session, one server session,
whatever carries their messages.

A :class:`Mediator` is handed every message of one MCP session in both directions by a transport
(stdio lines, :mod:`bgc.adapters.mcp.proxy`; HTTP requests and server-sent events,
:mod:`bgc.adapters.mcp.http`) and gives back what to pass on through two callbacks,
``to_server(message, context)`` and ``to_client(message, related)``. The transport owns the
framing (where a message ends, how big it may be, which stream an answer goes back on); the mediator
owns every decision, so both transports decide alike:

- A client message is forwarded only if bgc could read it and, when it is a ``tools/call``, the
  decision was ``allow``; what is forwarded is the value that was decided, re-serialised
  (:mod:`bgc.core.values.jsonline`), never the client's bytes. A message that is not one strict
  JSON object (:func:`bgc.core.values.jsonline.parse`: a carriage return, invalid UTF-8 or JSON,
  a duplicate key anywhere, ``NaN``, out-of-range numbers, deep nesting), a batch array, a
  message larger than the transport's limit, a request whose id not every reader reads alike
  (:func:`bgc.adapters.jsonrpc.valid_request_id`) or that is still outstanding is never forwarded: a parser
  differential between bgc and the server (where does a line end? which duplicate key wins?)
  is how an argument check is bypassed. A request among them gets a JSON-RPC error, with its own
  id wherever it can be found.
- ``deny`` and ``ask`` are answered by the mediator with a tool result whose ``isError`` is true and
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
  mediator also asks the person at the client (``elicitation/create``, a yes/no form): accepted with
  ``allow`` true → the call runs once; declined → refused. An elicitation answer is unsigned and
  says nothing of *who* answered, so it never meets a rule that names approvers or needs more
  than one. The client's answer to the mediator's own request is never forwarded to the server.
- ``resources/read``, ``prompts/get`` and ``completion/complete`` from the client, and
  ``sampling/createMessage`` and ``elicitation/create`` from the server, are decided as atoms
  (:func:`message_atom`) when the command supplies :attr:`Mediator.decide_message`: a request the
  decision does not allow is answered with a JSON-RPC error by the mediator, never passed on (one
  from the server is answered to the server: the client never sees it); a client's request
  that needs approval is held as a call is.
- With :attr:`Mediator.redact` (``--redact``), every message from the server is passed through it
  before the client sees it (credentials replaced, :mod:`bgc.runtime.redact`); one it fails on
  is not passed on (an answer becomes an error).
- Every other message passes through, re-serialised, in both directions: ids, notifications,
  cancellations, progress and server-to-client requests included. A server message bgc cannot
  read is not passed on (a request it answered gets an error). With ``filter_tools`` every answer
  that lists ``tools`` is filtered, whatever it answers; with tool pins (:class:`Pins`), a tool
  whose description or schemas changed since it was trusted is left out, and a call to it refused.
- Results the mediator writes itself for a request under the stateless protocol (2026-07-28) carry
  ``resultType``, as that version requires.
- The protocol version is negotiated honestly: an ``initialize`` offering a version bgc does not
  know (:data:`HANDSHAKE_VERSIONS`) is passed on offering the newest it knows, as a server
  that does not support a version answers; a server that answers with a version bgc does not
  know gets its answer replaced by an error, and every later request of the session is refused
  (a new ``initialize`` may start over).
- The decision function raising is a deny, never a forward.
"""

from __future__ import annotations

import itertools
import json
import secrets
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from bgc.adapters.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    Refused,
    id_key,
    read_message,
    valid_request_id,
)
from bgc.adapters.relay import SHUTDOWN_GRACE_SECONDS
from bgc.core.values.jsonline import (
    MAX_LINE_BYTES,
    TooLong,
    Unreadable,
    parse,
    top_level_id,
)

#: The largest message the proxy reads from the client: larger ones are consumed and refused.
MAX_MESSAGE_BYTES = MAX_LINE_BYTES
#: The largest message the proxy reads from the server (tool results carry images and files).
MAX_SERVER_MESSAGE_BYTES = 64 * 1024 * 1024
#: The ``_meta`` key of a request made under the stateless protocol (2026-07-28 and later), whose
#: results must each carry ``resultType``.
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
#: Why a batch is refused.
BATCHES = "JSON-RPC batches are not accepted (MCP removed them in 2025-06-18)"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions negotiated by ``initialize`` that bgc understands, oldest first: a
client's offer of another is answered with the newest of these (as a server that does not
support a version must), and a server's choice of another is refused."""
REFUSED = -1
"""The code of the mediator's answer to a request it does not pass on that is not a tool call (the
MCP specification's own example of a refused sampling request uses it)."""


@dataclass(frozen=True, slots=True)
class ToolVerdict:
    """What the policy says about one ``tools/call`` (or another message decided as an atom):
    ``allow``, ``ask`` or ``deny``, and why."""

    effect: str
    reason: str
    request: str | None = None
    """For ``ask``: the permission request people answer."""
    anyone: bool = False
    """For ``ask``: any one person may answer it (the person at the client, by elicitation)."""


#: Decides one call: (tool name, its arguments) → verdict. The proxy supplies the server's name.
Decide = Callable[[str, Mapping[str, Any]], ToolVerdict]

#: Decides one other message as an atom: (its method, the atom's action and subject, its params) → verdict.
DecideMessage = Callable[[str, str, str, Mapping[str, Any]], ToolVerdict]


ELICITATION_LOOK_SECONDS = 0.25
"""While the client's dialog is open, how often the holder looks for its answer (in memory)."""


class Approvals:
    """How the mediator follows a permission request while it holds a call: where it stands
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


class Pins:
    """What the mediator asks of the tool pins (:class:`bgc.runtime.pins.ToolPins`, over the store):
    of the tools a server listed, those it may not offer now. Called from the thread that reads
    the server (and, for :meth:`allowed`, the one that decides a call)."""

    def withheld(self, tools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        """Tool name → why it is withheld, for each listed tool that may not be offered."""
        raise NotImplementedError

    def allowed(self, tool: str) -> None:
        """A call to ``tool`` was allowed: its listed version is trusted from now (its first use)."""
        raise NotImplementedError


#: Redacts a server's message before the client sees it: (message, what it is) → the message to pass.
Redact = Callable[[dict[str, Any], str], dict[str, Any]]

#: Whether a tool may be offered in ``tools/list`` at all (used only with ``filter_tools``).
Offered = Callable[[str], bool]


def modern(message: Mapping[str, Any]) -> bool:
    """Whether a request was made under the stateless protocol (its ``params._meta`` names its
    version), whose every result carries ``resultType``."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META in meta


CLIENT_MESSAGE_ACTIONS = {"resources/read": "read", "prompts/get": "prompt", "completion/complete": "complete"}
"""Client requests other than ``tools/call`` decided as an atom ``mcp:ACTION:SERVER/SUBJECT``."""
SERVER_MESSAGE_ACTIONS = {"sampling/createMessage": "sample", "elicitation/create": "elicit"}
"""Server requests to the client decided as an atom ``mcp:ACTION:SERVER/SUBJECT``."""


def message_atom(method: str, params: Any) -> tuple[str, str] | str | None:
    """The atom's ``(action, subject)`` a message is decided as, a string saying why it cannot be
    (its params do not say what it is about), or None for a message no atom stands for:

    - ``resources/read`` → ``read``, the resource's URI;
    - ``prompts/get`` → ``prompt``, the prompt's name;
    - ``completion/complete`` → ``complete``, ``prompt/NAME`` or ``resource/URI`` (its ``ref``);
    - ``sampling/createMessage`` → ``sample``, ``createMessage``;
    - ``elicitation/create`` → ``elicit``, its mode (``form``, or ``url``: the person is sent to
      a web page).
    """
    action = CLIENT_MESSAGE_ACTIONS.get(method) or SERVER_MESSAGE_ACTIONS.get(method)
    if action is None:
        return None
    params = params if isinstance(params, dict) else {}
    if action == "read":
        subject = params.get("uri")
    elif action == "prompt":
        subject = params.get("name")
    elif action == "complete":
        ref = params.get("ref") if isinstance(params.get("ref"), dict) else {}
        kind = {"ref/prompt": ("prompt", "name"), "ref/resource": ("resource", "uri")}.get(ref.get("type"))
        named = ref.get(kind[1]) if kind else None
        subject = f"{kind[0]}/{named}" if kind and isinstance(named, str) else None
    elif action == "sample":
        subject = "createMessage"
    else:
        mode = params.get("mode", "form")
        subject = mode if mode in ("form", "url") else None
    if not isinstance(subject, str) or not subject:
        return f"{method} without a readable subject (a uri, a name, a ref or a mode)"
    return action, subject


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


#: ``to_server(message, context)``: pass a decided message on; raises OSError or ValueError when
#: the server can no longer be reached (the session ends). ``context`` is what the transport
#: gave with the client's message (an HTTP front's pass-through headers), or None.
ToServer = Callable[[dict[str, Any], Any], None]
#: ``to_client(message, related)``: pass a message to the client; ``related`` is the id of the
#: client request it belongs to (its answer, or a message sent while it runs), or None.
ToClient = Callable[[dict[str, Any], Any], None]


class Mediator:
    """One client session and one server session; see the module docstring for the rules."""

    def __init__(
        self,
        decide: Decide,
        options: ProxyOptions,
        *,
        to_server: ToServer,
        to_client: ToClient,
        offered: Offered | None = None,
        approvals: Approvals | None = None,
        pins: Pins | None = None,
        decide_message: DecideMessage | None = None,
        redact: Redact | None = None,
        log: IO[str] | None = None,
    ) -> None:
        self.decide = decide
        self.redact = redact
        self.pins = pins
        self.decide_message = decide_message
        self.offered = offered
        self.approvals = approvals
        self.options = options
        self.to_server = to_server
        self.to_client = to_client
        self.log = log if log is not None else sys.stderr
        self._state_lock = threading.Lock()
        self._waiting: dict[str, object] = {}  # json key of id → id, client requests the server owes
        self._labels: dict[str, str] = {}  # json key of id → what the request is (its method, its tool)
        self._held: dict[str, threading.Event] = {}  # json key of id → cancel event, calls awaiting approval
        self._withheld: dict[str, str] = {}  # tool name → why the pins do not let it be offered now
        self._elicitations: dict[str, list[Any]] = {}  # the mediator's own request id → [the client's answer]
        self._client_elicits = False
        self._initialize: str | None = None  # the key of the client's initialize request, until answered
        self.version: str | None = None
        """The protocol version the server chose (None until it answered ``initialize``)."""
        self._unknown_version: str | None = None
        self._elicit_ids = itertools.count(1)
        self._elicit_salt = secrets.token_hex(16)
        """Unguessable: a server that could predict the mediator's own request ids could send the
        client a request of its own with one, and have the answer to it counted as an approval."""

    # ---- output -------------------------------------------------------------------------------

    def say(self, message: str) -> None:
        try:
            print(f"bgc mcp-proxy: {message}", file=self.log, flush=True)
        except (OSError, ValueError):
            pass

    def _error(self, request_id: object, code: int, message: str) -> None:
        self.to_client({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}, request_id)

    # ---- client → server -------------------------------------------------------------------------

    def from_client_line(self, line: bytes | TooLong, context: Any = None) -> None:
        """Decide one client line (or body): refused (answered), kept (the mediator's own business),
        or forwarded re-serialised. Raises OSError or ValueError when the server is gone."""
        if isinstance(line, TooLong):
            found = line.request_id
            request_id = found if valid_request_id(found) and not self.outstanding(found) else None
            limit = self.options.max_message_bytes
            self.say(f"refused a message of {line.length:,} bytes (the limit is {limit:,})")
            self._error(request_id, INVALID_REQUEST, f"message larger than {limit} bytes")
            return
        if not line.strip(b" \t"):
            return
        try:
            message = read_message(line, BATCHES)
            if "method" in message and "id" in message and self.outstanding(message["id"]):
                raise Refused(INVALID_REQUEST, f"request id {message['id']!r} is already in use")
        except Refused as refusal:
            self.say(f"refused a client message: {refusal.message}")
            for request_id in refusal.request_ids:
                self._error(request_id, refusal.code, refusal.message)
            return
        self.from_client(message, context)

    def from_client(self, message: dict[str, Any], context: Any = None) -> None:
        """Decide one client message already read (:func:`bgc.adapters.jsonrpc.read_message`, its id
        not outstanding)."""
        try:
            self._dispatch(message, context)
        except (OSError, ValueError):
            raise  # the server's input is gone: the session ends
        except Exception as error:  # noqa: BLE001 - a message bgc fails on is refused; the stream goes on
            self.say(f"refused a message bgc failed on ({type(error).__name__}: {error})")
            if "method" in message and "id" in message:
                self._error(message["id"], INTERNAL_ERROR, "bgc could not handle this message: it was not forwarded")

    def _dispatch(self, message: dict[str, Any], context: Any) -> None:
        method = message.get("method")
        if method == "initialize":
            self._note_capabilities(message)
            message = self._offer_version(message)
        elif self._unknown_version is not None:
            why = f"the MCP server chose protocol version {self._unknown_version!r}, which bgc does not understand"
            self.say(f"refused a {method or 'response'}: {why}")
            if method is not None and "id" in message:
                self._error(message["id"], INVALID_REQUEST, why)
            return
        if method is None and self._elicited(message):
            return  # the answer to the mediator's own question: the server never asked it
        if method == "tools/call":
            self._tool_call(message, context)
        elif method == "notifications/cancelled" and self._cancel_held(message):
            return  # the server never saw the held call: nothing to tell it
        elif method in CLIENT_MESSAGE_ACTIONS and self.decide_message is not None:
            self._decided_message(message, context)
        else:
            self._forward(message, context)

    def _offer_version(self, message: dict[str, Any]) -> dict[str, Any]:
        """The client's ``initialize``, offering a version bgc understands (see the module
        docstring); its id is remembered, to check the version the server chooses."""
        params = message.get("params")
        if "id" in message:
            self._initialize = id_key(message["id"])
            self._unknown_version = None
        if not isinstance(params, dict) or params.get("protocolVersion") in HANDSHAKE_VERSIONS:
            return message
        self.say(f"the client offered protocol version {params.get('protocolVersion')!r}, which bgc does not "
                 f"understand: offering {HANDSHAKE_VERSIONS[-1]} instead")  # fmt: skip
        return {**message, "params": {**params, "protocolVersion": HANDSHAKE_VERSIONS[-1]}}

    def _decide(self, tool: str, arguments: Mapping[str, Any]) -> ToolVerdict:
        return _checked(lambda: self.decide(tool, arguments))

    def _tool_call(self, message: dict[str, Any], context: Any) -> None:
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
            self.say("refused a tools/call without a readable name and arguments")
            return
        withheld = self._withheld.get(name)
        verdict = ToolVerdict("deny", withheld) if withheld is not None else self._decide(name, arguments)
        if verdict.effect == "allow":
            self._pin_used(name)
            self._forward(message, context)
            return
        elicit = self._client_elicits and self.options.elicit and verdict.anyone and not modern(message)
        if (
            verdict.effect == "ask" and verdict.request is not None and is_request and self.approvals is not None
            and (self.options.wait_seconds > 0 or elicit)
        ):  # fmt: skip
            self._hold(message, context, verdict, f"{self.options.server}/{name}",
                       lambda: self._decide(name, arguments), elicit)  # fmt: skip
            return
        self._refuse(message, f"{self.options.server}/{name}", verdict)

    def _pin_used(self, name: str) -> None:
        if self.pins is None:
            return
        try:
            self.pins.allowed(name)
        except Exception as error:  # noqa: BLE001 - allowed by the policy; a pin not taken is said, not a deny
            self.say(f"could not pin {self.options.server}/{name}: {type(error).__name__}: {error}")

    def _decided_message(self, message: dict[str, Any], context: Any) -> None:
        """A client request decided as an atom (:func:`message_atom`): forwarded when allowed,
        held or answered with an error otherwise."""
        method = message["method"]
        atom = message_atom(method, message.get("params"))
        verdict = self._decide_atom(method, atom, message.get("params"))
        what = f"{self.options.server} {method}"
        if verdict.effect == "allow":
            self._forward(message, context)
            return
        if (
            verdict.effect == "ask" and verdict.request is not None and "id" in message and self.approvals is not None
            and self.options.wait_seconds > 0
        ):  # fmt: skip
            self._hold(message, context, verdict, what, lambda: self._decide_atom(method, atom, message.get("params")), False)
            return
        self._refuse(message, what, verdict)

    def _decide_atom(self, method: str, atom: tuple[str, str] | str | None, params: Any) -> ToolVerdict:
        if not isinstance(atom, tuple):
            return ToolVerdict("deny", f"refused: {atom}")
        assert self.decide_message is not None
        decide = self.decide_message
        return _checked(lambda: decide(method, atom[0], atom[1], params if isinstance(params, dict) else {}))

    def _refuse(self, message: dict[str, Any], what: str, verdict: ToolVerdict) -> None:
        """Answer a message that is not passed on: a tool error for a call, a JSON-RPC error for
        any other request; nothing for a notification."""
        reason = verdict.reason
        if verdict.effect == "ask" and not reason.startswith("needs approval"):
            reason = f"needs approval: {reason}"
        self.say(f"{verdict.effect} {what}: {reason}")
        if "id" not in message:
            return
        if message.get("method") != "tools/call":
            self._error(message["id"], REFUSED, f"bgc refused {what}: {reason}")
            return
        name = message["params"]["name"]
        text = f"bgc refused this call to {name!r} on {self.options.server!r}: {reason}"
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
        if modern(message):
            result["resultType"] = "complete"
        self.to_client({"jsonrpc": "2.0", "id": message["id"], "result": result}, message["id"])

    def _hold(
        self, message: dict[str, Any], context: Any, verdict: ToolVerdict, what: str,
        redecide: Callable[[], ToolVerdict], elicit: bool,
    ) -> None:  # fmt: skip
        """Hold a message that needs approval in its own thread, so other messages keep flowing."""
        key = id_key(message["id"])
        cancelled = threading.Event()
        with self._state_lock:
            self._held[key] = cancelled
        self.say(f"holding {what} for approval: {verdict.reason}")
        answer = self._elicit(message, verdict) if elicit else None
        threading.Thread(
            target=self._await_approval, args=(message, context, verdict, what, redecide, key, cancelled, answer),
            daemon=True, name=f"approval {verdict.request}",
        ).start()  # fmt: skip

    def _elicit(self, message: dict[str, Any], verdict: ToolVerdict) -> list[Any]:
        """Ask the person at the client (``elicitation/create``); the returned list receives
        their answer (the client's response message) when it comes."""
        with self._state_lock:
            own_id = f"bgc-elicit-{self._elicit_salt}-{next(self._elicit_ids)}"
            answer: list[Any] = []
            self._elicitations[id_key(own_id)] = answer
        name = message["params"]["name"]
        arguments = json.dumps(message["params"].get("arguments", {}), ensure_ascii=False, sort_keys=True)
        text = f"bgc: allow {name!r} on {self.options.server!r} once?\n{arguments[:600]}\n{verdict.reason}"
        schema = {"type": "object", "properties": {"allow": {"type": "boolean", "title": "Allow this call once",
                  "description": "Runs this exact call one time; nothing else."}}, "required": ["allow"]}  # fmt: skip
        self.to_client({"jsonrpc": "2.0", "id": own_id, "method": "elicitation/create",
                        "params": {"message": text, "requestedSchema": schema}}, message.get("id"))  # fmt: skip
        return answer

    def _elicited(self, message: dict[str, Any]) -> bool:
        """The client's answer to one of the mediator's own elicitations (never forwarded)."""
        try:
            key = id_key(message.get("id"))
        except ValueError:
            return False
        with self._state_lock:
            answer = self._elicitations.pop(key, None)
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
        self, message: dict[str, Any], context: Any, verdict: ToolVerdict, what: str,
        redecide: Callable[[], ToolVerdict], key: str, cancelled: threading.Event, elicitation: list[Any] | None,
    ) -> None:  # fmt: skip
        import time

        assert self.approvals is not None and verdict.request is not None
        wait = self.options.wait_seconds
        deadline = time.monotonic() + (max(wait, self.options.elicit_seconds) if elicitation is not None else wait)
        try:
            while True:
                look = min(self.options.poll_seconds, ELICITATION_LOOK_SECONDS) if elicitation else self.options.poll_seconds
                if self.approvals.wait(cancelled, max(0.0, min(look, deadline - time.monotonic()))):
                    self.approvals.cancel(verdict.request)
                    self.say(f"cancelled permission request {verdict.request}: the client no longer waits")
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
                    verdict = redecide()  # uses the answer: once, and recorded
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
            self.say(f"not forwarding {what}: the client cancelled it")
            return
        if verdict.effect == "allow":
            try:
                self._forward(message, context)
            except (BrokenPipeError, OSError, ValueError):
                self._error(message["id"], INTERNAL_ERROR, "the MCP server stopped reading before the approved call")
            return
        self._refuse(message, what, verdict)

    def _cancel_held(self, message: dict[str, Any]) -> bool:
        """A client's ``notifications/cancelled`` for a call held for approval: cancel it there."""
        params = message.get("params")
        if not isinstance(params, dict) or "requestId" not in params:
            return False
        with self._state_lock:
            held = self._held.get(id_key(params["requestId"]))
        if held is None:
            return False
        held.set()
        return True

    def _forward(self, message: dict[str, Any], context: Any) -> None:
        """Pass ``message`` on as the value that was decided (the transport re-serialises it:
        no byte of the client's message reaches the server)."""
        if "method" in message and "id" in message:
            params = message.get("params")
            tool = params.get("name") if message["method"] == "tools/call" and isinstance(params, dict) else None
            with self._state_lock:
                self._waiting[id_key(message["id"])] = message["id"]
                self._labels[id_key(message["id"])] = f"tools/call {tool}" if isinstance(tool, str) else message["method"]
        self.to_server(message, context)

    def outstanding(self, request_id: object) -> bool:
        """Whether a request with this id still waits for the server or for people."""
        key = id_key(request_id)
        with self._state_lock:
            return key in self._waiting or key in self._held

    def client_gone(self) -> None:
        """The client went away: nobody waits for the held calls any more (their requests are
        cancelled)."""
        with self._state_lock:
            held = list(self._held.values())
        for cancelled in held:
            cancelled.set()

    # ---- server → client -------------------------------------------------------------------------

    def _filter_tool_list(self, message: dict[str, Any]) -> dict[str, Any]:
        """An answer whose result lists ``tools``, with only the tools the policy declares on this
        server (``filter_tools``) and none the pins withhold: every such answer, whatever request
        it answers, so no spelling of an id can carry an unfiltered list past the mediator."""
        result = message.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return message
        listed = [tool for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)]
        if self.pins is not None:
            self._withheld = self._pins_withheld(listed)
        kept = [
            tool for tool in listed
            if tool["name"] not in self._withheld and (not self.options.filter_tools or self._offered(tool["name"]))
        ]  # fmt: skip
        if len(kept) == len(tools):
            return message
        return {**message, "result": {**result, "tools": kept}}

    def _pins_withheld(self, tools: list[dict[str, Any]]) -> dict[str, str]:
        """The tools the pins withhold (all of them when the pins cannot be checked)."""
        assert self.pins is not None
        try:
            return self.pins.withheld(tools)
        except Exception as error:  # noqa: BLE001 - pins that cannot be checked offer no tool
            reason = f"bgc could not check the tool pins ({type(error).__name__}: {error})"
            self.say(reason)
            return {tool["name"]: reason for tool in tools}

    def _offered(self, name: object) -> bool:
        """Whether the policy declares tool ``name`` on this server; a name it cannot decide is not."""
        if self.offered is None:
            return True
        try:
            return isinstance(name, str) and self.offered(name)
        except Exception as error:  # noqa: BLE001 - a tool bgc cannot decide is not offered
            self.say(f"left {name!r} out of a tool list: bgc could not decide it ({type(error).__name__})")
            return False

    def from_server_line(self, line: bytes | TooLong, related: Any = None) -> None:
        """Pass one server message (a line, an HTTP body or an event's data) to the client, read
        as strictly as the client's and re-serialised; one bgc cannot read is not passed on (a
        request it answered gets an error instead)."""
        if isinstance(line, TooLong):
            self.say(f"dropped a server message of {line.length:,} bytes (the limit is {MAX_SERVER_MESSAGE_BYTES:,})")
            request_id = line.request_id if line.request_id is not None else related
            if request_id is not None and self.answered(request_id):
                self._error(request_id, INTERNAL_ERROR, f"the MCP server's answer is larger than {MAX_SERVER_MESSAGE_BYTES} bytes")
            return
        if not line.strip(b" \t"):
            return
        try:
            message = parse(line)
        except Unreadable as error:
            self.say(f"dropped a server message bgc cannot read: {error}")
            request_id = top_level_id(line)
            if request_id is None:
                request_id = related
            if request_id is not None and self.answered(request_id):
                self._error(request_id, INTERNAL_ERROR, f"bgc cannot read the MCP server's answer: {error}")
            return
        if not isinstance(message, dict):
            self.say("dropped a server message that is not one JSON-RPC message")
            return
        self.from_server(message, related)

    def from_server(self, message: dict[str, Any], related: Any = None) -> None:
        """Pass one server message already read to the client."""
        method = message.get("method")
        label = method or "an answer"
        if method is None and "id" in message:
            with self._state_lock:
                label = self._labels.get(_key_or_none(message["id"]) or "", label)
            self.answered(message["id"])
            if self._initialize is not None and self._initialize == _key_or_none(message["id"]):
                message = self._chosen_version(message)
        if method in SERVER_MESSAGE_ACTIONS and "id" in message and self.decide_message is not None:
            verdict = self._decide_atom(method, message_atom(method, message.get("params")), message.get("params"))
            if verdict.effect != "allow":
                self._answer_server(message, verdict)
                return
        if "result" in message and (self.options.filter_tools or self.pins is not None):
            message = self._filter_tool_list(message)
        if self.redact is not None:
            try:
                message = self.redact(message, label)
            except Exception as error:  # noqa: BLE001 - a message that could not be redacted is not passed on
                self.say(f"dropped a server message bgc could not redact ({type(error).__name__}: {error})")
                if method is None and "id" in message:
                    self._error(message["id"], INTERNAL_ERROR, "bgc could not redact the MCP server's answer")
                return
        self.to_client(message, related if method is not None or "id" not in message else message["id"])

    def _answer_server(self, message: dict[str, Any], verdict: ToolVerdict) -> None:
        """A server's request to the client that the policy does not let through, answered to
        the server by the mediator (the client never sees it)."""
        reason = verdict.reason if verdict.effect == "deny" else f"needs approval: {verdict.reason}"
        what = f"{self.options.server} {message['method']}"
        self.say(f"{verdict.effect} {what}: {reason}")
        try:
            self.to_server({"jsonrpc": "2.0", "id": message["id"],
                            "error": {"code": REFUSED, "message": f"bgc refused {what}: {reason}"}}, None)  # fmt: skip
        except (OSError, ValueError):
            self.say("the server stopped reading before bgc answered its request")

    def _chosen_version(self, message: dict[str, Any]) -> dict[str, Any]:
        """The server's answer to ``initialize``, or an error in its place when the version it
        chose is one bgc does not understand (the session then refuses every request)."""
        self._initialize = None
        result = message.get("result")
        if not isinstance(result, dict):
            return message
        version = result.get("protocolVersion")
        if version in HANDSHAKE_VERSIONS:
            self.version = version
            return message
        self._unknown_version = str(version)[:64]
        why = f"the MCP server chose protocol version {self._unknown_version!r}, which bgc does not understand"
        self.say(why)
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": INVALID_REQUEST, "message": why}}

    def owes(self, request_id: object) -> bool:
        """Whether the server still owes an answer to the client's request ``request_id``."""
        key = _key_or_none(request_id)
        with self._state_lock:
            return key in self._waiting

    def server_failed(self, request_id: object, why: str) -> None:
        """The server side could not answer ``request_id`` (a network failure): its client gets
        an error saying ``why``, unless the server did answer."""
        self.say(why)
        if self.answered(request_id):
            self._error(request_id, INTERNAL_ERROR, why)

    def answered(self, request_id: object) -> bool:
        """The server answered ``request_id``: it no longer owes it (True when it did)."""
        try:
            key = id_key(request_id)
        except ValueError:
            return False
        with self._state_lock:
            self._labels.pop(key, None)
            return self._waiting.pop(key, None) is not None

    def owed(self) -> list[object]:
        """The client requests the server will never answer now (it exited): taken out of waiting."""
        with self._state_lock:
            owed = list(self._waiting.values())
            self._waiting.clear()
            self._labels.clear()
        return owed

    def fail_owed(self, why: str) -> None:
        """Answer every request the server still owes with an error saying ``why``."""
        for request_id in self.owed():
            self._error(request_id, INTERNAL_ERROR, why)


def _key_or_none(request_id: object) -> str | None:
    try:
        return id_key(request_id)
    except ValueError:
        return None


def _checked(decide: Callable[[], ToolVerdict]) -> ToolVerdict:
    """A decision, or a deny when deciding fails or says something unknown (never a forward)."""
    try:
        verdict = decide()
    except Exception as error:  # noqa: BLE001 - a failing decision is a deny, never a forward
        return ToolVerdict("deny", f"bgc could not decide this call ({type(error).__name__}: {error})")
    if verdict.effect not in ("allow", "ask", "deny"):
        return ToolVerdict("deny", f"bgc could not decide this call (unknown effect {verdict.effect!r})")
    return verdict


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
