"""A PostgreSQL server restarted under a long-lived enforcer: every store operation fails closed
while the server is down and works again, on a new connection, once it is back; in the store
itself, in `bgc authorize` reading a stream, in the MCP proxy and in the decision server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bgc.runtime import ledger
from bgc.runtime.store import StoreError, open_store
from tests.store_support import RestartablePostgres

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def postgres() -> Iterator[RestartablePostgres]:
    server = RestartablePostgres()
    try:
        yield server
    finally:
        server.remove()


SOON = 2_000_000_000
OPERATIONS: dict[str, Callable[[Any, int], Any]] = {
    "consume_once": lambda store, n: store.consume_once("nonce", f"k{n}", SOON),
    "consumed": lambda store, n: store.consumed("nonce", f"k{n}"),
    "append": lambda store, n: ledger.append(store, ledger.Record("hook", "allow", 1_764_500_000 + n)),
    "rows": lambda store, n: list(store.rows()),
    "prune": lambda store, n: store.prune(n),
    "put_request": lambda store, n: store.put_request(f"r{n}", f"call{n}", b"body", 1, SOON),
    "request": lambda store, n: store.request(f"r{n}"),
    "requests": lambda store, n: store.requests(0),
    "cancel": lambda store, n: store.cancel(f"r{n}", 2),
    "add_answer": lambda store, n: store.add_answer(f"r{n}", "alice", "allow-once", b"answer"),
    "answers": lambda store, n: store.answers(f"r{n}"),
    "add_mode": lambda store, n: store.add_mode("s", b"mode %d" % n),
    "modes": lambda store, n: store.modes("s"),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_every_store_operation_connects_again_when_its_connection_was_cut(operation: str) -> None:
    """What a restart does to a live connection, the server terminating it, for each operation."""
    import psycopg

    from tests.store_support import fresh_postgres_database

    run = OPERATIONS[operation]
    for url in fresh_postgres_database():
        store = open_store(url)
        try:
            run(store, 1)
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (store._db.info.backend_pid,))
            run(store, 2)
            assert not store._lost()
        finally:
            store.close()


def test_a_restarted_server_is_used_again_and_a_stopped_one_refuses_every_operation(
    postgres: RestartablePostgres,
) -> None:
    store = open_store(postgres.url)
    try:
        for number, run in enumerate(OPERATIONS.values()):
            run(store, number)
        postgres.restart()
        for number, run in enumerate(OPERATIONS.values()):
            run(store, number + 100)
        postgres.stop()
        try:
            for name, run in OPERATIONS.items():
                with pytest.raises(StoreError):
                    run(store, 200)
                    pytest.fail(f"{name} answered while the server was down")
        finally:
            postgres.start()
        for number, run in enumerate(OPERATIONS.values()):
            run(store, number + 300)
        assert ledger.verify(store.rows()).ok
    finally:
        store.close()


def test_bgc_authorize_reading_a_stream_survives_a_restart(postgres: RestartablePostgres, tmp_path: Path) -> None:
    from tests.kernel_support import ISSUER, line, make_token, request

    token = make_token(now=int(time.time()))
    store = postgres.url
    kernel = subprocess.Popen(
        [sys.executable, "-m", "bgc", "authorize", "-p", str(ROOT / "policies" / "modes.bgp"), "--issuer",
         ISSUER.public.text, "--store", store, "--format", "json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert kernel.stdin is not None and kernel.stdout is not None

    def decide(number: int) -> dict[str, Any]:
        message = request(token, id=f"call-{number}")
        kernel.stdin.write(line(message) + "\n")  # type: ignore[union-attr]
        kernel.stdin.flush()  # type: ignore[union-attr]
        return json.loads(kernel.stdout.readline())  # type: ignore[union-attr]

    try:
        assert decide(1)["decision"] == "allow"
        postgres.restart()
        assert decide(2)["decision"] == "allow"
        postgres.stop()
        try:
            down = decide(3)
        finally:
            postgres.start()
        assert down["decision"] == "deny" and down["code"] == "BGC529"
        assert decide(4)["decision"] == "allow"
    finally:
        kernel.stdin.close()
        kernel.wait(timeout=60)
    reader = open_store(store)
    try:
        recorded = [ledger.decode_entry(*row).body for row in reader.rows()]
    finally:
        reader.close()
    # the decision made while the server was down could not be recorded, and was not allowed
    assert [body["decision"] for body in recorded if body["kind"] == "authorize"] == ["allow"] * 3


def test_the_mcp_proxy_survives_a_restart(postgres: RestartablePostgres, tmp_path: Path) -> None:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.e2e.test_mcp_proxy import POLICY, SERVER, text

    policy = tmp_path / "p.bgp"
    policy.write_text(POLICY)
    record = tmp_path / "record.jsonl"
    record.touch()
    args = ["-m", "bgc", "mcp-proxy", "-p", str(policy), "--server", "files", "--store", postgres.url, "--",
            sys.executable, SERVER]  # fmt: skip
    params = StdioServerParameters(
        command=sys.executable, args=args, env={"BGC_TEST_MCP_RECORD": str(record)}, cwd=str(tmp_path)
    )

    async def main() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            results = [await client.call_tool("read_file", {"path": "/src/1"})]
            postgres.restart()
            results.append(await client.call_tool("read_file", {"path": "/src/2"}))
            postgres.stop()
            try:
                results.append(await client.call_tool("read_file", {"path": "/src/3"}))
            finally:
                postgres.start()
            results.append(await client.call_tool("read_file", {"path": "/src/4"}))
            return results

    results = anyio.run(main)
    assert [result.is_error for result in results] == [False, False, True, False]
    assert "store" in text(results[2])
    received = [json.loads(row)["arguments"]["path"] for row in record.read_text().splitlines()]
    assert received == ["/src/1", "/src/2", "/src/4"]  # the call decided while the store was down never ran


def test_the_decision_server_survives_a_restart(postgres: RestartablePostgres, tmp_path: Path) -> None:
    import os

    from tests.e2e.test_hook_claude_code import _input, run_hook
    from tests.e2e.test_hook_server import READ_SOURCE, _project
    from tests.server_support import Server, private_runtime, served

    with private_runtime():
        project = _project(tmp_path)
        command = f"{project['command']} --store {postgres.url}"
        server = Server(project["root"], {**os.environ, "BGC_CACHE_DIR": project["cache"]})
        try:

            def decide() -> str:
                return run_hook(project, _input(project, "PreToolUse", *READ_SOURCE), command=command)[0]

            assert decide() == "allow"
            postgres.restart()
            assert decide() == "allow"
            postgres.stop()
            try:
                down = decide()
            finally:
                postgres.start()
            assert down in ("deny", "block")
            assert decide() == "allow"
            assert served(server) == 4  # every call was the server's
        finally:
            server.stop()
