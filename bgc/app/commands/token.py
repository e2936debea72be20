"""``bgc token issue|show|verify|attenuate``: capability tokens from plans (docs/kernel.md)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from bgc import codes
from bgc.app.commands.io import Result
from bgc.errors import ExitCode, InputError, Span, UsageError

_DURATION = re.compile(r"([1-9][0-9]{0,8})([smhd]?)")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(text: str) -> int:
    """``90``, ``90s``, ``15m``, ``1h``, ``7d`` as seconds."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"--ttl {text!r}: expected a duration like 90s, 15m, 1h or 7d")
    return int(match.group(1)) * _UNIT[match.group(2)]


def read_token_text(path: str) -> str:
    """The token text in the file ``path`` (``-``: stdin)."""
    import sys

    from bgc.core.values.files import read_bounded

    data = read_bounded(path, stream=sys.stdin.buffer if path == "-" else None)
    try:
        return data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise InputError("a token file holds base64url text", Span(path)) from None


def load_token(path: str):  # type: ignore[no-untyped-def]
    from bgc.runtime.kernel.token import TokenError, decode_token

    try:
        return decode_token(read_token_text(path))
    except TokenError as error:
        raise InputError(f"{error.code}: {error.message}", Span(path)) from None


def write_secret(output: str | None, text: str) -> None:
    """A token is a bearer secret (it carries its proof): to a new file of mode 0600, or stdout."""
    if output is None:
        from bgc.app.commands import io

        io.write_line(text)
        return
    from pathlib import Path

    from bgc.runtime.kernel.keys import create_exclusive

    try:
        create_exclusive(Path(output), (text + "\n").encode(), 0o600)
    except FileExistsError:
        raise UsageError(f"{output} exists; a token file is never overwritten") from None


def issuers(policy: str | None, keys: Sequence[str]) -> list[Any]:
    """The trusted issuers: the policy's ``trust issuer`` lines and ``--issuer`` keys."""
    from bgc.runtime.kernel.keys import KeyError_, load_public, parse_public

    trusted = []
    if policy is not None:
        from bgc.app.commands import io

        for entry in io.load_policy(policy, None)[0].trust:
            if entry.role == "issuer":
                parsed = parse_public(entry.key)
                if isinstance(parsed, str):
                    raise KeyError_(f"trust issuer {entry.name}: {parsed}", entry.span)
                trusted.append(parsed)
    from bgc.app.commands.key import resolve

    trusted.extend(load_public(resolve(key, private=False) if not key.startswith("ed25519:") else key) for key in keys)
    if not trusted:
        raise UsageError("no trusted issuer: give --policy (with `trust issuer` lines) or --issuer KEY")
    return trusted


def issue(
    plan_path: str, key: str, audience: Sequence[str], ttl: str, *, policy: str | None = None,
    tools: Sequence[str] = (), require_nonce: bool = False, output: str | None = None,
) -> ExitCode:  # fmt: skip
    from bgc.app.commands import io
    from bgc.app.commands.key import resolve
    from bgc.core.values.documents import read_document
    from bgc.runtime.kernel.keys import load_private
    from bgc.runtime.kernel.token import TokenError
    from bgc.runtime.kernel.token import issue as sign
    from bgc.core.values.model import Digest
    from bgc.core.plan import plans_from_data

    lifetime = seconds(ttl)
    signer = load_private(resolve(key, private=True))
    pinned = Digest(io.load_policy(policy, None)[0].id()) if policy is not None else None
    plans = read_document(plan_path).build(lambda data: plans_from_data(data, expect_policy=pinned))
    if len(plans) != 1:
        raise UsageError(f"{plan_path} holds {len(plans)} plans; a token signs exactly one")
    try:
        token = sign(
            plans[0], signer, audience=audience, tools=list(tools) or None, now=int(time.time()), ttl=lifetime,
            nonce=require_nonce,
        )  # fmt: skip
    except TokenError as error:
        raise UsageError(error.message) from None
    write_secret(output, token.text())
    return ExitCode.OK


