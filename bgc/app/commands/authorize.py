"""``bgc authorize`` (answer AgentMessage JSON lines) and ``bgc preflight`` (a nonce for one
exact request): the kernel's check on the command line (docs/kernel.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from bgc.errors import ExitCode, UsageError
from bgc.runtime.session import DEFAULT_STORE, NO_STORE


def kernel(
    policy: str | None, issuer_keys: Sequence[str], kernel_key: str | None, store: str,
    require_nonce: bool = False, tokens: Sequence[str] = (),
) -> Any:  # fmt: skip
    """The kernel the flags describe: trusted issuers and approvers (the policy's ``trust``
    lines), its key (for nonces) and its store (nonces, permission requests, the ledger, which
    records every decision; ``none``: no store, so nothing needing approval or a nonce passes)."""
    from bgc.app.commands.key import resolve
    from bgc.app.commands.token import issuers, read_token_text
    from bgc.runtime.kernel.authorize import Kernel
    from bgc.runtime.kernel.keys import load_private

    trusted = issuers(policy, issuer_keys)
    approvers: dict[str, Any] = {}
    if policy is not None:
        from bgc.runtime.approvals import trusted_approvers
        from bgc.app.commands import io

        approvers = trusted_approvers(io.load_policy(policy, None)[0].trust)
    key = load_private(resolve(kernel_key, private=True)) if kernel_key else None
    if key is None and require_nonce:
        raise UsageError("--require-nonce needs --kernel-key (the key that signed the nonces)")
    opened = None
    if store != NO_STORE:
        from bgc.runtime.store import open_store

        if store == DEFAULT_STORE:
            from bgc.core.values.files import make_directories

            make_directories(os.path.dirname(store), mode=0o700)
        opened = open_store(store)  # a SQLite file, or a postgresql:// database shared by a fleet
        if kernel_key and opened.ledger_key is None:  # the kernel signs its entries with its own key
            opened.ledger_key = resolve(kernel_key, private=True)
    return Kernel(trusted, key, opened, require_nonce, session_tokens=[read_token_text(path) for path in tokens],
                  approvers=approvers, ledger=opened is not None)  # fmt: skip


def _lines(paths: Sequence[str]) -> Iterator[str | Any]:
    """The message lines of files (``-``: stdin): bytes split at ``\n`` only (a CRLF's CR
    dropped), whatever Unicode line separators a string holds, and bytes that are not UTF-8 kept
    as lone surrogates, never replaced, so the kernel's reader refuses that line. A stdin line
    longer than any message is consumed without being held whole, and is its refusal (a
    :class:`~bgc.runtime.kernel.messages.Conflict`)."""
    import sys

    from bgc import codes
    from bgc.core.values.files import read_bounded
    from bgc.core.values.jsonline import LineReader, TooLong, partial_reader
    from bgc.runtime.kernel.messages import MAX_MESSAGE_CHARS, Conflict

    for path in paths or ["-"]:
        if path == "-":
            lines: Any = LineReader(partial_reader(sys.stdin.buffer), 4 * MAX_MESSAGE_CHARS)  # 4 bytes a character
        else:
            lines = read_bounded(path).split(b"\n")
        for line in lines:
            if isinstance(line, TooLong):
                too_long = f"a message line is at most {MAX_MESSAGE_CHARS:,} characters"
                yield Conflict(codes.MESSAGE_UNREADABLE, "not-a-message", too_long)
            else:
                yield line.removesuffix(b"\r").decode("utf-8", "surrogateescape")


def _text(data: dict[str, Any]) -> str:
    from bgc.text import escape_field

    tail = f" (counterexample: {data['counterexample']})" if "counterexample" in data else ""
    fields = [
        data["decision"],
        *([data["id"]] if "id" in data else []),
        f"{data['code']} {data['check']}: {data['reason']}{tail}",
    ]
    return "\t".join(escape_field(field, backslash=False) for field in fields)


def authorize(
    messages: Sequence[str], *, policy: str | None = None, issuer_keys: Sequence[str] = (),
    kernel_key: str | None = None, store: str = DEFAULT_STORE, require_nonce: bool = False,
    tokens: Sequence[str] = (), output_format: str = "json",
) -> ExitCode:  # fmt: skip
    """One decision per non-blank line, in order; 0 when every one allowed (or answered a
    heartbeat or listing), 1 otherwise."""
    from bgc.app.commands import io

    checker = kernel(policy, issuer_keys, kernel_key, store, require_nonce, tokens)
    every = True
    seen = False
    for line in _lines(messages):
        if isinstance(line, str) and not line.strip():
            continue
        seen = True
        decision = checker.authorize_line(line) if isinstance(line, str) else checker.authorize(line)
        every &= decision.allowed
        data = decision.to_data()
        # ASCII (every other character escaped): valid JSON whatever the locale's encoding
        io.write_line(json.dumps(data, sort_keys=True) if output_format == "json" else _text(data))
    if not seen:
        raise UsageError("no messages: give files of JSON lines or lines on stdin")
    return ExitCode.OK if every else ExitCode.FINDINGS


def preflight(
    message: str, *, kernel_key: str, policy: str | None = None, issuer_keys: Sequence[str] = (),
    store: str = DEFAULT_STORE, nonce_only: bool = False,
) -> ExitCode:  # fmt: skip
    """The message again with ``execution_nonce`` set (or only the nonce), when every check but
    the nonce passes; else the refusal, exit 1."""
    from bgc.app.commands import io
    from bgc.runtime.kernel.messages import read_message

    lines = [line for line in _lines([message]) if not isinstance(line, str) or line.strip()]
    if len(lines) != 1:
        raise UsageError(f"preflight takes exactly one message line, got {len(lines)}")
    checker = kernel(policy, issuer_keys, kernel_key, store)
    decision, nonce = checker.preflight(read_message(lines[0]) if isinstance(lines[0], str) else lines[0])
    if nonce is None:
        io.write_line(_text(decision.to_data()))
        return ExitCode.FINDINGS
    if nonce_only:
        io.write_line(nonce)
    else:
        data = json.loads(lines[0])
        data["ToolCallRequest"]["execution_nonce"] = nonce
        io.write_line(json.dumps(data, ensure_ascii=False))
    return ExitCode.OK
