"""``bgc init mcp`` guards every server the client will start, or names the ones it did not and
exits 1: generated over every place a client keeps servers (top-level ``mcpServers``, VS Code's
``servers``, Claude Code's ``projects.<path>.mcpServers``, Codex's ``[mcp_servers]``) and every
kind of entry (a command, a remote server of each spelling, one already behind the proxy)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.app.commands.init_mcp import is_proxied
from tests.samples import bgc

NAMES = st.text(st.characters(min_codepoint=0x61, max_codepoint=0x7A), min_size=1, max_size=6)
ENTRIES = st.sampled_from(["stdio", "typed-stdio", "url", "httpUrl", "serverUrl", "sse", "http", "proxied"])


def entry(kind: str, name: str) -> dict[str, Any]:
    return {
        "stdio": {"command": "npx", "args": ["-y", f"server-{name}"], "env": {"K": "v"}},
        "typed-stdio": {"type": "stdio", "command": "uvx", "args": [name]},
        "url": {"url": f"https://{name}.example/mcp"},
        "httpUrl": {"httpUrl": f"https://{name}.example/mcp"},
        "serverUrl": {"serverUrl": f"https://{name}.example/mcp"},
        "sse": {"type": "sse", "url": f"https://{name}.example/sse"},
        "http": {"type": "http", "url": f"https://{name}.example/mcp"},
        "proxied": {"command": "bgc", "args": ["mcp-proxy", "-p", "/p.bgp", "--server", name, "--", "x"]},
    }[kind]


TABLES = st.dictionaries(NAMES, ENTRIES, max_size=4)


def started(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What a client starts or reaches, by where it is written (a reference independent of bgc's)."""
    found = {}
    for key in ("mcpServers", "servers"):
        for name, server in data.get(key, {}).items():
            found[f"{key}.{name}"] = server
    for project, scope in data.get("projects", {}).items():
        for name, server in scope.get("mcpServers", {}).items():
            found[f"projects[{json.dumps(project)}].mcpServers.{name}"] = server
    return found


def remote(server: dict[str, Any]) -> bool:
    """A remote server the proxy cannot speak to, or whose entry does not say it can."""
    streamable = "httpUrl" in server or server.get("type") == "http"
    return not streamable and (any(key in server for key in ("url", "serverUrl")) or server.get("type") not in (None, "stdio"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    top=st.one_of(st.none(), TABLES),
    vscode=st.one_of(st.none(), TABLES),
    projects=st.dictionaries(st.sampled_from(["/home/u/a", "/home/u/b", "/w/x y"]), TABLES, max_size=2),
)
def test_every_server_the_client_starts_is_guarded_or_named(
    tmp_path: Path, top: dict | None, vscode: dict | None, projects: dict
) -> None:
    if top is None and vscode is None and not projects:
        top = {}
    data: dict[str, Any] = {"other": {"kept": True}}
    if top is not None:
        data["mcpServers"] = {name: entry(kind, name) for name, kind in top.items()}
    if vscode is not None:
        data["servers"] = {name: entry(kind, name) for name, kind in vscode.items()}
    if projects:
        data["projects"] = {
            path: {"mcpServers": {name: entry(kind, name) for name, kind in table.items()}, "history": []}
            for path, table in projects.items()
        }
    policy = tmp_path / "p.bgp"
    policy.write_text("allow fs:read:/src/**\n")
    config = tmp_path / "client.json"
    config.write_text(json.dumps(data))
    for backup in tmp_path.glob("client.json.bgc-backup*"):
        backup.unlink()
    result = bgc("init", "mcp", str(config), "-p", str(policy))
    after = json.loads(config.read_text())
    assert after["other"] == data["other"]
    unguarded = [where for where, server in started(after).items() if not is_proxied(server)]
    assert all(remote(started(data)[where]) for where in unguarded)
    for where in unguarded:
        assert f"{where} is UNGUARDED" in result.output
    assert result.exit_code == (1 if unguarded else 0), result.output
    for where, server in started(after).items():
        if is_proxied(server) and not is_proxied(started(data)[where]):
            name = where.rsplit(".", 1)[1]
            args = server["args"]
            assert args[args.index("--server") + 1] == name and "--elicit" not in args
            before = started(data)[where]
            if "command" in before:
                assert args[args.index("--") + 1 :] == [before["command"], *before.get("args", [])]
            else:  # a remote server: reached with --url, the client starts the proxy as a command
                assert args[args.index("--url") + 1] == before.get("httpUrl", before.get("url")) and "--" not in args


def test_a_codex_configuration_names_each_server_not_behind_the_proxy_and_what_to_write(tmp_path: Path) -> None:
    policy = tmp_path / "p.bgp"
    policy.write_text("allow fs:read:/src/**\n")
    config = tmp_path / "config.toml"
    text = (
        'model = "x"\n[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs"]\n'
        '[mcp_servers.web]\nurl = "https://w.example/mcp"\n'
        '[mcp_servers.safe]\ncommand = "bgc"\nargs = ["mcp-proxy", "-p", "/p.bgp", "--server", "safe", "--", "x"]\n'
    )
    config.write_text(text)
    result = bgc("init", "mcp", str(config), "-p", str(policy))
    assert result.exit_code == 1
    assert "mcp_servers.docs is UNGUARDED" in result.output and "mcp_servers.web is UNGUARDED" in result.output
    assert "mcp_servers.safe already runs through bgc mcp-proxy" in result.output
    assert config.read_text() == text  # bgc writes no TOML
    written = result.output.split("in [mcp_servers.docs] write:\n", 1)[1].split("\n")[:2]
    table = tomllib.loads("\n".join(line.strip() for line in written))
    assert is_proxied(table) and table["args"][-3:] == ["--", "npx", "-y", "docs"][-3:]


def test_geminis_server_command_is_named_as_unguarded(tmp_path: Path) -> None:
    policy = tmp_path / "p.bgp"
    policy.write_text("allow fs:read:/src/**\n")
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"mcp": {"serverCommand": "python srv.py"}, "mcpServers": {}}))
    result = bgc("init", "mcp", str(config), "-p", str(policy))
    assert result.exit_code == 1 and "mcp.serverCommand is UNGUARDED" in result.output