def show(token_path: str, output_format: str = "text") -> Result:
    """Every link's claims, outermost last; nothing is verified (say so)."""
    from bgc.runtime.kernel.keys import PublicKey
    from bgc.runtime.kernel.token import TokenError, read_link

    token = load_token(token_path)
    links = []
    for link in token.links:
        try:
            envelope, claims = read_link(link)
        except TokenError as error:
            raise InputError(f"{error.code}: {error.message}", Span(token_path)) from None
        data = claims.to_data()
        data["next"] = PublicKey(claims.next).text
        data["signer"] = PublicKey(envelope.kid).text  # type: ignore[arg-type]
        links.append(data)
    if output_format == "json":
        return Result(
            ExitCode.OK,
            (json.dumps({"token": token.id, "links": links}, indent=2, sort_keys=True) + "\n").encode(),
        )
    lines = [f"token {token.id}  (not verified: `bgc token verify` checks it)"]
    for index, data in enumerate(links):
        lines.append(f"link {index}: label {data['token']}  signer {data['signer']}")
        lines.append(f"  plan {data['plan']}")
        lines.append(f"  audience {', '.join(data['audience'])}")
        lines.append(
            f"  valid {_when(data['nbf'])} .. {_when(data['exp'])}"
            + ("  (execution nonce required)" if data["nonce"] else "")
        )
        lines.append(f"  tools {', '.join(tool['tool'] for tool in data['tools']) or '(none)'}")
        for request in data["requests"]:
            for part in request["granted"]:
                excepts = f" except {', '.join(part['except'])}" if part["except"] else ""
                lines.append(f"  ✓ {part['atom']}{excepts}")
            for part in request["ask"]:
                lines.append(f"  ? {part['atom']}  needs {_needs(part.get('approvals'))}")
    from bgc.text import escape_field

    return Result(ExitCode.OK, ("".join(escape_field(line, backslash=False) + "\n" for line in lines)).encode())


def _needs(approvals: dict[str, Any] | None) -> str:
    if approvals is None:
        return "an approval no signed answer can give"
    return f"{approvals['count']} of [{', '.join(approvals['of'])}]" if approvals["of"] else f"{approvals['count']} approval(s)"


def _when(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def verify(token_path: str, policy: str | None, issuer_keys: Sequence[str]) -> Result:
    from bgc.runtime.kernel.token import TokenError, check_time, verify_chain

    trusted = issuers(policy, issuer_keys)
    token = load_token(token_path)
    try:
        verified = verify_chain(token, trusted)
    except TokenError as error:
        example = f" (counterexample: {error.counterexample})" if error.counterexample else ""
        return Result(ExitCode.FINDINGS, (f"invalid\t{error.code} {error.check}: {error.message}{example}\n").encode())
    late = check_time(verified, int(time.time()))
    if late is not None:
        return Result(ExitCode.FINDINGS, (f"invalid\t{late.code} {late.check}: {late.message}\n").encode())
    claims = verified.claims
    text = (
        f"valid\t{token.id}  issuer {verified.issuer.text}  {len(token.links)} link(s)  "
        f"audience {', '.join(claims.audience)}  expires {_when(verified.exp)}\n"
    )
    return Result(ExitCode.OK, text.encode())


def attenuate(
    token_path: str, only: Sequence[str], *, audience: Sequence[str] = (), tools: Sequence[str] = (),
    ttl: str | None = None, require_nonce: bool = False, output: str | None = None,
) -> Result:  # fmt: skip
    """A narrower child, proven narrower, or the refusal with its counterexample (exit 1)."""
    from bgc.runtime.kernel.keys import PublicKey
    from bgc.runtime.kernel.token import TokenError, read_link, verify_chain
    from bgc.runtime.kernel.token import attenuate as narrow

    token = load_token(token_path)
    try:
        root_signer = PublicKey(read_link(token.links[0])[0].kid)  # type: ignore[arg-type]
        verified = verify_chain(token, [root_signer])  # whether the root is trusted is the verifier's call
        child = narrow(
            token, verified, only=list(only) or None, audience=list(audience) or None, tools=list(tools) or None,
            now=int(time.time()), ttl=seconds(ttl) if ttl else None, nonce=True if require_nonce else None,
        )  # fmt: skip
    except TokenError as error:
        if error.code == codes.TOKEN_CANNOT_BE_MADE:  # the request itself is malformed, not a widening
            raise UsageError(error.message) from None
        example = f"\n  counterexample: {error.counterexample}" if error.counterexample else ""
        return Result(ExitCode.FINDINGS, (f"refused\t{error.code} {error.check}: {error.message}{example}\n").encode())
    write_secret(output, child.text())
    return Result(ExitCode.OK, (f"attenuated\t{child.id}  {len(child.links)} links\n" if output else "").encode())
