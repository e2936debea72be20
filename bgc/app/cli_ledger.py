"""``bgc`` adapters for people and the record: ``log``, ``pending``, ``approve``, ``reject``,
``cancel``, ``mode`` (docs/approvals.md, docs/ledger.md). Each calls
:mod:`bgc.app.commands.approvals` or :mod:`bgc.app.commands.log` and prints the lines it returns."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from bgc.app.cli_base import PolicyOption, app, command_group, fail, run
from bgc.errors import UsageError

log_app = command_group("log", "The decision ledger: show, verify, checkpoint, count per rule.")
LedgerStoreOption = Annotated[
    str, typer.Option("--store", metavar="STORE", help="A SQLite file, or a postgresql:// URL shared by a fleet.")
]


@log_app.command("show")
def log_show(
    store: LedgerStoreOption = ".bgc/kernel.db",
    output_format: Annotated[
        str,
        typer.Option(
            "--format", metavar="FORMAT", help="text, json (one entry per line), or opa (OPA's decision-log shape)."
        ),
    ] = "text",
    session: Annotated[
        Optional[str], typer.Option("--session", metavar="ID", help="Only this session's decisions.")
    ] = None,
    rule: Annotated[
        Optional[str], typer.Option("--rule", metavar="FILE:LINE", help="Only decisions this rule made.")
    ] = None,
    decision: Annotated[
        Optional[str], typer.Option("--decision", metavar="DECISION", help="Only allow, ask, deny, …")
    ] = None,
    kind: Annotated[
        Optional[str],
        typer.Option("--kind", metavar="KIND", help="Only entries of this kind (hook, authorize, proxy, approve, …)."),
    ] = None,
    since: Annotated[
        Optional[str],
        typer.Option("--since", metavar="TIME", help="From this time (2026-11-30, …T12:00:00Z, or epoch seconds)."),
    ] = None,
    until: Annotated[Optional[str], typer.Option("--until", metavar="TIME", help="Up to this time, inclusive.")] = None,
    no_verify: Annotated[
        bool, typer.Option("--no-verify", help="Show entries even when the chain does not verify.")
    ] = False,
) -> None:
    """Decisions recorded in the ledger, oldest first, one per line.

    Exit 0; 2 when the store cannot be read, or the chain does not verify (unless --no-verify).
    """
    from bgc.app.commands import log as command

    if output_format not in command.FORMATS:
        fail(UsageError(f"--format {output_format!r}: one of {', '.join(command.FORMATS)}"))
    run(lambda: command.show(
        store, output_format=output_format, verify=not no_verify, session=session, rule=rule, decision=decision,
        kind=kind, since=since, until=until,
    ))  # fmt: skip


SignerOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--signer",
        metavar="KEY",
        help="A key trusted to sign this ledger: ed25519:..., a .pub/.key file or a key name (repeatable).",
    ),
]


@log_app.command("verify")
def log_verify(
    store: LedgerStoreOption = ".bgc/kernel.db",
    expect_head: Annotated[
        Optional[str],
        typer.Option(
            "--expect-head",
            metavar="DIGEST",
            help="Also require this head (kept elsewhere), which shows entries removed from the end.",
        ),
    ] = None,
    signer: SignerOption = None,
    checkpoint: Annotated[
        Optional[list[str]],
        typer.Option(
            "--checkpoint",
            metavar="FILE",
            help="A checkpoint kept from bgc log checkpoint: the chain must still hold its head (repeatable).",
        ),
    ] = None,
    entry: Annotated[
        Optional[list[str]],
        typer.Option("--entry", metavar="ID", help="An entry id that must be in the chain, inside the newest checkpoint."),
    ] = None,
) -> None:
    """Check that no entry was edited, removed or reordered; print the head digest.

    With --signer, every entry must be signed by one of those keys; with --checkpoint, the chain
    must extend each kept checkpoint (signed by a --signer key); with --entry, that entry must be
    in it. Exit 0 when all holds, 1 when it does not (the first problem is named), 2 when the
    store, a key or a checkpoint cannot be read.
    """
    from bgc.app.commands import log as command

    run(lambda: command.verify(
        store, expect_head, signers=signer or [], checkpoints=checkpoint or [], entries=entry or []
    ))  # fmt: skip


@log_app.command("checkpoint")
def log_checkpoint(
    key: Annotated[
        str,
        typer.Option("--key", metavar="KEY", help="The signing key: a name in .bgc/keys or a .key file (the ledger key)."),
    ],
    store: LedgerStoreOption = ".bgc/kernel.db",
    signer: SignerOption = None,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write it to FILE instead of stdout.")
    ] = None,
) -> None:
    """Sign the ledger's head (entry number, head digest, time): keep it outside the store.

    `bgc log verify --checkpoint FILE --signer KEY` later proves the chain still begins with
    every entry it covered. Exit 0; 2 when the store or key cannot be read or the chain does not
    verify (with --signer: an entry not signed by one of those keys).
    """
    from bgc.app.commands import log as command

    run(lambda: command.checkpoint(store, key_path=key, signers=signer or [], output=output))


@log_app.command("stats")
def log_stats(
    store: LedgerStoreOption = ".bgc/kernel.db",
    per_rule: Annotated[
        bool, typer.Option("--per-rule", help="Hits per deciding rule (the only statistic today).")
    ] = True,
    policy: Annotated[
        Optional[str],
        typer.Option(
            "--policy", "-p", metavar="FILE", help="List this policy's rules too, so rules that never fired show."
        ),
    ] = None,
    output_format: Annotated[str, typer.Option("--format", metavar="FORMAT", help="text or json.")] = "text",
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Count even when the chain does not verify.")] = False,
) -> None:
    """How often each rule decided, by decision; with --policy, the rules that never fired.

    Exit 0; 2 when the store or policy cannot be read, or the chain does not verify.
    """
    from bgc.app.commands import log as command

    run(lambda: command.stats(store, policy=policy, verify=not no_verify, output_format=output_format))


@app.command("pending")
def pending_requests(
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
    output_format: Annotated[
        str, typer.Option("--format", metavar="FORMAT", help="text or json (one request per line).")
    ] = "text",
    everything: Annotated[
        bool, typer.Option("--all", help="Also answered, cancelled and expired requests still kept.")
    ] = False,
) -> None:
    """Permission requests waiting for people: the call, what it needs, who may answer.

    Answers are counted with the policy's `trust approver` keys. Exit 0; 2 when the store or
    policy cannot be read.
    """
    from bgc.app.commands import approvals as command

    run(lambda: command.pending(store, policy=policy, output_format=output_format, everything=everything))


def _answer(decision: str, request: str, key: str, approver: str | None, store: str, policy: str | None, suggest: bool,
            carry: bool = False) -> None:  # fmt: skip
    from bgc.app.commands import approvals as command

    run(
        lambda: command.answer(
            store, request, decision, key_path=key, approver=approver, policy=policy, suggest=suggest, carry=carry
        )
    )


KeyFileOption = Annotated[
    str, typer.Option("--key", metavar="KEY", help="Your private key: a name in .bgc/keys (bgc key new NAME) or a .key file.")
]
AsOption = Annotated[
    Optional[str], typer.Option("--as", metavar="NAME", help="Your approver name (default: the key file's name).")
]


@app.command("approve")
def approve(
    request: Annotated[str, typer.Argument(metavar="REQUEST", help="A request id from bgc pending.")],
    key: KeyFileOption,
    approver: AsOption = None,
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
    suggest_rule: Annotated[
        bool,
        typer.Option(
            "--suggest-rule", help="Also print the narrowest rule that would allow this call, to review for the policy."
        ),
    ] = False,
    token: Annotated[
        bool,
        typer.Option(
            "--token", help="Also print the answer as an approval token (JSON) an agent carries to `bgc authorize`."
        ),
    ] = False,
) -> None:
    """Allow one waiting call, once: a signature bound to that exact request.

    It never allows another call, a changed parameter or another plan; "always" is a policy
    edit (see --suggest-rule). Exit 0; 2 when the key is not trusted by the policy for you, or
    the request is unknown, cancelled or expired.
    """
    _answer("allow-once", request, key, approver, store, policy, suggest_rule, token)


@app.command("reject")
def reject(
    request: Annotated[str, typer.Argument(metavar="REQUEST", help="A request id from bgc pending.")],
    key: KeyFileOption,
    approver: AsOption = None,
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
) -> None:
    """Reject one waiting call: a rejection by any approver the rule names ends the request.

    Exit 0; 2 when the key is not trusted by the policy for you, or the request is unknown,
    cancelled or expired.
    """
    _answer("reject", request, key, approver, store, policy, False)


@app.command("cancel")
def cancel_request(
    request: Annotated[str, typer.Argument(metavar="REQUEST", help="A request id from bgc pending.")],
    store: LedgerStoreOption = ".bgc/kernel.db",
) -> None:
    """Cancel a waiting request (its turn or session is gone): answers after this do not count.

    Exit 0; 2 when the request is unknown.
    """
    from bgc.app.commands import approvals as command

    run(lambda: command.cancel(store, request))


mode_app = command_group("mode", "A session's mode: chosen by a person, signed, never by the agent.")


@mode_app.command("set")
def mode_set(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The agent session's id.")],
    mode: Annotated[str, typer.Argument(metavar="MODE", help="One of the policy's modes.")],
    key: KeyFileOption,
    approver: AsOption = None,
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
) -> None:
    """Switch a session to a mode: a signed decision of a person the policy trusts as an approver.

    Recorded in the store and the ledger. Exit 0; 2 when the key is not trusted for you or the
    policy has no such mode.
    """
    from bgc.app.commands import mode as command

    run(lambda: command.set_mode(store, session, mode, key_path=key, approver=approver, policy=policy))


@mode_app.command("show")
def mode_show(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The agent session's id.")],
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
) -> None:
    """The mode a person chose for a session (the newest validly signed choice), or the default.

    Exit 0; 2 when the store or policy cannot be read.
    """
    from bgc.app.commands import mode as command

    run(lambda: command.show_mode(store, session, policy=policy))


approvals_app = command_group("approvals", "People's approvals in a browser: bgc approvals serve.")


@approvals_app.command("serve")
def approvals_serve(
    key: KeyFileOption,
    approver: AsOption = None,
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="The address to listen on (loopback unless you say otherwise).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="The port (0: any free one).")] = 0,
    webhooks: Annotated[
        Optional[list[str]],
        typer.Option("--webhook", metavar="URL", envvar="BGC_APPROVALS_WEBHOOK",
                     help="POST a message here when a request starts waiting (repeatable; never its parameters)."),
    ] = None,
    webhook_format: Annotated[
        str, typer.Option("--webhook-format", metavar="FORMAT", help="json, or slack (an incoming webhook's {\"text\"}).")
    ] = "json",
    desktop: Annotated[bool, typer.Option("--desktop", help="Also show a desktop notification (notify-send).")] = False,
    rules: Annotated[
        Optional[list[str]],
        typer.Option("--rule", metavar="FILE:LINE", help="Notify only of requests under this rule (repeatable)."),
    ] = None,
) -> None:
    """Your approvals page: what waits, live, approved or rejected with your key, signed here.

    Prints a URL with a token made for this start; open it in your browser. The key stays in this
    process: answers are signed as `bgc approve` signs them. Runs until Ctrl-C. Exit 0; 2 when the
    key is not trusted by the policy for you, or the store or policy cannot be read.
    """
    from bgc.app.commands import approvals_serve as command

    run(lambda: command.run(store, key_path=key, approver=approver, policy=policy, host=host, port=port,
                            webhooks=webhooks or (), webhook_format=webhook_format, desktop=desktop, rules=rules or ()))


pins_app = command_group(
    "mcp-pins", "MCP tools the proxy trusts: a tool whose description changes is withheld until a person accepts it."
)


@pins_app.command("list")
def pins_list(store: LedgerStoreOption = ".bgc/kernel.db") -> None:
    """Every pinned tool (SERVER/TOOL and the digest of its trusted version), and each change
    waiting for a person. Exit 0; 2 when the store cannot be read."""
    from bgc.app.commands import mcp_pins as command

    run(lambda: command.list_pins(store))


@pins_app.command("show")
def pins_show(
    tool: Annotated[str, typer.Argument(metavar="SERVER/TOOL", help="A pinned tool, as bgc mcp-pins list names it.")],
    store: LedgerStoreOption = ".bgc/kernel.db",
) -> None:
    """What changed in a withheld tool: a diff of its trusted version and the one listed now, and
    the hidden text or instructions to the model found in it. Exit 0; 2 when there is no such pin."""
    from bgc.app.commands import mcp_pins as command

    run(lambda: command.show(store, tool))


@pins_app.command("accept")
def pins_accept(
    tool: Annotated[str, typer.Argument(metavar="SERVER/TOOL", help="A withheld tool, as bgc mcp-pins list names it.")],
    key: KeyFileOption,
    approver: AsOption = None,
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
) -> None:
    """Show a withheld tool's change, then accept it with your signed answer (as bgc approve does):
    the proxy's next tools/list trusts the new version and records who accepted it.

    Exit 0; 2 when no change waits, or the policy trusts no such key for you.
    """
    from bgc.app.commands import mcp_pins as command

    run(lambda: command.accept(store, tool, key_path=key, approver=approver, policy=policy))
