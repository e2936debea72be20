"""The kernel's commands as a user runs them, on real files (in-process, through the one runner)."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from tests.samples import bgc as run_bgc

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "policies" / "modes.bgp")


def bgc(*args: str, cwd: Path, stdin: str | None = None):  # type: ignore[no-untyped-def]
    """The command in-process (the one runner: no traceback), from ``cwd``."""
    return run_bgc(*args, input=stdin, env={"NO_COLOR": "1", "COLUMNS": "120"}, cwd=cwd)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """Keys, a plan, a token and an attenuated child, made once with the commands themselves."""
    cwd = tmp_path_factory.mktemp("kernel")
    for name in ("issuer", "kernel"):
        assert bgc("key", "new", name, cwd=cwd).exit_code == 0
    order = str(ROOT / "examples" / "orders" / "fix-bug.yaml")
    made = bgc("compile", order, "-p", POLICY, "-m", "edit", "--format", "json", "-o", "plan.json", "--fail-on", "never", cwd=cwd)
    assert made.exit_code == 0, made.stderr
    issued = bgc("token", "issue", "plan.json", "--key", "issuer", "--audience", "local", "--ttl", "1h", "-p", POLICY, "-o", "tok", cwd=cwd)
    assert issued.exit_code == 0, issued.stderr
    child = bgc("token", "attenuate", "tok", "--only", "fs:read:/src/**", "--tool", "fs.read", "-o", "child", cwd=cwd)
    assert child.exit_code == 0, child.stdout + child.stderr
    return cwd


def test_key_new_writes_a_private_file_only_its_owner_reads_and_never_prints_it(work: Path) -> None:
    private = work / ".bgc" / "keys" / "issuer.key"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    again = bgc("key", "new", "issuer", cwd=work)
    assert again.exit_code == 2 and "never overwritten" in again.stderr
    assert private.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    shown = bgc("key", "show", "issuer", cwd=work)
    assert shown.exit_code == 0 and shown.stdout.startswith("ed25519:") and "PRIVATE" not in shown.stdout
    fresh = bgc("key", "new", "third", "--dir", ".", cwd=work)
    secret = (work / "third.key").read_text()
    assert "PRIVATE KEY" not in fresh.stdout and secret.splitlines()[1] not in fresh.stdout
    assert bgc("key", "new", "../escape", cwd=work).exit_code == 2


def test_a_private_key_others_can_read_is_refused(work: Path) -> None:
    (work / "loose.key").write_bytes((work / ".bgc" / "keys" / "kernel.key").read_bytes())
    os.chmod(work / "loose.key", 0o644)
    result = bgc("token", "issue", "plan.json", "--key", "loose.key", "--audience", "local", cwd=work)
    assert result.exit_code == 2 and "chmod 600" in result.stderr


def test_token_files_are_secrets(work: Path) -> None:
    assert stat.S_IMODE((work / "tok").stat().st_mode) == 0o600
    assert bgc("token", "issue", "plan.json", "--key", "issuer", "--audience", "local", "-o", "tok", cwd=work).exit_code == 2


def test_verify_and_show(work: Path) -> None:
    assert bgc("token", "verify", "child", "--issuer", "issuer", cwd=work).exit_code == 0
    untrusted = bgc("token", "verify", "child", "--issuer", "kernel", cwd=work)
    assert untrusted.exit_code == 1 and "BGC512" in untrusted.stdout
    shown = bgc("token", "show", "child", "--format", "json", cwd=work)
    links = json.loads(shown.stdout)["links"]
    assert len(links) == 2 and [tool["tool"] for tool in links[1]["tools"]] == ["fs.read"]


def test_an_attenuation_that_widens_exits_1_with_its_counterexample(work: Path) -> None:
    result = bgc("token", "attenuate", "child", "--only", "fs:read:/**", cwd=work)
    assert result.exit_code == 1 and "BGC524" in result.stdout and "counterexample: /" in result.stdout
    result = bgc("token", "attenuate", "child", "--audience", "prod", cwd=work)
    assert result.exit_code == 1 and "prod" in result.stdout


def _message(work: Path, token: str, **fields: object) -> str:
    body = {"id": "r1", "capability_token": (work / token).read_text().strip(), "server_id": "local",
            "tool": "fs.write", "params": {"path": "/src/parse.py"}, "approval_tokens": []}  # fmt: skip
    body.update(fields)
    return json.dumps({"ToolCallRequest": body})


def test_authorize_answers_each_line_and_exits_1_on_any_refusal(work: Path) -> None:
    lines = [_message(work, "tok"), _message(work, "child"), '"Heartbeat"', "{not json"]
    result = bgc("authorize", "--issuer", "issuer", cwd=work, stdin="\n".join(lines) + "\n")
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(a["decision"], a["code"]) for a in answers] == [
        ("allow", "BGC530"), ("deny", "BGC516"), ("alive", "BGC531"), ("deny", "BGC500")
    ]  # fmt: skip
    assert result.exit_code == 1 and result.stderr == ""
    ok = bgc("authorize", "--issuer", "issuer", cwd=work, stdin=lines[0] + "\n")
    assert ok.exit_code == 0


def test_preflight_then_authorize_consumes_the_nonce_once(work: Path) -> None:
    (work / "m.json").write_text(_message(work, "tok") + "\n")
    flown = bgc("preflight", "m.json", "--kernel-key", "kernel", "--issuer", "issuer", cwd=work)
    assert flown.exit_code == 0, flown.stderr
    line = flown.stdout.strip()
    assert json.loads(line)["ToolCallRequest"]["execution_nonce"]
    args = ("authorize", "--issuer", "issuer", "--kernel-key", "kernel", "--format", "text")
    twice = bgc(*args, cwd=work, stdin=f"{line}\n{line}\n")
    first, second = twice.stdout.splitlines()
    assert first.startswith("allow\tr1\tBGC530") and second.startswith("deny\tr1\tBGC523")
    refused = bgc("preflight", "-", "--kernel-key", "kernel", "--issuer", "issuer", cwd=work,
                  stdin=_message(work, "tok", params={"path": "/.git/config"}))  # fmt: skip
    assert refused.exit_code == 1 and "BGC519" in refused.stdout


@pytest.mark.parametrize("command", [["key", "new"], ["key", "show"], ["token", "issue"], ["token", "show"],
                                     ["token", "verify"], ["token", "attenuate"], ["authorize"], ["preflight"]])  # fmt: skip
def test_every_kernel_command_explains_itself(command: list[str]) -> None:
    result = run_bgc(*command, "--help", env={"COLUMNS": "100"})
    assert result.exit_code == 0 and "Exit" in result.stdout


def test_every_command_names_a_token_by_the_digest_of_its_chain(work: Path) -> None:
    """verify, show, attenuate and authorize print one identity for a token; show prints each
    link's claimed id only as a label."""
    identity = re.search(r"sha256:[0-9a-f]{64}", bgc("token", "verify", "tok", "--issuer", "issuer", cwd=work).stdout)
    assert identity is not None
    assert json.loads(bgc("token", "show", "tok", "--format", "json", cwd=work).stdout)["token"] == identity.group(0)
    assert re.search(r"^link 0: label \S+ ", bgc("token", "show", "tok", cwd=work).stdout, re.MULTILINE)
    allowed = bgc("authorize", "--issuer", "issuer", "--store", "none", cwd=work, stdin=_message(work, "tok") + "\n")
    assert identity.group(0) in json.loads(allowed.stdout)["reason"]
    child = bgc("token", "verify", "child", "--issuer", "issuer", cwd=work).stdout
    assert identity.group(0) not in child and re.search(r"sha256:[0-9a-f]{64}", child)
