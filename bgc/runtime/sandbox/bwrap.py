"""Applying a :class:`~bgc.runtime.sandbox.mapping.Confinement`: bubblewrap's argv, the Landlock
rules of the launcher inside it, and the parent that bounds the run in time and output.

bubblewrap (Debian's ``bubblewrap``) builds the view in new namespaces of every kind (user,
mount, PID, network, IPC, UTS, cgroup), drops every capability, starts a new session (no
terminal injection into the caller's) and dies with its parent. Inside, the launcher
(:mod:`bgc.runtime.sandbox.enter`) applies Landlock before it execs the command. Where
unprivileged user namespaces are unavailable the launcher runs alone, its rules then carrying
the whole mapping (:func:`landlock_alone_rules`); where neither works, nothing runs.

When the plan grants ``net:connect``, the parent serves :mod:`bgc.runtime.sandbox.netproxy` on a
Unix socket in the run's private directory, binds that socket (and nothing else of the
directory) into the view, and runs the command behind :mod:`bgc.runtime.sandbox.netbridge`:
``bwrap … -- BRIDGE SOCKET PORT -- LAUNCHER --port PORT … -- COMMAND``. The bridge runs inside
bubblewrap (its namespaces, its view, no capabilities) but before Landlock: it must bind its
port, and a Landlock bind rule would let the command bind it too. The launcher then restricts
the command to connecting to that one port (ABI 4 and later; the network namespace holds
nothing else to connect to on earlier ones) and binding none, and Landlock keeps the
command from tracing the less-restricted bridge. Without bubblewrap there is no network
namespace to make the proxy the only way out, so a network grant is refused there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bgc.runtime.sandbox import mapping
from bgc.runtime.sandbox.mapping import Confinement, Entry, SandboxRefused
from bgc.runtime.sandbox.netbridge import BRIDGE_PORT, bridge_command

if TYPE_CHECKING:
    from bgc.core.plan import Plan
    from bgc.runtime.sandbox.netproxy import ProxyDecision, ProxyHandle


def launcher() -> list[str]:
    """The launcher's command: the interpreter bgc runs on, isolated from the environment and
    without ``site`` (a virtual environment's start-up files cost more than the rest of the
    launcher), importing bgc from the directory it was imported from here."""
    import bgc

    root = os.path.dirname(os.path.dirname(os.path.realpath(bgc.__file__)))
    boot = f"import sys; sys.path.insert(0, {root!r}); from bgc.runtime.sandbox.enter import run; run()"
    return [sys.executable, "-I", "-S", "-c", boot]


OUTPUT_TRUNCATED = "\nbgc sandbox: output truncated at {limit} bytes\n"
TIMED_OUT = 124
"""The exit code when the deadline killed the command (as ``timeout`` answers)."""
INTERRUPTED = 130
"""The exit code when bgc was interrupted (Ctrl-C) and ended the command (as a shell answers)."""


@dataclass(frozen=True, slots=True)
class Layers:
    """What confines a command here: bubblewrap (its path) and/or Landlock (its ABI version)."""

    bwrap: str | None
    landlock: int | None

    def describe(self) -> str:
        if self.bwrap and self.landlock:
            return f"bubblewrap and Landlock (ABI {self.landlock})"
        if self.bwrap:
            return "bubblewrap alone (this kernel has no Landlock)"
        return f"Landlock alone (ABI {self.landlock}): no namespaces, so no private /tmp or PID namespace, and no sockets at all"


def available_layers() -> Layers:
    """The layers this machine can apply; :class:`SandboxRefused` when it can apply none."""
    from bgc.runtime.sandbox import landlock

    try:
        abi: int | None = landlock.abi_version()
    except landlock.LandlockUnavailable:
        abi = None
    found = shutil.which("bwrap")
    if found is not None and not _namespaces_work(found):
        found = None
    if found is None and abi is None:
        raise SandboxRefused(
            "cannot confine here: bubblewrap cannot create namespaces (not installed, or unprivileged user namespaces "
            "are off) and the kernel has no Landlock",
            hint="install Debian's bubblewrap package, or run on a kernel with Landlock",
        )
    return Layers(found, abi)


def _namespaces_work(bwrap: str) -> bool:
    try:
        done = subprocess.run(
            [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def enter_rules(confinement: Confinement) -> list[str]:
    """The launcher's options inside bubblewrap: read beneath what is mounted, write beneath
    the writable mounts, the private ``/tmp`` and ``/dev``, list every directory of the view, and
    connect only to the bridge's port when the plan grants the network (no TCP at all otherwise)."""
    read = ["/proc", "/dev", "/tmp", *confinement.paths("ro", "symlink")]
    write = ["/tmp", "/dev", *confinement.paths("rw")]
    ports = [BRIDGE_PORT] if confinement.net else []
    return ["--list", "/", *_options(read, write, ports)]  # the view holds only what was mounted: its names may be listed