def test_whether_the_client_may_answer_is_never_the_client_configuration_s(tmp_path: Path) -> None:
    # the opt-in is `trust elicitation` in the policy: a flag in a file the client reads (and a
    # project may commit) would let that file widen who approves
    policy = tmp_path / "p.bgp"
    policy.write_text("allow fs:read:/src/**\n")
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"a": {"command": "x"}}}))
    assert bgc("init", "mcp", str(config), "-p", str(policy), "--elicit").exit_code == 2
    assert bgc("init", "mcp", str(config), "-p", str(policy)).exit_code == 0
    args = json.loads(config.read_text())["mcpServers"]["a"]["args"]
    assert args[args.index("--") - 1] == "a" and not any("elicit" in arg for arg in args)


def test_the_teams_form_names_nothing_of_this_machine(tmp_path: Path) -> None:
    """`--team`: the proxy starts the bgc on PATH through the launcher and names the policy
    relative to the project (above a client's own directory), so the file works where it is
    cloned; a policy outside the project is refused, nothing written. Without it, this machine's
    interpreter and the policy's absolute path."""
    import shlex
    import sys

    from bgc.app.commands import launcher

    project = tmp_path / "p"
    (project / ".cursor").mkdir(parents=True)
    (project / "policy.bgp").write_text("allow fs:read:/** because \"x\"\n")
    for config, team in ((project / ".mcp.json", True), (project / ".cursor" / "mcp.json", True), (project / "own.json", False)):
        config.write_text(json.dumps({"mcpServers": {"files": {"command": "npx", "args": ["fs"]}}}))
        done = bgc("init", "mcp", str(config), "-p", str(project / "policy.bgp"), *(["--team"] if team else []))
        assert done.exit_code == 0, done.output
        server = json.loads(config.read_text())["mcpServers"]["files"]
        parsed = launcher.parse([server["command"], *server["args"]])
        assert parsed is not None and parsed[0] == (None if team else sys.executable), server
        policy = parsed[1][parsed[1].index("-p") + 1]
        assert policy == ("policy.bgp" if team else str(project / "policy.bgp")), shlex.join(parsed[1])
        assert is_proxied(server)
    outside = tmp_path / "elsewhere.bgp"
    outside.write_text("")
    text = json.dumps({"mcpServers": {"files": {"command": "npx", "args": ["fs"]}}})
    (project / ".mcp.json").write_text(text)
    refused = bgc("init", "mcp", str(project / ".mcp.json"), "-p", str(outside), "--team")
    assert refused.exit_code == 2 and "not inside the project" in refused.stderr
    assert (project / ".mcp.json").read_text() == text


def test_a_remote_servers_bearer_token_moves_to_the_entrys_environment(tmp_path: Path) -> None:
    policy = tmp_path / "p.bgp"
    policy.write_text("allow fs:read:/src/**\n")
    config = tmp_path / ".mcp.json"
    servers = {
        "literal": {"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "Bearer abc123"}},
        "reference": {"type": "http", "url": "https://b.example/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
        "custom": {"type": "http", "url": "https://c.example/mcp", "headers": {"X-Api-Key": "k"}},
        "sse": {"type": "sse", "url": "https://d.example/sse"},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    result = bgc("init", "mcp", str(config), "-p", str(policy))
    after = json.loads(config.read_text())["mcpServers"]
    assert result.exit_code == 1
    assert "mcpServers.custom is UNGUARDED" in result.output and "mcpServers.sse is UNGUARDED" in result.output
    literal, reference = after["literal"], after["reference"]
    assert literal["env"] == {"BGC_MCP_BEARER": "abc123"} and "headers" not in literal and literal["type"] == "stdio"
    assert literal["args"][literal["args"].index("--bearer-env") + 1] == "BGC_MCP_BEARER"
    assert reference["env"] == {"GH_TOKEN": "${GH_TOKEN}"}
    assert reference["args"][reference["args"].index("--bearer-env") + 1] == "GH_TOKEN"
    assert after["custom"] == servers["custom"] and after["sse"] == servers["sse"]
