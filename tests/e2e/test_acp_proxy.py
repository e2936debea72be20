"""`bgc acp-proxy` between a real ACP editor and a real ACP agent.

Both sides are the official SDK (``agent-client-protocol``) over real pipes: the test is a scripted
SDK editor that starts ``bgc acp-proxy`` as its agent, and the proxy starts the scripted SDK agent
(tests/acp/agent.py), which asks the editor for what each prompt's steps say. What the editor was
asked (its handlers record every request) and what the agent received (its answers come back as
the prompt's result) are what these tests assert on, with the ledger.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

from acp import Client, spawn_agent_process, text_block
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    WriteTextFileResponse,
)

from bgc.app.commands import launcher
from tests.e2e.test_mcp_proxy_approvals import cli
from tests.samples import bgc

AGENT = str(Path(__file__).parents[1] / "acp" / "agent.py")

POLICY = """\
{trust}
tool Read needs fs:read:{{file_path}} ignores offset, limit
tool Write needs fs:write:{{file_path}} ignores content
allow fs:read:/**
deny fs:read:/.env because "secrets stay in the environment"
allow fs:write:/src/**
deny fs:write:/src/secrets/** because "keys live here"
ask fs:write:/src/release/** {release} because "a person signs releases"
allow proc:exec:echo/**
deny proc:exec:rm/** because "nothing is deleted"
ask proc:exec:git/push, git/push/** because "a person pushes"
"""


class Editor(Client):
    """A scripted editor: records every request the agent (through bgc) makes of it, and answers
    permission requests as ``answer`` says (``allow``, ``always``, ``reject``, or ``wait`` for
    :attr:`release`)."""

    def __init__(self, answer: str = "allow") -> None:
        self.answer = answer
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.permissions: list[dict[str, Any]] = []
        self.terminals: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []
        self.release = asyncio.Event()
        self.asked = asyncio.Event()

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> RequestPermissionResponse:
        shown = [option.model_dump(by_alias=True) for option in options]
        self.permissions.append({"options": shown, "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True)})
        self.asked.set()
        if self.answer == "wait":
            await self.release.wait()
        kind = {"allow": "allow_once", "wait": "allow_once", "reject": "reject_once"}.get(self.answer)
        option = "always" if self.answer == "always" else next(o["optionId"] for o in shown if o["kind"] == kind)
        return RequestPermissionResponse.model_validate({"outcome": {"outcome": "selected", "optionId": option}})

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        return ReadTextFileResponse(content=f"contents of {path}")

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append(path)
        return WriteTextFileResponse()

    async def create_terminal(self, command: str, session_id: str, **kwargs: Any) -> CreateTerminalResponse:
        self.terminals.append({"command": command, **{k: v for k, v in kwargs.items() if v is not None}})
        return CreateTerminalResponse(terminal_id=f"term-{len(self.terminals)}")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        return TerminalOutputResponse(output=f"output of {terminal_id}", truncated=False)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        return None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(by_alias=True, exclude_none=True))


class Scene:
    """A project, a policy and a store in ``tmp``, and how to drive the proxy over them."""

    def __init__(self, tmp: Path, *, release: str = "", people: tuple[str, ...] = (), wait: float = 0,
                 extra: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.tmp = tmp
        self.project = tmp / "project"
        (self.project / "src").mkdir(parents=True)
        (self.project / ".env").write_text("KEY=secret\n")
        trust = []
        for person in people:
            assert bgc("key", "new", person, "--dir", str(tmp)).exit_code == 0
            trust.append(f"trust approver {person} {(tmp / f'{person}.pub').read_text().strip()}")
        self.policy = tmp / "p.bgp"
        self.policy.write_text(POLICY.format(trust="\n".join(trust), release=release))
        self.store = str(tmp / "k.db")
        self.log = tmp / "proxy.log"
        self.args = ["-m", "bgc", "acp-proxy", "-p", str(self.policy), "--store", self.store, "--agent", "claude-code",
                     "--wait", str(wait), *extra, "--", sys.executable, AGENT]  # fmt: skip

    def path(self, relative: str) -> str:
        return str(self.project / relative)

    def run(self, editor: Editor, script: Any, servers: list[dict[str, Any]] | None = None) -> Any:
        """``script(conn, session, process)`` against the proxy, after initialize and session/new
        (with ``servers`` as its MCP servers); its result."""

        async def main() -> Any:
            with self.log.open("ab") as log:
                async with spawn_agent_process(editor, sys.executable, *self.args, cwd=str(self.tmp),
                                               transport_kwargs={"stderr": log}) as (conn, process):  # fmt: skip
                    capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                                                      terminal=True)  # fmt: skip
                    await conn.initialize(protocol_version=1, client_capabilities=capabilities)
                    opened = await conn._conn.send_request("session/new", {"cwd": str(self.project), "mcpServers": servers or []})
                    session = opened["sessionId"]
                    return await script(conn, session, process)

        return asyncio.run(asyncio.wait_for(main(), 120))

    def steps(self, editor: Editor, *steps: dict[str, Any]) -> list[Any]:
        """The agent's results for one prompt of ``steps``."""

        async def script(conn: Any, session: str, process: Any) -> Any:
            return await prompt(conn, session, editor, list(steps))

        return self.run(editor, script)

    def ledger(self) -> list[dict[str, Any]]:
        shown = bgc("log", "show", "--store", self.store, "--format", "json")
        return [json.loads(line) for line in shown.stdout.splitlines()]


async def prompt(conn: Any, session: str, editor: Editor, steps: list[dict[str, Any]]) -> list[Any]:
    """Send one prompt; the agent's results (its last message to the editor)."""
    before = len(editor.updates)
    await conn.prompt(session_id=session, prompt=[text_block(json.dumps(steps))])
    for _ in range(200):
        chunks = [u for u in editor.updates[before:] if u.get("sessionUpdate") == "agent_message_chunk"]
        if chunks:
            return json.loads(chunks[-1]["content"]["text"])  # type: ignore[no-any-return]
        await asyncio.sleep(0.01)
    raise AssertionError("the agent sent no results")


def write(path: str, tool_call: str = "call-1", name: str = "Write") -> dict[str, Any]:
    """A Claude Code Write asked about as the Claude Code ACP adapter asks: announced with its
    tool name, then the permission request with the tool's input as ``rawInput``."""
    raw = {"file_path": path, "content": "v1"}
    announce = {"sessionUpdate": "tool_call", "toolCallId": tool_call, "title": "Write", "kind": "edit",
                "status": "pending", "rawInput": raw, "_meta": {"claudeCode": {"toolName": name}}}  # fmt: skip
    return {"announce": announce, "permission": {"toolCallId": tool_call, "title": f"Write {path}", "rawInput": raw}}


# ---- files -------------------------------------------------------------------------------------


def test_a_read_of_env_is_denied_and_the_editor_never_serves_it(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()
    results = scene.steps(editor, {"read": scene.path(".env")}, {"read": scene.path("src/a.py")})
    assert results[0]["error"] == -32001 and "secrets stay in the environment" in results[0]["message"]
    assert results[1] == {"content": f"contents of {scene.path('src/a.py')}"}
    assert editor.reads == [scene.path("src/a.py")]  # the buffer of .env was never asked for
    decided = [(e["decision"], e.get("atom")) for e in scene.ledger() if e["kind"] == "acp"]
    assert decided == [("deny", "fs:read:/.env"), ("allow", "fs:read:/src/a.py")]
    assert all(e["session"] == "session-1" for e in scene.ledger())


def test_a_write_outside_the_grants_is_refused_before_the_editor(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()
    results = scene.steps(
        editor,
        {"write": scene.path("README.md"), "content": "x"},
        {"write": scene.path("src/../../elsewhere"), "content": "x"},
        {"write": scene.path("src/secrets/key"), "content": "x"},
        {"write": scene.path("src/ok.py"), "content": "x"},
    )
    assert [r.get("error") for r in results] == [-32001, -32001, -32001, None]
    assert "host:write:" in results[1]["message"] and "keys live here" in results[2]["message"]
    assert editor.writes == [scene.path("src/ok.py")]


# ---- permission requests -----------------------------------------------------------------------


def test_an_allowed_call_is_answered_allow_once_by_bgc_and_always_never_reaches_the_agent(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor(answer="always")
    results = scene.steps(editor, write(scene.path("src/ok.py")))
    assert results == [{"outcome": "selected", "optionId": "allow"}]  # allow_once, though allow_always was offered
    assert editor.permissions == []  # the editor was never asked


def test_a_denied_call_is_answered_by_bgc_without_the_editor_seeing_it(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()
    results = scene.steps(editor, write(scene.path("src/secrets/key")))
    assert results == [{"outcome": "selected", "optionId": "reject"}]
    assert editor.permissions == []
    entry = next(e for e in scene.ledger() if e["kind"] == "acp")
    assert entry["decision"] == "deny" and entry["tool"] == "Write" and entry["rule"].endswith("p.bgp:7")


def test_an_ask_anyone_may_answer_reaches_the_editor_without_allow_always(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor(answer="allow")
    results = scene.steps(editor, write(scene.path("src/release/v1")))
    assert results == [{"outcome": "selected", "optionId": "allow"}]
    assert [o["kind"] for o in editor.permissions[0]["options"]] == ["allow_once", "reject_once"]
    entries = [e for e in scene.ledger() if e["kind"] == "acp"]
    assert [e["decision"] for e in entries] == ["ask", "allow"]
    assert entries[1]["approvers"] == ["(the person at the editor)"] and entries[1]["request"] == entries[0]["request"]


def test_an_editor_that_picks_allow_always_anyway_allows_nothing(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor(answer="always")  # an option it was never shown
    results = scene.steps(editor, write(scene.path("src/release/v1")))
    assert results == [{"outcome": "selected", "optionId": "reject"}]


def test_a_cancel_answers_cancelled_and_a_later_approval_does_not_count(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path, people=("alice",)), Editor(answer="wait")
    call = write(scene.path("src/release/v1"))

    async def script(conn: Any, session: str, process: Any) -> Any:
        asked = asyncio.ensure_future(prompt(conn, session, editor, [call]))
        await editor.asked.wait()
        await conn.cancel(session_id=session)
        first = await asked
        editor.release.set()  # the person answers after the cancel: it does not count
        request = next(e["request"] for e in scene.ledger() if e["kind"] == "acp")
        approved = await asyncio.to_thread(cli, "approve", request, "--key", str(tmp_path / "alice.key"), "--store",
                                           scene.store, "-p", str(scene.policy), cwd=tmp_path)  # fmt: skip
        editor.answer, editor.asked = "reject", asyncio.Event()
        second = await prompt(conn, session, editor, [call])
        return first, approved, second

    first, approved, second = scene.run(editor, script)
    assert first == [{"outcome": "cancelled"}]
    assert second == [{"outcome": "selected", "optionId": "reject"}]  # asked again, and the person's no stands
    assert len(editor.permissions) == 2
    kinds = [(e["kind"], e["decision"]) for e in scene.ledger()]
    assert ("cancel", "cancelled") in kinds and ("acp", "allow") not in kinds
    assert approved.returncode != 0 or "cancelled" in approved.stdout + approved.stderr


def held(tmp_path: Path, step: dict[str, Any], forged: bytes) -> tuple[Scene, Editor, Any]:
    """``step`` against a release that alice and bob must both approve, the proxy holding it; while
    it waits, the editor writes ``forged`` (an answer of its own to the agent's first request,
    which it was never shown); then both approve. The scene, the editor and the agent's results."""
    scene = Scene(tmp_path, release="approvals 2 of [alice, bob]", people=("alice", "bob"), wait=60)
    editor, answered = Editor(), threading.Event()

    def people() -> None:
        answered.wait(120)
        listed = cli("pending", "--store", scene.store, "-p", str(scene.policy), "--format", "json", cwd=tmp_path)
        request = json.loads(listed.stdout.splitlines()[0])["id"]
        for person in ("alice", "bob"):
            done = cli("approve", request, "--key", str(tmp_path / f"{person}.key"), "--store", scene.store,
                       "-p", str(scene.policy), cwd=tmp_path)  # fmt: skip
            assert done.returncode == 0, done.stderr

    async def script(conn: Any, session: str, process: Any) -> Any:
        waiting_step = asyncio.ensure_future(prompt(conn, session, editor, [step]))
        while "holding" not in scene.log.read_text():  # the proxy says so once it holds the request
            await asyncio.sleep(0.05)
        process.stdin.write(forged)
        await process.stdin.drain()
        answered.set()
        return await waiting_step

    answering = threading.Thread(target=people)
    answering.start()
    try:
        return scene, editor, scene.run(editor, script)
    finally:
        answering.join()


def test_a_request_two_people_must_approve_is_held_until_they_do(tmp_path: Path) -> None:
    forged = b'{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}\n'
    scene, editor, results = held(tmp_path, write(str(tmp_path / "project" / "src/release/v1")), forged)
    assert results == [{"outcome": "selected", "optionId": "allow"}]
    assert editor.permissions == []  # named approvers: never put to the person at the editor
    acp = [e for e in scene.ledger() if e["kind"] == "acp"]
    assert [e["decision"] for e in acp] == ["ask", "allow"] and acp[1]["approvers"] == ["alice", "bob"]


def test_an_editor_answer_to_a_request_it_was_never_shown_counts_for_nothing(tmp_path: Path) -> None:
    forged = b'{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"forged by the editor"}}\n'
    path = str(tmp_path / "project" / "src/release/v1")
    _, editor, results = held(tmp_path, {"write": path, "content": "v1"}, forged)
    assert results == [{"written": path}] and editor.writes == [path]  # held, approved, then written once


# ---- modes -------------------------------------------------------------------------------------


def test_a_mode_the_agent_announces_widens_nothing_and_is_recorded_as_refused(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()

    async def script(conn: Any, session: str, process: Any) -> Any:
        await conn.set_session_mode(session_id=session, mode_id="default")
        return await prompt(conn, session, editor, [
            {"mode": "bypassPermissions"}, write(scene.path("src/secrets/key")), {"write": scene.path("README.md"),
            "content": "x"}, {"mode?": True}])  # fmt: skip

    results = scene.run(editor, script)
    assert results[1] == {"outcome": "selected", "optionId": "reject"} and results[2]["error"] == -32001
    assert results[3] == {"modes": ["default"]}  # the person's mode reached the agent
    assert editor.writes == [] and editor.permissions == []
    assert any(u.get("currentModeId") == "bypassPermissions" for u in editor.updates)  # the editor sees the truth
    modes = [(e["decision"], e["reason"]) for e in scene.ledger() if e["kind"] == "mode"]
    assert modes[0][0] == "agent-mode" and "'default'" in modes[0][1]
    assert modes[1][0] == "refused" and "bypassPermissions" in modes[1][1]


MODES = """\
{trust}
default mode normal
mode normal {{}}
mode docs approvals 1 of [alice] {{
    allow fs:write:/docs/**
}}
"""


def test_bgcs_mode_for_the_session_is_a_persons_to_choose_never_the_agents(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path, people=("alice",)), Editor()
    scene.policy.write_text(MODES.format(trust=f"trust approver alice {(tmp_path / 'alice.pub').read_text().strip()}"))
    docs = {"write": scene.path("docs/a.md"), "content": "x"}

    async def script(conn: Any, session: str, process: Any) -> Any:
        before = await prompt(conn, session, editor, [{"mode": "docs"}, docs])  # the agent's own say-so
        chosen = await asyncio.to_thread(cli, "mode", "set", session, "docs", "--key", str(tmp_path / "alice.key"), "-p",
                                         str(scene.policy), "--store", scene.store, cwd=tmp_path)  # fmt: skip
        assert chosen.returncode == 0, chosen.stderr
        return before, await prompt(conn, session, editor, [docs])

    before, after = scene.run(editor, script)
    assert before[1]["error"] == -32001 and after == [{"written": scene.path("docs/a.md")}]
    assert editor.writes == [scene.path("docs/a.md")]


# ---- terminals ---------------------------------------------------------------------------------


def test_a_terminal_is_decided_as_the_command_it_runs(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()
    results = scene.steps(
        editor,
        {"terminal": {"command": "rm -rf src"}},
        {"terminal": {"command": "rm", "args": ["-rf", "src"]}},
        {"terminal": {"command": "echo hello"}},
        {"terminal": {"command": "echo", "args": ["hi;", "rm", "x"]}},  # an editor's shell would run rm
        {"terminal": {"command": "echo hello", "cwd": str(tmp_path)}},
        {"terminal": {"command": "echo hello", "env": {"LD_PRELOAD": "/tmp/x.so"}}},
        {"terminal_output": "term-1"},
    )
    assert [r.get("error") for r in results[:2]] == [-32001, -32001] and "nothing is deleted" in results[0]["message"]
    assert results[2] == {"terminal": "term-1", "output": "output of term-1"}
    assert results[3]["error"] == -32001
    assert results[4]["error"] == -32001 and "outside the session's project" in results[4]["message"]
    assert results[5]["error"] == -32001 and "LD_PRELOAD" in results[5]["message"]
    assert results[6]["error"] == -32602  # released: no longer a terminal bgc let the editor create
    assert [t["command"] for t in editor.terminals] == ["echo hello"]


def test_a_command_the_person_allowed_runs_in_one_terminal_once(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor(answer="allow")
    bash = {"toolCallId": "push", "title": "git push", "rawInput": {"command": "git push", "description": "push"}}
    announce = {"sessionUpdate": "tool_call", "toolCallId": "push", "title": "git push", "kind": "execute",
                "status": "pending", "_meta": {"claudeCode": {"toolName": "mcp__acp__Bash"}}}  # fmt: skip
    results = scene.steps(editor, {"terminal": {"command": "git push"}}, {"announce": announce, "permission": bash},
                          {"terminal": {"command": "git push"}}, {"terminal": {"command": "git push"}})  # fmt: skip
    assert results[0]["error"] == -32001 and "p.bgp:11" in results[0]["message"]  # nobody allowed it yet
    assert results[1] == {"outcome": "selected", "optionId": "allow"}
    assert results[2] == {"terminal": "term-1", "output": "output of term-1"}
    assert results[3]["error"] == -32001  # once
    assert [t["command"] for t in editor.terminals] == ["git push"]
    allowed = [e for e in scene.ledger() if e["kind"] == "acp" and e["decision"] == "allow"]
    assert allowed[0]["approvers"] == ["(the person at the editor)"]  # the permission request, then its terminal
    assert "allowed once by the person at the editor" in allowed[1]["reason"] and allowed[1]["atom"] == "proc:exec:git/push"


# ---- initialize and the transport --------------------------------------------------------------


def test_only_mediated_capabilities_reach_the_agent(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()
    results = scene.steps(editor, {"capabilities?": True})
    assert results[0]["capabilities"] == {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}


GARBAGE = [
    b"not json at all\n",
    b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"a":1,"a":2}}\n',
    b'{"jsonrpc":"2.0","id":8,"method":"x","params":' + b"[" * 100 + b"]" * 100 + b"}\n",
    b'{"jsonrpc":"2.0","id":9,"method":"x","params":"PAD"}\n',
    b"[1,2]\n",
    b'{"jsonrpc":"2.0","method":"x"}\r\n',
]


def test_garbage_from_either_side_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    scene = Scene(tmp_path, extra=("--max-message", "65536"))
    seen: list[dict[str, Any]] = []
    editor = Editor()

    async def script(conn: Any, session: str, process: Any) -> Any:
        conn._conn.add_observer(lambda event: seen.append(event.message))
        for line in GARBAGE:
            process.stdin.write(line.replace(b"PAD", b"y" * 80_000))
        await process.stdin.drain()
        raw = [{"raw": line.decode("latin-1"), "pad": 80_000} for line in GARBAGE]
        return await prompt(conn, session, editor, [*raw, {"read": scene.path("src/a.py")}])

    results = scene.run(editor, script)
    assert results[-1] == {"content": f"contents of {scene.path('src/a.py')}"}  # both sides still talk
    errors = [m for m in seen if "error" in m]
    assert {e["id"] for e in errors} <= {None, 7, 8, 9} and len(errors) >= len(GARBAGE) - 1
    assert not any("y" * 100 in json.dumps(m) or m.get("method") == "x" for m in seen)
    log = scene.log.read_text()
    assert "refused a line from the editor" in log and "refused a line from the agent" in log
    assert "refused a message of 80,0" in log


def test_mcp_servers_of_a_session_run_behind_the_mcp_proxy_and_remote_ones_are_left_out(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()
    servers = [{"name": "files", "command": "/usr/bin/files-server", "args": ["--root", "."], "env": []},
               {"type": "http", "name": "remote", "url": "https://mcp.example.com", "headers": []}]  # fmt: skip

    async def script(conn: Any, session: str, process: Any) -> Any:
        return await prompt(conn, session, editor, [{"capabilities?": True}])

    (found,) = scene.run(editor, script, servers)
    (files,) = found["mcp"]
    started = launcher.parse([files["command"], *files["args"]])  # the launcher every registered command runs
    assert files["name"] == "files" and started is not None and started[0] == sys.executable
    arguments = started[1]
    assert arguments[:1] == ["mcp-proxy"] and arguments[-4:] == ["--", "/usr/bin/files-server", "--root", "."]
    assert ["-p", str(scene.policy), "--server", "files", "--store", scene.store] == arguments[1:7]


def test_requests_bgc_does_not_decide_are_declined(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()
    results = scene.steps(editor, {"ext": "zed/open_url"}, {"request": "elicitation/create", "params": {"message": "?"}},
                          {"request": "fs/read_text_file", "params": {"sessionId": "session-9", "path": scene.path("a")}})  # fmt: skip
    assert [r["error"] for r in results] == [-32601, -32601, -32602]
    assert "not one the editor opened" in results[2]["message"] and editor.reads == []


def test_a_tool_call_run_without_asking_is_recorded_with_what_the_policy_says(tmp_path: Path) -> None:
    scene, editor = Scene(tmp_path), Editor()
    ran = {"sessionUpdate": "tool_call", "toolCallId": "quiet", "title": "Write", "kind": "edit", "status": "in_progress",
           "rawInput": {"file_path": scene.path("src/secrets/key"), "content": "x"},
           "_meta": {"claudeCode": {"toolName": "mcp__acp__Write"}}}  # fmt: skip
    scene.steps(editor, {"ran": ran}, write(scene.path("src/ok.py"), "asked"))
    (unasked,) = [e for e in scene.ledger() if e["decision"] == "unasked"]
    assert unasked["tool"] == "Write" and unasked["session"] == "session-1" and unasked["atom"] == "fs:write:/src/secrets/key"
    assert "ran 'Write' without asking" in unasked["reason"] and "deny" in unasked["reason"]
    assert any(u.get("toolCallId") == "quiet" for u in editor.updates)  # the editor sees it run, as before


def test_the_entry_bgc_init_zed_writes_runs_the_agent_behind_the_policy_or_not_at_all(tmp_path: Path) -> None:
    """What the editor starts is what bgc init wrote; with a policy that no longer loads, the
    editor is told why and the agent never starts (never the bare agent in its place)."""
    scene, editor = Scene(tmp_path), Editor()
    settings, started = tmp_path / "settings.json", tmp_path / "started"
    done = bgc("init", "zed", "-p", str(scene.policy), "--settings", str(settings), "--store", scene.store,
               "--agent", "claude-code", "--name", "Scripted (bgc)", "--", sys.executable, AGENT)  # fmt: skip
    assert done.exit_code == 0, done.output
    written = json.loads(settings.read_text())["agent_servers"]["Scripted (bgc)"]

    async def session() -> Any:
        async with spawn_agent_process(editor, written["command"], *written["args"], cwd=str(tmp_path),
                                       env={"BGC_TEST_ACP_STARTED": str(started)}) as (conn, _):  # fmt: skip
            try:
                await conn.initialize(protocol_version=1)
            except Exception as error:  # noqa: BLE001 - what the editor shows
                return str(error)
            opened = await conn.new_session(cwd=str(scene.project), mcp_servers=[])
            return await prompt(conn, opened.session_id, editor, [{"read": scene.path(".env")}])

    results = asyncio.run(asyncio.wait_for(session(), 120))
    assert results[0]["error"] == -32001 and len(started.read_text().splitlines()) == 1
    started.unlink()
    scene.policy.write_text(scene.policy.read_text() + "not a rule\n")
    shown = asyncio.run(asyncio.wait_for(session(), 120))
    assert "the agent was not started" in shown and "p.bgp:12:1" in shown
    assert not started.exists()
