"""The network of a real bubblewrap sandbox: a network namespace of its own, whose only way out is
the bridge to bgc's proxy. A granted URL is reached through it, anything else is refused by the
proxy, and a program that ignores the proxy variables, or runs with no bridge, reaches nothing.

The bridge and proxy are tried alone first, then through ``bgc sandbox`` itself, as an agent's
shell command runs: a policy granting one path of a loopback server the test starts.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bgc.runtime.sandbox.netbridge import bridge_command
from bgc.runtime.sandbox.netproxy import ProxyDecision, start_proxy
from tests.runtime.sandbox.test_netproxy import plan_of
from tests.samples import missing_in_ci


@pytest.fixture(scope="module")
def bwrap() -> str:
    found = shutil.which("bwrap")
    if found is None:
        missing_in_ci("bubblewrap (bwrap) is not installed")
    assert found is not None
    return found


class Served:
    """A loopback HTTP server on the host, outside the sandbox, recording the paths it served."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.paths.append(self.path)
                body = f"served {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]


@contextlib.contextmanager
def served() -> Iterator[Served]:
    found = Served()
    thread = threading.Thread(target=found.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.server.shutdown()
        found.server.server_close()


def sandboxed(bwrap: str, command: list[str], *, bind: str | None = None) -> subprocess.CompletedProcess[str]:
    """``command`` in a bubblewrap sandbox with a network namespace of its own (the host's files
    read-only; ``bind``, the proxy's directory, bound as it is)."""
    binds = ["--bind", bind, bind] if bind else []
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-pid",
            "--die-with-parent", *binds, *command]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


FETCH_FUNCTION = textwrap.dedent("""\
    import urllib.request
    def fetch(url, **options):
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler(**options)).open(url, timeout=60) as answer:
                return f"{answer.status} {answer.read().decode()}"
        except urllib.error.HTTPError as error:
            return f"{error.code} {error.read().decode().strip()}"
        except OSError as error:
            return f"unreachable {type(error).__name__}"
""")
"""A confined program's request: the status and body, or ``unreachable`` and why."""
FETCH = FETCH_FUNCTION + textwrap.dedent("""\
    import http.client, sys
    port = int(sys.argv[1])
    print(fetch(f"http://127.0.0.1:{port}/granted/a"))
    print(fetch(f"http://127.0.0.1:{port}/other"))
    print(fetch(f"http://127.0.0.1:{port}/granted/direct", proxies={}))  # ignores the proxy variables
    tunnel = http.client.HTTPConnection("127.0.0.1", 3128, timeout=60)
    tunnel.set_tunnel("127.0.0.1", port)
    try:
        tunnel.request("GET", "/through-the-tunnel")
        answer = tunnel.getresponse()
        print(answer.status, answer.read().decode())
    except OSError as error:
        print("tunnel refused", error)
    sys.exit(7)
""")


def test_a_sandbox_reaches_only_the_granted_urls_through_the_proxy(bwrap: str, tmp_path: Path) -> None:
    with served() as server:
        plan = plan_of(f'allow net:connect:http://127.0.0.1:{server.port}/granted/** because "the test server"\n')
        decisions: list[ProxyDecision] = []
        with start_proxy([plan], str(tmp_path / "net"), record=decisions.append) as proxy:
            command = [*bridge_command(proxy.socket_path), sys.executable, "-c", FETCH, str(server.port)]
            result = sandboxed(bwrap, command, bind=str(tmp_path / "net"))
    assert result.returncode == 7, result.stderr  # the command's own status, through the bridge
    granted, other, direct, tunnel = result.stdout.splitlines()
    assert granted == "200 served /granted/a"
    assert other.startswith("403 ") and f"net:connect:http://127.0.0.1:{server.port}/other: no rule allows it" in other
    assert direct.startswith("unreachable")
    assert tunnel.startswith("tunnel refused") and "403" in tunnel  # https://127.0.0.1:PORT/** is not granted
    assert server.paths == ["/granted/a"]
    effects = [(decision.effect, decision.atom) for decision in decisions]
    assert effects == [
        ("allow", f"net:connect:http://127.0.0.1:{server.port}/granted/a"),
        ("deny", f"net:connect:http://127.0.0.1:{server.port}/other"),
        ("deny", f"net:connect:https://127.0.0.1:{server.port}/**"),
    ]


def test_a_granted_host_is_reached_through_a_tunnel(bwrap: str, tmp_path: Path) -> None:
    with served() as server:
        plan = plan_of(f'allow net:connect:https://127.0.0.1:{server.port}/** because "the whole test server"\n')
        with start_proxy([plan], str(tmp_path / "net")) as proxy:
            command = [*bridge_command(proxy.socket_path), sys.executable, "-c", FETCH, str(server.port)]
            result = sandboxed(bwrap, command, bind=str(tmp_path / "net"))
    assert result.stdout.splitlines()[3] == "200 served /through-the-tunnel", result.stderr
    assert server.paths == ["/through-the-tunnel"]  # an https grant is not a plain-HTTP one


def test_without_the_bridge_a_sandbox_has_no_network(bwrap: str) -> None:
    with served() as server:
        result = sandboxed(bwrap, [sys.executable, "-c", FETCH, str(server.port)])
    assert result.stdout.splitlines()[:3] == ["unreachable URLError"] * 3
    assert server.paths == []


