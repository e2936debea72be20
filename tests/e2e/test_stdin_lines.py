"""``bgc gate``, ``bgc match`` and ``bgc authorize`` decide every line on its own, whatever its bytes and the locale.

They read one atom (or text) per line. Under a strict UTF-8 locale one line that was not UTF-8
was an internal error that decided nothing; under a Latin-1 locale ``\\xff`` was read as ``ÿ``
and matched; text-mode reading split a line at a lone CR, so the answers no longer lined up with
the questions. The class is every kind of invalid UTF-8 (a lone continuation byte, an overlong
form, an encoded surrogate, a code point above U+10FFFF, a byte that never occurs, a truncated
sequence, Latin-1 text) at every place in a line (inside the value, at its end, before a CRLF, in
the resource), read by real processes under several locales and stdio encodings. Each such line
must be denied (no-match for ``match``) with its bytes escaped as ``\\xNN`` and a reason, every
other line decided as usual, one answer per line, in order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bgc.errors import ExitCode
from tests.samples import PROMPT, bgc

INVALID = [
    b"\x80", b"\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xfe", b"\xff", b"\xe2\x82",
    b"\xf0\x9f\x98", b"\xe9",
]  # fmt: skip
"""Byte strings that are not UTF-8, one of each kind."""

PLACES = {
    "value": (b"fs:write:/src/a", b".py\n"),
    "end": (b"fs:write:/src/a", b"\n"),
    "crlf": (b"fs:write:/src/a", b"\r\n"),
    "resource": (b"f", b"s:write:/src/a.py\n"),
}

ENVIRONMENTS = {
    "C": {"LC_ALL": "C"},
    "C.UTF-8": {"LC_ALL": "C.UTF-8"},
    # what a strict UTF-8 locale (en_US.UTF-8) gives stdin, in a container that has none installed
    "strict-utf8": {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict"},
    "latin-1": {"LC_ALL": "C", "PYTHONIOENCODING": "latin-1"},
}


MATCH_ENVIRONMENTS = ("C.UTF-8", "strict-utf8", "latin-1")
"""``match`` reads stdin as ``gate`` does: one process fewer, where it proves least."""


def shown(raw: bytes) -> str:
    """How an echoed field shows ``raw``: bytes that are not UTF-8 as ``\\xNN``, a CRLF's CR dropped."""
    return raw.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", "backslashreplace")


def lines() -> list[bytes]:
    """Every invalid sequence at every place, each between two lines that must be decided normally."""
    out = []
    for before, after in PLACES.values():
        for bad in INVALID:
            out += [b"fs:write:/src/ok.py\n", before + bad + after, b"fs:write:/etc/passwd\n"]
    return out + [b"fs:write:/src/a.py\rfs:write:/etc/passwd\n", "fs:write:/src/é.py\r\n".encode()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], subprocess.CompletedProcess[bytes]]:
    """``gate`` and ``match`` over :func:`lines` in every environment, run in parallel."""
    work = tmp_path_factory.mktemp("stdin")
    (work / "p.bgp").write_text("allow fs:write:/src/**\n")
    (work / "o.yaml").write_text(
        "intent: {kind: patch.apply, payload: x}\n"
        'requests: ["fs:write:/src/**"]\n'
        f'origin: {{model: m, prompt: "{PROMPT}"}}\n'
    )
    plan = str(work / "plan.json")
    compiled = bgc("compile", str(work / "o.yaml"), "-p", str(work / "p.bgp"), "--format", "json", "-o", plan)
    assert compiled.exit_code == 0
    data = b"".join(lines())
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8"))}
    commands = {"gate": ["gate", plan], "match": ["match", "fs:write:/src/**", "--raw"]}
    started = {
        (env, command): subprocess.Popen(
            [sys.executable, "-m", "bgc.app.cli", *argv],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**base, **extra, "BGC_CACHE_DIR": str(work / "cache")},
        )  # fmt: skip
        for env, extra in ENVIRONMENTS.items()
        for command, argv in commands.items()
        if command == "gate" or env in MATCH_ENVIRONMENTS
    }
    results = {}
    for key, process in started.items():
        stdout, stderr = process.communicate(data, timeout=120)
        results[key] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return results


