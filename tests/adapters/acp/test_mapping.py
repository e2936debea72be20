"""The ACP mapping (bgc.adapters.acp.mapping), against references written out plainly, on
generated messages: what bgc answers an agent with, what it lets the editor show, what it tells
the agent of the editor, and what a request is decided as."""

from __future__ import annotations

import io
import json
import shlex
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bgc.adapters.acp import mapping
from bgc.adapters.acp.mapping import AcpInputError
from bgc.adapters.acp.proxy import blocked

KINDS = sorted(mapping.OPTION_KINDS)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@st.composite
def option_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    ids = draw(st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=8, unique=True))
    return [{"optionId": option_id, "name": f"option {option_id}", "kind": draw(st.sampled_from(KINDS))} for option_id in ids]


@given(option_lists())
def test_the_editor_is_never_shown_allow_always_and_bgc_answers_once(options: list[dict[str, Any]]) -> None:
    read = mapping.permission_options(options)
    assert list(read.shown) == [option for option in options if option["kind"] != "allow_always"]
    first = {kind: next((o["optionId"] for o in options if o["kind"] == kind), None) for kind in KINDS}
    assert read.allow == first["allow_once"]  # never an allow_always id
    assert read.reject == (first["reject_once"] or first["reject_always"])


@given(option_lists(), st.one_of(JSON, st.builds(lambda i: {"outcome": {"outcome": "selected", "optionId": i}}, st.text(max_size=6))))
def test_only_a_shown_option_or_cancelled_is_read_back_from_the_editor(options: list[dict[str, Any]], answer: Any) -> None:
    read = mapping.permission_options(options)
    choice = mapping.editor_choice(answer, read)
    if choice is None:
        return
    kind, option_id = choice
    if option_id is None:
        assert kind == "cancelled" and answer["outcome"]["outcome"] == "cancelled"
    else:
        assert kind != "allow_always" and {"optionId": option_id, "kind": kind} in [
            {"optionId": o["optionId"], "kind": o["kind"]} for o in read.shown
        ]


def test_an_allow_always_picked_anyway_is_not_read_as_an_answer() -> None:
    options = mapping.permission_options([{"optionId": "a", "name": "Always", "kind": "allow_always"},
                                          {"optionId": "o", "name": "Once", "kind": "allow_once"}])  # fmt: skip
    assert mapping.editor_choice({"outcome": {"outcome": "selected", "optionId": "a"}}, options) is None
    assert mapping.editor_choice({"outcome": {"outcome": "selected", "optionId": "o"}}, options) == ("allow_once", "o")


@pytest.mark.parametrize("options", [
    [], "x", [{"optionId": "a", "name": "A", "kind": "allow_sometimes"}], [{"optionId": "", "name": "A", "kind": "allow_once"}],
    [{"optionId": "a", "name": "A", "kind": "allow_once"}, {"optionId": "a", "name": "B", "kind": "reject_once"}],
    [{"optionId": 1, "name": "A", "kind": "allow_once"}], [{"optionId": "a", "kind": "allow_once"}],
])  # fmt: skip
def test_options_bgc_cannot_read_are_refused(options: Any) -> None:
    with pytest.raises(AcpInputError):
        mapping.permission_options(options)


@given(JSON)
def test_the_agent_is_told_only_the_capabilities_bgc_mediates(capabilities: Any) -> None:
    told = mapping.mediated_capabilities(capabilities)
    assert set(told) <= {"fs", "terminal"}
    assert set(told.get("fs", {})) <= {"readTextFile", "writeTextFile"}
    for name, value in told.get("fs", {}).items():
        assert value is (capabilities["fs"][name] is True)
    assert told.get("terminal", True) is True and ("terminal" not in told or capabilities["terminal"] is True)


def test_elicitation_login_terminals_and_extensions_are_never_passed_on() -> None:
    offered = {"fs": {"readTextFile": True, "writeTextFile": False, "extra": 1}, "terminal": True, "auth": {"terminal": True},
               "elicitation": {"form": {}}, "_meta": {"terminal-auth": True}, "session": {"configOptions": {}}}  # fmt: skip
    assert mapping.mediated_capabilities(offered) == {"fs": {"readTextFile": True, "writeTextFile": False}, "terminal": True}


WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)


@given(WORDS, st.lists(WORDS, max_size=5))
def test_a_terminal_is_read_both_as_its_words_and_as_the_text_a_shell_would_run(command: str, args: list[str]) -> None:
    read, forwarded = mapping.terminal_request({"sessionId": "s", "command": command, "args": args, "_meta": {"x": 1}})
    assert "_meta" not in forwarded and forwarded["command"] == command
    if not args:
        assert read.readings == (command,)
        return
    assert shlex.split(read.readings[0]) == [command, *args]  # the argument list, word for word
    assert " ".join([command, *args]) in read.readings  # what an editor joining it for a shell runs


@given(st.dictionaries(st.sampled_from([*mapping.INERT_ENV, "PATH", "LD_PRELOAD", "BASH_ENV", "GIT_SSH_COMMAND", "X"]),
                       st.text(max_size=4), max_size=6))  # fmt: skip
