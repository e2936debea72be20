"""The proof that a :class:`~bgc.runtime.sandbox.mapping.Confinement` is never wider than its plan.

Checked before anything runs, from the confinement's mounts alone (not from how the mapping
chose them):

1. every writable mount lies inside granted writes: ``D/**`` is a subset of the granted
   ``fs:write`` patterns (inside the project; the excepts are settled by 3) or of the granted
   ``host:write`` terms, excepts included (outside it), decided by bgc's algebra;
2. every read-only mount outside the project is the toolchain set or lies inside the granted
   ``host:read`` terms; nothing of the toolchain or of a host grant lies inside the project;
3. every existing path of the project, with the access the mount table gives it (the last mount
   at or above it decides), is allowed by the plan: a file readable only where ``fs:read``
   allows it (a directory shown only where its name or an entry below it may be read),
   writable only where ``fs:write`` does, a socket or device never; a file with several hard
   links is readable (writable) only when all its names are and all are in the project;
4. every mask the mapping says the plan refuses is refused by the plan;
5. the environment: no credential by class unless a grant names it;
6. network (:func:`prove_network`, on the bubblewrap command line itself, once the proxy runs):
   a network namespace of its own, no socket bound into the view but the proxy's, and that one
   only when the plan grants ``net:connect`` (nor a socket, pipe or device inside a host grant's
   directory, as it was read before the run); then the command runs behind the bridge to that
   socket, the launcher lets it connect to the bridge's port alone, and the proxy decides by
   the very plans proven here (their gate, the one ``bgc gate`` uses). Without a grant: no
   bridge, no socket, no TCP port.

A failed step is a :class:`~bgc.runtime.sandbox.mapping.SandboxRefused` naming the path and the
rule it would break.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bgc.core.gate import Gate
from bgc.core.patterns import glob
from bgc.core.plan import Plan
from bgc.runtime.sandbox import mapping
from bgc.runtime.sandbox.mapping import Confinement, Entry, Mount, SandboxRefused

if TYPE_CHECKING:
    from bgc.runtime.sandbox.netproxy import ProxyHandle

BWRAP_ARITY = {
    "--unshare-all": 0, "--die-with-parent": 0, "--new-session": 0, "--clearenv": 0, "--cap-drop": 1, "--proc": 1,
    "--dev": 1, "--tmpfs": 1, "--dir": 1, "--perms": 1, "--remount-ro": 1, "--chdir": 1, "--symlink": 2,
    "--ro-bind": 2, "--bind": 2, "--setenv": 2,
}  # fmt: skip
"""The bubblewrap options the sandbox writes and how many values each takes: any other option on
a command line is unknown, so not proven (``--share-net`` among them)."""


def effective(mounts: Sequence[Mount], path: str) -> Mount | None:
    """The mount that decides a host path: the last one at or above it (a file's mount only at
    the file itself); None when nothing shows it."""
    for mount in reversed(mounts):
        if mount.path == path or (mount.kind in ("ro", "rw", "mask-dir", "tmpfs") and mapping.inside(path, mount.path)):
            return mount
    return None


def prove(confinement: Confinement, plans: Sequence[Plan], entries: Sequence[Entry]) -> None:
    """Raise :class:`SandboxRefused` unless ``confinement`` is never wider than ``plans`` for the
    project ``entries`` (what :func:`bgc.runtime.sandbox.mapping.build` read)."""
    project = confinement.project
    gate = Gate(plans)
    writes = [part.pattern for part in mapping.granted_parts(plans, "fs", "write")]
    host_terms = {
        action: [(part.pattern, part.excepts) for part in mapping.granted_parts(plans, "host", action)]
        for action in ("read", "write")
    }
    shown = next((i for i, m in enumerate(confinement.mounts) if m.kind == "ro" and m.path == project), None)
    _check(shown is not None, "the project is not mounted read-only")
    for index, mount in enumerate(confinement.mounts):
        if mount.kind == "rw":
            if mapping.inside(mount.path, project):
                workspace = "/" + mount.path[len(project) :].lstrip("/")
                _check(
                    subset_of(mapping.below(workspace), writes),
                    f"{mount.path} is writable but fs:write:{mapping.below(workspace)} is not inside the granted writes",
                )
            else:
                _check(subset_of_terms(mapping.below(mount.path), host_terms["write"]) and subset_of_terms(glob.escape(mount.path), host_terms["write"]),
                       f"{mount.path} is writable but host:write does not grant all of it")  # fmt: skip
        elif mount.kind in ("ro", "symlink") and not mapping.inside(mount.path, project):
            _check(
                not mapping.inside(project, mount.path) or index < shown,
                f"{mount.path} is applied after the project and would show it",
            )
            if mount.reason.startswith("granted host:read"):
                _check(subset_of_terms(mapping.below(mount.path), host_terms["read"]) and subset_of_terms(glob.escape(mount.path), host_terms["read"]),
                       f"{mount.path} is readable but host:read does not grant all of it")  # fmt: skip
            elif mount.reason not in ("the toolchain", "what starts the confined command (interpreter, bgc)"):
                _check(False, f"{mount.path} is readable for no reason the proof knows: {mount.reason}")
        elif mount.kind.startswith("mask") and "refused by the plan" in mount.reason:
            workspace = "/" + mount.path[len(project) :].lstrip("/")
            _check(
                not mapping.allowed(gate, "read", workspace),
                f"{mount.path} is masked as refused, but the plan allows reading it",
            )
    _check_entries(confinement, gate, entries)
    granted_net = {part.pattern for part in mapping.granted_parts(plans, "net", "connect")}
    _check(set(confinement.net) == granted_net, "the sandbox's network is not the plan's net:connect grants")
    named = {part.pattern for part in mapping.granted_parts(plans, "env", "read")}
    for name, _ in confinement.env:
        _check(not mapping.is_credential(name) or name in named, f"the environment would carry the credential {name}")


def prove_network(argv: Sequence[str], confinement: Confinement, plans: Sequence[Plan], proxy: ProxyHandle | None) -> None:
    """Raise :class:`SandboxRefused` unless the bubblewrap command line ``argv`` gives the
    command no network but ``proxy``, deciding by ``plans`` (step 6 of the module docstring)."""
    from bgc.runtime.sandbox import bwrap, enter
    from bgc.runtime.sandbox.netbridge import BRIDGE_PORT, bridge_command

    options, command = _bwrap_options(argv)
    _check(("--unshare-all",) in options, "the command would share the host's network namespace")
    sockets = [values[0] for flag, *values in options if flag in ("--ro-bind", "--bind") and _is_socket(values[0])]
    for mount in confinement.mounts:
        if mount.reason.startswith("granted host:") and os.path.isdir(mount.path):
            door = next((entry.path for entry in mapping.walk(mount.path) if entry.kind == "s"), None)
            _check(door is None, f"{mapping.host_path(mount.path, door or '')} is a socket, pipe or device in a host grant")
    if not confinement.net:
        _check(proxy is None and not sockets, f"a socket is bound into a sandbox with no network: {sockets}")
        module = bridge_command("")[:-3]  # the interpreter and the bridge's module, without its socket and port
        _check(command[: len(module)] != module, "a sandbox with no network runs a bridge")
    else:
        _check(proxy is not None, "the plan grants net:connect but no proxy serves it")
        assert proxy is not None
        _check(sockets == [proxy.socket_path], f"the sockets bound into the sandbox are not the proxy's alone: {sockets}")
        _check(
            len(proxy.plans) == len(plans) and all(held is plan for held, plan in zip(proxy.plans, plans, strict=True)),
            "the proxy does not decide by the plans the sandbox was proven against",
        )
        bridge = bridge_command(proxy.socket_path, BRIDGE_PORT)
        _check(command[: len(bridge)] == bridge, "the command does not run behind the bridge to the proxy")
        command = command[len(bridge) :]
    launcher = bwrap.launcher()
    if command[: len(launcher)] == launcher:
        try:
            rules, _ = enter.parse(list(command[len(launcher) :]))
        except ValueError as error:
            raise SandboxRefused(f"the sandbox would be wider than the plan: {error}") from None
        ports = [BRIDGE_PORT] if confinement.net else []
        _check(rules["--port"] == [str(port) for port in ports], f"the command may connect to {rules['--port']}, not {ports}")


def _bwrap_options(argv: Sequence[str]) -> tuple[list[tuple[str, ...]], Sequence[str]]:
    """bubblewrap's options in ``argv`` (each with its values) and the command after ``--``."""
    options: list[tuple[str, ...]] = []
    index = 1
    while index < len(argv) and argv[index] != "--":
        flag = argv[index]
        _check(flag in BWRAP_ARITY, f"the bubblewrap option {flag} is not one the proof knows")
        options.append(tuple(argv[index : index + 1 + BWRAP_ARITY[flag]]))
        index += 1 + BWRAP_ARITY[flag]
    _check(index < len(argv), "the bubblewrap command line has no command")
    return options, argv[index + 1 :]


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def _check_entries(confinement: Confinement, gate: Gate, entries: Sequence[Entry]) -> None:
    project = confinement.project
    access: dict[str, tuple[bool, bool]] = {}
    for entry in entries:
        if entry.kind == "l":
            continue  # a link shows its target, which is an entry of its own or not shown at all
        mount = effective(confinement.mounts, mapping.host_path(project, entry.path))
        kind = mount.kind if mount is not None else None
        # a writable mount's own directory: what can change is its entries, which step 1 proved
        own = mount is not None and kind == "rw" and mount.path == mapping.host_path(project, entry.path)
        access[entry.path] = (kind in ("ro", "rw"), kind == "rw" and not own)
    check_access(project, gate, entries, access)


