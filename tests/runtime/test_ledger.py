"""The decision ledger: one chain whoever appends, any edit found, against SQLite and PostgreSQL."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.runtime import ledger
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
