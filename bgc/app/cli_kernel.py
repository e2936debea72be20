"""``bgc`` adapters for the kernel: ``key``, ``token``, ``authorize``, ``preflight``
(docs/kernel.md). Each calls its module in :mod:`bgc.app.commands` and delivers what it returns."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

import typer

from bgc.app.cli_base import app, command_group, run

# ---- the kernel: keys, capability tokens, authorize, preflight (docs/kernel.md) ---------------

key_app = command_group(
    "key", "Ed25519 key pairs for token issuers, approvers and the kernel. Exit 0 done, 2 bad input (each command's --help)."
)
token_app = command_group(
    "token",
    "Capability tokens: a plan's grants, signed; narrower tokens chained to them. "
    "Exit 0 done or valid, 1 refused or invalid, 2 bad input (each command's --help).",
)

KeyDirOption = Annotated[str, typer.Option("--dir", metavar="DIR", help="Where keys live (NAME.key, NAME.pub).")]
IssuerOption = Annotated[
    list[str],
    typer.Option(
        "--issuer",
        metavar="KEY",
        help="Trust this issuer too: ed25519:..., a .pub/.key file or a key name (repeatable).",
    ),
]
TrustPolicyOption = Annotated[
    Optional[str],
    typer.Option("--policy", "-p", metavar="FILE", help="Policy whose `trust issuer` lines name the trusted issuers."),
]


@key_app.command("new")
def key_new(
    name: Annotated[str, typer.Argument(help="The key's name (its file name).")], directory: KeyDirOption = ".bgc/keys"
) -> None:
    """Make an Ed25519 key pair: DIR/NAME.key (private, mode 600, never printed, never
    overwritten) and DIR/NAME.pub; print the public key.

    Exit 0 on success, 2 when the name is bad or a file exists (nothing is written then).
    """
    from bgc.app.commands import key

    run(lambda: key.new(name, directory))


@key_app.command("show")
def key_show(
    key: Annotated[str, typer.Argument(help="A key name, a .key/.pub file, or ed25519:... text.")],
    directory: KeyDirOption = ".bgc/keys",
) -> None:
    """Print a public key as policies write it (`ed25519:<base64url>`); never the private key.

    Exit 0 on success, 2 on a missing or malformed key.
    """
    from bgc.app.commands import key as command

    run(lambda: command.show(key, directory))


@token_app.command("issue")
def token_issue(
    plan: Annotated[str, typer.Argument(help="A plan file (bgc compile --format json|yaml|cbor), one plan.")],
    key: Annotated[
        str, typer.Option("--key", metavar="KEY", help="The issuer's private key: a name in .bgc/keys or a .key file.")
    ],
    audience: Annotated[
        list[str],
        typer.Option("--audience", metavar="SERVER", help="A server id the token is for (repeatable, at least one)."),
    ],
    ttl: Annotated[str, typer.Option("--ttl", metavar="DURATION", help="Lifetime: 90s, 15m, 1h, 7d.")] = "1h",
    policy: Annotated[
        Optional[str],
        typer.Option("--policy", "-p", metavar="FILE", help="Refuse a plan not compiled against this policy (its id)."),
    ] = None,
    tool: Annotated[
        list[str],
        typer.Option(
            "--tool",
            metavar="NAME",
            help="Scope the token to these of the plan's tool declarations (default: all of them).",
        ),
    ] = [],  # noqa: B006
    require_nonce: Annotated[
        bool, typer.Option("--require-nonce", help="Every call needs an execution nonce from `bgc preflight`.")
    ] = False,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write the token to a new file (mode 600).")
    ] = None,
) -> None:
    """Sign a plan's grants into a capability token (base64url text; a bearer secret).

    Exit 0 on success, 2 on a bad plan, key, duration or a plan not compiled against --policy.
    """
    from bgc.app.commands import token as command

    run(
        lambda: command.issue(
            plan, key, audience, ttl, policy=policy, tools=tool, require_nonce=require_nonce, output=output
        )
    )


@token_app.command("show")
def token_show(
    token: Annotated[str, typer.Argument(help="A token file (- reads stdin).")],
    output_format: Annotated[
        Literal["text", "json"], typer.Option("--format", metavar="FORMAT", help="text or json.")
    ] = "text",
) -> None:
    """Show every link of a token: plan, grants, tools, audience, validity. Verifies nothing.

    Exit 0, or 2 on a malformed token.
    """
    from bgc.app.commands import token as command

    run(lambda: command.show(token, output_format))


@token_app.command("verify")
def token_verify(
    token: Annotated[str, typer.Argument(help="A token file (- reads stdin).")],
    policy: TrustPolicyOption = None,
    issuer: IssuerOption = [],  # noqa: B006
) -> None:
    """Verify a token's whole chain (signatures, trusted issuer, every attenuation proven
    narrower, the proof) and that it is valid now.

    Exit 0 when valid, 1 when not (the failed check is named), 2 on bad input.
    """
    from bgc.app.commands import token as command

    run(lambda: command.verify(token, policy, issuer))


@token_app.command("attenuate")
def token_attenuate(
    token: Annotated[str, typer.Argument(help="The parent token file (- reads stdin).")],
    only: Annotated[
        list[str],
        typer.Option(
            "--only",
            metavar="ATOM",
            help="Keep only these atoms (repeatable); each must lie inside the parent's grants.",
        ),
    ] = [],  # noqa: B006
    audience: Annotated[list[str], typer.Option("--audience", metavar="SERVER", help="Keep only these servers.")] = [],  # noqa: B006
    tool: Annotated[list[str], typer.Option("--tool", metavar="NAME", help="Keep only these tools.")] = [],  # noqa: B006
    ttl: Annotated[
        Optional[str], typer.Option("--ttl", metavar="DURATION", help="A shorter lifetime from now.")
    ] = None,
    require_nonce: Annotated[
        bool, typer.Option("--require-nonce", help="Require execution nonces from here on.")
    ] = False,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write the child to a new file (mode 600).")
    ] = None,
) -> None:
    """Make a narrower token chained to its parent, proven narrower with the pattern algebra.

    Whoever holds a token may narrow it (the token carries the secret that signs the next
    link); nobody holding the child can recover the parent. Exit 0 on success, 1 when the child
    would widen anything (the counterexample is printed), 2 on bad input.
    """
    from bgc.app.commands import token as command

    run(
        lambda: command.attenuate(
            token, only, audience=audience, tools=tool, ttl=ttl, require_nonce=require_nonce, output=output
        )
    )


KernelKeyOption = Annotated[
    Optional[str],
    typer.Option("--kernel-key", metavar="KEY", help="The kernel's private key: signs and checks execution nonces."),
]
StoreOption = Annotated[
    str,
    typer.Option(
        "--store",
        metavar="STORE",
        help="The kernel's store: nonces, permission requests and the ledger (a SQLite file or a postgresql:// URL; `none`: no store).",
    ),
]


@app.command("authorize")
def authorize_command(
    messages: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="[MESSAGES]...", help="Files of AgentMessage JSON lines; stdin when none (or -)."),
    ] = None,
    policy: TrustPolicyOption = None,
    issuer: IssuerOption = [],  # noqa: B006
    kernel_key: KernelKeyOption = None,
    store: StoreOption = ".bgc/kernel.db",
    require_nonce: Annotated[
        bool, typer.Option("--require-nonce", help="Every ToolCallRequest needs an execution nonce.")
    ] = False,
    token: Annotated[
        list[str], typer.Option("--token", metavar="FILE", help="The session's tokens, listed by ListCapabilities.")
    ] = [],  # noqa: B006
    output_format: Annotated[
        Literal["json", "text"], typer.Option("--format", metavar="FORMAT", help="json (one object per line) or text.")
    ] = "json",
) -> None:
    """Answer AgentMessage values (JSON lines, serde's externally tagged shape) with a decision,
    the reason and the check that decided, one line each, in order.

    A call that needs approval becomes a permission request in the store (`bgc pending`,
    `bgc approve`), counted with the policy's `trust approver` keys; every decision is appended
    to the ledger there.

    Exit 0 when every message was allowed (or answered), 1 when any was refused, 2 on bad usage.
    """
    from bgc.app.commands import authorize as command

    run(lambda: command.authorize(
        messages or [], policy=policy, issuer_keys=issuer, kernel_key=kernel_key, store=store,
        require_nonce=require_nonce, tokens=token, output_format=output_format,
    ))  # fmt: skip


@app.command("preflight")
def preflight_command(
    message: Annotated[str, typer.Argument(help="A file holding one ToolCallRequest JSON line (- reads stdin).")],
    kernel_key: Annotated[
        str, typer.Option("--kernel-key", metavar="KEY", help="The kernel's private key, which signs the nonce.")
    ],
    policy: TrustPolicyOption = None,
    issuer: IssuerOption = [],  # noqa: B006
    store: StoreOption = ".bgc/kernel.db",
    nonce_only: Annotated[
        bool, typer.Option("--nonce-only", help="Print only the nonce, not the completed message.")
    ] = False,
) -> None:
    """Strict execution preflight: check a ToolCallRequest as authorize would, then print it
    with an execution nonce bound to exactly this request (short-lived, usable once).

    Exit 0 with the nonce, 1 when the request would be refused (the check is named), 2 on bad input.
    """
    from bgc.app.commands import authorize as command

    run(
        lambda: command.preflight(
            message, kernel_key=kernel_key, policy=policy, issuer_keys=issuer, store=store, nonce_only=nonce_only
        )
    )
