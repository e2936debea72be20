"""The decision ledger: one chain whoever appends, any edit found, against SQLite and PostgreSQL."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.runtime import ledger
from bgc.runtime.kernel.keys import SigningKey
from bgc.runtime.store import GENESIS, open_store
from tests.samples import bgc, examples

ROOT = Path(__file__).resolve().parents[2]


def record(number: int) -> ledger.Record:
    decision = ("allow", "deny", "ask")[number % 3]
    return ledger.Record(
        "hook", decision, 1_764_500_000 + number, session=f"s{number % 2}", tool="Write", server="local",
        params="sha256:" + f"{number:064x}", rule=f"p.bgp:{number % 4 + 1}",
    )  # fmt: skip


def chain(count: int) -> list[tuple[int, str, bytes]]:
    """``count`` entries as a store holds them, built without a store."""
    rows, prev = [], GENESIS
    for seq in range(1, count + 1):
        data = ledger.encode_entry(record(seq), seq, prev)
        digest = ledger.canonical.digest_text(data)
        rows.append((seq, digest, data))
        prev = digest
    return rows


# ---- verify, against every kind of damage ----------------------------------------------------------


def test_an_intact_chain_verifies_and_names_its_head() -> None:
    rows = chain(5)
    result = ledger.verify(rows)
    assert result.ok and result.entries == 5 and result.head == rows[-1][1]
    assert ledger.verify([]).ok and ledger.verify([]).head == GENESIS


DAMAGE = ["edit-bytes", "edit-and-rehash", "remove", "swap", "renumber", "truncate-end"]


@settings(max_examples=120, deadline=None)
@given(st.integers(2, 12), st.data())
def test_every_edit_removal_or_reordering_is_found_at_its_place(count: int, data: st.DataObject) -> None:
    rows = chain(count)
    kind = data.draw(st.sampled_from(DAMAGE))
    at = data.draw(st.integers(0, count - 2 if kind == "swap" else count - 1))
    seq, digest, raw = rows[at]
    if kind == "edit-bytes":  # a byte changed: the id no longer matches
        position = data.draw(st.integers(0, len(raw) - 1))
        rows[at] = (seq, digest, raw[:position] + bytes([raw[position] ^ 0x01]) + raw[position + 1 :])
    elif kind == "edit-and-rehash":  # a field changed and the id recomputed: the next link breaks
        forged = ledger.encode_entry(ledger.Record("hook", "allow", 1), seq, rows[at - 1][1] if at else GENESIS)
        rows[at] = (seq, ledger.canonical.digest_text(forged), forged)
        if at == count - 1:  # the newest entry: only a head kept elsewhere shows it
            assert not ledger.verify(rows, expect_head=chain(count)[-1][1]).ok
            return
    elif kind in ("remove", "renumber"):  # renumbered: the rows relabelled to hide the gap
        del rows[at]
        if kind == "renumber":
            rows = [(number + 1, d, r) for number, (_, d, r) in enumerate(rows)]
    elif kind == "swap":
        rows[at], rows[at + 1] = rows[at + 1], rows[at]
    elif kind == "truncate-end":
        rows = rows[:at]
    if len(rows) < count and kind != "swap" and rows == chain(count)[: len(rows)]:
        # entries lost from the end: a shorter chain is still a chain, which a head kept
        # elsewhere shows
        assert ledger.verify(rows).ok
        assert not ledger.verify(rows, expect_head=chain(count)[-1][1]).ok
        return
    result = ledger.verify(rows)
    assert not result.ok
    assert result.problem is not None and result.problem.seq in (at + 1, at + 2)
    # nothing after the damage holds; a re-hashed forgery is itself well formed, so the break
    # shows at the link after it
    assert result.entries == (at + 1 if kind == "edit-and-rehash" else at)


def test_the_same_decisions_give_byte_identical_entries() -> None:
    assert chain(20) == chain(20)


# ---- the engines ----------------------------------------------------------------------------------


def test_both_engines_build_the_same_chain(store_location: str) -> None:
    store = open_store(store_location)
    for number in range(1, 31):
        ledger.append(store, record(number))
    rows = list(store.rows())
    store.close()
    assert rows == chain(30)  # byte for byte what the reference builds, whatever the engine


APPENDER = """
import sys
from bgc.runtime import ledger
from bgc.runtime.store import open_store
store = open_store(sys.argv[1])
worker, count = int(sys.argv[2]), int(sys.argv[3])
for number in range(count):
    seq, _ = ledger.append(store, ledger.Record("gate", "allow", 1_764_500_000, session=f"w{worker}", atom=f"fs:read:/{number}"))
    print(seq, flush=True)
