"""A scripted ACP agent on the official Python SDK (``agent-client-protocol``), for tests.

Each prompt's text is a JSON list of steps the agent takes in order, asking the editor through the
real SDK connection; the results (what the editor, or bgc in its place, answered) come back as one
``agent_message_chunk`` holding their JSON, so the test reads exactly what the agent received:

* ``{"read": PATH}`` / ``{"write": PATH, "content": TEXT}``: ``fs/read_text_file`` /
  ``fs/write_text_file``;
* ``{"permission": TOOL_CALL, "options": [...], "announce": UPDATE}``: optionally a ``tool_call``
  update first (as the Claude Code adapter announces a call, ``_meta.claudeCode.toolName``),
  then ``session/request_permission``;
* ``{"terminal": {command, args?, cwd?, env?}}``: ``terminal/create``, then its output and release;
  ``{"terminal_output": ID}``: ``terminal/output`` of a terminal by id;
* ``{"mode": MODE}``: a ``current_mode_update`` announced on the agent's own;
* ``{"ran": UPDATE}``: a ``tool_call`` update of a call that runs without asking;
* ``{"ext": NAME}`` / ``{"request": METHOD, "params": …}``: an extension request, any request;
* ``{"raw": TEXT, "pad": N}``: TEXT (each byte a character), ``PAD`` in it replaced by N ``y``,
  written as is on stdout (a line no JSON-RPC peer should take).

Modes the editor sets are kept and reported by ``{"mode?": true}``. With
``BGC_TEST_ACP_STARTED`` the agent writes its process id there when it starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from acp import PROTOCOL_VERSION, Agent, RequestError, run_agent, text_block, update_agent_message
from acp.schema import (
    AgentCapabilities,
    CurrentModeUpdate,
    EnvVariable,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SetSessionModeResponse,
    ToolCallStart,
    ToolCallUpdate,
)

OPTIONS = [
    {"optionId": "always", "name": "Always Allow", "kind": "allow_always"},
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


class Scripted(Agent):
    def __init__(self) -> None:
        self.conn: Any = None
        self.modes: list[str] = []
        self.sessions = 0

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:  # fmt: skip
        capabilities = client_capabilities.model_dump(by_alias=True, exclude_unset=True) if client_capabilities else None
        self.client_capabilities = capabilities
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities(load_session=True))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        self.sessions += 1
        self.mcp_servers = [server.model_dump(by_alias=True) for server in mcp_servers or []]
        return NewSessionResponse(session_id=f"session-{self.sessions}")

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        self.modes.append(mode_id)
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        steps = json.loads(prompt[0].text)
        results = []
        for step in steps:
            try:
                results.append(await self.step(session_id, step))
            except RequestError as error:
                results.append({"error": error.code, "message": str(error)})
            except Exception as error:  # noqa: BLE001 - the test reads what went wrong
                results.append({"failed": f"{type(error).__name__}: {error}"})
        await self.conn.session_update(session_id, update_agent_message(text_block(json.dumps(results))))
        return PromptResponse(stop_reason="end_turn")

    async def step(self, session: str, step: dict[str, Any]) -> Any:
        conn = self.conn
        if "read" in step:
            return {"content": (await conn.read_text_file(session_id=session, path=step["read"])).content}
        if "write" in step:
            await conn.write_text_file(session_id=session, path=step["write"], content=step["content"])
            return {"written": step["write"]}
        if "permission" in step:
            if "announce" in step:
                await conn.session_update(session, ToolCallStart.model_validate(step["announce"]))
            options = [PermissionOption.model_validate(option) for option in step.get("options", OPTIONS)]
            call = ToolCallUpdate.model_validate(step["permission"])
            answer = await conn.request_permission(session_id=session, tool_call=call, options=options)
            return answer.model_dump(by_alias=True, exclude_none=True)["outcome"]
        if "terminal" in step:
            spec = step["terminal"]
            env = [EnvVariable(name=name, value=value) for name, value in spec.get("env", {}).items()]
            created = await conn.create_terminal(session_id=session, command=spec["command"], args=spec.get("args"),
                                                 cwd=spec.get("cwd"), env=env or None)  # fmt: skip
            output = await conn.terminal_output(session_id=session, terminal_id=created.terminal_id)
            await conn.release_terminal(session_id=session, terminal_id=created.terminal_id)
            return {"terminal": created.terminal_id, "output": output.output}
        if "terminal_output" in step:
            output = await conn.terminal_output(session_id=session, terminal_id=step["terminal_output"])
            return {"output": output.output}
        if "mode" in step:
            await conn.session_update(session, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=step["mode"]))
            return {"announced": step["mode"]}
        if "mode?" in step:
            return {"modes": self.modes}
        if "capabilities?" in step:
            return {"capabilities": self.client_capabilities, "mcp": self.mcp_servers}
        if "ran" in step:
            await conn.session_update(session, ToolCallStart.model_validate(step["ran"]))
            return {"ran": step["ran"]["toolCallId"]}
        if "ext" in step:
            return await conn.ext_method(step["ext"], {})
        if "request" in step:  # a method by its name, as an agent other than this SDK's might send it
            return await conn._conn.send_request(step["request"], step.get("params", {}))
        if "raw" in step:
            line = step["raw"].replace("PAD", "y" * step.get("pad", 0)).encode("latin-1")
            left = memoryview(line)
            while left:  # the SDK made stdout non-blocking: a long line goes out in parts
                try:
                    left = left[os.write(1, left) :]
                except BlockingIOError:
                    await asyncio.sleep(0.01)
            return {"raw": len(line)}
        raise ValueError(f"unknown step {step!r}")


if __name__ == "__main__":
    if os.environ.get("BGC_TEST_ACP_STARTED"):  # a test that must know whether the agent ever ran
        with open(os.environ["BGC_TEST_ACP_STARTED"], "a", encoding="utf-8") as started:
            started.write(f"{os.getpid()}\n")
    asyncio.run(run_agent(Scripted()))
    sys.exit(0)
