"""The network step of the sandbox's proof, held to the bubblewrap command line that runs: every
way of widening it (sharing the host's network, binding another socket, skipping the bridge, a
proxy deciding by other plans, opening another port to the command) is generated from the real
command line and refused."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bgc.app.commands.sandbox import plans_for
from bgc.runtime.sandbox import bwrap, mapping, prove
from bgc.runtime.sandbox.mapping import SandboxRefused
from bgc.runtime.sandbox.netproxy import ProxyHandle, start_proxy

POLICY = """\
allow fs:read:/**
allow fs:write:/src/**
"""
GRANT = "allow net:connect:https://pypi.org/**\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def confined(project: Path, policy: str):  # type: ignore[no-untyped-def]
    (project / "policy.bgp").write_text(policy)
    plans = plans_for(None, "policy.bgp", None)
    confinement, _ = mapping.build(plans, str(project), environ={"PATH": "/usr/bin"})  # type: ignore[arg-type]
    return plans, confinement


@pytest.fixture
def proxy(project: Path, tmp_path: Path) -> Iterator[tuple[object, object, ProxyHandle]]:
    plans, confinement = confined(project, POLICY + GRANT)
    with start_proxy(plans, str(tmp_path / "net")) as handle:  # type: ignore[arg-type]
        yield plans, confinement, handle


def argv_of(confinement, socket_path: str | None) -> list[str]:  # type: ignore[no-untyped-def]
    return bwrap.bwrap_argv("bwrap", confinement, ["true"], True, socket_path)


def test_the_real_command_lines_are_proven(project: Path, proxy) -> None:  # type: ignore[no-untyped-def]
    plans, confinement, handle = proxy
    prove.prove_network(argv_of(confinement, handle.socket_path), confinement, plans, handle)
    offline_plans, offline = confined(project, POLICY)
    prove.prove_network(argv_of(offline, None), offline, offline_plans, None)


def _another_socket(tmp_path: Path) -> str:
    path = str(tmp_path / "agent.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    return path


def _port(argv: list[str], *ports: str) -> list[str]:
    at = argv.index("--port")
    return [*argv[:at], *(item for port in ports for item in ("--port", port)), *argv[at + 2 :]]


def _unbridged(argv: list[str]) -> list[str]:
    start = argv.index("--") + 1
    return argv[:start] + argv[argv.index("--", start) + 1 :]


WIDENINGS: dict[str, tuple[Callable[[list[str], Path], list[str]], str]] = {
    "shares the host's network": (lambda argv, _: [argv[0], "--share-net", *argv[1:]], "--share-net is not one"),
    "keeps no namespace": (lambda argv, _: [a for a in argv if a != "--unshare-all"], "share the host's network"),
    "binds another socket": (
        lambda argv, tmp: [argv[0], "--ro-bind", _another_socket(tmp), "/tmp/agent.sock", *argv[1:]],
        "not the proxy's alone",
    ),
    "an option the proof does not know": (lambda argv, _: [argv[0], "--bind-try", "/run", "/run", *argv[1:]], "--bind-try"),
    "opens another port": (lambda argv, _: _port(argv, "3128", "443"), "may connect to"),
    "changes the port": (lambda argv, _: _port(argv, "80"), "may connect to"),
    "skips the bridge": (lambda argv, _: _unbridged(argv), "does not run behind the bridge"),
}


@pytest.mark.parametrize("widening", WIDENINGS)
def test_a_widened_command_line_is_refused(proxy, tmp_path: Path, widening: str) -> None:  # type: ignore[no-untyped-def]
    plans, confinement, handle = proxy
    widen, reason = WIDENINGS[widening]
    with pytest.raises(SandboxRefused, match=f"wider than the plan: .*{re.escape(reason)}"):
        prove.prove_network(widen(argv_of(confinement, handle.socket_path), tmp_path), confinement, plans, handle)


def test_a_proxy_deciding_by_other_plans_is_refused(project: Path, proxy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plans, confinement, _ = proxy
    wider, _ = confined(project, POLICY + "allow net:connect:**\n")
    with start_proxy(wider, str(tmp_path / "other-net")) as other:  # type: ignore[arg-type]
        with pytest.raises(SandboxRefused, match="does not decide by the plans"):
            prove.prove_network(argv_of(confinement, other.socket_path), confinement, plans, other)


def test_a_grant_without_a_proxy_is_refused(proxy) -> None:  # type: ignore[no-untyped-def]
    plans, confinement, _ = proxy
    with pytest.raises(SandboxRefused, match="no proxy serves it"):
        prove.prove_network(argv_of(confinement, None), confinement, plans, None)


def test_no_grant_binds_no_socket_and_runs_no_bridge(project: Path, proxy) -> None:  # type: ignore[no-untyped-def]
    _, _, handle = proxy
    plans, offline = confined(project, POLICY)
    with pytest.raises(SandboxRefused, match="a socket is bound"):
        prove.prove_network(argv_of(offline, handle.socket_path), offline, plans, None)
    with pytest.raises(SandboxRefused, match="a socket is bound"):
        prove.prove_network(argv_of(offline, None), offline, plans, handle)


@pytest.mark.parametrize("network", ["", GRANT])
@pytest.mark.parametrize("action", ["read", "write"])
@pytest.mark.parametrize("where", ["the socket", "its directory"])
def test_a_socket_a_host_grant_names_is_refused(project: Path, tmp_path: Path, network: str, action: str, where: str) -> None:
    """A host grant reaching a socket (``$SSH_AUTH_SOCK``, a session bus) would be a way out
    the proxy does not decide: named as a file or held in a granted directory, it is refused."""
    door = tmp_path / "host" / "agent.sock"
    door.parent.mkdir()
    _another_socket(door.parent)
    pattern = str(door) if where == "the socket" else f"{door.parent}/**"
    plans, confinement = confined(project, POLICY + network + f"allow host:{action}:{pattern}\n")
    assert str(door if where == "the socket" else door.parent) in confinement.paths("ro", "rw")
    with start_proxy(plans, str(tmp_path / "net")) as handle:
        argv = argv_of(confinement, handle.socket_path if network else None)
        with pytest.raises(SandboxRefused, match="wider than the plan: .*(socket is bound|not the proxy's alone|socket, pipe or device in a host grant)"):
            prove.prove_network(argv, confinement, plans, handle if network else None)
