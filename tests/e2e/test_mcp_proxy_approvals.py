"""A call that needs approval, held by `bgc mcp-proxy` while people answer.

With the real MCP SDK on both sides and the real `bgc approve` / `bgc reject` commands: an
approved call reaches the server once and returns its real result; a rejected or unanswered one
never reaches it. The transport half (other messages keep flowing while a call is held; a client
that cancels the call or goes away cancels the request) runs against the recording echo server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bgc.adapters.mcp.proxy import Approvals, ToolVerdict
from bgc.runtime.store import StoreError, open_store, store_exists
from tests.e2e.test_mcp_proxy_transport import Session, call
from tests.samples import bgc
from tests.store_support import Scene, store_tamperings

SERVER = str(Path(__file__).parents[1] / "mcp" / "server.py")

POLICY = """\
trust approver alice {alice}
tool write_file on files needs fs:write:{{path}} ignores content
allow fs:write:/src/**
ask fs:write:/src/release/** approvals 1 of [alice] because "a person signs releases"
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bgc", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def proxied(tmp_path: Path, policy_text: str, wait: float) -> tuple[StdioServerParameters, Path, Path, str]:
    """How a client starts the proxy (policy written, with `trust elicitation`, store and wait
    given) in front of the recording SDK server; also the policy, the record and the store."""
    policy = tmp_path / "p.bgp"
    policy.write_text(policy_text + "trust elicitation\n")
    record = tmp_path / "record.jsonl"
    record.touch()
    store = str(tmp_path / "k.db")
    args = ["-m", "bgc", "mcp-proxy", "-p", str(policy), "--server", "files", "--store", store, "--wait", str(wait),
            "--", sys.executable, SERVER]  # fmt: skip
    env = {"BGC_TEST_MCP_RECORD": str(record)}
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tmp_path)), policy, record, store


def held_call(tmp_path: Path, answer: str | None, wait: float) -> tuple[Any, list[dict], list[dict]]:
    """One write_file call to /src/release/v1 through the proxy while `answer` (approve, reject or
    None) is given by alice from another process; the result, the server's record, the ledger."""
    assert bgc("key", "new", "alice", "--dir", str(tmp_path)).exit_code == 0
    params, policy, record, store = proxied(
        tmp_path, POLICY.format(alice=(tmp_path / "alice.pub").read_text().strip()), wait
    )

    def person() -> None:
        for _ in range(1200):
            if waiting(store):  # then alice looks, as she would, with `bgc pending`
                listed = cli("pending", "--store", store, "-p", str(policy), "--format", "json", cwd=tmp_path)
                request = json.loads(listed.stdout.splitlines()[0])["id"]
                done = cli(
                    answer,
                    request,
                    "--key",
                    str(tmp_path / "alice.key"),
                    "--store",
                    store,
                    "-p",
                    str(policy),
                    cwd=tmp_path,
                )  # type: ignore[arg-type]
                assert done.returncode == 0, done.stderr
                return
            time.sleep(0.05)

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await client.call_tool("write_file", {"path": "/src/release/v1", "content": "v1"})

    answering = threading.Thread(target=person) if answer else None
    if answering:
        answering.start()
    result = anyio.run(main)
    if answering:
        answering.join()
    shown = bgc("log", "show", "--store", store, "--format", "json")
    entries = [json.loads(line) for line in shown.stdout.splitlines()]
    return result, [json.loads(line) for line in record.read_text().splitlines()], entries


def waiting(store: str) -> bool:
    """Whether the proxy has recorded a permission request yet: read from the store itself, since
    asking `bgc pending` in a new process every tenth of a second cost more than the rest of the
    test."""
    if not store_exists(store):
        return False
    try:
        opened = open_store(store, create=False)
    except StoreError:  # the proxy is still creating it
        return False
    try:
        return bool(opened.requests(0))
    except StoreError:
        return False
    finally:
        opened.close()


def text(result: Any) -> str:
    return "".join(part.text for part in result.content)


def test_an_approved_call_reaches_the_server_once_with_its_real_result(tmp_path: Path) -> None:
    result, received, entries = held_call(tmp_path, "approve", wait=60)
    assert not result.is_error and text(result) == "wrote 2 characters to /src/release/v1"
    assert received == [{"tool": "write_file", "arguments": {"path": "/src/release/v1", "content": "v1"}}]
    proxy = [entry for entry in entries if entry["kind"] == "proxy"]
    assert [entry["decision"] for entry in proxy] == ["ask", "allow"]
    assert proxy[1]["approvers"] == ["alice"] and proxy[1]["rule"].endswith("p.bgp:4")
    assert [entry["kind"] for entry in entries] == ["proxy", "approve", "proxy"]


def test_a_rejected_call_never_reaches_the_server(tmp_path: Path) -> None:
    result, received, entries = held_call(tmp_path, "reject", wait=60)
    assert result.is_error and "rejected by alice" in text(result) and "p.bgp:4" in text(result)
    assert received == []
    assert [entry["decision"] for entry in entries if entry["kind"] == "proxy"] == ["ask", "deny"]


def test_a_call_nobody_answers_is_refused_at_the_deadline_with_its_request(tmp_path: Path) -> None:
    result, received, _ = held_call(tmp_path, None, wait=1)
    assert result.is_error and "bgc approve sha256:" in text(result) and "no decision within 1 s" in text(result)
    assert received == []


# ---- the person at the client: MCP elicitation -------------------------------------------------


def elicited_call(
    tmp_path: Path, policy_text: str, reply: str, wait: float = 0
) -> tuple[Any, list[dict], list[dict], list[str]]:
    """One write_file call to /src/release/v1 through the proxy by a client that answers every
    elicitation with ``reply`` (accept / decline / cancel); the result, the server's record, the
    ledger, and the messages the client was shown."""
    from mcp import types

    params, _, record, store = proxied(tmp_path, policy_text, wait)
    shown: list[str] = []

    async def answer(context: Any, request: Any) -> Any:
        shown.append(request.message)
        content = {"allow": True} if reply == "accept" else None
        return types.ElicitResult(action=reply, content=content)

    async def main() -> Any:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, elicitation_callback=answer) as client,
        ):
            await client.initialize()
            return await client.call_tool("write_file", {"path": "/src/release/v1", "content": "v1"})

    result = anyio.run(main)
    shown_log = bgc("log", "show", "--store", store, "--format", "json")
    entries = [json.loads(line) for line in shown_log.stdout.splitlines()]
    return result, [json.loads(line) for line in record.read_text().splitlines()], entries, shown


ANYONE = """\
tool write_file on files needs fs:write:{path} ignores content
allow fs:write:/src/**
ask fs:write:/src/release/** because "a person signs releases"
"""


def test_a_person_at_the_client_can_allow_an_ask_anyone_may_answer_once(tmp_path: Path) -> None:
    result, received, entries, shown = elicited_call(tmp_path, ANYONE, "accept")
    assert not result.is_error and text(result) == "wrote 2 characters to /src/release/v1"
    assert received == [{"tool": "write_file", "arguments": {"path": "/src/release/v1", "content": "v1"}}]
    assert len(shown) == 1 and "write_file" in shown[0] and "/src/release/v1" in shown[0] and "p.bgp:3" in shown[0]
    proxy = [entry for entry in entries if entry["kind"] == "proxy"]
    assert [entry["decision"] for entry in proxy] == ["ask", "allow"]
    assert proxy[1]["approvers"] == ["(the person at the MCP client)"] and proxy[1]["request"] == proxy[0]["request"]


def test_a_person_at_the_client_who_declines_refuses_the_call(tmp_path: Path) -> None:
    result, received, entries, _ = elicited_call(tmp_path, ANYONE, "decline")
    assert result.is_error and "declined at the MCP client" in text(result)
    assert received == []
    assert [entry["decision"] for entry in entries if entry["kind"] == "proxy"] == ["ask", "deny"]


def test_the_client_is_never_asked_to_stand_for_named_approvers(tmp_path: Path) -> None:
    assert bgc("key", "new", "alice", "--dir", str(tmp_path)).exit_code == 0
    named = POLICY.format(alice=(tmp_path / "alice.pub").read_text().strip())
    result, received, _, shown = elicited_call(tmp_path, named, "accept", wait=1)
    assert shown == [] and result.is_error and "needs approval" in text(result)
    assert received == []


# ---- the transport: a held call with a scripted request ----------------------------------------


class Scripted(Approvals):
    """A request whose standing the test sets; records cancellations."""

    def __init__(self) -> None:
        self.standing = "pending"
        self.cancelled: list[str] = []

    def state(self, request: str) -> str:
        return self.standing

    def cancel(self, request: str) -> None:
        self.cancelled.append(request)


def decide_with(approvals: Scripted):  # type: ignore[no-untyped-def]
    def decide(tool: str, arguments: Any) -> ToolVerdict:
        if approvals.standing == "approved":
            return ToolVerdict("allow", "approved once by alice (req-1)", "req-1")
        return ToolVerdict("ask", "needs approval: bgc approve req-1", "req-1")

    return decide


def eventually(probe: Any, seconds: float = 30.0) -> Any:
    """What ``probe`` returns once it is truthy (the held call's thread runs on its own time)."""
    deadline = time.monotonic() + seconds
    while not (found := probe()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


@pytest.fixture
def scripted(tmp_path: Path):  # type: ignore[no-untyped-def]
    approvals = Scripted()
    opened = Session(tmp_path / "record", decide=decide_with(approvals), wait=60, approvals=approvals)
    yield opened, approvals
    if opened.thread.is_alive():
        opened.close()


def test_other_messages_flow_while_a_call_is_held_and_it_goes_through_once_approved(scripted: Any) -> None:
    session, approvals = scripted
    session.send(call("held", "write_file", {"path": "/src/release/v1"}))
    assert session.sync() == [] and session.answers == []  # the ping passed the held call
    approvals.standing = "approved"
    answer = json.loads(session.receive())
    assert answer["id"] == "held" and "result" in answer and "echo" in answer["result"]
    assert [json.loads(line)["id"] for line in session.sync()] == ["held"]


def test_a_client_that_cancels_a_held_call_cancels_its_request(scripted: Any) -> None:
    session, approvals = scripted
    session.send(call("held", "write_file", {"path": "/src/release/v1"}))
    session.sync()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "held", "reason": "user"}}
    session.send(json.dumps(cancel).encode() + b"\n")
    assert eventually(lambda: approvals.cancelled) == ["req-1"]
    approvals.standing = "approved"  # an answer after the cancel changes nothing
    assert session.sync() == [] and session.answers == []  # no result, nothing forwarded, not the cancel either


def test_a_client_that_goes_away_cancels_every_held_request(scripted: Any) -> None:
    session, approvals = scripted
    session.send(call("held", "write_file", {"path": "/src/release/v1"}))
    session.sync()
    session.close()
    assert eventually(lambda: approvals.cancelled) == ["req-1"]
    assert session.record.read_bytes().count(b"tools/call") == 0


# ---- nothing unsigned in the store decides an allow ------------------------------------------------

TWO_OF = """\
trust approver alice {alice}
trust approver bob {bob}
trust approver carol {carol}
tool write_file on files needs fs:write:{{path}} ignores content
ask fs:write:/src/release/** approvals 2 of [alice, bob] because "two people sign releases"
"""


class ProxyScenes:
    """Scenes (tests/store_support.py) made through `bgc mcp-proxy` with the store at ``location``:
    pairs of release writes, the first of each approved by alice and bob; carol is trusted and
    named by no rule."""

    def __init__(self, tmp_path: Path, location: str) -> None:
        from bgc.runtime.kernel.keys import load_private

        names = ("alice", "bob", "carol", "mallory")
        for name in names:
            assert bgc("key", "new", name, "--dir", str(tmp_path)).exit_code == 0
        self.keys = {name: load_private(str(tmp_path / f"{name}.key")) for name in names}
        public = {name: (tmp_path / f"{name}.pub").read_text().strip() for name in names[:3]}
        self.tmp_path, self.location, self.policy = tmp_path, location, TWO_OF.format(**public)
        self.record = tmp_path / "record.jsonl"

    def proxy(self, wait: float) -> StdioServerParameters:
        params, _, _, _ = proxied(self.tmp_path, self.policy, wait)
        params.args[params.args.index("--store") + 1] = self.location
        return params

    async def ask(self, client: ClientSession, path: str) -> str:
        """Ask for a write the proxy refuses at once (--wait 0): the request it names."""
        import re

        refused = await client.call_tool("write_file", {"path": path, "content": "v"})
        assert refused.is_error, text(refused)
        return re.search(r"bgc approve (sha256:[0-9a-f]{64})", text(refused)).group(1)  # type: ignore[union-attr]

    def scene(self, approved: str, target: str) -> Scene:
        from bgc.runtime.approvals import encode_answer, load_request, sign_answer

        store = open_store(self.location)
        try:
            first, second = (load_request(store, found)[0] for found in (approved, target))
            for name in ("alice", "bob"):
                signed = sign_answer(first.id, "allow-once", name, self.keys[name], first.created)
                assert store.add_answer(first.id, name, "allow-once", encode_answer(signed))
        finally:
            store.close()
        return Scene(self.location, first, second, ("alice", "bob"), "carol", self.keys, self.keys["mallory"],
                     int(time.time()))  # fmt: skip

    def received(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.record.read_text().splitlines()]


def test_no_write_to_the_store_makes_the_mcp_proxy_forward_a_call(tmp_path: Path, store_location: str) -> None:
    """One client session: for each way of writing the store, a pair of calls is asked, the
    store written, and the call the tampering aims at asked again. Only the untouched pair's
    approved call (first) reaches the server."""
    made = ProxyScenes(tmp_path, store_location)
    tamperings = store_tamperings(("alice", "bob"))

    async def main() -> dict[str, tuple[bool, str]]:
        outcomes = {}
        async with stdio_client(made.proxy(wait=0)) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for index, name in enumerate(["(untouched)", *sorted(tamperings)]):
                paths = {which: f"/src/release/{index}-{which}" for which in ("approved", "target")}
                scene = made.scene(await made.ask(client, paths["approved"]), await made.ask(client, paths["target"]))
                which = "approved" if name == "(untouched)" else tamperings[name](scene)
                again = await client.call_tool("write_file", {"path": paths[which], "content": "v"})
                outcomes[name] = (again.is_error, text(again))
        return outcomes

    outcomes = anyio.run(main)
    assert outcomes.pop("(untouched)")[0] is False
    assert {name: refused for name, (refused, _) in outcomes.items()} == dict.fromkeys(tamperings, True), outcomes
    assert made.received() == [{"tool": "write_file", "arguments": {"path": "/src/release/0-approved", "content": "v"}}]


def test_no_write_to_the_store_while_a_call_is_held_makes_the_mcp_proxy_forward_it(
    tmp_path: Path, store_location: str
) -> None:
    """The proxy holding a call (--wait) follows its request; the store is written while it
    holds, so that its request ends in the store and the proxy decides the call again. Every
    tampering that rewrites or removes the held call's own request is tried."""
    from bgc.runtime.approvals import load_request

    made = ProxyScenes(tmp_path, store_location)
    tamperings = {name: tamper for name, tamper in store_tamperings(("alice", "bob")).items()
                  if "answer" not in name and "after its signed expiry" not in name}  # fmt: skip

    async def scenes() -> list[Scene]:
        async with stdio_client(made.proxy(wait=0)) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return [made.scene(await made.ask(client, f"/src/release/{index}-approved"),
                               await made.ask(client, f"/src/release/{index}-target")) for index in range(len(tamperings))]  # fmt: skip

    def ledger_length() -> int:
        store = open_store(store_location)
        try:
            return len(list(store.rows()))
        finally:
            store.close()

    def when_held(scene: Scene, tamper: Any, before: int, done: list[str]) -> None:
        while ledger_length() == before:  # the proxy records its ask, then holds the call
            time.sleep(0.02)
        done.append(tamper(scene))
        opened = open_store(store_location)
        try:  # the held call's request is no longer itself in the store: the proxy decides again
            done.append("ended" if load_request(opened, scene.target.id) is None else "still there")
        finally:
            opened.close()

    async def held(made_scenes: list[Scene]) -> dict[str, tuple[bool, str]]:
        outcomes = {}
        async with stdio_client(made.proxy(wait=300)) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for index, (name, scene) in enumerate(zip(sorted(tamperings), made_scenes, strict=True)):
                done: list[str] = []
                writer = threading.Thread(target=when_held, args=(scene, tamperings[name], ledger_length(), done))
                writer.start()
                result = await client.call_tool("write_file", {"path": f"/src/release/{index}-target", "content": "v"})
                writer.join()
                assert done == ["target", "ended"], (name, done)
                outcomes[name] = (result.is_error, text(result))
        return outcomes

    outcomes = anyio.run(held, anyio.run(scenes))
    assert {name: refused for name, (refused, _) in outcomes.items()} == dict.fromkeys(tamperings, True), outcomes
    assert made.received() == []