def _options(read: Sequence[str], write: Sequence[str], ports: Sequence[int]) -> list[str]:
    out: list[str] = []
    for flag, values in (("--read", read), ("--write", write), ("--port", [str(p) for p in ports])):
        for value in dict.fromkeys(values):
            out += [flag, value]
    return out


def bwrap_argv(
    bwrap: str, confinement: Confinement, command: Sequence[str], landlock: bool, proxy_socket: str | None = None
) -> list[str]:
    """The bubblewrap command line that runs ``command`` confined; with ``proxy_socket`` (the
    proxy's, when the plan grants the network) that socket is bound in and the command runs
    behind the bridge to it (see the module docstring)."""
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
    for mount in confinement.mounts:
        if mount.kind == "proc":
            argv += ["--proc", mount.path]
        elif mount.kind == "dev":
            argv += ["--dev", mount.path]
        elif mount.kind == "tmpfs":
            argv += ["--tmpfs", mount.path]
        elif mount.kind == "dir":
            argv += ["--dir", mount.path]
        elif mount.kind == "symlink":
            argv += ["--symlink", mount.source or "", mount.path]
        elif mount.kind == "ro":
            argv += ["--ro-bind", mount.path, mount.path]
        elif mount.kind == "rw":
            argv += ["--bind", mount.path, mount.path]
        elif mount.kind == "mask-file":
            argv += ["--ro-bind", "/dev/null", mount.path]
        elif mount.kind == "mask-dir":
            argv += ["--perms", "0555", "--tmpfs", mount.path, "--remount-ro", mount.path]
    if proxy_socket is not None:
        argv += ["--ro-bind", proxy_socket, proxy_socket]  # connecting needs no write to the mount
    for name, value in confinement.env:
        argv += ["--setenv", name, value]
    argv += ["--chdir", os.getcwd() if mapping.inside(os.getcwd(), confinement.project) else confinement.project]
    inner = [*launcher(), *enter_rules(confinement), "--", *command] if landlock else list(command)
    bridge = bridge_command(proxy_socket, BRIDGE_PORT) if proxy_socket is not None else []
    return [*argv, "--", *bridge, *inner]


def landlock_alone_rules(confinement: Confinement, entries: Sequence[Entry], private: str) -> list[str]:
    """The launcher's options when it runs alone: read beneath what the mounts show outside the
    project, and inside it the project split around every mask (a directory holding a masked
    path is allowed only as the sum of its other children); write beneath ``private`` and the
    writable directories split the same way around every read-only or masked path; and no
    socket, since there is no network namespace to keep one from reaching out."""
    project = confinement.project
    outside = [
        m.path for m in confinement.mounts if m.kind in ("ro", "symlink") and not mapping.inside(m.path, project)
    ]
    masked = [m.path for m in confinement.mounts if m.kind.startswith("mask")]
    frozen = [
        m.path for m in confinement.mounts if m.kind == "ro" and mapping.inside(m.path, project) and m.path != project
    ]
    children: dict[str, list[str]] = {}
    for entry in entries:
        if entry.kind != "l":
            full = mapping.host_path(project, entry.path)
            children.setdefault(os.path.dirname(full), []).append(full)
    read = outside + _split(project, masked, children)
    write = [private, *(m.path for m in confinement.mounts if m.kind == "rw" and not mapping.inside(m.path, project))]
    for directory in confinement.paths("rw"):
        if mapping.inside(directory, project):
            write += _split(directory, masked + frozen, children)
    return ["--no-sockets", *_options(read, write, ())]  # no network namespace: no socket at all


