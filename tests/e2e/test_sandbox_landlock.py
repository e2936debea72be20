"""The Landlock layer against the running kernel: a restricted child reads and writes only what
its rules allow, reaches no TCP port, signals nothing outside its domain, and execs on."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bgc.runtime.sandbox import bwrap, landlock

try:
    ABI = landlock.abi_version()
except landlock.LandlockUnavailable:
    ABI = 0
pytestmark = pytest.mark.skipif(ABI == 0, reason="this kernel has no Landlock")


def restricted(
    code: str, *, read: tuple[str, ...], write: tuple[str, ...] = (), ports: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[str]:
    prefix = sys.prefix
    reads = (
        *read,
        "/usr",
        "/lib",
        "/lib64",
        "/bin",
        "/etc",
        os.path.realpath(sys.base_prefix),
        prefix,
        str(Path(landlock.__file__).parents[3]),
    )
    argv = bwrap.launcher()
    for path in reads:
        argv += ["--read", path]
    for path in write:
        argv += ["--write", path]
    for port in ports:
        argv += ["--port", str(port)]
    argv += ["--", sys.executable, "-c", code]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_reads_and_writes_only_beneath_the_rules(tmp_path: Path) -> None:
    readable, writable, hidden = tmp_path / "r", tmp_path / "w", tmp_path / "h"
    for directory in (readable, writable, hidden):
        directory.mkdir()
        (directory / "f").write_text("data")
    code = f"""
for action in ("open({str(readable / "f")!r}).read()", "open({str(writable / "new")!r}, 'w').write('x')",
               "open({str(hidden / "f")!r}).read()", "open({str(readable / "new")!r}, 'w')", "open({str(hidden / "new")!r}, 'w')"):
    try:
        exec(action)
        print('ok')
    except PermissionError:
        print('denied')
"""
    done = restricted(code, read=(str(readable),), write=(str(writable),))
    assert done.stdout.split() == ["ok", "ok", "denied", "denied", "denied"], done.stdout + done.stderr
    assert (writable / "new").read_text() == "x"


@pytest.mark.skipif(ABI < 4, reason="TCP rules need Landlock ABI 4")
def test_no_tcp_connect_without_a_port_rule(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        code = f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\nexcept PermissionError:\n    print('denied')\n"
        done = restricted(code, read=())
    finally:
        server.close()
    assert done.stdout.strip() == "denied", done.stdout + done.stderr


@pytest.mark.skipif(ABI < 4, reason="TCP rules need Landlock ABI 4")
def test_tcp_connect_only_to_the_ports_allowed() -> None:
    servers = [socket.socket() for _ in range(2)]
    for server in servers:
        server.bind(("127.0.0.1", 0))
        server.listen()
    allowed, other = (server.getsockname()[1] for server in servers)
    try:
        code = (
            "import socket\n"
            f"for port in ({allowed}, {other}):\n"
            "    try:\n        socket.create_connection(('127.0.0.1', port), timeout=5); print('connected')\n"
            "    except PermissionError:\n        print('denied')\n"
        )
        done = restricted(code, read=(), ports=(allowed,))
    finally:
        for server in servers:
            server.close()
    assert done.stdout.split() == ["connected", "denied"], done.stdout + done.stderr


@pytest.mark.skipif(ABI < 6, reason="signal scoping needs Landlock ABI 6")
def test_no_signal_to_a_process_outside() -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        code = f"import os, signal\ntry:\n    os.kill({victim.pid}, signal.SIGTERM); print('sent')\nexcept PermissionError:\n    print('denied')\n"
        done = restricted(code, read=())
        assert done.stdout.strip() == "denied", done.stdout + done.stderr
        assert victim.poll() is None
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()


def test_no_new_privileges_is_set() -> None:
    done = restricted(
        "print([l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')][0].split()[1])", read=("/proc",)
    )
    assert done.stdout.strip() == "1", done.stdout + done.stderr
