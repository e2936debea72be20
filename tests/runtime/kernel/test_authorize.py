"""``authorize``: every check of a ToolCallRequest, in order, each refusal built by hand."""

from __future__ import annotations

import base64

import cbor2
import pytest

from bgc.runtime.kernel import cose
from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.keys import b64url
from bgc.runtime.kernel.nonce import issue_nonce, request_digest
from bgc.runtime.kernel.token import Token, attenuate, decode_token, verify_chain
from bgc.runtime.store.sqlite import SqliteStore
from tests.kernel_support import ISSUER, KERNEL, NOW, OTHER, line, make_token, request

TOKEN = make_token()


@pytest.fixture
def kernel(tmp_path):  # type: ignore[no-untyped-def]
    store = SqliteStore(str(tmp_path / "kernel.db"))
    yield Kernel([ISSUER.public], KERNEL, store, clock=lambda: NOW + 10)
    store.close()


def decide(kernel: Kernel, message: object) -> tuple[str, str]:
    decision = kernel.authorize_line(line(message))
    return decision.decision, decision.code


def test_a_granted_call_is_allowed_and_names_its_rules(kernel: Kernel) -> None:
    decision = kernel.authorize_line(line(request(TOKEN)))
    assert (decision.decision, decision.code, decision.check) == ("allow", "BGC530", "granted")
    assert decision.atoms == ("fs:write:/src/parse.py",)
    assert decision.rules and all(rule.startswith("modes.bgp:") for rule in decision.rules)


def test_heartbeat_and_capabilities(kernel: Kernel) -> None:
    assert decide(kernel, "Heartbeat") == ("alive", "BGC531")
    kernel.session_tokens = [TOKEN.text()]
    listed = kernel.authorize_line(line("ListCapabilities"))
    assert listed.decision == "capabilities"
    assert [tool["tool"] for tool in listed.capabilities[0]["tools"]] == ["fs.read", "fs.write", "shell.run"]


def _resigned_root(mutate) -> str:  # type: ignore[no-untyped-def]
    """TOKEN with its root link's signature bytes changed by ``mutate`` (still well formed)."""
    envelope = list(cbor2.loads(TOKEN.links[0]).value)
    envelope[3] = mutate(envelope[3])
    link = cbor2.dumps(cbor2.CBORTag(18, envelope), canonical=True)
    return Token((link,), TOKEN.proof).text()


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ("not base64!", "BGC510"),
        (b64url(b"\x00" * 40), "BGC510"),
        (_resigned_root(lambda sig: bytes([sig[0] ^ 1]) + sig[1:]), "BGC511"),
        (make_token(signer=OTHER).text(), "BGC512"),
        (Token(TOKEN.links, bytes(32)).text(), "BGC511"),
    ],
    ids=["not-base64", "not-a-token", "bad-signature", "untrusted-issuer", "wrong-proof"],
)
def test_token_refusals(kernel: Kernel, token: str, code: str) -> None:
    assert decide(kernel, request(token)) == ("deny", code)


def test_expired_and_not_yet_valid(kernel: Kernel) -> None:
    assert decide(kernel, request(make_token(ttl=5))) == ("deny", "BGC513")
    assert decide(kernel, request(make_token(now=NOW + 60))) == ("deny", "BGC514")


def test_audience_scope_params(kernel: Kernel) -> None:
    assert decide(kernel, request(TOKEN, server_id="prod")) == ("deny", "BGC515")
    assert decide(kernel, request(TOKEN, tool="net.fetch", params={"url": "https://x.example/"})) == ("deny", "BGC516")
    assert decide(kernel, request(TOKEN, params={"file": "/src/a.py"})) == ("deny", "BGC517")
    assert decide(kernel, request(TOKEN, params={"path": ["/src/a.py", {"x": 1}]})) == ("deny", "BGC517")


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/src/../.git/config", "BGC519"),
        ("/src/.env", "BGC519"),
        ("/etc/passwd", "BGC519"),
        ("src/a.py", "BGC518"),
        ("/src/a\x00.py", "BGC518"),
        ("/../src/a.py", "BGC518"),
        ("/src/cafe\u0301.py", "BGC518"),
    ],
)
def test_atoms_outside_the_grants_are_denied(kernel: Kernel, path: str, code: str) -> None:
    assert decide(kernel, request(TOKEN, params={"path": path})) == ("deny", code)


