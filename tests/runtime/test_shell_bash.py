"""bgc.runtime.shell against bash itself: every program bash really runs must be among the needs (or the
command must be sent to ask).

Each command runs under ``/bin/bash -c`` with PATH holding only stub programs that record their
argv (``echo`` as a builtin is disabled so it records too), in an empty directory; the argvs they
recorded are compared with what :func:`bgc.runtime.shell.shell_atoms` says the command needs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core.resources.proc import decode_argv
from bgc.runtime.shell import shell_atoms

pytestmark = pytest.mark.e2e

BASH = shutil.which("bash") or "/bin/bash"
STUBS = ("echo", "cat", "rm", "git", "ls", "a", "b", "env", "nice", "nohup", "timeout", "sh")
# One record, one write: the programs of a pipeline run at once, and records written piece by
# piece interleaved in the log (`a|b` was once read as one program `ba`).
STUB = '#!/bin/sh\nsep=$(printf "\\037")\nr="${0##*/}"\nfor w in "$@"; do r="$r$sep$w"; done\nprintf "%s\\036" "$r" >> "$LOG"\n'

COMMANDS = [
    "echo a#b; rm x",
    "echo #x; rm y",
    'cat .e""nv',
    "r''m -f z",
    "git log --format='%H %s'",
    "echo a\\ b c",
    "a && b || rm q",
    "ls -la\nrm nl",
    "echo $'a\\tb'",
    "echo \"a'b\" 'c\"d'",
    'git commit -m "x\\"y"',
    "echo a\\\\b",
    "cat <<E\nhi\nE\nrm after",
    "cat <<E\n$(rm inside)\nE",
    "echo -- -x",
    "{ a; b; }",
    "(a; b)",
    "echo a;b",
    "echo 'a;b'",
    "echo a\\;b",
    "a|b",
    "echo ]",
    "echo a=b",
    "rm -- -rf",
    "echo $(rm sub) `git x`",
    "cat <(ls d)",
    "env X=1 rm e",
    "nice -n 3 nohup git status",
    "timeout 5 rm t",
    "sh -c 'rm c; git y'",
    "eval 'rm ev'",
    "if a; then rm then; else rm else; fi",
    "! rm bang",
    "a &\nrm bg",
    "cat $'\\x2e'env",
    "echo héllo 🎉",
    "X=1 rm x1",
    "echo x > out; rm -f out",
    # found by the adversarial pass (each was once allowed or read with the wrong argv)
    "cat <<E && rm after\nhi\nE",
    "cat <<E | rm piped\nhi\nE",
    "cat <<E'N'D\nEND\nrm early\nE'N'D",
    "cat <<$'END'\nEND\nrm early\n$'END'",
    "cat 2>/dev/null .env",
    "a >out b 2>err c",
    "cat <<E >out .env\nhi\nE",
    'git push "--for"\\ce',
    "echo 'a'\\ b",
    "coproc rm cp; wait",
    "cat <<E\n`rm bq`\nE",
]


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("stubs")
    for name in STUBS:
        path = directory / name
        path.write_text(STUB)
        path.chmod(0o755)
    return directory


def ran(stubs: Path, command: str, workdir: Path) -> list[tuple[str, ...]]:
    log = workdir / "log"
    log.write_bytes(b"")
    env = {"PATH": str(stubs), "LOG": str(log), "LC_ALL": "C.UTF-8"}
    subprocess.run([BASH, "-c", "enable -n echo; " + command], env=env, cwd=workdir, capture_output=True, timeout=30, check=False)
    records = log.read_bytes().decode("utf-8", "surrogateescape").split("\x1e")
    return [tuple(record.split("\x1f")) for record in records if record]


@pytest.mark.skipif(not os.path.exists(BASH), reason="no bash on this machine")
@pytest.mark.parametrize("command", COMMANDS, ids=[repr(c)[:40] for c in COMMANDS])
def test_every_program_bash_runs_is_needed(stubs: Path, tmp_path: Path, command: str) -> None:
    really = ran(stubs, command, tmp_path)
    assert really or command.startswith("echo #"), "the stubs recorded nothing: the harness is broken"
    analysis = shell_atoms(command, cwd=str(tmp_path))
    needed = {decode_argv(need.value) for need in analysis.needs if need.resource == "proc"}
    missing = [argv for argv in really if argv not in needed]
    assert not missing or analysis.needs_ask, (missing, analysis)


# Generated commands: pieces where tree-sitter-bash and bash were found to disagree (here-document
# delimiters and lines, quotes glued to escapes, escaped blanks, words after redirections, reserved
# words, control characters), joined at random. The adversarial pass that found them ran 100,000 of
# these; this keeps a sample in the suite.
PIECES = [
    "a", "b x", "rm y", "cat z", "'a'", '"b"', "\\a", "\\ ", "\\\t", "a\\ b", '"a"\\b', "'r'\\m", "$'a'",
    " ", " ", "\n", ";", "&&", "||", "|", "&", "(", ")", "{ ", " }", "!", "#", "\r", "\f",
    ">o", "2>/dev/null", "<&-", ">&2", "<<<w", " <<E\n", " <<'E'\n", " <<E'N'D\n", " <<-E\n", "E\n", "\tE\n",
    "END\n", "E'N'D\n", "`rm q`", "$(rm s)", "for", "do", "done", "coproc", "time -p", "env --", "X=1",
]


@pytest.mark.skipif(not os.path.exists(BASH), reason="no bash on this machine")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join))
def test_generated_commands_need_every_program_bash_runs(stubs: Path, tmp_path: Path, command: str) -> None:
    analysis = shell_atoms(command, cwd=str(tmp_path))
    if analysis.needs_ask:
        return  # at best asked: nothing is allowed on it
    needed = {decode_argv(need.value) for need in analysis.needs if need.resource == "proc"}
    missing = [argv for argv in ran(stubs, command, tmp_path) if argv not in needed]
    assert not missing, (missing, analysis)
