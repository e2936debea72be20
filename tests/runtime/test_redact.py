"""Credentials in a server's messages, replaced by class: every format found wherever it sits in
the value, text for people left alone."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bgc.runtime.redact import redact

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def chars(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=size, max_size=size)


CREDENTIALS = st.one_of(
    chars(UPPER, 16).map(lambda rest: ("AWS access key id", "AKIA" + rest)),
    st.tuples(st.sampled_from("pousr"), chars(ALNUM, 36)).map(lambda pair: ("GitHub token", f"gh{pair[0]}_{pair[1]}")),
    chars(ALNUM + "_", 60).map(lambda rest: ("GitHub token", "github_pat_" + rest)),
    chars(ALNUM + "-_", 20).map(lambda rest: ("GitLab token", "glpat-" + rest)),
    chars(ALNUM, 24).map(lambda rest: ("Slack token", "xoxb-" + rest)),
    chars(ALNUM + "-_", 35).map(lambda rest: ("Google API key", "AIza" + rest)),
    chars(ALNUM, 24).map(lambda rest: ("Stripe key", "sk_live_" + rest)),
    chars(ALNUM + "-_", 40).map(lambda rest: ("Anthropic key", "sk-ant-" + rest)),
    chars(ALNUM, 48).map(lambda rest: ("OpenAI key", "sk-proj-" + rest)),
    st.tuples(chars(ALNUM, 12), chars(ALNUM, 12), chars(ALNUM, 12)).map(
        lambda parts: ("JSON web token", f"eyJ{parts[0]}.eyJ{parts[1]}.{parts[2]}")
    ),
    chars(ALNUM + "+/", 64).map(
        lambda body: ("private key", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----")
    ),
    chars(ALNUM + "+/", 64).map(lambda body: ("private key", f"-----BEGIN RSA PRIVATE KEY-----\n{body}")),  # cut short
)
PROSE = st.text(st.sampled_from(string.ascii_letters + " .,:;!?\n"), max_size=80)


def place(value: str) -> st.SearchStrategy[Any]:
    """``value`` somewhere in a tool result: its text, structured content, a nested list."""
    return st.sampled_from([
        {"content": [{"type": "text", "text": value}]},
        {"structuredContent": {"config": {"token": value}}},
        {"content": [], "items": [[value]]},
    ])  # fmt: skip


@given(CREDENTIALS, PROSE, PROSE, st.data())
def test_a_credential_is_replaced_wherever_it_is(credential: tuple[str, str], before: str, after: str, data: st.DataObject) -> None:
    kind, secret = credential
    result = data.draw(place(f"{before} {secret} {after}"))
    found: dict[str, int] = {}
    cleaned = redact(result, found)
    assert secret not in repr(cleaned) and found == {kind: 1}
    assert f"[redacted by bgc: {kind}]" in repr(cleaned)


@given(PROSE)
def test_text_for_people_is_left_alone(text: str) -> None:
    found: dict[str, int] = {}
    assert redact({"content": [{"type": "text", "text": text}]}, found) == {"content": [{"type": "text", "text": text}]}
    assert found == {}


@pytest.mark.parametrize("text", [
    "AKIA is a prefix", "a sha256 digest 3f786850e387550fdab836ed7e6dc881de23001b", "sk-short",
    "ghp_tooShort", "The key eyJ alone", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
])  # fmt: skip
def test_look_alikes_are_not_credentials(text: str) -> None:
    found: dict[str, int] = {}
    assert redact(text, found) == text and found == {}