def test_an_atom_pending_approval_is_refused_as_needing_it(kernel: Kernel) -> None:
    decision = kernel.authorize_line(line(request(TOKEN, params={"path": "/migrations/0042.py"})))
    assert (decision.decision, decision.code) == ("deny", "BGC520")
    assert "needs approval" in decision.reason and "dba-oncall" in decision.reason


def test_every_atom_of_a_call_must_be_granted(kernel: Kernel) -> None:
    both = request(TOKEN, params={"path": ["/src/a.py", "/.git/config"]})
    assert decide(kernel, both) == ("deny", "BGC519")
    assert decide(kernel, request(TOKEN, params={"path": ["/src/a.py", "/tests/t.py"]})) == ("allow", "BGC530")


def test_glob_characters_in_params_are_literal(kernel: Kernel) -> None:
    # a parameter "/src/*" is the file named '*', which /src/** holds, and nothing more
    assert decide(kernel, request(TOKEN, params={"path": "/src/*"})) == ("allow", "BGC530")
    assert decide(kernel, request(TOKEN, params={"path": "/**"})) == ("deny", "BGC519")


def test_supplemental_authorization_is_recorded_and_never_widens(kernel: Kernel) -> None:
    extra = {"grant": "fs:write:/**", "admin": True}
    allowed = kernel.authorize_line(line(request(TOKEN, supplemental_authorization=extra)))
    assert allowed.decision == "allow" and allowed.supplemental and allowed.supplemental.startswith("sha256:")
    denied = kernel.authorize_line(line(request(TOKEN, params={"path": "/etc/x"}, supplemental_authorization=extra)))
    assert denied.decision == "deny" and denied.supplemental == allowed.supplemental


# --- nonces --------------------------------------------------------------------------------------


def _with_nonce(kernel: Kernel, token: Token, **fields: object) -> dict:
    message = request(token, **fields)
    decision, nonce = kernel.preflight(kernel_read(message))
    assert decision.decision == "allow" and nonce is not None
    message["ToolCallRequest"]["execution_nonce"] = nonce
    return message


def kernel_read(message: object):  # type: ignore[no-untyped-def]
    from bgc.runtime.kernel.messages import read_message

    return read_message(line(message))


def test_a_nonce_is_consumed_exactly_once(kernel: Kernel) -> None:
    message = _with_nonce(kernel, make_token(nonce=True))
    assert decide(kernel, message) == ("allow", "BGC530")
    assert decide(kernel, message) == ("deny", "BGC523")


def test_a_required_nonce_must_be_there(kernel: Kernel) -> None:
    assert decide(kernel, request(make_token(nonce=True))) == ("deny", "BGC521")
    kernel.require_nonce = True
    assert decide(kernel, request(TOKEN)) == ("deny", "BGC521")


def test_a_nonce_signed_by_another_key_or_expired_is_refused(kernel: Kernel) -> None:
    token = make_token(nonce=True)
    message = request(token)
    body = message["ToolCallRequest"]
    digest = request_digest(token.id, body["id"], body["tool"], body["server_id"], body["params"])
    body["execution_nonce"] = issue_nonce(digest, OTHER, now=NOW)
    assert decide(kernel, message) == ("deny", "BGC522")
    body["execution_nonce"] = issue_nonce(digest, KERNEL, now=NOW - 100, ttl=60)
    assert decide(kernel, message) == ("deny", "BGC522")
    body["execution_nonce"] = issue_nonce(digest, KERNEL, now=NOW)
    assert decide(kernel, message) == ("allow", "BGC530")


def test_preflight_refuses_what_authorize_would_refuse(kernel: Kernel) -> None:
    decision, nonce = kernel.preflight(kernel_read(request(TOKEN, params={"path": "/etc/passwd"})))
    assert decision.code == "BGC519" and nonce is None
    decision, nonce = kernel.preflight(kernel_read("Heartbeat"))
    assert decision.decision == "deny" and nonce is None


