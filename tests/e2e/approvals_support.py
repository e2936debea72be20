"""What the approvals page's tests share: three trusted people, a policy asking two of them, a
real `bgc approvals serve` process per person, and requests recorded in the store."""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bgc.runtime.approvals import PermissionRequest, Requirement, stand_ask, trusted_approvers
from bgc.runtime.kernel.keys import load_private, parse_public
from bgc.runtime.store import open_store
from tests.samples import bgc

PEOPLE = ("alice", "bob", "carol")
POLICY = """\
trust approver alice {alice}
trust approver bob {bob}
trust approver carol {carol}
trust approver dave {dave}
tool write_file on files needs fs:write:{{path}} ignores content
allow fs:write:/src/**
ask fs:write:/src/release/** approvals 2 of [alice, bob, carol] because "a person signs releases"
"""
RULE = "p.bgp:7"
SERVER = str(Path(__file__).parents[1] / "mcp" / "server.py")


@dataclass(frozen=True)
class People:
    """Keys for alice, bob, carol (named by the rule) and dave (trusted, not named), the policy."""

    directory: Path
    policy: Path

    def key(self, name: str) -> Path:
        return self.directory / f"{name}.key"

    def trusted(self) -> dict:
        return trusted_approvers([_Trust(name, (self.directory / f"{name}.pub").read_text().strip())
                                  for name in (*PEOPLE, "dave")])  # fmt: skip


@dataclass(frozen=True)
class _Trust:
    name: str
    key: str
    role: str = "approver"


def people(directory: Path) -> People:
    for name in (*PEOPLE, "dave"):
        assert bgc("key", "new", name, "--dir", str(directory)).exit_code == 0
    keys = {name: (directory / f"{name}.pub").read_text().strip() for name in (*PEOPLE, "dave")}
    policy = directory / "p.bgp"
    policy.write_text(POLICY.format(**keys))
    assert parse_public(keys["alice"]) is not None and load_private(str(directory / "alice.key"))
    return People(directory, policy)


def ask(store: str, crowd: People, path: str, *, session: str = "s1", content: str = "v1") -> str:
    """Record the request an enforcer makes for write_file(path, content) under the rule; its id."""
    now = int(time.time())
    request = PermissionRequest(
        "write_file", "files", "sha256:" + "ab" * 32, f"write_file on files: content={content!r}, path={path!r}",
        (f"fs:write:{path}",), RULE, (Requirement(2, PEOPLE),), now, now + 3600, session=session,
    )  # fmt: skip
    opened = open_store(store)
    try:
        stored, _ = stand_ask(opened, request, crowd.trusted(), now)
    finally:
        opened.close()
    return stored.id


@dataclass(eq=False)
class Served:
    """One person's running `bgc approvals serve`: its process and the URL it printed."""

    process: subprocess.Popen[str]
    url: str

    @property
    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def address(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        return parts.hostname or "", parts.port or 0

    def http(self, method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None,
             ) -> tuple[int, dict[str, str], str]:  # fmt: skip
        connection = http.client.HTTPConnection(*self.address, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
        finally:
            connection.close()

    def cookie(self) -> str:
        """The session cookie the token's first use sets."""
        status, headers, _ = self.http("GET", "/?" + urlsplit(self.url).query)
        assert status == 303 and headers["location"] == "/"
        return headers["set-cookie"].split(";")[0]


@contextlib.contextmanager
def serving(store: str, crowd: People, name: str, *options: str) -> Iterator[Served]:
    """`bgc approvals serve` for ``name``, as the person runs it (the store made first, as an
    enforcer would have); stopped afterwards."""
    open_store(store).close()
    process = subprocess.Popen(
        [sys.executable, "-m", "bgc", "approvals", "serve", "--key", str(crowd.key(name)), "--store", store,
         "-p", str(crowd.policy), *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=crowd.directory,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        url = None
        for line in process.stdout:
            found = re.search(r"http://\S+/\?token=\S+", line)
            if found:
                url = found.group(0)
                break
        assert url is not None, process.stderr.read() if process.stderr else ""
        yield Served(process, url)
    finally:
        process.terminate()
        process.wait(timeout=30)


class HeldCall:
    """One write_file call through `bgc mcp-proxy --wait`, in a thread: the MCP SDK's client
    waits for its result while people answer on the page."""

    def __init__(self, store: str, crowd: People, path: str) -> None:
        self.record = crowd.directory / "record.jsonl"
        self.record.touch()
        args = ["-m", "bgc", "mcp-proxy", "-p", str(crowd.policy), "--server", "files", "--store", store,
                "--wait", "300", "--", sys.executable, SERVER]  # fmt: skip
        self.params = StdioServerParameters(
            command=sys.executable, args=args, env={"BGC_TEST_MCP_RECORD": str(self.record)}, cwd=str(crowd.directory)
        )
        self.path = path
        self.result: Any = None
        self.thread = threading.Thread(target=lambda: anyio.run(self._call), daemon=True)
        self.thread.start()

    async def _call(self) -> None:
        async with stdio_client(self.params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            self.result = await client.call_tool("write_file", {"path": self.path, "content": "v1"})

    def outcome(self) -> tuple[bool, str]:
        self.thread.join(timeout=120)
        assert not self.thread.is_alive(), "the held call never came back"
        return self.result.is_error, "".join(part.text for part in self.result.content)

    def received(self) -> list[str]:
        """The paths the real server wrote: what the proxy released."""
        return [json.loads(line)["arguments"]["path"] for line in self.record.read_text().splitlines()]
