"""``bgc init zed|jetbrains`` puts every agent the editor starts as a command behind
``bgc acp-proxy``, or names the ones it cannot and exits 1: generated over every kind of entry (a
command, typed or not, one already behind the proxy, an agent the editor installs itself), read
from settings written with the comments and trailing commas Zed allows."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.app.commands import launcher
from bgc.app.commands.init_acp import json_with_comments
from bgc.app.commands.init_mcp import is_proxied
from tests.samples import bgc

NAMES = st.text(st.characters(min_codepoint=0x61, max_codepoint=0x7A), min_size=1, max_size=6)
KINDS = st.sampled_from(["command", "custom", "registry", "extension", "builtin", "proxied"])


def entry(kind: str, name: str) -> dict[str, Any]:
    return {
        "command": {"command": "node", "args": [f"{name}.js", "--acp"], "env": {"K": "v"}},
        "custom": {"type": "custom", "command": "npx", "args": [f"@x/{name}"]},
        "registry": {"type": "registry", "env": {"K": "v"}},
        "extension": {"type": "extension"},
        "builtin": {"ignore_system_version": False},
        "proxied": {"type": "custom", "command": "bgc", "args": ["acp-proxy", "-p", "/p.bgp", "--", "x"]},
    }[kind]


# ---- JSON with comments ------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(st.sampled_from('ab/*,"\\ }]\n'), max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(st.sampled_from("ab/*,"), max_size=3), inner, max_size=3),
    max_leaves=10,
)
NOISE = st.sampled_from(["", " ", "\n", "// a comment, with } and ] and , \n", "/* block /* , */", "/*\n*/"])


@st.composite
def with_comments(draw: st.DrawFn, value: Any) -> str:
    """``value`` as JSON with comments between tokens and trailing commas where Zed allows them."""
    noise = lambda: draw(NOISE)  # noqa: E731
    if isinstance(value, list):
        items = [noise() + draw(with_comments(item)) + noise() for item in value]
        trailing = "," + noise() if value and draw(st.booleans()) else ""
        return "[" + noise() + ",".join(items) + trailing + "]"
    if isinstance(value, dict):
        items = [f"{noise()}{json.dumps(key)}{noise()}:{noise()}{draw(with_comments(item))}{noise()}" for key, item in value.items()]
        trailing = "," + noise() if value and draw(st.booleans()) else ""
        return "{" + noise() + ",".join(items) + trailing + "}"
    return json.dumps(value)


@given(st.data())
def test_json_with_comments_reads_as_the_value_written(data: st.DataObject) -> None:
    value = data.draw(JSON)
    text = data.draw(with_comments(value))
    plain, _ = json_with_comments(text, "settings.json")
    assert len(plain) == len(text) and plain.count("\n") == text.count("\n")  # errors are located in the file itself
    assert json.loads(plain) == value


def test_comment_marks_inside_strings_are_text() -> None:
    text = '{"url": "https://x.example/a//b", "glob": "/*.py", // real\n "x": [1,/* c */ 2,],}'
    plain, comments = json_with_comments(text, "s.json")
    assert json.loads(plain) == {"url": "https://x.example/a//b", "glob": "/*.py", "x": [1, 2]} and comments == 2


# ---- the command -------------------------------------------------------------------------------


def init(tmp: Path, editor: str, *extra: str, policy: str | None = None) -> Any:
    policy_path = tmp / "p.bgp"
    if not policy_path.exists():
        policy_path.write_text("allow fs:read:/**\n")
    return bgc("init", editor, "-p", policy or str(policy_path), "--settings", str(tmp / "settings.json"),
               "--store", str(tmp / "k.db"), *extra)  # fmt: skip


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.dictionaries(NAMES, KINDS, max_size=5), editor=st.sampled_from(["zed", "jetbrains"]))
def test_every_agent_started_as_a_command_runs_behind_the_proxy(tmp_path_factory: pytest.TempPathFactory,
                                                               table: dict[str, str], editor: str) -> None:  # fmt: skip
    tmp = tmp_path_factory.mktemp("init")
    servers = {name: entry(kind, name) for name, kind in table.items()}
    (tmp / "settings.json").write_text("// Zed settings\n" + json.dumps({"theme": "One", "agent_servers": servers}, indent=1))
    result = init(tmp, editor, "--agent", "claude-code")
    assert result.exit_code == (1 if {"registry", "extension", "builtin"} & set(table.values()) else 0), result.output
    written = json.loads(json_with_comments((tmp / "settings.json").read_text(), "s")[0])
    assert written["theme"] == "One"
    for name, kind in table.items():
        now = written["agent_servers"][name]
        if kind in ("registry", "extension", "builtin"):
            assert now == servers[name] and f"{name} is UNGUARDED" in result.output
            continue
        assert is_proxied(now, "acp-proxy")
        if kind != "proxied":
            started = launcher.parse([now["command"], *now["args"]])  # the launcher every registered command runs
            assert started is not None and started[0] == sys.executable and started[1][:1] == ["acp-proxy"]
            arguments = started[1]
            assert arguments[-len(servers[name]["args"]) - 2 :] == ["--", servers[name]["command"], *servers[name]["args"]]
            assert ["-p", str(tmp / "p.bgp"), "--store", str(tmp / "k.db"), "--agent", "claude-code"] == arguments[1:7]
            assert {k: v for k, v in now.items() if k not in ("command", "args")} == {
                k: v for k, v in servers[name].items() if k not in ("command", "args")}  # fmt: skip
    again = init(tmp, editor, "--agent", "claude-code")
    assert json.loads(json_with_comments((tmp / "settings.json").read_text(), "s")[0]) == written
    assert "now runs" not in again.output


def test_an_agent_is_added_behind_the_proxy_and_the_original_kept(tmp_path: Path) -> None:
    original = '// Zed settings\n{\n  "theme": "One", // mine\n}\n'
    (tmp_path / "settings.json").write_text(original)
    result = init(tmp_path, "zed", "--name", "Claude (bgc)", "--agent", "claude-code", "--", "npx", "@zed-industries/claude-code-acp")
    assert result.exit_code == 0, result.output
    added = json.loads((tmp_path / "settings.json").read_text())["agent_servers"]["Claude (bgc)"]
    assert added["type"] == "custom" and added["env"] == {} and added["args"][-3:] == ["--", "npx", "@zed-industries/claude-code-acp"]
    assert (tmp_path / "settings.json.bgc-backup").read_text() == original and "comments were not written back" in result.output
    assert init(tmp_path, "zed", "--name", "Claude (bgc)", "--", "npx", "x").exit_code == 2  # the name is taken


def test_a_policy_that_does_not_load_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "bad.bgp").write_text("allow fs:read:/**\nnot a rule\n")
    (tmp_path / "settings.json").write_text('{"agent_servers": {"a": {"command": "x"}}}')
    result = init(tmp_path, "zed", policy=str(tmp_path / "bad.bgp"))
    assert result.exit_code == 2 and "bad.bgp:2:1" in result.output
    assert json.loads((tmp_path / "settings.json").read_text()) == {"agent_servers": {"a": {"command": "x"}}}


@pytest.mark.parametrize("text", ['{"agent_servers": [1]}', '{"agent_servers": {"a": 5}}', '{"a": 1 /* open', "[1]",
                                  '{"agent_servers": {"a": {"command": "x", "args": "y"}}}'])  # fmt: skip
def test_settings_bgc_cannot_read_are_refused_and_left_alone(tmp_path: Path, text: str) -> None:
    (tmp_path / "settings.json").write_text(text)
    assert init(tmp_path, "jetbrains").exit_code == 2
    assert (tmp_path / "settings.json").read_text() == text and not (tmp_path / "settings.json.bgc-backup").exists()