"""


APPENDS = examples(250, thorough=1000)
"""Appends per process in the race below: all eight run at once either way; the thorough run
keeps the longer race the default run had before it was cut to fit the default run's time."""


@pytest.mark.e2e
def test_eight_processes_appending_make_one_chain(store_location: str) -> None:
    open_store(store_location).close()  # the schema exists before the race
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, store_location, str(worker), str(APPENDS)], stdout=subprocess.PIPE, text=True
        )
        for worker in range(8)
    ]
    printed = [int(line) for worker in workers for line in worker.communicate(timeout=600)[0].split()]
    assert all(worker.returncode == 0 for worker in workers)
    store = open_store(store_location)
    rows = list(store.rows())
    store.close()
    result = ledger.verify(rows)
    assert result.ok and result.entries == 8 * APPENDS
    assert sorted(printed) == list(range(1, 8 * APPENDS + 1))  # every append got its own place


@pytest.mark.e2e
def test_a_process_killed_mid_append_loses_no_committed_entry(store_location: str) -> None:
    open_store(store_location).close()
    worker = subprocess.Popen(
        [sys.executable, "-c", APPENDER, store_location, "0", "100000"], stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    committed = 0
    while committed < 300:
        committed = int(worker.stdout.readline())
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    store = open_store(store_location)
    result = ledger.verify(store.rows())
    store.close()
    assert result.ok and result.entries >= committed


NONCE_RACER = """
import sys
from bgc.runtime.store import open_store
store = open_store(sys.argv[1])
print(store.consume_once("nonce", "the-one", 4_000_000_000))
"""


@pytest.mark.e2e
def test_eight_processes_consuming_one_nonce_get_exactly_one_yes(store_location: str) -> None:
    open_store(store_location).close()
    racers = [
        subprocess.Popen([sys.executable, "-c", NONCE_RACER, store_location], stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    answers = [racer.communicate(timeout=120)[0].strip() for racer in racers]
    assert sorted(answers) == ["False"] * 7 + ["True"]


# ---- the commands ---------------------------------------------------------------------------------


@pytest.fixture
def sqlite_ledger(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    store = open_store(str(path))
    for number in range(1, 13):
        ledger.append(store, record(number))
    store.close()
    return path


def test_log_verify_finds_an_edit_made_with_sqlite_itself(sqlite_ledger: Path) -> None:
    intact = bgc("log", "verify", "--store", str(sqlite_ledger))
    assert intact.exit_code == 0 and "ledger ok: 12 entries, head sha256:" in intact.stdout
    head = intact.stdout.split("head ")[1].strip()
    with sqlite3.connect(sqlite_ledger) as db:  # an allow rewritten as a deny, id recomputed
        seq, data = db.execute("SELECT seq, entry FROM bgc_ledger WHERE seq = 3").fetchone()
        assert b"allow" in bytes(data)
        forged = bytes(data).replace(b"allow", b"deny!")
        db.execute(
            "UPDATE bgc_ledger SET entry = ?, digest = ? WHERE seq = 3", (forged, ledger.canonical.digest_text(forged))
        )
    broken = bgc("log", "verify", "--store", str(sqlite_ledger))
    assert broken.exit_code == 1 and "entry 4 does not follow entry 3" in broken.stdout
    shown = bgc("log", "show", "--store", str(sqlite_ledger))
    assert shown.exit_code == 2 and "does not verify" in shown.output  # no report built on a forged chain
    with sqlite3.connect(sqlite_ledger) as db:
        db.execute(
            "UPDATE bgc_ledger SET entry = ?, digest = ? WHERE seq = 3", (data, ledger.canonical.digest_text(bytes(data)))
        )
        db.execute("DELETE FROM bgc_ledger WHERE seq = 12")
    truncated = bgc("log", "verify", "--store", str(sqlite_ledger), "--expect-head", head)
    assert truncated.exit_code == 1 and "removed from the end" in truncated.stdout


def test_a_truncated_sqlite_file_is_an_error_not_an_empty_ledger(sqlite_ledger: Path) -> None:
    data = sqlite_ledger.read_bytes()
    sqlite_ledger.write_bytes(data[: len(data) // 2])
    for wal in sqlite_ledger.parent.glob("state.db-*"):
        wal.unlink()
    result = bgc("log", "verify", "--store", str(sqlite_ledger))
    assert result.exit_code != 0 and "ledger ok" not in result.stdout


def test_log_show_filters_and_formats(sqlite_ledger: Path) -> None:
    text = bgc("log", "show", "--store", str(sqlite_ledger), "--decision", "deny", "--session", "s1")
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["1", "7"]
    assert lines[0].split("\t")[1:] == ["2025-11-30T10:53:21Z", "hook", "deny", "Write@local", "p.bgp:2"]
    as_json = [
        json.loads(line)
        for line in bgc(
            "log", "show", "--store", str(sqlite_ledger), "--format", "json", "--rule", "p.bgp:1"
        ).stdout.splitlines()
    ]
    assert [entry["seq"] for entry in as_json] == [4, 8, 12] and all(
        entry["id"].startswith("sha256:") for entry in as_json
    )
    opa = [
        json.loads(line)
        for line in bgc("log", "show", "--store", str(sqlite_ledger), "--format", "opa").stdout.splitlines()
    ]
    assert opa[0]["path"] == "bgc/hook" and opa[0]["result"] == {"decision": "deny", "rule": "p.bgp:2"}
    assert opa[0]["input"]["tool"] == "Write" and opa[0]["timestamp"] == "2025-11-30T10:53:21Z"
    since = bgc("log", "show", "--store", str(sqlite_ledger), "--since", str(1_764_500_010))
    assert [line.split("\t")[0] for line in since.stdout.splitlines()] == ["10", "11", "12"]


def test_log_stats_counts_per_rule_and_lists_rules_that_never_fired(sqlite_ledger: Path, tmp_path: Path) -> None:
    policy = tmp_path / "p.bgp"
    policy.write_text(
        "allow fs:read:/**\nallow fs:write:/src/**\ndeny fs:write:/src/secrets/**\nask net:connect:https://x/**\nallow proc:exec:ls\n"
    )
    result = bgc("log", "stats", "--store", str(sqlite_ledger), "--policy", str(policy))
    assert result.exit_code == 0
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in result.stdout.splitlines()}
    assert rows["p.bgp:1"] == ["3", "allow 1, ask 1, deny 1"]  # entries 4, 8, 12: deny, ask, allow
    assert rows["p.bgp:5"] == ["0", "never fired"]


def test_a_store_that_cannot_be_opened_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    result = bgc("log", "verify", "--store", str(tmp_path / "dir.db"))
    assert result.exit_code == 2 and "dir.db" in result.output


def test_log_show_names_its_formats_for_an_unknown_one(tmp_path: Path) -> None:
    shown = bgc("log", "show", "--format", "xml", "--store", str(tmp_path / "k.db"))
    assert shown.exit_code == 2 and "one of text, json, opa" in shown.output


def test_compile_and_gate_append_their_decisions_when_given_a_ledger(tmp_path: Path) -> None:
    store = str(tmp_path / "ledger.db")
    order = "examples/orders/analyse.yaml"
    plan = tmp_path / "plan.json"
    assert bgc("compile", order, "-p", "policies/default.bgp", "-f", "json", "-o", str(plan), "--ledger", store).exit_code == 1
    assert bgc("gate", str(plan), "fs:read:/src/a.py", "fs:read:/.env", "--ledger", store).exit_code == 4
    shown = bgc("log", "show", "--store", store, "--format", "json")
    entries = [json.loads(line) for line in shown.stdout.splitlines()]
    compiled = [entry for entry in entries if entry["kind"] == "compile"]
    assert compiled and all(entry["order"].startswith("sha256:") and entry["plan"] and entry["policy"] for entry in compiled)
    assert compiled[0]["atom"] == "fs:read:/**" and compiled[0]["decision"] == "narrowed"
    gated = [(entry["decision"], entry["atom"], entry.get("rule", "")) for entry in entries if entry["kind"] == "gate"]
    assert gated[0][:2] == ("allow", "fs:read:/src/a.py")
    assert gated[1][:2] == ("deny", "fs:read:/.env") and gated[1][2].startswith("base.bgp:")
    assert bgc("log", "verify", "--store", store).exit_code == 0


def test_a_ledger_that_cannot_be_opened_stops_compile_and_gate_before_anything_is_decided(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    compiled = bgc("compile", "examples/orders/analyse.yaml", "-p", "policies/default.bgp", "--ledger", str(blocker / "x.db"))
    assert compiled.exit_code == 2 and compiled.stdout == ""


@pytest.mark.parametrize("command", [("log", "show"), ("log", "verify"), ("log", "stats"), ("pending",)])
def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path: Path, command: tuple[str, ...]) -> None:
    where = tmp_path / "missing" / "kernel.db"
    done = bgc(*command, "--store", str(where))
    assert done.exit_code == 2 and "no store at" in done.output
    assert not (tmp_path / "missing").exists()


# ---- signed entries and checkpoints: a ledger that proves its history -------------------------------

LEDGER_KEY = SigningKey.from_seed(bytes(range(32)), "ledger")
"""The enforcers' ledger key; the tampering below is done by someone who can write the store and
holds any key but this one."""
ATTACKER_KEY = SigningKey.from_seed(bytes(range(1, 33)), "mallory")

TAMPERING = ["cut-tail", "rehash-newest", "append-forged", "reorder", "alter-field"]


def signed_store(location: str, key_file: Path, count: int) -> Any:
    """A store whose ledger holds ``count`` entries signed with the ledger key, and nothing else
    (a generated example reuses the location of the one before)."""
    store = open_store(location)
    store.ledger_key = str(key_file)
    write_rows(store, [])
    for number in range(1, count + 1):
        ledger.append(store, record(number))
    return store


@pytest.fixture
def ledger_key_file(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.key"
    path.write_bytes(LEDGER_KEY.pem())
    path.chmod(0o600)
    return path


def forged_entry(body: dict[str, Any], signed_by: SigningKey | None, keep_signature: bool = False) -> bytes:
    """``body`` as canonical entry bytes: re-signed by ``signed_by``, or keeping the signature
    it carries (now over other content), or unsigned."""
    body = dict(body)
    signature = body.pop("signature", None)
    body.pop("signer", None) if not keep_signature else None
    if keep_signature and signature is not None:
        body["signature"] = signature
    elif signed_by is not None:
        body["signer"] = signed_by.public.text
        body["signature"] = signed_by.sign(ledger.canonical.envelope(ledger.SIGNED_TAG, ledger.ENTRY_VERSION, body))
    return ledger.canonical.envelope(ledger.ENTRY_TAG, ledger.ENTRY_VERSION, body)


def write_rows(store: Any, rows: list[tuple[int, str, bytes]]) -> None:
    """Replace the whole ledger table with ``rows``, as anyone who can write the store can."""
    store._write(lambda: store._run("DELETE FROM bgc_ledger"))
    for seq, digest, data in rows:
        store._write(lambda: store._run("INSERT INTO bgc_ledger (seq, digest, entry) VALUES (?, ?, ?)", (seq, digest, data)))  # noqa: B023


def relinked(rows: list[tuple[int, str, bytes]], start: int, signed_by: SigningKey | None) -> list[tuple[int, str, bytes]]:
    """The rows from index ``start`` on, re-chained after the one before: a forger keeps the chain
    whole (ids recomputed, ``prev`` rewritten), with whatever key they hold."""
    import cbor2

    out = rows[:start]
    for seq, _, data in rows[start:]:
        body = cbor2.loads(data)[2]
        body["prev"] = out[-1][1] if out else GENESIS
        body["seq"] = len(out) + 1
        entry = forged_entry(body, signed_by)
        out.append((len(out) + 1, ledger.canonical.digest_text(entry), entry))
    return out


@pytest.mark.parametrize("kind", TAMPERING)
@pytest.mark.parametrize("forger", ["unsigned", "own-key"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_tampering_of_a_signed_checkpointed_ledger_is_caught(
    store_location: str, ledger_key_file: Path, kind: str, forger: str, data: st.DataObject
) -> None:
    import cbor2

    count = data.draw(st.integers(3, 8), label="entries")
    signed_by = None if forger == "unsigned" else ATTACKER_KEY
    store = signed_store(store_location, ledger_key_file, count)
    try:
        rows = list(store.rows())
        intact = ledger.verify(rows, signers=[LEDGER_KEY.public])
        assert intact.ok and all(ledger.decode_entry(*row).body["signer"] == LEDGER_KEY.public.text for row in rows)
        checkpoint = ledger.sign_checkpoint(intact, LEDGER_KEY, 1_764_600_000)
        if kind == "cut-tail":
            k = data.draw(st.integers(1, count), label="k")
            tampered = rows[: count - k]
        elif kind == "rehash-newest":
            body = cbor2.loads(rows[-1][2])[2]
            body["decision"] = "deny" if body["decision"] == "allow" else "allow"
            tampered = relinked([*rows[:-1], (count, "", forged_entry(body, signed_by))], count - 1, signed_by)
        elif kind == "append-forged":
            extra = ledger.encode_entry(ledger.Record("hook", "allow", 1_764_600_001), count + 1, rows[-1][1], signed_by)
            tampered = [*rows, (count + 1, ledger.canonical.digest_text(extra), extra)]
        elif kind == "reorder":
            at = data.draw(st.integers(0, count - 2), label="at")
            swapped = [*rows[:at], rows[at + 1], rows[at], *rows[at + 2 :]]
            tampered = relinked(swapped, at, signed_by) if data.draw(st.booleans(), label="relink") else [
                (seq, digest, raw) for seq, (_, digest, raw) in enumerate(swapped, 1)
            ]
        else:  # alter-field: any field of any entry, the chain re-linked after it
            at = data.draw(st.integers(0, count - 1), label="at")
            body = cbor2.loads(rows[at][2])[2]
            name = data.draw(st.sampled_from(sorted(set(body) - {"seq", "prev"})), label="field")
            body[name] = b"\x00" + body[name] if isinstance(body[name], bytes) else (
                body[name] + 1 if isinstance(body[name], int) else f"{body[name]}!"
            )
            keep = data.draw(st.booleans(), label="keep the old signature")
            entry = forged_entry(body, signed_by, keep_signature=keep)
            altered = (at + 1, ledger.canonical.digest_text(entry), entry)
            tampered = relinked([*rows[:at], altered, *rows[at + 1 :]], at + 1, signed_by)
        write_rows(store, tampered)
        found = ledger.verify(store.rows(), signers=[LEDGER_KEY.public], checkpoints=[checkpoint])
        assert not found.ok, (kind, forger)
    finally:
        store.close()


def test_a_checkpoint_is_a_prefix_of_the_chain_as_it_grows_and_vouches_for_its_entries(
    store_location: str, ledger_key_file: Path
) -> None:
    store = signed_store(store_location, ledger_key_file, 4)
    try:
        earlier = ledger.sign_checkpoint(ledger.verify(store.rows()), LEDGER_KEY, 1_764_600_000)
        first = next(iter(store.rows()))[1]
        for number in range(5, 9):  # ordinary new decisions after it: the checkpoint still holds
            ledger.append(store, record(number))
        rows = list(store.rows())
        trusted = [LEDGER_KEY.public]
        assert ledger.verify(rows, signers=trusted, checkpoints=[earlier], entries=[first]).ok
        later = rows[6][1]  # entry 7: in the chain, not yet inside the checkpoint
        outside = ledger.verify(rows, signers=trusted, checkpoints=[earlier], entries=[later])
        assert not outside.ok and "after the newest checkpoint" in outside.problem.message
        assert ledger.verify(rows, signers=trusted, entries=[later]).ok
        unknown = ledger.verify(rows, signers=trusted, entries=["sha256:" + "1" * 64])
        assert not unknown.ok and "no entry" in unknown.problem.message
    finally:
        store.close()


def test_a_checkpoint_altered_or_signed_by_another_key_is_refused() -> None:
    verification = ledger.verify(chain(3))
    checkpoint = ledger.sign_checkpoint(verification, LEDGER_KEY, 1_764_600_000)
    text = checkpoint.to_text()
    trusted = [LEDGER_KEY.public]
    assert ledger.read_checkpoint(text, trusted) == checkpoint
    assert "not trusted" in ledger.read_checkpoint(text, [ATTACKER_KEY.public])
    value = json.loads(text)
    for name, changed in (("seq", 2), ("head", chain(2)[-1][1]), ("time", 1), ("signer", ATTACKER_KEY.public.text)):
        altered = json.dumps({**value, name: changed})
        assert isinstance(ledger.read_checkpoint(altered, [*trusted, ATTACKER_KEY.public]), str), name
    for broken in ("", "[]", json.dumps({**value, "extra": 1}), json.dumps({**value, "seq": -1}), json.dumps({**value, "seq": True})):
        assert isinstance(ledger.read_checkpoint(broken, trusted), str)


def test_signed_entries_are_byte_identical_on_both_engines(store_location: str, ledger_key_file: Path) -> None:
    store = signed_store(store_location, ledger_key_file, 10)
    try:
        rows = list(store.rows())
    finally:
        store.close()
    reference, prev = [], GENESIS
    for seq in range(1, 11):
        entry = ledger.encode_entry(record(seq), seq, prev, LEDGER_KEY)
        prev = ledger.canonical.digest_text(entry)
        reference.append((seq, prev, entry))
    assert rows == reference


def test_an_unreadable_ledger_key_records_nothing(tmp_path: Path) -> None:
    from bgc.runtime.store import StoreError

    store = open_store(str(tmp_path / "s.db"))
    store.ledger_key = str(tmp_path / "missing.key")
    with pytest.raises(StoreError, match="ledger key"):
        ledger.append(store, record(1))
    assert list(store.rows()) == []
    store.close()


def test_log_checkpoint_and_verify_from_the_command_line(tmp_path: Path, ledger_key_file: Path) -> None:
    location = str(tmp_path / "k.db")
    signed_store(location, ledger_key_file, 5).close()
    public = LEDGER_KEY.public.text
    kept = tmp_path / "checkpoint.json"
    made = bgc("log", "checkpoint", "--store", location, "--key", str(ledger_key_file), "--signer", public, "-o", str(kept))
    assert made.exit_code == 0 and json.loads(kept.read_text())["seq"] == 5
    first = json.loads(bgc("log", "show", "--store", location, "--format", "json").stdout.splitlines()[0])["id"]
    holds = bgc("log", "verify", "--store", location, "--signer", public, "--checkpoint", str(kept), "--entry", first)
    assert holds.exit_code == 0 and "is a prefix of it" in holds.stdout and f"entry {first} is in it" in holds.stdout
    unsigned = bgc("log", "verify", "--store", location, "--checkpoint", str(kept))
    assert unsigned.exit_code == 2 and "--checkpoint needs --signer" in unsigned.output
    with sqlite3.connect(location) as db:
        db.execute("DELETE FROM bgc_ledger WHERE seq = 5")
    cut = bgc("log", "verify", "--store", location, "--signer", public, "--checkpoint", str(kept))
    assert cut.exit_code == 1 and "removed from the end" in cut.stdout
    kept.write_text(kept.read_text().replace('"seq": 5', '"seq": 4'))
    forged = bgc("log", "verify", "--store", location, "--signer", public, "--checkpoint", str(kept))
    assert forged.exit_code == 2 and "does not hold" in forged.output and str(kept) in forged.output


def test_the_kernel_signs_its_entries_with_its_key(tmp_path: Path) -> None:
    import time

    from tests.kernel_support import ISSUER, KERNEL, line, make_token, request

    kernel_key = tmp_path / "kernel.key"
    kernel_key.write_bytes(KERNEL.pem())
    kernel_key.chmod(0o600)
    location = str(tmp_path / "k.db")
    message = line(request(make_token(now=int(time.time()))))
    decided = bgc("authorize", "-p", str(ROOT / "policies" / "modes.bgp"), "--issuer", ISSUER.public.text,
                  "--kernel-key", str(kernel_key), "--store", location, input=message + "\n")  # fmt: skip
    assert decided.exit_code == 0, decided.output
    signed = bgc("log", "verify", "--store", location, "--signer", KERNEL.public.text)
    assert signed.exit_code == 0 and "ledger ok" in signed.stdout
    other = bgc("log", "verify", "--store", location, "--signer", LEDGER_KEY.public.text)
    assert other.exit_code == 1 and "not trusted for this ledger" in other.stdout