# --- attenuation ---------------------------------------------------------------------------------


def test_an_attenuated_token_allows_only_what_it_kept(kernel: Kernel) -> None:
    verified = verify_chain(TOKEN, [ISSUER.public])
    child = attenuate(TOKEN, verified, only=["fs:write:/src/parse.py"], tools=["fs.write"], now=NOW)
    assert decide(kernel, request(child)) == ("allow", "BGC530")
    assert decide(kernel, request(child, params={"path": "/src/other.py"})) == ("deny", "BGC519")
    assert decide(kernel, request(child, tool="fs.read")) == ("deny", "BGC516")


def test_an_attenuated_directory_keeps_the_parents_excepts(kernel: Kernel) -> None:
    verified = verify_chain(TOKEN, [ISSUER.public])
    child = attenuate(TOKEN, verified, only=["fs:write:/src/**"], now=NOW)
    assert decide(kernel, request(child, params={"path": "/src/deep/a.py"})) == ("allow", "BGC530")
    assert decide(kernel, request(child, params={"path": "/src/.env"})) == ("deny", "BGC519")
    assert decide(kernel, request(child, params={"path": "/tests/t.py"})) == ("deny", "BGC519")


def test_the_parent_cannot_be_stripped_out_of_a_child(kernel: Kernel) -> None:
    verified = verify_chain(TOKEN, [ISSUER.public])
    child = attenuate(TOKEN, verified, only=["fs:write:/src/parse.py"], now=NOW)
    stripped = Token(child.links[:1], child.proof)  # the parent's link, the child's secret
    assert decide(kernel, request(stripped, params={"path": "/src/other.py"})) == ("deny", "BGC511")


@pytest.mark.parametrize(
    ("change", "example"),
    [
        ({"only": ["fs:write:/**"]}, "/"),
        ({"only": ["fs:write:/migrations/**"]}, None),
        ({"only": ["net:connect:https://x.example/**"]}, None),
        ({"audience": ["local", "prod"]}, "prod"),
        ({"tools": ["net.fetch"]}, "net.fetch"),
        ({"ttl": 10**6}, None),
        ({"nonce": False}, "nonce"),
    ],
)
def test_attenuation_that_widens_is_refused_with_a_counterexample(change: dict, example: str | None) -> None:
    from bgc.runtime.kernel.token import TokenError

    token = make_token(nonce=True)
    verified = verify_chain(token, [ISSUER.public])
    with pytest.raises(TokenError) as refused:
        attenuate(token, verified, now=NOW, **change)
    assert refused.value.code == "BGC524" and refused.value.counterexample
    if example is not None:
        assert refused.value.counterexample == example


def test_a_hand_made_wider_child_is_refused_by_the_verifier(kernel: Kernel) -> None:
    """The verifier repeats the proof: a child signed correctly but wider is still refused."""
    from dataclasses import replace

    from bgc.runtime.kernel import token as tokens
    from bgc.runtime.kernel.keys import SigningKey

    verified = verify_chain(TOKEN, [ISSUER.public])
    narrow = attenuate(TOKEN, verified, only=["fs:write:/src/parse.py"], now=NOW)
    _, claims = tokens.read_link(narrow.links[1])
    wide = replace(claims, requests=(tokens._only_request("fs:write:/**", verified.claims),))
    link = tokens._link(wide, SigningKey.from_seed(TOKEN.proof))
    forged = Token((TOKEN.links[0], link), narrow.proof)
    decision = kernel.authorize_line(line(request(forged, params={"path": "/etc/passwd"})))
    assert (decision.decision, decision.code) == ("deny", "BGC524")
    assert decision.counterexample == "/"


def test_token_round_trip() -> None:
    assert decode_token(TOKEN.text()) == TOKEN
    assert decode_token(base64.urlsafe_b64encode(TOKEN.encode()).decode().rstrip("=")) == TOKEN
    assert cose.decode_sign1(TOKEN.links[0]).kid == ISSUER.public.raw
