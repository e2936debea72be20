"""Property: a valid, allowed ToolCallRequest with one field mutated is never allowed.

The message carries a token that requires an execution nonce, so every part of the request is
bound twice: by the token (audience, scope, grants) and by the nonce's request digest. Each
example preflights a fresh nonce, checks that the unmutated message would be allowed (the
control: the property could fail), then mutates one thing and demands a refusal.
"""

from __future__ import annotations

import copy
import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.runtime.kernel.authorize import Kernel
from bgc.runtime.kernel.messages import read_message
from bgc.runtime.store.sqlite import SqliteStore
from tests.kernel_support import ISSUER, KERNEL, NOW, make_token, request
from tests.samples import examples

TOKEN = make_token(nonce=True)
B64 = string.ascii_letters + string.digits + "-_"


def _flip(text: str, index: int, replacement: str) -> str:
    index %= len(text)
    if text[index] == replacement:
        replacement = "A" if replacement != "A" else "B"
    return text[:index] + replacement + text[index + 1 :]


def _mutations() -> st.SearchStrategy:
    char = st.sampled_from(B64)
    position = st.integers(min_value=0, max_value=10**6)
    name = st.text(alphabet=string.ascii_lowercase + "._-/", min_size=1, max_size=12)
    return st.one_of(
        st.tuples(st.just("capability_token"), position, char),
        st.tuples(st.just("execution_nonce"), position, char),
        st.tuples(st.just("server_id"), name),
        st.tuples(st.just("tool"), st.sampled_from(["fs.read", "shell.run", "fs.delete", "fs.write."]) | name),
        st.tuples(st.just("params"), st.sampled_from(["/src/other.py", "/src/parse.py/", "/tests/t.py", "/src/./parse.py", "/SRC/parse.py"]) | name),
        st.tuples(st.just("id"), name),
    )  # fmt: skip


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):  # type: ignore[no-untyped-def]
    store = SqliteStore(str(tmp_path_factory.mktemp("store") / "kernel.db"))
    yield Kernel([ISSUER.public], KERNEL, store, clock=lambda: NOW + 10)
    store.close()


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=_mutations())
def test_a_mutated_request_is_never_allowed(kernel: Kernel, mutation: tuple) -> None:
    message = request(TOKEN, params={"path": "/src/parse.py"})
    decision, nonce = kernel.preflight(read_message(json.dumps(message)))
    assert decision.decision == "allow" and nonce
    message["ToolCallRequest"]["execution_nonce"] = nonce
    body = copy.deepcopy(message)["ToolCallRequest"]
    field, *how = mutation
    if field in ("capability_token", "execution_nonce"):
        body[field] = _flip(body[field], *how)
    elif field == "params":
        body["params"] = {"path": how[0]}
    else:
        body[field] = how[0]
    mutated = json.dumps({"ToolCallRequest": body})
    if mutated != json.dumps(message):
        assert kernel.authorize_line(mutated).decision == "deny", mutation
    assert kernel.authorize_line(json.dumps(message)).decision == "allow"  # the control, consuming it