def test_curl_follows_the_proxy_variables(bwrap: str, tmp_path: Path) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    with served() as server:
        plan = plan_of(f'allow net:connect:http://127.0.0.1:{server.port}/granted/** because "the test server"\n')
        with start_proxy([plan], str(tmp_path / "net")) as proxy:
            script = f"{curl} -s http://127.0.0.1:{server.port}/granted/c; echo; {curl} -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{server.port}/x"
            result = sandboxed(
                bwrap, [*bridge_command(proxy.socket_path), "sh", "-c", script], bind=str(tmp_path / "net")
            )
    assert result.stdout.splitlines() == ["served /granted/c", "403"], result.stderr


SANDBOX_POLICY = """\
deny fs:*:/**/.env because "secrets"
allow fs:read:/**
allow fs:write:/src/**
allow net:connect:http://127.0.0.1:{port}/granted/** because "the test server"
"""
ATTEMPTS = FETCH_FUNCTION + textwrap.dedent("""\
    import glob, socket, sys
    def status(url, **options):
        answer = fetch(url, **options)
        return answer if answer.startswith(("200 ", "unreachable ")) else answer.split(" ")[0]
    def raw(family, address, request):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as connection:
                connection.settimeout(60)
                connection.connect(address)
                connection.sendall(request)
                return connection.recv(64).split(b" ")[1].decode()
        except OSError as error:
            return f"unreachable {type(error).__name__}"
    port, other, sockets = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    print("granted", status(f"http://127.0.0.1:{port}/granted/a"))
    for path in ("/other", "/granted/../other", "/GRANTED/a", "/granted"):
        print("path", path, status(f"http://127.0.0.1:{port}{path}"))
    print("port", status(f"http://127.0.0.1:{other}/granted/a"))
    print("name", status(f"http://localhost:{port}/granted/a"))
    print("tls", status(f"https://127.0.0.1:{port}/granted/a"))
    print("direct", status(f"http://127.0.0.1:{port}/granted/a", proxies={}))
    print("direct6", raw(socket.AF_INET6, ("::1", port), b"GET /granted/a HTTP/1.0\\r\\n\\r\\n"))
    found = glob.glob(sockets)
    print("proxy socket", raw(socket.AF_UNIX, found[0], f"GET http://127.0.0.1:{port}/other HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n".encode()) if len(found) == 1 else found)
""")
"""Every way a confined command might reach the server: the granted URL, other paths of it (and
spellings that canonicalise to one), another port, another name, TLS to it, a connection that
ignores the proxy variables (IPv4 and IPv6), and a request written straight to the proxy's
socket, bound into the view."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / ".env").write_text("SECRET")
    return root


def bgc_sandbox(project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bgc", "sandbox", "-p", "policy.bgp", "--", *command],
        cwd=project, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_bgc_sandbox_reaches_only_the_granted_urls_through_the_proxy(bwrap: str, project: Path) -> None:
    with served() as server, served() as other:
        (project / "policy.bgp").write_text(SANDBOX_POLICY.format(port=server.port))
        sockets = os.path.join(tempfile.gettempdir(), "bgc-sandbox-*", "net", "net.sock")
        done = bgc_sandbox(project, sys.executable, "-c", ATTEMPTS, str(server.port), str(other.port), sockets)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[9].startswith("direct6 unreachable ")  # refused by Landlock (ABI 4+), else by the empty namespace
    assert lines[:9] + lines[10:] == [
        "granted 200 served /granted/a",
        "path /other 403",
        "path /granted/../other 403",
        "path /GRANTED/a 403",
        "path /granted 403",
        "port 403",
        "name 403",
        "tls unreachable URLError",  # the tunnel is refused (403), which urllib reports as an OSError
        "direct unreachable URLError",
        "proxy socket 403",
    ], done.stderr
    assert server.paths == ["/granted/a"] and other.paths == []
    refusals = [line for line in done.stderr.splitlines() if line.startswith("bgc sandbox: network refused: ")]
    assert len(refusals) == 8, done.stderr  # each refused request, with its reason
    assert f"(net:connect:http://127.0.0.1:{server.port}/other): no rule allows it" in refusals[0]


def test_bgc_sandbox_runs_curl_through_the_proxy(bwrap: str, project: Path) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    with served() as server:
        (project / "policy.bgp").write_text(SANDBOX_POLICY.format(port=server.port))
        base = f"http://127.0.0.1:{server.port}"
        script = (
            f"{curl} -s {base}/granted/c; echo; {curl} -s -o /dev/null -w '%{{http_code}}\\n' {base}/x; "
            f"{curl} -s --noproxy '*' {base}/granted/d || echo unreachable $?"
        )
        done = bgc_sandbox(project, "sh", "-c", script)
    assert done.stdout.splitlines() == ["served /granted/c", "403", "unreachable 7"], done.stderr
    assert server.paths == ["/granted/c"]
    assert f"(net:connect:{base}/x): no rule allows it" in done.stderr


def test_a_sandbox_without_a_grant_has_no_proxy_and_no_network(bwrap: str, project: Path) -> None:
    with served() as server:
        (project / "policy.bgp").write_text("allow fs:read:/**\n")
        sockets = os.path.join(tempfile.gettempdir(), "bgc-sandbox-*", "net", "net.sock")
        done = bgc_sandbox(project, sys.executable, "-c", ATTEMPTS, str(server.port), str(server.port), sockets)
    lines = done.stdout.splitlines()
    assert all("unreachable" in line for line in lines[:-1]), done.stdout + done.stderr
    assert lines[-1] == "proxy socket []"
    assert server.paths == []
