"""Stores to test against: a SQLite file, and a fresh database on the PostgreSQL server named by
``BGC_TEST_POSTGRES`` (.ci/run starts one; locally: ``eval "$(bash .ci/postgres start DIR)"``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bgc.runtime.approvals import PermissionRequest, Requirement, encode_answer, sign_answer
from bgc.runtime.kernel.keys import SigningKey
from tests.samples import missing_in_ci


def fresh_postgres_database() -> Iterator[str]:
    """The URL of a new, empty database, dropped afterwards."""
    server = os.environ.get("BGC_TEST_POSTGRES")
    if not server:
        missing_in_ci("BGC_TEST_POSTGRES names no PostgreSQL server (.ci/postgres starts one)")
    import psycopg

    name = "bgc_test_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = server.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def write_directly(location: str, statement: str, *params: object) -> list[tuple]:
    """Run one SQL statement (``?`` placeholders) on the store at ``location`` (a SQLite file or a
    ``postgresql://`` URL) as anyone who can write the store would: with no bgc code in between.
    The rows it selects, if any."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as connection:
            cursor = connection.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []
    import sqlite3

    connection = sqlite3.connect(location)
    try:
        with connection:
            return connection.execute(statement, params).fetchall()
    finally:
        connection.close()


# ---- what anyone who can write the store can do to permission requests --------------------------------


@dataclass(frozen=True)
class Scene:
    """Two requests an enforcer recorded in the store at ``location``: ``approved`` (one call,
    approved by every person in ``named``) and ``target`` (another call, pending), when the
    enforcer is asked again at ``now``. ``keys`` signs for ``named`` and for ``outsider`` (an
    approver the policy trusts but the rule does not name); the policy trusts ``untrusted`` for
    no one."""

    location: str
    approved: PermissionRequest
    target: PermissionRequest
    named: tuple[str, ...]
    outsider: str
    keys: dict[str, SigningKey]
    untrusted: SigningKey
    now: int


def _call_column(scene: Scene, request_id: str) -> str:
    (row,) = write_directly(scene.location, "SELECT call FROM bgc_requests WHERE id = ?", request_id)
    return str(row[0])


def _insert(scene: Scene, request: PermissionRequest, call: str, expires: int | None = None) -> None:
    write_directly(
        scene.location, "INSERT INTO bgc_requests (id, call, body, created, expires) VALUES (?, ?, ?, ?, ?)",
        request.id, call, request.encode(), request.created, request.expires if expires is None else expires,
    )  # fmt: skip


def _answer(scene: Scene, request: PermissionRequest, name: str, key: SigningKey, column: str | None = None) -> None:
    """``name``'s allow-once for ``request``, signed with ``key`` when it was made, stored under
    the approver column ``column`` (``name`` unless told)."""
    signed = sign_answer(request.id, "allow-once", name, key, request.created)
    write_directly(
        scene.location, "INSERT INTO bgc_answers (request, approver, decision, body) VALUES (?, ?, ?, ?)",
        request.id, column or name, "allow-once", encode_answer(signed),
    )  # fmt: skip


def _in_the_targets_place(scene: Scene, signers: Sequence[str], **change: Any) -> str:
    """A request differing from the target in ``change`` and approved by ``signers`` under what
    it says it needs, stored for the target's call (its ``call`` column) in the target's place."""
    call = _call_column(scene, scene.target.id)
    other = replace(scene.target, **change)
    write_directly(scene.location, "DELETE FROM bgc_requests WHERE id = ?", scene.target.id)
    _insert(scene, other, call)
    for name in signers:
        _answer(scene, other, name, scene.keys[name])
    return "target"


def _approved_row_for_the_target(scene: Scene) -> str:
    call = _call_column(scene, scene.target.id)
    write_directly(scene.location, "DELETE FROM bgc_requests WHERE id = ?", scene.target.id)
    write_directly(scene.location, "UPDATE bgc_requests SET call = ? WHERE id = ?", call, scene.approved.id)
    return "target"


def _approved_body_in_the_targets_row(scene: Scene) -> str:
    write_directly(
        scene.location, "UPDATE bgc_requests SET body = ? WHERE id = ?", scene.approved.encode(), scene.target.id
    )
    return "target"


def _approved_row_renamed_to_the_target(scene: Scene) -> str:
    call = _call_column(scene, scene.target.id)
    write_directly(scene.location, "DELETE FROM bgc_requests WHERE id = ?", scene.target.id)
    write_directly(
        scene.location, "UPDATE bgc_requests SET id = ?, call = ? WHERE id = ?", scene.target.id, call, scene.approved.id
    )
    write_directly(
        scene.location, "UPDATE bgc_answers SET request = ? WHERE request = ?", scene.target.id, scene.approved.id
    )
    return "target"


def _approved_answers_copied_to_the_target(scene: Scene) -> str:
    write_directly(
        scene.location,
        "INSERT INTO bgc_answers (request, approver, decision, body)"
        " SELECT ?, approver, decision, body FROM bgc_answers WHERE request = ?",
        scene.target.id, scene.approved.id,
    )  # fmt: skip
    return "target"


def _one_answer_under_every_name(scene: Scene) -> str:
    for column in scene.named:
        _answer(scene, scene.target, scene.named[0], scene.keys[scene.named[0]], column)
    return "target"


def _untrusted_key_under_every_name(scene: Scene) -> str:
    for name in scene.named:
        _answer(scene, scene.target, name, scene.untrusted)
    return "target"


def _expired_approval_kept_live_by_the_store(scene: Scene) -> str:
    """The approved call, asked after its request's signed expiry, with the store's ``expires``
    column pushed on so that the store finds it again."""
    life = scene.approved.expires - scene.approved.created
    ended = replace(scene.approved, created=scene.now - life - 5, expires=scene.now - 5)
    call = _call_column(scene, scene.approved.id)
    write_directly(scene.location, "DELETE FROM bgc_requests WHERE id = ?", scene.approved.id)
    _insert(scene, ended, call, expires=scene.now + life)
    for name in scene.named:
        _answer(scene, ended, name, scene.keys[name])
    return "approved"


def store_tamperings(named: Sequence[str]) -> dict[str, Callable[[Scene], str]]:
    """Every way of writing the store tried against an enforcer, by name: each writes the store
    and says which call the enforcer is then asked (``approved`` or ``target``). None may make it
    allow. (Members that need two named approvers are left out when the rule names one.)"""
    everyone = tuple(named)
    members: dict[str, Callable[[Scene], str]] = {
        "another call's approved row under this call's call column": _approved_row_for_the_target,
        "another call's approved body in this call's row": _approved_body_in_the_targets_row,
        "another call's approved row renamed to this call's id, its answers with it": _approved_row_renamed_to_the_target,
        "another call's answers copied to this call's request": _approved_answers_copied_to_the_target,
        "answers by a key the policy does not trust, under every name": _untrusted_key_under_every_name,
        "an approved request presented after its signed expiry": _expired_approval_kept_live_by_the_store,
        "requirement: any one trusted approver": lambda scene: _in_the_targets_place(
            scene, [scene.outsider], requirements=(Requirement(1),)
        ),
        "requirement: another list of approvers": lambda scene: _in_the_targets_place(
            scene, [scene.outsider], requirements=(Requirement(1, (scene.named[0], scene.outsider)),)
        ),
        "another rule": lambda scene: _in_the_targets_place(scene, everyone, rule="elsewhere.bgp:1"),
        "another session": lambda scene: _in_the_targets_place(scene, everyone, session="another-session"),
        "another plan": lambda scene: _in_the_targets_place(scene, everyone, plan="sha256:" + "7" * 64),
        "another token": lambda scene: _in_the_targets_place(scene, everyone, token="another-token"),
        "another summary shown to the approvers": lambda scene: _in_the_targets_place(
            scene, everyone, summary="reads a file"
        ),
        "other atoms": lambda scene: _in_the_targets_place(scene, everyone, atoms=("fs:read:/tmp/x",)),
        "a longer life than the enforcer gives": lambda scene: _in_the_targets_place(
            scene, everyone, expires=scene.target.created + 30 * 86_400
        ),
    }  # fmt: skip
    if len(everyone) > 1:
        members["requirement: a lower count of the same approvers"] = lambda scene: _in_the_targets_place(
            scene, everyone[:1], requirements=(Requirement(1, everyone),)
        )
        members["one person's answer under every approver's name"] = _one_answer_under_every_name
    return members


class RestartablePostgres:
    """A PostgreSQL server of the test's own (``.ci/postgres``), which the test may restart, stop
    and start under a live enforcer without disturbing the shared server other tests use."""

    def __init__(self) -> None:
        import glob
        import subprocess
        import tempfile

        binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not binaries:
            missing_in_ci("no PostgreSQL binaries under /usr/lib/postgresql (.ci/postgres installs them)")
        self.pg_ctl = os.path.join(binaries[-1], "pg_ctl")
        self.directory = tempfile.mkdtemp(prefix="bgc-pg-")  # below /tmp: the postgres user can reach it
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # the server started inherits the script's stderr: a pipe there would never reach its end
        started = subprocess.run(
            ["bash", os.path.join(root, ".ci", "postgres"), "start", self.directory],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True,
        )  # fmt: skip
        self.url = started.stdout.strip().removeprefix("export BGC_TEST_POSTGRES=")
        self.port = self.url.rsplit(":", 1)[1].split("/")[0]

    def _pg_ctl(self, *args: str) -> None:
        import subprocess

        owner = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        command = [*owner, self.pg_ctl, "-D", f"{self.directory}/data", "-w", *args]
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    def restart(self) -> None:
        self._pg_ctl("-m", "fast", "restart")

    def stop(self) -> None:
        self._pg_ctl("-m", "fast", "stop")

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off"
        self._pg_ctl("-l", f"{self.directory}/log", "-o", options, "start")

    def remove(self) -> None:
        import shutil
        import subprocess

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run(["bash", os.path.join(root, ".ci", "postgres"), "stop", self.directory], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        shutil.rmtree(self.directory, ignore_errors=True)
