"""``bgc explain [ORDER] ATOM... -p POLICY``: what a policy does with atoms, with or without an
order, as people read it (golden files) and as machines read it (json).

Rewrite the golden files with BGC_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bgc.errors import ExitCode
from tests.samples import bgc

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "explain"
POLICY = "tests/golden/explain/policy.bgp"
ATOMS = ["fs:write:/src/a.py", "fs:write:/docs/a.md", "fs:read:/.env", "proc:exec:pytest", "proc:exec:npm/publish/--access/public"]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")


CASES = {
    "atoms.txt": (["-p", POLICY, *ATOMS], ExitCode.FINDINGS),
    "atoms-quiet.txt": (["-p", POLICY, "-q", *ATOMS], ExitCode.FINDINGS),
    "atoms.json": (["-p", POLICY, "--format", "json", *ATOMS], ExitCode.FINDINGS),
    "with-order.txt": (["tests/golden/explain/order.yaml", "fs:write:/docs/a.md", "-p", POLICY], ExitCode.OK),
    "in-mode.txt": (["-p", POLICY, "--mode", "review", "fs:write:/src/a.py"], ExitCode.FINDINGS),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    args, code = CASES[name]
    result = bgc("explain", *args)
    assert result.exit_code == code, result.output
    golden = GOLDEN / name
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        golden.write_text(result.stdout, encoding="utf-8")
    assert result.stdout == golden.read_text(encoding="utf-8")


def test_json_is_one_entry_per_atom_with_its_rules_and_hint() -> None:
    data = json.loads(bgc("explain", "-p", POLICY, "--format", "json", *ATOMS).stdout)
    assert data["order"] is None and data["policy"].startswith("sha256:")
    by_atom = {entry["atom"]: entry for entry in data["atoms"]}
    assert [entry["verdict"] for entry in data["atoms"]] == ["granted", "denied", "denied", "denied", "denied"]
    assert by_atom["proc:exec:pytest"]["hint"]["fix"] == "pytest, pytest/**"
    assert by_atom["fs:write:/docs/a.md"]["hint"]["why"].startswith("it matches, but its condition cannot be decided")
    assert by_atom["fs:read:/.env"]["hint"] is None  # a deny decided it: nothing to hint
    assert by_atom["fs:write:/src/a.py"]["other_modes"] == {}
    assert [rule["rule"]["line"] for rule in by_atom["fs:read:/.env"]["rules"]] == [7]


def test_the_exit_code_is_0_only_when_every_atom_is_granted() -> None:
    assert bgc("explain", "-p", POLICY, "fs:write:/src/a.py", "proc:exec:pytest/-x").exit_code == ExitCode.OK
    assert bgc("explain", "-p", POLICY, "fs:write:/src/a.py", "proc:exec:pytest").exit_code == ExitCode.FINDINGS


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "Missing argument '[ORDER] ATOM...'"),
        (["nothing.yaml"], "is not an atom (resource:action:pattern) and no atom follows it"),
        (["fs:write:/src/../x"], "bad atom 'fs:write:/src/../x'"),
        (["fs:write:/src/../x", "fs:write:/a"], "bad atom 'fs:write:/src/../x'"),
        (["tests/golden/explain/order.yaml", "fs:write"], "bad atom 'fs:write'"),
        (["fs:write:/a", "--format", "yaml"], "--format"),
    ],
)
def test_bad_input_is_exit_2(args: list[str], words: str) -> None:
    result = bgc("explain", "-p", POLICY, *args)
    assert result.exit_code == ExitCode.BAD_INPUT and words in result.output, result.output


def test_an_order_on_stdin_and_a_file_named_like_an_atom(tmp_path: Path) -> None:
    order = (GOLDEN / "order.yaml").read_text()
    piped = bgc("explain", "-", "fs:write:/docs/a.md", "-p", POLICY, input=order)
    assert piped.exit_code == ExitCode.OK and "applies to /docs/a.md" in piped.stdout
    named = tmp_path / "fs:write:x.yaml"
    named.write_text(order)
    found = bgc("explain", f"./{named.name}", "fs:write:/docs/a.md", "-p", str(ROOT / POLICY), cwd=tmp_path)
    assert found.exit_code == ExitCode.OK, found.output
