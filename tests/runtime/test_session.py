"""What deciding a call needs, built in one place (:mod:`bgc.runtime.session`): a session from a
policy or from plans decides, settles and records, the same for every enforcer; the decision
server's sources keep compiled policies and stores, and let go of a store whose call failed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bgc.errors import UsageError
from bgc.runtime import ledger
from bgc.runtime.calls import Workspace
from bgc.runtime.session import Sources, WarmSources, plans_session, policy_session, store_location
from bgc.runtime.store import open_store

POLICY = """\
tool fs.read needs fs:read:{path}
allow fs:read:/src/** because "sources"
deny fs:read:/**/.env because "secrets"
"""


@pytest.fixture()
def policy(tmp_path: Path) -> str:
    path = tmp_path / "p.bgp"
    path.write_text(POLICY)
    return str(path)


def _kinds(store: object) -> list[tuple[str, str]]:
    entries = [ledger.decode_entry(seq, digest, data) for seq, digest, data in store.rows()]  # type: ignore[attr-defined]
    return [(entry.body["kind"], entry.body["decision"]) for entry in entries]  # type: ignore[union-attr]


def test_a_policy_session_decides_and_records_under_its_kind(policy: str, tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "s.db"))
    try:
        session = policy_session("proxy", policy, store=store)
        assert session.context.policy is not None and session.context.plan == session.decider.plan_id
        assert session.decide_call("fs.read", None, {"path": "/src/a.py"}).effect == "allow"
        assert session.decide_call("fs.read", None, {"path": "/src/.env"}).effect == "deny"
        assert _kinds(store) == [("proxy", "allow"), ("proxy", "deny")]
        unrecorded = session.using(None)
        assert unrecorded.decide_call("fs.read", None, {"path": "/src/a.py"}).entry is None and len(_kinds(store)) == 2
    finally:
        store.close()


def test_plans_are_named_only_where_a_store_records_them(policy: str, tmp_path: Path) -> None:
    base = policy_session("gate", policy)
    plans = base.decider.plans
    assert plans_session("gate", plans).context.plan is None  # nothing records it: no plan id hashed
    store = open_store(str(tmp_path / "s.db"))
    try:
        recording = plans_session("gate", plans, store=store, settle=False)
        assert recording.context.plan == base.decider.plan_id and recording.trusted == {}
    finally:
        store.close()


def test_a_projects_session_finds_its_store_and_needs_a_policy(tmp_path: Path) -> None:
    project = str(tmp_path)
    assert store_location(None, project) == os.path.join(project, ".bgc", "kernel.db")
    assert store_location("none", project) is None and store_location("x.db", project) == "x.db"
    (tmp_path / ".git").mkdir()  # the configuration is not looked for above the repository
    with pytest.raises(UsageError, match="no policy"):
        with Sources().project_session("hook", policy=None, plan=None, mode=None, store="none", project=project,
                                       workspace=Workspace.at(project), session=None):  # fmt: skip
            pass


def test_warm_sources_keep_a_store_until_a_call_with_it_fails(policy: str, tmp_path: Path) -> None:
    warm = WarmSources()
    project = str(tmp_path)
    location = str(tmp_path / "kept.db")

    def session():  # type: ignore[no-untyped-def]
        return warm.project_session("hook", policy=policy, plan=None, mode=None, store=location, project=project,
                                    workspace=Workspace.at(project), session=None)  # fmt: skip

    try:
        with session() as created:  # a store the call made is not kept: its file was not there to stamp
            pass
        with session() as first, session() as second:
            assert first.store is second.store is not created.store  # kept between calls
        with pytest.raises(KeyError), session():
            raise KeyError("the call failed")
        assert location not in warm.stores  # dropped: the next call opens it afresh
        assert warm.compiled_policy(policy, None) is warm.compiled_policy(policy, None)
    finally:
        warm.close()


class _Interrupted(Exception):
    """What the hook's deadline raises, at whatever point of the work the alarm comes."""


@pytest.mark.parametrize("after", ["BEGIN IMMEDIATE", "COMMIT"])
def test_an_interrupted_write_leaves_a_kept_store_out_of_any_transaction(tmp_path: Path, after: str) -> None:
    """The decision server keeps a store's connection between calls, and the enforcer turns an
    exception while recording (the deadline's included) into a deny, so the call does not count
    as failed and the connection stays: an exception raised right after the write transaction
    began, or as it committed, must not leave it open — holding SQLite's write lock, which would
    deny every later call and keep ``bgc approve`` from answering for as long as the server runs."""
    from bgc.runtime.store.sqlite import SqliteStore

    location = str(tmp_path / "kept.db")
    store = SqliteStore(location)
    connection = store._db

    class Interrupting:
        def __getattr__(self, name: str) -> object:
            return getattr(connection, name)

        def execute(self, sql: str, *args: object) -> object:
            done = connection.execute(sql, *args)
            if sql == after:
                raise _Interrupted
            return done

    store._db = Interrupting()
    try:
        with pytest.raises(_Interrupted):
            store.consume_once("k", "first", 10**10)
        assert not connection.in_transaction
        store._db = connection
        assert store.consume_once("k", "second", 10**10)  # the same connection writes on
        other = SqliteStore(location, busy_timeout_ms=100)
        try:
            assert other.consume_once("k", "third", 10**10)  # and the write lock is free
        finally:
            other.close()
    finally:
        store._db = connection
        store.close()


def test_an_approved_call_decided_on_its_mcp_identity_alone_is_honoured(tmp_path: Path) -> None:
    """A tool no declaration names is decided on ``mcp:call:SERVER/TOOL``; an ask there is a
    permission request bound to the rule's approvers like any other, so alice's signed answer
    lets the call run once (the atom used to lose its approvals: no request, never approved)."""
    from bgc.runtime.approvals import encode_answer, sign_answer
    from bgc.runtime.kernel.keys import SigningKey

    alice = SigningKey.generate("alice")
    policy = tmp_path / "p.bgp"
    policy.write_text(f'trust approver alice {alice.public.text}\n'
                      'ask mcp:call:files/write approvals 1 of [alice] because "a person signs writes"\n')  # fmt: skip
    store = open_store(str(tmp_path / "s.db"))
    try:
        session = policy_session("proxy", str(policy), store=store)
        asked = session.decide_call("write", "files", {"path": "/a"})
        assert asked.effect == "ask" and asked.request is not None, asked.reason
        assert not asked.anyone_may_answer()  # alice, by name: never the person at the client
        store.add_answer(asked.request, "alice", "allow-once", encode_answer(
            sign_answer(asked.request, "allow-once", "alice", alice, int(time.time()))))  # fmt: skip
        assert session.decide_call("write", "files", {"path": "/a"}).effect == "allow"
        assert session.decide_call("write", "files", {"path": "/a"}).effect == "ask"  # once
        assert session.decide_call("write", "files", {"path": "/b"}).request != asked.request  # that exact call
    finally:
        store.close()
