"""Shared pieces for the kernel tests: a plan from the bundled policy, keys, tokens, messages
built by hand as a peer would send them."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from bgc.core.compiler import Compiler
from bgc.core.values import canonical
from bgc.runtime.kernel import cose
from bgc.runtime.kernel.keys import SigningKey
from bgc.runtime.kernel.token import LINK_TAG, VERSION, Claims, Token, issue, read_link
from bgc.core.values.model import WorkOrder
from bgc.core.policy.loader import load_policy

NOW = 1_900_000_000
POLICY = "policies/modes.bgp"
ORDER = {
    "intent": {"kind": "patch.apply", "payload": "fix the parser"},
    "requests": ["fs:read:/src/**", "fs:write:/src/**", "fs:write:/tests/**", "fs:write:/migrations/**", "proc:exec:pytest"],
    "origin": {"model": "claude-opus-5", "parents": [], "prompt": "sha256:" + "0" * 64},
}
"""Granted in mode edit: reading and writing /src and /tests (secrets excepted), pytest; pending:
/migrations (1 of [dba-oncall])."""
ISSUER = SigningKey.from_seed(bytes(range(32)), "issuer")
KERNEL = SigningKey.from_seed(bytes(range(1, 33)), "kernel")
OTHER = SigningKey.from_seed(bytes(range(2, 34)), "other")


def plan_and_policy(mode: str = "edit"):  # type: ignore[no-untyped-def]
    policy = load_policy(POLICY)
    return Compiler(policy).compile(WorkOrder.from_data(ORDER), mode=mode), policy


def make_token(
    *, signer: SigningKey = ISSUER, audience: tuple[str, ...] = ("local",), tools: tuple[str, ...] = ("fs.read", "fs.write", "shell.run"),
    ttl: int = 3600, nonce: bool = False, now: int = NOW,
) -> Token:  # fmt: skip
    plan, _ = plan_and_policy()
    return issue(plan, signer, audience=audience, tools=tools, now=now, ttl=ttl, nonce=nonce)


def request(token: Token | str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "0190a3b4-0000-7000-8000-000000000001",
        "capability_token": token if isinstance(token, str) else token.text(),
        "server_id": "local",
        "tool": "fs.write",
        "params": {"path": "/src/parse.py"},
        "approval_tokens": [],
    }
    body.update(fields)
    return {"ToolCallRequest": body}


def line(message: Any) -> str:
    return json.dumps(message)


def outermost(token: Token) -> Claims:
    return read_link(token.links[-1])[1]


def forge_child(token: Token, /, **changes: Any) -> Token:
    """A child of ``token`` with the outermost link's claims changed as ``changes`` say, signed
    as any holder of ``token`` can sign one: with its proof, no key of anyone's. Nothing checks
    here that the child is narrower; the verifier does."""
    holder = SigningKey.generate()
    parent = token.links[-1]
    claims = replace(outermost(token), parent=canonical.digest_text(parent), next=holder.public.raw, **changes)
    signer = SigningKey.from_seed(token.proof)
    payload = canonical.envelope(LINK_TAG, VERSION, claims.to_data())
    return Token((*token.links, cose.sign1(payload, signer, protected={cose.KID: signer.public.raw})), holder.seed())
