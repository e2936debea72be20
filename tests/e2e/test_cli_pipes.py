"""A reader that goes away (``bgc … | head``) ends every command quietly with exit 141, through
both argument adapters: never a traceback, never "Exception ignored", never 1 (a finding) and
never 0 (not every answer was delivered)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bgc.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
BGC = str(Path(sys.executable).parent / "bgc")
ORDER = "examples/orders/deploy.yaml"
POLICY = "policies/default.bgp"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    subprocess.run([BGC, "compile", ORDER, "-p", POLICY, "--format", "json", "-o", str(path), "--fail-on", "never"], cwd=ROOT, check=True)
    return str(path)


def into_closed_pipe(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """Run ``bgc`` with stdout a pipe whose reader has already gone: its first write fails."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [BGC, *args], stdout=write, stderr=subprocess.PIPE, input=stdin, cwd=ROOT, timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(write)


CASES = {
    "compile (fast path)": ([ORDER, "-p", POLICY], b""),
    "compile (typer)": ([ORDER, "-p", POLICY, "--", ORDER], b""),
    "gate (fast path)": (["{plan}", "fs:write:/src/a.py", "net:connect:https://deploy.example.com/x"], b""),
    "gate (typer)": (["{plan}", "--", "fs:write:/src/a.py"], b""),
    "gate (stdin)": (["{plan}"], b"fs:write:/src/a.py\n" * 1000),
    "explain": ([ORDER, "proc:exec:kubectl", "-p", POLICY], b""),
    "match": (["/src/**", "/src/a", "/etc/x"], b""),
    "digest": ([ORDER], b""),
    "fmt": (["-"], b"allow   fs:read:/**\n"),
    "check (fast path)": ([POLICY], b""),
    "check (typer)": (["--", POLICY], b""),
    "test": (["policies"], b""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_closed_pipe_is_a_quiet_exit(case: str, plan: str) -> None:
    args, stdin = CASES[case]
    command = case.split()[0]
    done = into_closed_pipe([command, *[arg.replace("{plan}", plan) for arg in args]], stdin)
    assert done.stderr == b"", done.stderr.decode(errors="replace")
    assert done.returncode == ExitCode.CLOSED_PIPE


def test_click_s_own_writes_count_too() -> None:
    """Output click writes itself (``--version``) meets the pipe inside click, which swallows it
    and exits 1 (a finding); the edge turns that back into the quiet exit."""
    done = into_closed_pipe(["--version"])
    assert (done.returncode, done.stderr) == (ExitCode.CLOSED_PIPE, b"")


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["check", "--help"], ["test", "-h"], ["token", "issue", "--help"], []])
def test_help_into_a_closed_pipe_is_the_quiet_exit(args: list[str]) -> None:
    """``bgc --help | head -1``: rich prints help, and on a closed pipe it points stdout at
    /dev/null and exits 1 itself; the edge tells that from a finding (bgc.app.guard._identity).
    The top level, a fast-path command, a typer command, a group's subcommand and no arguments
    at all (help too) each end quietly with 141."""
    done = into_closed_pipe(args)
    assert (done.returncode, done.stderr) == (ExitCode.CLOSED_PIPE, b"")


def test_output_sent_to_dev_null_keeps_its_real_exit_code(tmp_path: Path) -> None:
    """The control for the test above: /dev/null from the start is no reader gone. Help still
    exits 0 and a finding still exits 1 (the edge looks for stdout *becoming* /dev/null)."""
    policy = tmp_path / "p.bgp"
    policy.write_text("allow fs:read:/**\nexpect deny fs:read:/a\n", encoding="utf-8")
    with open(os.devnull, "wb") as devnull:
        helped = subprocess.run([BGC, "--help"], stdout=devnull, stderr=subprocess.PIPE, cwd=ROOT, timeout=120)
        found = subprocess.run([BGC, "check", str(policy)], stdout=devnull, stderr=subprocess.PIPE, cwd=tmp_path, timeout=120)
    assert (helped.returncode, helped.stderr) == (ExitCode.OK, b"")
    assert (found.returncode, found.stderr) == (ExitCode.FINDINGS, b"")


def test_an_open_pipe_still_gets_every_answer(plan: str) -> None:
    """The control: the same gate run into a pipe someone reads ends with its real answer."""
    done = subprocess.run([BGC, "gate", plan, "fs:write:/src/a.py", "proc:exec:kubectl"], capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == ExitCode.DENIED and len(done.stdout.splitlines()) == 2


@pytest.mark.parametrize("into", ["pipe", "file"])
def test_a_fast_command_leaving_without_teardown_delivers_every_answer(plan: str, tmp_path: Path, into: str) -> None:
    """The console script ends a fast command with ``os._exit`` (bgc.app.launch.leave_now) once its
    streams are flushed: every one of many answers arrives, on stdout and stderr, with the worst
    answer's exit code, and no exit handler runs (the teardown really is skipped)."""
    atoms = [f"fs:write:/src/f{i}.py" for i in range(20_000)] + ["proc:exec:kubectl"]
    probe = ("import atexit, sys\nfrom bgc.app.launch import console\n"
             "atexit.register(lambda: print('TEARDOWN', file=sys.stderr))\nsys.argv = ['bgc', *sys.argv[1:]]\nconsole()\n")  # fmt: skip
    out = tmp_path / "answers"
    with open(out, "wb") as file:
        done = subprocess.run([sys.executable, "-c", probe, "gate", plan], input="\n".join(atoms).encode(),
                              stdout=subprocess.PIPE if into == "pipe" else file, stderr=subprocess.PIPE, cwd=ROOT, timeout=120)  # fmt: skip
    lines = (done.stdout if into == "pipe" else out.read_bytes()).decode().splitlines()
    assert done.returncode == ExitCode.DENIED and b"TEARDOWN" not in done.stderr, done.stderr
    assert [line.split("\t")[1] for line in lines] == atoms and lines[-1].startswith("deny\t")
    broken = subprocess.run([sys.executable, "-c", probe, "gate", str(tmp_path / "missing.json"), "fs:read:/a"],
                            capture_output=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert broken.returncode == ExitCode.BAD_INPUT and broken.stdout == b"" and b"TEARDOWN" not in broken.stderr
    assert b"missing.json" in broken.stderr