def check_access(project: str, gate: Gate, entries: Sequence[Entry], access: dict[str, tuple[bool, bool]]) -> None:
    """Raise :class:`SandboxRefused` unless every entry's access (workspace path: readable,
    writable; an entry not listed is neither) is one the plan allows (step 3): read where
    ``fs:read`` allows, a directory shown only for what it holds, a socket never, every name of a
    file with several names allowed and in the project; written where ``fs:write`` allows. The
    same check for the sandbox's mount table and for what an export lets another tool do."""
    names: dict[tuple[int, int], list[Entry]] = {}
    for entry in entries:
        if entry.kind == "f":
            names.setdefault(entry.inode, []).append(entry)
    # a directory may be shown for what it holds: an entry below it the plan lets be read
    containers = {
        "/".join(entry.path.split("/")[:depth])
        for entry in entries
        if entry.kind in ("f", "d") and mapping.allowed(gate, "read", entry.path)
        for depth in range(2, entry.path.count("/") + 1)
    }
    for entry in entries:
        if entry.path not in access:
            continue
        readable, writable = access[entry.path]
        where = mapping.host_path(project, entry.path)
        if entry.kind == "s":
            _check(not readable, f"{where} is a socket, pipe or device and would be reachable")
            continue
        group = names.get(entry.inode, [entry]) if entry.kind == "f" else [entry]
        if readable and entry.kind == "d":
            _check(
                mapping.allowed(gate, "read", entry.path) or entry.path in containers,
                f"{where} would be shown but the plan lets nothing in it be read",
            )
        elif readable:
            _check(
                entry.kind != "f" or len(group) >= entry.links,
                f"{where} has hard links outside the project and would be readable",
            )
            for member in group:
                _check(
                    mapping.allowed(gate, "read", member.path),
                    f"{where} would be readable but the plan refuses fs:read:{member.path}",
                )
        if writable:
            _check(
                entry.kind != "f" or len(group) >= entry.links,
                f"{where} has hard links outside the project and would be writable",
            )
            for member in group:
                _check(
                    mapping.allowed(gate, "write", member.path),
                    f"{where} would be writable but the plan refuses fs:write:{member.path}",
                )


def subset_of(pattern: str, patterns: Sequence[str]) -> bool:
    """Whether ``pattern`` lies inside ``patterns`` by the algebra; an unknown answer is no."""
    try:
        return bool(patterns) and glob.is_subset(pattern, patterns)
    except glob.AlgebraLimit:
        return False  # unknown is not proven


def subset_of_terms(pattern: str, terms: Sequence[tuple[str, Sequence[str]]]) -> bool:
    """Whether ``pattern`` lies inside the terms (pattern, excepts) by the algebra; unknown is no."""
    try:
        return bool(terms) and glob.is_subset_terms(pattern, terms)
    except glob.AlgebraLimit:
        return False


def _check(holds: bool, failure: str) -> None:
    if not holds:
        raise SandboxRefused(f"the sandbox would be wider than the plan: {failure}")