def test_a_terminals_environment_names_every_variable_that_may_change_what_runs(env: dict[str, str]) -> None:
    variables = [{"name": name, "value": value} for name, value in env.items()]
    read, _ = mapping.terminal_request({"sessionId": "s", "command": "ls", "env": variables})
    assert read.env == tuple(sorted(name for name in env if name not in mapping.INERT_ENV))


@pytest.mark.parametrize("params", [
    {"sessionId": "s", "command": ""}, {"sessionId": "s", "command": "ls", "args": "x"},
    {"sessionId": "s", "command": "ls", "cwd": "relative"}, {"sessionId": "s", "command": "ls", "shell": "/bin/zsh"},
    {"sessionId": "s", "command": "ls", "env": [{"name": "A"}]}, {"sessionId": "s", "command": "ls", "outputByteLimit": -1},
])  # fmt: skip
def test_terminal_requests_bgc_cannot_read_are_refused(params: dict[str, Any]) -> None:
    with pytest.raises(AcpInputError):
        mapping.terminal_request(params)


@pytest.mark.parametrize("params", [
    {"sessionId": "s", "path": "relative/a.py"}, {"sessionId": "s", "path": 5}, {"sessionId": "s"},
    {"sessionId": "s", "path": "/a", "encoding": "latin-1"}, "params",
])  # fmt: skip
def test_file_requests_bgc_cannot_read_are_refused(params: Any) -> None:
    with pytest.raises(AcpInputError):
        mapping.file_request("fs/read_text_file", params)


def test_a_file_request_is_forwarded_as_decided() -> None:
    action, path, forwarded = mapping.file_request("fs/write_text_file", {"sessionId": "s", "path": "/p/a", "content": "x", "_meta": {}})
    assert (action, path, forwarded) == ("write", "/p/a", {"sessionId": "s", "path": "/p/a", "content": "x"})


@given(st.sampled_from(["read", "search", "edit", "delete", "move", "execute", "fetch", "think", "other", None]),
       st.lists(st.just("/p/a") | st.just("/p/b"), max_size=3))  # fmt: skip
def test_locations_are_read_or_written_as_the_kind_says(kind: str | None, paths: list[str]) -> None:
    needs = mapping.location_needs(kind, tuple(paths))
    expected = {"read": "read", "search": "read", "edit": "write", "delete": "write", "move": "write"}.get(kind or "")
    assert needs == ([("fs", expected, path) for path in paths] if expected else [])


@pytest.mark.parametrize(("name", "tool", "shell"), [("Write", "Write", False), ("mcp__acp__Write", "Write", False),
                                                     ("mcp__acp__Bash", "Bash", True), ("mcp__github__x", "x", False)])  # fmt: skip
def test_claude_codes_adapter_calls_are_read_as_claude_codes_tools(name: str, tool: str, shell: bool) -> None:
    raw = {"command": "ls"} if shell else {"file_path": "/p/a"}
    call = mapping.tool_call({"toolCallId": "c", "rawInput": raw})
    use = mapping.agent_use("claude-code", call, name, "/p", "s")
    assert use is not None and (use.tool, use.shell, use.cwd, use.session) == (tool, shell, "/p", "s")
    assert mapping.agent_use("gemini-cli", call, name, "/p", "s") is None  # no tool input of its own: kinds and locations
    assert mapping.agent_use("claude-code", call, None, "/p", "s") is None  # no name: nothing to map by


def test_a_claude_code_input_its_tool_cannot_take_is_refused() -> None:
    call = mapping.tool_call({"toolCallId": "c", "rawInput": {"command": "ls", "cwd": "/elsewhere"}})
    with pytest.raises(AcpInputError):
        mapping.agent_use("claude-code", call, "Bash", "/p", "s")


def test_stdio_mcp_servers_run_behind_the_proxy_and_remote_ones_are_left_out() -> None:
    servers = [{"name": "files", "command": "npx", "args": ["server"], "env": []},
               {"type": "http", "name": "remote", "url": "https://x", "headers": []}]  # fmt: skip
    kept, dropped = mapping.guarded_servers(servers, lambda name, command, args: ("bgc", ["mcp-proxy", name, "--", command, *args]))
    assert kept == [{"name": "files", "command": "bgc", "args": ["mcp-proxy", "files", "--", "npx", "server"], "env": []}]
    assert dropped == ["remote"]


@pytest.mark.parametrize("version", [0, "1", None, 1.0, True])
def test_initialize_below_version_one_or_not_a_number_is_refused(version: Any) -> None:
    with pytest.raises(AcpInputError):
        mapping.protocol_version({"protocolVersion": version})
    mapping.protocol_version({"protocolVersion": 2})  # negotiated down to 1 by the proxy


def test_an_agent_bgc_cannot_guard_is_never_started_and_the_editor_is_told_why() -> None:
    requests = b"".join(json.dumps(m).encode() + b"\n" for m in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {}}, {"not": "json-rpc"},
    )) + b"garbage\n"  # fmt: skip
    out, log = io.BytesIO(), io.StringIO()
    assert blocked("p.bgp:3:1: error: expected a rule", io.BytesIO(requests), out, log) == 2
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a["id"] for a in answers] == [1] and "p.bgp:3:1" in answers[0]["error"]["message"]
    assert "p.bgp:3:1" in log.getvalue()