def _split(root: str, excluded: Sequence[str], children: dict[str, list[str]]) -> list[str]:
    if any(mapping.inside(root, x) for x in excluded):
        return []
    if not any(mapping.inside(x, root) for x in excluded):
        return [root]
    out: list[str] = []
    for child in children.get(root, []):
        out += _split(child, excluded, children)
    return out


@contextlib.contextmanager
def network(
    confinement: Confinement, plans: Sequence[Plan], record: Callable[[ProxyDecision], None] | None
) -> Iterator[ProxyHandle | None]:
    """The proxy for ``plans``, served while the context is open on a socket in a private
    directory of its own (removed after), when the confinement grants the network; else None.
    ``record`` receives each of its decisions."""
    if not confinement.net:
        yield None
        return
    from bgc.runtime.sandbox.netproxy import start_proxy

    with tempfile.TemporaryDirectory(prefix="bgc-sandbox-") as private:
        with start_proxy(plans, os.path.join(private, "net"), record=record) as proxy:
            yield proxy


def run_alone(
    confinement: Confinement, entries: Sequence[Entry], command: Sequence[str], *, timeout: float | None,
    max_output: int | None,
) -> int:  # fmt: skip
    """Run ``command`` confined by the launcher alone (no bubblewrap); its exit code. A network
    grant is refused: without a network namespace nothing makes the proxy the only way out."""
    if confinement.net:
        raise SandboxRefused(
            "the plan grants net:connect, but without bubblewrap there is no network namespace to make the proxy the "
            "only way out (Landlock alone refuses every socket): " + ", ".join(confinement.net),
            hint="run where bubblewrap can create user namespaces, or compile the plan without net:connect grants",
        )
    private = tempfile.mkdtemp(prefix="bgc-sandbox-")
    try:
        home = os.path.join(private, "home")
        os.mkdir(home)
        env = dict(confinement.env) | {"HOME": home, "TMPDIR": private}
        argv = [*launcher(), *landlock_alone_rules(confinement, entries, private), "--", *command]
        return supervise(argv, env, timeout, max_output)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def supervise(argv: Sequence[str], env: dict[str, str] | None, timeout: float | None, max_output: int | None) -> int:
    """Run ``argv`` in its own process group; kill the group at the deadline; relay at most
    ``max_output`` bytes of its output (stdout and stderr together) and kill it past that."""
    relay = max_output is not None
    process = subprocess.Popen(
        argv, env=env if env is not None else {}, start_new_session=True,
        stdout=subprocess.PIPE if relay else None, stderr=subprocess.STDOUT if relay else None,
    )  # fmt: skip
    try:
        return _wait(process, relay, timeout, max_output)
    except KeyboardInterrupt:  # the command is in its own session: it ends with bgc, as under an interrupted shell
        _kill(process)
        return INTERRUPTED
    finally:
        if process.poll() is None:
            _kill(process)


def _wait(process: subprocess.Popen[bytes], relay: bool, timeout: float | None, max_output: int | None) -> int:
    if relay:
        assert process.stdout is not None and max_output is not None
        if not _relay(process, max_output, timeout):
            return TIMED_OUT
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        print(f"bgc sandbox: killed at the deadline ({timeout:g} s)", file=sys.stderr)
        return TIMED_OUT


def _relay(process: subprocess.Popen[bytes], limit: int, timeout: float | None) -> bool:
    """Copy the child's output to ours up to ``limit`` bytes; False when the deadline passed."""
    import selectors
    import time

    assert process.stdout is not None
    deadline = None if timeout is None else time.monotonic() + timeout
    sent = 0
    out = sys.stdout.buffer
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not selector.select(wait):
                _kill(process)
                print(f"bgc sandbox: killed at the deadline ({timeout:g} s)", file=sys.stderr)
                return False
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                return True
            keep = chunk[: max(0, limit - sent)]
            out.write(keep)
            out.flush()
            sent += len(chunk)
            if sent > limit:
                _kill(process)
                out.write(OUTPUT_TRUNCATED.format(limit=limit).encode())
                out.flush()
                return True


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
