"""``bgc mcp-pins list|show|accept``: the MCP tools the proxy trusts, and accepting a change.

The proxy pins a tool's version on its first allowed call and withholds a version it lists
later that differs (:mod:`bgc.runtime.pins`). ``show`` prints what changed (a unified diff of the
trusted version and the one listed now) and what the scan found in it; ``accept`` prints the
same, then signs the change's permission request as ``bgc approve`` does (a key the policy trusts
as an approver): the proxy's next ``tools/list`` pins the new version and records who accepted it.
"""

from __future__ import annotations

import time
from typing import Any

from bgc.app.commands.io import Result, lines_result, store_at
from bgc.errors import ExitCode, UsageError


def _named(tool: str) -> tuple[str, str]:
    server, slash, name = tool.partition("/")
    if not slash or not server or not name:
        raise UsageError(f"{tool!r}: name a tool as SERVER/TOOL (bgc mcp-pins list shows them)")
    return server, name


def _requests(store: Any, server: str, tool: str, now: int) -> list[tuple[Any, str]]:
    """The live requests to accept a version of ``tool``, newest first, with where each stands."""
    from bgc.runtime.approvals import load_request, stored_standing
    from bgc.runtime.pins import pin_atom

    found = []
    for request_id, _, _ in store.requests(now):
        loaded = load_request(store, request_id)
        if loaded is None:
            continue
        request, cancelled = loaded
        if request.atoms == (pin_atom(server, tool),) and (request.server, request.tool) == (server, tool):
            found.append((request, stored_standing(store, request, cancelled, {}, now).state))
    return sorted(found, key=lambda pair: pair[0].created, reverse=True)


def list_pins(location: str) -> Result:
    """Every pinned tool (its trusted version), and every change waiting for a person."""
    store = store_at(location, create=False)
    now = int(time.time())
    lines = []
    try:
        for server, tool, digest in store.all_tool_pins():
            lines.append(f"{server}/{tool}\ttrusted {digest}")
            for request, _ in _requests(store, server, tool, now):
                lines.append(f"{server}/{tool}\tchanged to {request.params}: waits for a person (request {request.id})")
    finally:
        store.close()
    return lines_result(ExitCode.OK, lines)


def _change(store: Any, server: str, tool: str, now: int) -> tuple[list[str], Any]:
    """What a person reads before accepting: the diff, the findings; and the newest request."""
    from bgc.runtime.pins import diff, read_version, scan

    trusted = store.tool_pins(server).get(tool)
    if trusted is None:
        raise UsageError(f"no pin for {server}/{tool} in this store (bgc mcp-pins list shows them)")
    versions = {digest: read_version(body) for _, name, digest, body, _ in store.tool_versions(server) if name == tool}
    requests = _requests(store, server, tool, now)
    if not requests:
        return [f"{server}/{tool}: trusted {trusted}; no change waits for a person"], None
    request, state = requests[0]
    new = versions.get(request.params)
    if new is None:
        raise UsageError(f"the store holds no version {request.params} of {server}/{tool}: it was edited")
    lines = [f"{server}/{tool}: trusted {trusted}, listed now {request.params} (request {request.id}, {state})"]
    lines += diff(versions.get(trusted), new, f"{server}/{tool}")
    findings = scan(new)
    lines += [f"finding: {finding}" for finding in findings] or ["no finding: nothing hidden, no instruction to the model"]
    return lines, request


def show(location: str, tool: str) -> Result:
    server, name = _named(tool)
    store = store_at(location, create=False)
    try:
        lines, _ = _change(store, server, name, int(time.time()))
    finally:
        store.close()
    return lines_result(ExitCode.OK, lines)


def accept(location: str, tool: str, *, key_path: str, approver: str | None, policy: str | None) -> Result:
    """Show the change, then sign its request (allow-once, as ``bgc approve`` does)."""
    from bgc.app.commands.approvals import answer

    server, name = _named(tool)
    store = store_at(location, create=False)
    try:
        lines, request = _change(store, server, name, int(time.time()))
    finally:
        store.close()
    if request is None:
        raise UsageError(f"{server}/{name}: no change waits for a person")
    signed = answer(location, request.id, "allow-once", key_path=key_path, approver=approver, policy=policy, suggest=False)
    return Result(ExitCode.OK, "".join(line + "\n" for line in lines).encode() + signed.output)