def valid(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def answers(result: subprocess.CompletedProcess[bytes], env: str, code: ExitCode) -> list[str]:
    assert result.returncode == code and result.stderr == b"", result.stderr.decode(errors="replace")
    return result.stdout.decode("latin-1" if env == "latin-1" else "utf-8").splitlines()


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_gate_denies_each_invalid_line_and_decides_the_others(runs, env: str) -> None:  # type: ignore[no-untyped-def]
    asked, answered = lines(), answers(runs[env, "gate"], env, ExitCode.DENIED)
    assert len(answered) == len(asked)  # one answer per line, in order: a lone CR splits nothing
    for raw, answer in zip(asked, answered):
        effect, atom, *reason = answer.split("\t")
        assert atom == shown(raw).replace("\r", "\\r"), answer
        if not valid(raw):
            assert effect == "deny" and reason[0], answer
            if raw.startswith(b"fs:write:"):
                assert reason[0].startswith("rejected: is not valid UTF-8 (byte 0x"), answer
        else:
            granted = raw.startswith((b"fs:write:/src/ok", "fs:write:/src/é".encode()))
            assert effect == ("allow" if granted else "deny"), answer


@pytest.mark.parametrize("env", MATCH_ENVIRONMENTS)
def test_match_rejects_each_invalid_line_even_raw(runs, env: str) -> None:  # type: ignore[no-untyped-def]
    asked, answered = lines(), answers(runs[env, "match"], env, ExitCode.FINDINGS)
    assert len(answered) == len(asked)
    for raw, answer in zip(asked, answered):
        verdict, text, *reason = answer.split("\t")
        assert text == shown(raw).replace("\r", "\\r"), answer
        if valid(raw):
            assert verdict in ("match", "no-match"), answer
        else:
            assert verdict == "rejected" and reason[0].startswith("is not valid UTF-8 (byte 0x"), answer


def test_arguments_that_were_not_utf8_are_rejected_even_raw() -> None:
    """On POSIX, arguments arrive as Python decodes them: a byte that was not UTF-8 as a lone
    surrogate (surrogateescape); ``--raw`` matches text as given, and such bytes are no text."""
    result = bgc("match", "--raw", "/src/*", "/src/\udcff", "/src/a")
    assert result.exit_code == 1
    assert result.output.splitlines() == ["rejected\t/src/\\xff\tis not valid UTF-8 (byte 0xFF)", "match\t/src/a"]


# ---- bgc authorize: one message per line feed, from files as from stdin ------------------------

SEPARATORS_IN_STRINGS = ["\u2028", "\u2029", "\x85"]
"""Characters ``str.splitlines`` ends a line at that JSON allows raw inside a string."""


def authorize_lines() -> list[bytes]:
    """Requests whose strings hold every Unicode line separator, every invalid UTF-8 sequence, a
    bare CR, each between heartbeats: one answer per line feed, none of them decided as another."""
    out = []
    for separator in SEPARATORS_IN_STRINGS:
        request = {"id": f"r{separator}1", "capability_token": "t", "server_id": "s", "tool": f"t{separator}",
                   "params": {"p": f"é{separator}\"Heartbeat\""}, "approval_tokens": []}  # fmt: skip
        out += [b'"Heartbeat"\n', json.dumps({"ToolCallRequest": request}, ensure_ascii=False).encode() + b"\n"]
    for bad in INVALID:
        out += [b'"Heartbeat"\n', b'{"ToolCallRequest":{"id":"' + bad + b'"}}\n']
    return out + [b'"Heartbeat"\r"Heartbeat"\n', b'"Heartbeat"\r\n']


@pytest.mark.parametrize("env", ["C", "latin-1", "strict-utf8"])
@pytest.mark.parametrize("source", ["file", "stdin"])
def test_authorize_answers_each_line_feed_once_and_refuses_what_is_not_utf8(tmp_path, env: str, source: str) -> None:  # type: ignore[no-untyped-def]
    assert bgc("key", "new", "issuer", "--dir", str(tmp_path)).exit_code == 0
    messages = tmp_path / "messages.jsonl"
    asked = authorize_lines()
    messages.write_bytes(b"".join(asked))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8"))}
    result = subprocess.run(
        [sys.executable, "-m", "bgc", "authorize", "--store", "none", "--issuer", str(tmp_path / "issuer.pub"),
         str(messages) if source == "file" else "-"],
        input=None if source == "file" else messages.read_bytes(), capture_output=True,
        env={**base, **ENVIRONMENTS[env]}, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == ExitCode.FINDINGS and result.stderr == b"", result.stderr.decode(errors="replace")
    assert result.stdout.isascii()  # JSON in any locale
    answered = [json.loads(line) for line in result.stdout.decode("ascii").splitlines()]
    assert len(answered) == len(asked)
    for raw, answer in zip(asked, answered):
        if raw == b'"Heartbeat"\n' or raw == b'"Heartbeat"\r\n':
            assert answer["decision"] == "alive", answer
        elif not valid(raw) or b"\r" in raw.removesuffix(b"\r\n"):
            assert answer["code"] == "BGC500" and "\ufffd" not in json.dumps(answer, ensure_ascii=False), answer
        else:
            assert answer["decision"] == "deny" and answer["code"] != "BGC500", answer


def test_authorize_refuses_a_stdin_line_longer_than_any_message_and_goes_on(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Consumed by the shared line reader without being held whole (its own tests show the bound)."""
    assert bgc("key", "new", "issuer", "--dir", str(tmp_path)).exit_code == 0
    huge = b'{"ToolCallRequest":"' + b"x" * (5 * 1024 * 1024) + b'"}\n"Heartbeat"\n'
    result = bgc("authorize", "--store", "none", "--issuer", str(tmp_path / "issuer.pub"), input=huge)
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first["code"] == "BGC500" and "at most" in first["reason"] and second["decision"] == "alive"
