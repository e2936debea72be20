"""The front door: the gate's exit codes, colour, stdin sniffing, `explain -`, `fmt` over paths
and configuration, `order new`, and the fast path taking the new flags."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import cbor2
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core.values.documents import sniff_format
from bgc.errors import ExitCode
from bgc.app.render.color import use_color
from tests.samples import bgc

ROOT = Path(__file__).resolve().parents[2]
ORDER = str(ROOT / "examples/orders/deploy.yaml")
POLICY = str(ROOT / "policies/default.bgp")


# --- the gate's exit codes ----------------------------------------------------------------------

GATE_POLICY = """\
allow fs:write:/src/**
ask fs:write:/ask/**
deny fs:write:/src/secret/**
"""
GATE_ORDER = {
    "intent": {"kind": "patch.apply", "payload": None},
    "requests": ["fs:write:/**"],
    "origin": {"model": "m", "parents": [], "prompt": "sha256:" + "0" * 64},
}
ANSWERS = {
    # each class of concrete atom, and the answer written by hand
    "allow": ["fs:write:/src/a.py", "fs:write:/src/x/y/z", "fs:write:/src//b.py"],
    "ask": ["fs:write:/ask/a", "fs:write:/ask/b/c"],
    "deny": ["fs:write:/etc/passwd", "fs:write:/src/secret/k", "fs:write:src/a.py", "fs:write:/src/../etc/x",
             "fs:read:/src/a.py", "net:connect:https://x.example/"],
}  # fmt: skip
CODES = {"allow": ExitCode.OK, "ask": ExitCode.ASK, "deny": ExitCode.DENIED}


@pytest.fixture(scope="module")
def gate_plan(tmp_path_factory: pytest.TempPathFactory) -> str:
    where = tmp_path_factory.mktemp("gate")
    (where / "p.bgp").write_text(GATE_POLICY)
    (where / "o.json").write_text(json.dumps(GATE_ORDER))
    plan = where / "plan.json"
    result = bgc("compile", str(where / "o.json"), "-p", str(where / "p.bgp"), "-f", "json", "-o", str(plan), "--fail-on", "never")
    assert result.exit_code == 0, result.output
    return str(plan)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([(kind, atom) for kind, atoms in ANSWERS.items() for atom in atoms]), min_size=1, max_size=6))
def test_gate_exits_with_its_worst_answer(gate_plan: str, picked: list[tuple[str, str]]) -> None:
    result = bgc("gate", gate_plan, *[atom for _, atom in picked])
    answers = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert answers == [kind for kind, _ in picked]
    worst = "deny" if "deny" in answers else "ask" if "ask" in answers else "allow"
    assert result.exit_code == CODES[worst]


def test_gate_quiet_answers_by_exit_code_alone(gate_plan: str) -> None:
    for kind, atoms in ANSWERS.items():
        result = bgc("gate", gate_plan, "-q", atoms[0])
        assert (result.stdout, result.exit_code) == ("", CODES[kind])


# --- colour -------------------------------------------------------------------------------------


class Stream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("choice", "no_color", "force_color", "tty"),
    list(itertools.product(["auto", "always", "never"], [None, "", "1"], [None, "", "1"], [False, True])),
)
def test_the_colour_decision(
    monkeypatch: pytest.MonkeyPatch, choice: str, no_color: str | None, force_color: str | None, tty: bool
) -> None:
    """The flag is final; under auto a non-empty NO_COLOR wins, then a non-empty FORCE_COLOR, then the terminal."""
    for name, value in (("NO_COLOR", no_color), ("FORCE_COLOR", force_color)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    if choice != "auto":
        expected = choice == "always"
    elif no_color:
        expected = False
    elif force_color:
        expected = True
    else:
        expected = tty
    assert use_color(choice, Stream(tty)) is expected  # type: ignore[arg-type]


def colour_commands(tmp_path: Path, plan: str) -> dict[str, list[str]]:
    messy = tmp_path / "messy.bgp"
    messy.write_text("allow   fs:read:/**\n")
    return {
        "compile": ["compile", ORDER, "-p", POLICY],
        "explain": ["explain", ORDER, "proc:exec:kubectl", "-p", POLICY],
        "gate": ["gate", plan, "fs:write:/src/a.py", "fs:write:/etc/x"],
        "match": ["match", "/src/**", "/src/a", "/etc/x"],
        "fmt --diff": ["fmt", "--diff", str(messy)],
    }


@pytest.mark.parametrize("command", ["compile", "explain", "gate", "match", "fmt --diff"])
def test_every_printing_command_takes_color(command: str, tmp_path: Path, gate_plan: str, monkeypatch: pytest.MonkeyPatch) -> None:
    args = colour_commands(tmp_path, gate_plan)[command]
    monkeypatch.setenv("NO_COLOR", "1")
    always = bgc(*args, "--color", "always")
    assert "\x1b[" in always.stdout
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in bgc(*args).stdout
    never = bgc(*args, "--color", "never")
    assert "\x1b[" not in never.stdout and never.exit_code == always.exit_code
    monkeypatch.delenv("FORCE_COLOR")
    plain = bgc(*args)  # auto, and the in-process runner's stdout is no terminal
    assert plain.stdout == never.stdout


def test_colour_never_forges_a_line(gate_plan: str) -> None:
    """Painting wraps the escaped field: an atom's control characters stay escaped."""
    result = bgc("gate", gate_plan, "--color", "always", "fs:write:/src/a\x1b[2J\nallow\tx")
    assert len(result.stdout.splitlines()) == 1 and "\x1b[2J" not in result.stdout


# --- stdin: sniffed formats, explain - ----------------------------------------------------------


def encodings(data: object) -> dict[str, bytes]:
    return {
        "json": json.dumps(data).encode(),
        "yaml": yaml.safe_dump(data).encode(),
        "cbor": cbor2.dumps(data),
    }


blank = st.text(alphabet=" \t\r\n", max_size=3).map(str.encode)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(p.name for p in (ROOT / "examples/orders").glob("*.yaml"))), blank, st.booleans(), st.booleans())
def test_sniffing_tells_each_format(name: str, space: bytes, bom: bool, pretty: bool) -> None:
    data = yaml.safe_load((ROOT / "examples/orders" / name).read_text())
    raw = encodings(data)
    if pretty:
        raw["json"] = json.dumps(data, indent=2).encode()
    prefix = (b"\xef\xbb\xbf" if bom else b"") + space
    assert sniff_format(raw["cbor"]) == "cbor"
    assert sniff_format(prefix + raw["json"]) == "json"
    assert sniff_format(prefix + raw["yaml"]) == "yaml"


@pytest.mark.parametrize("fmt", ["json", "yaml", "cbor"])
def test_explain_reads_stdin_in_any_format(fmt: str) -> None:
    data = yaml.safe_load(Path(ORDER).read_text())
    by_file = bgc("explain", ORDER, "net:connect:https://deploy.example.com/**", "-p", POLICY)
    from_stdin = bgc("explain", "-", "net:connect:https://deploy.example.com/**", "-p", POLICY, input=encodings(data)[fmt])
    assert (from_stdin.exit_code, from_stdin.stdout) == (by_file.exit_code, by_file.stdout)
    assert by_file.exit_code == ExitCode.FINDINGS and "ask" in by_file.stdout


def test_explain_stdin_errors_name_the_guess() -> None:
    result = bgc("explain", "-", "fs:read:/a", "-p", POLICY, input="{intent: [")
    assert result.exit_code == 2 and "stdin was read as json" in result.stderr and "--input-format yaml" in result.stderr


# --- fmt over paths and the configuration --------------------------------------------------------

MESSY = "allow   fs:read:/**\n"
CLEAN = "allow fs:read:/**\n"


def test_fmt_without_paths_formats_the_configured_policies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "a.bgp").write_text(MESSY)
    (tmp_path / "pol" / "b.bgp").write_text(CLEAN)
    (tmp_path / "other.bgp").write_text(MESSY)  # not configured: left alone
    (tmp_path / "pyproject.toml").write_text('[tool.bgc]\npolicies = ["pol/*.bgp"]\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # from a subdirectory, as ruff and black allow
    check = bgc("fmt", "--check")
    assert check.exit_code == 1 and check.stdout == "would reformat ../pol/a.bgp\n"
    done = bgc("fmt", "-v")
    assert done.exit_code == 0 and done.stdout == "reformatted ../pol/a.bgp\nunchanged ../pol/b.bgp\n"
    assert (tmp_path / "pol" / "a.bgp").read_text() == CLEAN and (tmp_path / "other.bgp").read_text() == MESSY


def test_fmt_without_paths_or_configuration_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    result = bgc("fmt")
    assert result.exit_code == 2 and "no files to format" in result.stderr and "[tool.bgc]" in result.stderr


def test_fmt_directories_as_check_finds_them(tmp_path: Path) -> None:
    (tmp_path / "d" / "deep").mkdir(parents=True)
    for name in ("d/z.bgp", "d/deep/a.bgp"):
        (tmp_path / name).write_text(MESSY)
    (tmp_path / "d" / "notes.txt").write_text("allow   x\n")
    result = bgc("fmt", "--check", str(tmp_path / "d"))
    assert result.stdout.splitlines() == [f"would reformat {tmp_path}/d/deep/a.bgp", f"would reformat {tmp_path}/d/z.bgp"]
    (tmp_path / "empty").mkdir()
    empty = bgc("fmt", str(tmp_path / "empty"))
    assert empty.exit_code == 2 and "no policy files" in empty.stderr


def test_fmt_quiet_names_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.bgp"
    path.write_text(MESSY)
    assert (bgc("fmt", "--check", "-q", str(path)).stdout, bgc("fmt", "--check", "-q", str(path)).exit_code) == ("", 1)
    assert bgc("fmt", "-q", str(path)).stdout == "" and path.read_text() == CLEAN


@pytest.mark.parametrize(("text", "ending"), [("a\r\nb\nc\n", b"\r\n"), ("a\nb\r\nc\r\n", b"\n")])
def test_fmt_keeps_the_first_line_ending(tmp_path: Path, text: str, ending: bytes) -> None:
    """A file with mixed endings comes out in its first line's, as ruff and black write it."""
    lines = ["allow   fs:read:/**", "# between", "deny fs:*:/.env"]
    first, second = text.split("\n")[0].endswith("\r"), text.split("\n")[1].endswith("\r")
    raw = lines[0] + ("\r\n" if first else "\n") + lines[1] + ("\r\n" if second else "\n") + lines[2] + "\n"
    path = tmp_path / "a.bgp"
    path.write_bytes(raw.encode())
    assert bgc("fmt", str(path)).exit_code == 0
    out = path.read_bytes()
    assert out == ending.join(line.encode() for line in ["allow fs:read:/**", "# between", "deny fs:*:/.env"]) + ending


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_fmt_machine_format_without_check_names_the_missing_flag(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "a.bgp"
    path.write_text(MESSY)
    result = bgc("fmt", "--format", fmt, str(path))
    assert result.exit_code == 2 and f"--format {fmt} reports what --check finds, and --check is missing" in result.stderr
    assert path.read_text() == MESSY


# --- order new ----------------------------------------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9]{0,5}(\.[a-z][a-z0-9]{0,5}){0,2}", fullmatch=True)
segments = st.from_regex(r"[a-z0-9_]{1,6}|\*|\*\*", fullmatch=True)
atoms = st.tuples(st.sampled_from(["fs", "net", "proc"]), st.sampled_from(["read", "write"]), st.lists(segments, min_size=1, max_size=3)).map(
    lambda t: f"{t[0]}:{t[1]}:/" + "/".join(t[2])
)
prompts = st.binary(max_size=64)
calls = st.lists(
    st.fixed_dictionaries({"tool": names, "server": st.sampled_from(["local", "remote"]), "params": st.dictionaries(st.sampled_from(["path", "url", "n"]), st.text(max_size=6), max_size=2)}),
    max_size=2,
)  # fmt: skip


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names, st.one_of(st.none(), st.text(max_size=12)), st.lists(atoms, max_size=3), calls, prompts, st.sampled_from(["yaml", "json", "cbor"]))
def test_order_new_round_trips_through_digest(
    tmp_path: Path, intent: str, payload: str | None, requests: list[str], made_calls: list[dict], prompt: bytes, fmt: str
) -> None:
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_bytes(prompt)
    out = tmp_path / f"order.{fmt}"
    args = ["order", "new", "--intent", intent, "--model", "claude-opus-5", "--prompt-file", str(prompt_file), "-f", fmt, "-o", str(out)]
    args += [f"--payload={payload}"] if payload is not None else []
    for atom in requests:
        args += ["--request", atom]
    for call in made_calls:
        args += ["--call", json.dumps(call)]
    result = bgc(*args)
    assert result.exit_code == 0, result.output
    from bgc.core.values.documents import load_order

    order = load_order(str(out))
    assert str(order.origin.prompt) == "sha256:" + hashlib.sha256(prompt).hexdigest()  # the reference: hashlib, not bgc
    assert order.intent.kind == intent and order.intent.payload == payload
    assert sorted(set(requests)) == [str(atom) for atom in order.requests]
    assert [call.to_data()["params"] for call in order.calls] == [call["params"] for call in made_calls]
    digest = bgc("digest", str(out))
    assert digest.stdout.split()[0] == str(order.id())


def test_order_new_prompt_sources_agree(tmp_path: Path) -> None:
    """--prompt TEXT, --prompt - and --prompt-file read the same bytes; nothing is stripped."""
    text = "fix the off-by-one\n"
    (tmp_path / "p.txt").write_text(text)
    base = ["order", "new", "--intent", "patch.apply", "--model", "m", "-f", "json"]
    made = [
        bgc(*base, "--prompt", text).stdout,
        bgc(*base, "--prompt", "-", input=text).stdout,
        bgc(*base, "--prompt-file", str(tmp_path / "p.txt")).stdout,
        bgc(*base, "--prompt-digest", "sha256:" + hashlib.sha256(text.encode()).hexdigest()).stdout,
    ]
    assert len(set(made)) == 1 and json.loads(made[0])["origin"]["prompt"].endswith(hashlib.sha256(text.encode()).hexdigest())
    assert json.loads(bgc(*base, "--prompt", text.strip()).stdout)["origin"]["prompt"] != json.loads(made[0])["origin"]["prompt"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "give exactly one of --prompt"),
        (["--prompt", "x", "--prompt-file", "f"], "(got --prompt and --prompt-file)"),
        (["--prompt-digest", "sha256:00"], "--prompt-digest:"),
        (["--prompt", "x", "--request", "fs:write:/src/../x"], "--request (requests[0])"),
        (["--prompt", "x", "--request", "fs write"], "--request (requests[0])"),
        (["--prompt", "x", "--call", "[1]"], "--call '[1]': expected a JSON object"),
        (["--prompt", "x", "--call", '{"tool": "a", "tool": "b"}'], "duplicate key"),
        (["--prompt", "x", "--call", '{"tool": "fs write"}'], "--call (calls[0]"),
        (["--prompt", "x", "--parent", "nope"], "--parent (origin.parents[0])"),
    ],
)
def test_order_new_refuses_bad_parts_naming_the_option(tmp_path: Path, extra: list[str], message: str) -> None:
    out = tmp_path / "o.yaml"
    result = bgc("order", "new", "--intent", "patch.apply", "--model", "m", "-o", str(out), *extra)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert not out.exists()


def test_order_new_compiles() -> None:
    made = bgc("order", "new", "--intent", "patch.apply", "--model", "m", "--prompt", "p", "--request", "fs:write:/src/a.py")
    compiled = bgc("compile", "-", "-p", POLICY, input=made.stdout)
    assert compiled.exit_code == 0 and "✓ fs:write:/src/a.py" in compiled.stdout


# --- the fast path takes the new flags ----------------------------------------------------------


@pytest.mark.e2e
def test_fast_path_takes_color_and_quiet_and_prints_what_typer_prints(gate_plan: str, tmp_path: Path) -> None:
    env = {**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("NO_COLOR", None)
    env.pop("FORCE_COLOR", None)
    probe = (
        "import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', *sys.argv[1:]]\n"
        "try:\n    main()\nfinally:\n"
        "    print('HEAVY', sorted(m for m in ('typer', 'click', 'rich') if m in sys.modules), file=sys.stderr)\n"
    )
    for args in (
        ["gate", gate_plan, "fs:write:/src/a.py", "fs:write:/ask/x", "--color", "always"],
        ["gate", gate_plan, "-q", "fs:write:/ask/x"],
        ["compile", ORDER, "-p", POLICY, "--color=always"],
        ["compile", ORDER, "-p", POLICY, "-q"],
    ):
        script = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True, timeout=60)
        assert "HEAVY []" in script.stderr, (args, script.stderr)
        typed = bgc(*args)
        assert (script.returncode, script.stdout) == (typed.exit_code, typed.stdout), args


@pytest.mark.parametrize("fmt", ["json", "yaml", "cbor"])
def test_gate_reads_a_plan_from_stdin_in_any_format(gate_plan: str, fmt: str) -> None:
    data = json.loads(Path(gate_plan).read_text())
    result = bgc("gate", "-", "fs:write:/ask/a", input=encodings(data)[fmt])
    assert (result.exit_code, result.stdout.split("\t")[0]) == (ExitCode.ASK, "ask")


def test_quiet_prints_nothing_and_keeps_the_exit_code(tmp_path: Path) -> None:
    assert (bgc("match", "-q", "/src/**", "/src/a").stdout, bgc("match", "-q", "/src/**", "/src/a").exit_code) == ("", 0)
    assert (bgc("match", "-q", "/src/**", "/etc/a").stdout, bgc("match", "-q", "/src/**", "/etc/a").exit_code) == ("", 1)
    compiled = bgc("compile", ORDER, "-p", POLICY, "-q")
    assert (compiled.stdout, compiled.exit_code) == ("", ExitCode.FINDINGS)
    out = tmp_path / "plan.json"
    assert bgc("compile", ORDER, "-p", POLICY, "-q", "-f", "json", "-o", str(out)).stdout == ""
    assert json.loads(out.read_text())["order"]  # -q silences stdout, never the file asked for


# --- -q on the reporting commands: only what is wrong -------------------------------------------

QUIET_GOLDEN = ROOT / "tests" / "golden" / "quiet"
COLORS = "tests/golden/color/colors.bgp"  # a lint warning, a failing expect and a holding one
COLOR_TESTS = "tests/golden/color/colors.bgt.yaml"  # a failing and a passing test
QUIET = {
    "check": (["check", COLORS, COLOR_TESTS], ExitCode.FINDINGS),
    "test": (["test", COLOR_TESTS, COLORS, "--coverage"], ExitCode.FINDINGS),
    "diff": (["diff", "tests/golden/quiet/old.bgp", "tests/golden/quiet/new.bgp", "--fail-on", "removed"], ExitCode.FINDINGS),
    "explain": (["explain", "tests/golden/quiet/order.yaml", "fs:read:/src/**", "-p", COLORS], ExitCode.FINDINGS),
}
"""Each reporting command on input with findings: ``-q`` keeps them and drops the rest. Run
with BGC_UPDATE_GOLDEN=1 to rewrite ``tests/golden/quiet/*.txt`` after an intended change."""


@pytest.mark.parametrize("name", sorted(QUIET))
@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_reports_only_what_is_wrong(name: str, flag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    args, code = QUIET[name]
    full, quiet = bgc(*args, "--color", "never"), bgc(*args, flag, "--color", "never")
    assert full.exit_code == quiet.exit_code == code, quiet.output
    path = QUIET_GOLDEN / f"{name}.txt"
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        path.write_text(quiet.stdout, encoding="utf-8")
    assert quiet.stdout == path.read_text(encoding="utf-8")
    kept = quiet.stdout.splitlines()
    findings = [line for line in kept if "[BGC" in line] if name == "check" else kept  # check -q shows each with its source
    assert kept and set(findings) < set(full.stdout.splitlines())  # a part of the full report, never new text
    assert not [line for line in kept if "passed" in line or line.startswith(("bgc check:", "  summary:", "result"))]


@pytest.mark.parametrize("args", [["check", "policies/default.bgp"], ["test", "policies/tests"],
                                  ["diff", "policies/default.bgp", "policies/default.bgp"]])  # fmt: skip
def test_quiet_is_silent_when_nothing_is_wrong(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = bgc(*args, "-q")
    assert (result.stdout, result.exit_code) == ("", ExitCode.OK)


@pytest.mark.e2e
def test_check_quiet_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = {**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    probe = (
        "import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', *sys.argv[1:]]\n"
        "try:\n    main()\nfinally:\n"
        "    print('HEAVY', sorted(m for m in ('typer', 'click', 'rich') if m in sys.modules), file=sys.stderr)\n"
    )
    script = subprocess.run([sys.executable, "-c", probe, "check", COLORS, "-q"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert "HEAVY []" in script.stderr, script.stderr
    monkeypatch.chdir(ROOT)
    typed = bgc("check", COLORS, "-q", "--color", "never")
    assert (script.returncode, script.stdout) == (typed.exit_code, typed.stdout) and typed.stdout
