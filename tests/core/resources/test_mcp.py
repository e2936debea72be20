"""The ``mcp`` resource: what an MCP message names, matched as written; a spelling a server could
read as another value is refused, by class, and the gate denies it whatever the rules say."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bgc.core.gate import Gate
from bgc.core.resources import Rejection, normalise
from tests.core.test_compiler import plan_for

NAME = st.from_regex(r"[a-z][a-z0-9_.-]{0,12}", fullmatch=True).filter(lambda name: name not in (".", ".."))


@given(NAME, NAME)
def test_tool_and_prompt_names_are_their_own_canonical_form(server: str, name: str) -> None:
    assert normalise("mcp", f"{server}/{name}") == f"{server}/{name}"


@given(NAME, st.one_of(
    st.integers(0x21, 0x7E).map(lambda code: f"%{code:02X}"),
    st.integers(0x21, 0x7E).map(lambda code: f"%{code:02x}"),
    st.sampled_from(["%", "%4", "%zz", " ", "\t", "\\", "/../", "/./", "/%2e%2e/", "\u00a0"]),
))  # fmt: skip
def test_a_spelling_a_server_could_read_otherwise_is_refused(server: str, piece: str) -> None:
    assert isinstance(normalise("mcp", f"{server}/file:///a{piece}b"), Rejection)


@given(st.sampled_from(["%20", "%C3%A9", "%e2%80%8b"]))
def test_an_escape_of_anything_but_printable_ascii_stays_as_written(escape: str) -> None:
    value = f"files/file:///a{escape}b"
    assert normalise("mcp", value) == value


def test_the_gate_denies_a_refused_value_whatever_the_rules_say() -> None:
    gate = Gate([plan_for("allow mcp:read:**\n", "mcp:read:**")])
    assert gate.decide_value("mcp", "read", "files/file:///notes/a.md")[1].effect == "allow"
    atom, decision = gate.decide_value("mcp", "read", "files/file:///notes/%2e%2e/secret")
    assert decision.effect == "deny" and "rejected" in decision.reason
