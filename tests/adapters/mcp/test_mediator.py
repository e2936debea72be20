"""The mediator's decisions on messages other than a tool call, its version negotiation and its
tool pins, driven directly: what it passes to each side is what the callbacks received."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from bgc.adapters.mcp.mediator import HANDSHAKE_VERSIONS, Pins, ProxyOptions, Mediator, ToolVerdict


class Sides:
    """A mediator and what it sent each way."""

    def __init__(self, decide_message: Any = None, pins: Pins | None = None) -> None:
        self.server: list[dict[str, Any]] = []
        self.client: list[dict[str, Any]] = []
        self.mediator = Mediator(
            lambda tool, arguments: ToolVerdict("allow", "allowed by p.bgp:1"), ProxyOptions(server="files"),
            to_server=lambda message, context: self.server.append(message),
            to_client=lambda message, related: self.client.append(message),
            decide_message=decide_message, pins=pins, log=io.StringIO(),
        )  # fmt: skip


def by_rule(method: str, action: str, subject: str, params: Mapping[str, Any]) -> ToolVerdict:
    if "secret" in subject or subject == "url":
        return ToolVerdict("deny", f"mcp:{action}:files/{subject}: denied by p.bgp:4 (keys)")
    return ToolVerdict("allow", "no rule names it")


@pytest.mark.parametrize(("method", "params"), [
    ("resources/read", {"uri": "file:///notes/secret"}),
    ("prompts/get", {"name": "secret"}),
    ("completion/complete", {"ref": {"type": "ref/resource", "uri": "file:///secret/{x}"}, "argument": {"name": "x", "value": ""}}),
    ("resources/read", {}),  # nothing to decide on
    ("completion/complete", {"ref": {"type": "ref/other"}}),
])  # fmt: skip
def test_a_client_request_not_allowed_is_answered_by_the_relay_and_never_forwarded(method: str, params: Any) -> None:
    sides = Sides(by_rule)
    sides.mediator.from_client({"jsonrpc": "2.0", "id": 4, "method": method, "params": params})
    assert sides.server == []
    (answer,) = sides.client
    assert answer["id"] == 4 and answer["error"]["code"] == -1 and "bgc refused" in answer["error"]["message"]


def test_an_allowed_client_request_is_forwarded() -> None:
    sides = Sides(by_rule)
    sides.mediator.from_client({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "file:///notes/a"}})
    assert [message["id"] for message in sides.server] == [4] and sides.client == []


@pytest.mark.parametrize(("method", "params"), [
    ("sampling/createMessage", {"messages": [], "maxTokens": 10, "_meta": {"secret": 1}}),
    ("elicitation/create", {"mode": "url", "url": "https://evil.example", "message": "log in", "elicitationId": "e"}),
])  # fmt: skip
def test_a_server_request_not_allowed_is_answered_to_the_server_and_the_client_never_sees_it(method: str, params: Any) -> None:
    sides = Sides(lambda method, action, subject, params: ToolVerdict("deny", "denied by p.bgp:6"))
    sides.mediator.from_server({"jsonrpc": "2.0", "id": "s1", "method": method, "params": params})
    assert sides.client == []
    (answer,) = sides.server
    assert answer["id"] == "s1" and "denied by p.bgp:6" in answer["error"]["message"]


def test_without_a_decision_every_message_passes_as_before() -> None:
    sides = Sides()
    sides.mediator.from_client({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "file:///secret"}})
    sides.mediator.from_server({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
    assert len(sides.server) == 1 and len(sides.client) == 1


# ---- the protocol version ---------------------------------------------------------------------------


def initialize(version: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}}}


def test_an_unknown_version_offered_by_the_client_becomes_the_newest_bgc_knows() -> None:
    sides = Sides()
    sides.mediator.from_client(initialize("2099-01-01"))
    assert sides.server[0]["params"]["protocolVersion"] == HANDSHAKE_VERSIONS[-1]


@pytest.mark.parametrize("version", ["2099-01-01", "2026-07-28", "", 7])
def test_a_version_the_server_chooses_that_bgc_does_not_know_ends_the_session(version: Any) -> None:
    sides = Sides()
    sides.mediator.from_client(initialize("2025-11-25"))
    sides.mediator.from_server({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version, "capabilities": {}}})
    assert "does not understand" in sides.client[0]["error"]["message"]
    sides.mediator.from_client({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}})
    assert len(sides.server) == 1 and sides.client[1]["id"] == 1 and "error" in sides.client[1]


def test_a_known_version_is_kept() -> None:
    sides = Sides()
    sides.mediator.from_client(initialize("2025-06-18"))
    sides.mediator.from_server({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {}}})
    assert sides.mediator.version == "2025-06-18" and "result" in sides.client[0]


# ---- pins ---------------------------------------------------------------------------------------------


class Withholding(Pins):
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.used: list[str] = []

    def withheld(self, tools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        if self.fail:
            raise RuntimeError("the store is gone")
        return {"b": "files/b changed since it was trusted"}

    def allowed(self, tool: str) -> None:
        self.used.append(tool)


def test_a_withheld_tool_is_left_out_of_every_list_and_refused_on_call() -> None:
    pins = Withholding()
    sides = Sides(pins=pins)
    sides.mediator.from_server({"jsonrpc": "2.0", "id": "any", "result": {"tools": [{"name": "a"}, {"name": "b"}]}})
    assert [tool["name"] for tool in sides.client[0]["result"]["tools"]] == ["a"]
    for name in ("a", "b"):
        sides.mediator.from_client({"jsonrpc": "2.0", "id": name, "method": "tools/call", "params": {"name": name, "arguments": {}}})
    assert [message["id"] for message in sides.server] == ["a"] and pins.used == ["a"]
    assert "changed since it was trusted" in sides.client[1]["result"]["content"][0]["text"]


def test_pins_that_cannot_be_checked_offer_no_tool() -> None:
    sides = Sides(pins=Withholding(fail=True))
    sides.mediator.from_server({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a"}]}})
    assert sides.client[0]["result"]["tools"] == []


# ---- redaction ----------------------------------------------------------------------------------------


def test_every_server_message_goes_through_redaction_with_what_it_answers() -> None:
    seen: list[str] = []

    def redact(message: dict[str, Any], what: str) -> dict[str, Any]:
        seen.append(what)
        return {**message, "redacted": True}

    sides = Sides()
    sides.mediator.redact = redact
    sides.mediator.from_client({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read_file", "arguments": {}}})
    sides.mediator.from_server({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
    sides.mediator.from_server({"jsonrpc": "2.0", "id": 3, "result": {"content": []}})
    assert seen == ["notifications/message", "tools/call read_file"]
    assert all(message["redacted"] for message in sides.client)


def test_a_message_that_cannot_be_redacted_is_not_passed_on() -> None:
    def redact(message: dict[str, Any], what: str) -> dict[str, Any]:
        raise RuntimeError("the ledger is gone")

    sides = Sides()
    sides.mediator.redact = redact
    sides.mediator.from_client({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "t", "arguments": {}}})
    sides.mediator.from_server({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "secret"}]}})
    sides.mediator.from_server({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "secret"}})
    assert sides.client == [{"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "bgc could not redact the MCP server's answer"}}]
