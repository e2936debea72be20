"""Adversarial review of the enforcers' approvals: each test is a fail-open found by class
(an approval that counts for another session; an unsigned elicitation overriding a signed
rejection; a guessable elicitation id), written to fail before its fix."""

from __future__ import annotations

from typing import Any

from tests.test_enforce_hook import answer, hook, project, request_id  # noqa: F401 - `project` is a fixture


def test_an_approval_given_for_one_session_never_allows_the_same_call_in_another(project: dict[str, Any]) -> None:
    write = {"file_path": f"{project['root']}/migrations/010.sql", "content": "create table t();"}
    effect, reason, _ = hook(project, "Write", write, session="sess-A")
    assert effect == "deny"
    asked = request_id(reason)
    for person in ("alice", "bob"):
        assert answer(project, "approve", asked, person).exit_code == 0
    # alice and bob approved session A's call; session B making the same call is another request
    effect, reason, _ = hook(project, "Write", write, session="sess-B")
    assert effect == "deny" and request_id(reason) != asked
    effect, reason, _ = hook(project, "Write", write, session="sess-A")  # still there for session A, once
    assert effect == "allow" and asked in reason
