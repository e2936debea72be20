"""`bgc check` over a repository (config, recorded expectations, --update), machine formats of
every finding-producing command, and one exit-code table for all of them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bgc.app.launch import fast_arguments
from tests.samples import POLICY, PROMPT, bgc

ROOT = Path(__file__).resolve().parents[3]

ORDER = f"""\
intent: {{kind: patch.apply}}
calls:
  - {{tool: fs.write, params: {{path: /src/a.py}}}}
requests:
  - "fs:read:/docs/**"
  - "fs:write:/src/**"
origin: {{model: m, parents: [], prompt: "{PROMPT}"}}
"""

TESTS = """\
policy: ../policies/p.bgp
tests:
  - name: source
    order: ../orders/one.yaml
    verdicts: {"fs:write:/src/**": narrowed}
"""


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    for name, text in {
        "policies/p.bgp": POLICY,
        "orders/one.yaml": ORDER,
        "tests/p.bgt.yaml": TESTS,
        "bgc.toml": 'policy = "policies/p.bgp"\npolicies = ["policies/*.bgp"]\ntests = ["tests"]\norders = "orders"\n',
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BGC_CACHE_DIR", str(tmp_path / ".cache"))
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


RECORDING = "orders/one.yaml.expected.json"


def test_record_then_pass_then_catch_a_change(repo: Path) -> None:
    first = bgc("check")
    assert first.exit_code == 1
    assert "orders/one.yaml: error[BGC222]: no recorded expectation one.yaml.expected.json" in first.stdout
    updated = bgc("check", "--update")
    assert updated.exit_code == 0, updated.stdout
    assert f"recorded {RECORDING}" in updated.stdout
    recorded = json.loads((repo / RECORDING).read_text())
    assert [(r["atom"], r["verdict"]) for r in recorded["requests"]] == [
        ("fs:read:/docs/**", "granted"), ("fs:write:/src/**", "narrowed")
    ]
    assert "rules" not in json.dumps(recorded)  # semantics only: moving a rule does not churn
    clean = bgc("check")
    assert clean.exit_code == 0
    assert clean.stdout.splitlines()[-2:] == ["orders: 1 checked, 1 match their recorded expectations",
                                              "bgc check: all checks passed"]
    # reordering the policy changes no outcome: still clean
    (repo / "policies/p.bgp").write_text("\n".join(reversed(POLICY.splitlines())) + "\n")
    assert bgc("check").exit_code == 0
    # a real change is caught, located at the request it changed
    (repo / "policies/p.bgp").write_text(POLICY.replace("allow fs:read:/**", "allow fs:read:/src/**"))
    changed = bgc("check")
    assert changed.exit_code == 1
    assert ("orders/one.yaml:5:5: error[BGC221]: fs:read:/docs/**: recorded granted (granted fs:read:/docs/**), "
            "now denied (denied fs:read:/docs/**)") in changed.stdout
    assert bgc("check", "--update").exit_code == 0
    assert json.loads((repo / RECORDING).read_text())["requests"][0]["verdict"] == "denied"


def test_stale_recordings_and_a_configured_directory(repo: Path) -> None:
    (repo / "bgc.toml").write_text((repo / "bgc.toml").read_text() + 'expectations = "expected"\n')
    assert bgc("check", "--update").exit_code == 0
    assert (repo / "expected/one.yaml.expected.json").is_file()
    (repo / "expected/sub").mkdir()
    (repo / "expected/one.yaml.expected.json").rename(repo / "expected/sub/gone.yaml.expected.json")
    stale = bgc("check")
    assert stale.exit_code == 1
    assert "expected/sub/gone.yaml.expected.json: error[BGC223]" in stale.stdout
    assert "orders/one.yaml: error[BGC222]" in stale.stdout
    assert bgc("check", "--update").exit_code == 0
    assert sorted(p.relative_to(repo).as_posix() for p in (repo / "expected").rglob("*.json")) == [
        "expected/one.yaml.expected.json"
    ]


def test_bad_input_exits_2_and_update_writes_nothing(repo: Path) -> None:
    (repo / "orders/broken.yaml").write_text("intent: {kind: x\n")
    result = bgc("check", "--update")
    assert result.exit_code == 2
    assert "orders/broken.yaml:2:1: error[BGC099]: invalid YAML" in result.stdout
    assert "nothing was recorded" in result.stdout
    assert not (repo / RECORDING).exists()
    sarif = json.loads(bgc("check", "--format", "sarif").stdout)
    assert "BGC099" in {r["ruleId"] for r in sarif["runs"][0]["results"]}


def test_nothing_to_check_without_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    result = bgc("check")
    assert result.exit_code == 2 and "nothing to check" in result.stderr
    (tmp_path / "x.txt").write_text("")
    other = bgc("check", "x.txt")
    assert other.exit_code == 2 and "not a policy (.bgp)" in other.stderr


def test_orders_only(repo: Path) -> None:
    (repo / "tests/p.bgt.yaml").write_text("not: [a test file")  # not looked at
    result = bgc("check", "--orders")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith("orders/one.yaml: error[BGC222]")
    assert bgc("check", "--orders", "--update").exit_code == 0
    assert bgc("check", "--orders", "orders/one.yaml").exit_code == 0
    assert bgc("check", "--orders", "policies/p.bgp").exit_code == 2


def test_paths_by_kind(repo: Path) -> None:
    bgc("check", "--update")
    result = bgc("check", "policies/p.bgp", "tests/p.bgt.yaml", "orders/one.yaml")
    assert result.exit_code == 0
    assert "policies/p.bgp: 3 rules" in result.stdout
    assert "tests/p.bgt.yaml ." in result.stdout
    assert "orders: 1 checked, 1 match" in result.stdout


MODES = """\
default mode readonly
allow fs:read:/**
mode readonly {
  deny fs:write:/**
}
mode edit {
  allow fs:write:/src/**
}
"""


def test_a_mode_typo_fails_check_and_test_as_it_fails_compile(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "policies/m.bgp").write_text(MODES)
    config = 'policy = "policies/m.bgp"\nmode = "edt"\npolicies = ["policies/*.bgp"]\ntests = ["tests"]\norders = "orders"\n'
    (repo / "bgc.toml").write_text(config)
    located = ("bgc.toml:2:8: error: mode: unknown mode 'edt' (the policy declares: readonly, edit)\n"
               '  mode = "edt"\n         ^\n')  # fmt: skip
    for args in (["check"], ["check", "policies/p.bgp"], ["check", "--orders"], ["test"], ["test", "tests/p.bgt.yaml"],
                 ["compile", "orders/one.yaml"]):  # fmt: skip
        result = bgc(*args)
        assert (result.exit_code, result.stderr) == (2, located), args
    monkeypatch.chdir(repo / "orders")  # from a subdirectory: the same place, named from the root
    for args in (["check"], ["test", "../tests/p.bgt.yaml"], ["compile", "one.yaml"]):
        assert bgc(*args).stderr == located, args
    monkeypatch.chdir(repo)
    (repo / "bgc.toml").write_text(config.replace('"edt"', '"edit"'))
    assert bgc("check", "--update").exit_code == 0
    assert json.loads((repo / RECORDING).read_text())["mode"] == "edit"


def test_every_path_printed_is_repository_relative_from_a_subdirectory(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "policies/p.bgp").write_text(POLICY + "deny fs:write:/.github/**\nexpect allow fs:write:/src/secrets/x\n")
    (repo / "tests/p.bgt.yaml").write_text(TESTS.replace("narrowed", "granted"))
    (repo / "orders/broken.yaml").write_text("intent: {kind: x\n")
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    files = {"policies/p.bgp", "tests/p.bgt.yaml", "orders/one.yaml", "orders/broken.yaml"}
    for args in (["check"], ["test"], ["check", "../policies/p.bgp", "../tests/p.bgt.yaml", str(repo / "orders/one.yaml")],
                 ["test", str(repo / "tests"), "../policies"]):  # fmt: skip
        result = bgc(*args)
        assert result.exit_code in (1, 2), (args, result.output)
        assert str(repo) not in result.output and "../" not in result.output, (args, result.output)
        located = re.findall(r"^(\S+?):\d+:\d+: ", result.output, re.MULTILINE)
        headers = re.findall(r"^(\S+) [.F]+$", result.output, re.MULTILINE)
        assert located and headers and set(located + headers) <= files, (args, result.output)
    everything = bgc("check").stdout
    for place in ("policies/p.bgp:6:15: warning[BGC103]", "policies/p.bgp:7:1: error[BGC201]",
                  "orders/broken.yaml:2:1: error[BGC099]", "orders/one.yaml: error[BGC222]",
                  "tests/p.bgt.yaml:5:36: error[BGC211]: fs:write:/src/**: expected granted"):  # fmt: skip
        assert place in everything, (place, everything)


def test_order_counts_and_wording(repo: Path) -> None:
    updated = bgc("check", "--update")  # the order had no recording: it is missing, not out of date
    assert "orders: 1 checked, 1 recording missing, 0 out of date, 0 stale" in updated.stdout
    recording = repo / RECORDING
    recording.write_text(recording.read_text().replace('"narrowed"', '"granted"'))
    assert "orders: 1 checked, 0 recordings missing, 1 out of date, 0 stale" in bgc("check", "--update").stdout
    assert "orders: 1 checked, 0 recordings missing, 0 out of date, 0 stale" in bgc("check", "--update").stdout
    (repo / "orders/broken.yaml").write_text("intent: {kind: x\n")
    result = bgc("check")
    assert result.exit_code == 2
    assert "orders: 1 checked, 1 order could not be read, 1 match their recorded expectations" in result.stdout
    summary = json.loads(bgc("check", "--format", "json").stdout)["summary"]["orders"]
    assert summary == {"checked": 1, "unreadable": 1, "differ": 0, "stale": 0}


def test_a_recording_named_on_the_command_line_says_what_it_is(repo: Path) -> None:
    bgc("check", "--update")
    result = bgc("check", RECORDING)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{RECORDING}: error: a recorded expectation, not a work order")
    assert "check the order it records (orders/one.yaml)" in result.stderr
    (repo / "bgc.toml").write_text((repo / "bgc.toml").read_text() + 'expectations = "expected"\n')
    bgc("check", "--update")
    mirrored = bgc("check", "expected/one.yaml.expected.json")
    assert mirrored.exit_code == 2 and "check the order it records (orders/one.yaml)" in mirrored.stderr


# --- machine formats -----------------------------------------------------------------------------


def test_check_formats(repo: Path) -> None:
    (repo / "policies/p.bgp").write_text(POLICY + "expect allow fs:write:/src/secrets/x\n")
    document = json.loads(bgc("check", "--format", "json").stdout)
    assert {f["rule"] for f in document["findings"]} == {"BGC201", "BGC222"}
    assert document["summary"]["tests"] == {"passed": 1, "failed": 0}
    sarif = json.loads(bgc("check", "--format", "sarif").stdout)
    rules = {rule["id"]: rule["shortDescription"]["text"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["BGC222"] == "an order has no recorded expectation"
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert uris == {"policies/p.bgp", "orders/one.yaml"}
    github = bgc("check", "--format", "github").stdout.splitlines()
    assert [line.split("::")[1].split(",")[0] for line in github] == ["error file=orders/one.yaml", "error file=policies/p.bgp"]
    assert github[1].startswith("::error file=policies/p.bgp,line=6,endLine=6,col=1,endColumn=")


def test_real_sarif_outputs_validate(repo: Path) -> None:
    from tests.app.render.test_machine_formats import validate_sarif

    (repo / "policies/p.bgp").write_text(POLICY + "expect allow fs:write:/src/secrets/x\n")
    (repo / "ugly.bgp").write_text("allow   fs:read:/**\n")
    for args in (["check"], ["compile", "orders/one.yaml"], ["fmt", "--check", "ugly.bgp"], ["test", "tests"]):
        result = bgc(*args, "--format", "sarif")
        document = json.loads(result.stdout)
        assert document["runs"][0]["results"], args
        validate_sarif(document)


def test_compile_sarif_and_github_agree_with_the_exit_code(repo: Path) -> None:
    for fail_on, code in (("narrowed", 1), ("denied", 0)):
        result = bgc("compile", "orders/one.yaml", "--format", "github", "--fail-on", fail_on)
        assert result.exit_code == code
        line = result.stdout.strip()
        level = "error" if code else "notice"
        assert line == (f"::{level} file=orders/one.yaml,line=6,col=5,title=BGC701::fs:write:/src/**: narrowed, "
                        "only fs:write:/src/** except /src/secrets, /src/secrets/** is granted")
    sarif = json.loads(bgc("compile", "orders/one.yaml", "--format", "sarif").stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "BGC701" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 6, "startColumn": 5}


def test_fmt_check_formats(repo: Path) -> None:
    (repo / "policies/p.bgp").write_text(POLICY.replace("allow fs:write:/src/**", "allow   fs:write:/src/**"))
    result = bgc("fmt", "--check", "--format", "github", "policies/p.bgp")
    assert result.exit_code == 1
    assert result.stdout.startswith("::error file=policies/p.bgp,line=2,col=1,title=BGC601::not in the canonical layout")
    assert bgc("fmt", "--format", "json", "policies/p.bgp").exit_code == 2  # formats go with --check
    bgc("fmt", "policies/p.bgp")
    clean = json.loads(bgc("fmt", "--check", "--format", "json", "policies/p.bgp").stdout)
    assert clean["findings"] == [] and bgc("fmt", "--check", "policies/p.bgp").exit_code == 0


def test_one_exit_code_table_for_every_command(repo: Path) -> None:
    """0 clean, 1 findings, 2 bad input — whatever the command."""
    bgc("check", "--update")
    (repo / "good.bgt.yaml").write_text(TESTS.replace("../", ""))
    (repo / "bad.bgp").write_text("allow fs:write:/src/[\n")
    (repo / "fail.bgt.yaml").write_text(TESTS.replace("../", "").replace("narrowed", "granted"))
    (repo / "ugly.bgp").write_text("allow   fs:read:/**\n")
    (repo / "granted.yaml").write_text(ORDER.replace('  - "fs:write:/src/**"\n', '  - "fs:write:/src/a.py"\n'))
    cases = {
        "check": (["check"], ["check", "ugly.bgp", "fail.bgt.yaml"], ["check", "bad.bgp"]),
        "test": (["test", "good.bgt.yaml"], ["test", "fail.bgt.yaml"], ["test", "bad.bgp"]),
        "compile": (["compile", "granted.yaml"], ["compile", "orders/one.yaml"], ["compile", "bad.bgt.yaml"]),
        "fmt --check": (["fmt", "--check", "policies/p.bgp"], ["fmt", "--check", "ugly.bgp"], ["fmt", "--check", "bad.bgp"]),
    }
    for command, (clean, findings, bad) in cases.items():
        assert [bgc(*args).exit_code for args in (clean, findings, bad)] == [0, 1, 2], command
        assert bgc(*bad, "--format", "nope").exit_code == 2, command


# --- the fast start-up path ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["check"], ("check", [], {})),
        (["check", "a.bgp", "--format", "sarif", "b.bgt.yaml"], ("check", ["a.bgp", "b.bgt.yaml"], {"output_format": "sarif"})),
        (["check", "--format=github", "--update", "--orders"],
         ("check", [], {"output_format": "github", "update": True, "orders_only": True})),
        (["check", "--select", "BGC1", "--ignore=BGC104,BGC103", "--ignore", "BGC120"],
         ("check", [], {"select": ["BGC1"], "ignore": ["BGC104,BGC103", "BGC120"]})),
        (["check", "--help"], None),
        (["check", "--format"], None),
        (["check", "--format", "xml"], None),
        (["check", "--update", "--update"], None),
        (["check", "--update=1"], None),
        (["check", "-"], None),
        (["gate", "plan.json", "fs:read:/a", "-p", "p.bgp", "--expect-plan", "A", "--expect-plan=B"],
         ("gate", ["plan.json", "fs:read:/a"], {"policy": "p.bgp", "expect_plan": ["A", "B"]})),
        (["gate", "-", "fs:read:/-x"], ("gate", ["-", "fs:read:/-x"], {})),
        (["gate"], None),
        (["gate", "p.json", "--", "-x"], None),
        (["compile", "x.yaml", "-p", "p.bgp", "-f", "json", "-o", "out.json", "--fail-on", "never"],
         ("compile", ["x.yaml"], {"policy": "p.bgp", "output_format": "json", "output": "out.json", "fail_on": "never"})),
        (["compile", "x.yaml", "--fail-on", "sometimes"], None),
        (["compile", "x.yaml", "-p", "a", "-p", "b"], None),
        (["explain", "x.yaml", "fs:read:/a"], None),
        ([], None),
    ],
)
def test_fast_path_recognises_only_plain_forms(argv: list[str], parsed: object) -> None:
    assert fast_arguments(argv) == parsed


@pytest.mark.e2e
def test_fast_path_and_typer_print_the_same(repo: Path) -> None:
    """The console script (fast path) and the typer command: same bytes, same exit code."""
    (repo / "policies/p.bgp").write_text(POLICY + "expect allow fs:write:/src/secrets/x\n")
    env = {**os.environ, "BGC_CACHE_DIR": str(repo / ".cache")}
    for args in (["check"], ["check", "--format", "sarif"], ["check", "policies/p.bgp"], ["check", "--orders"],
                 ["check", "--ignore", "BGC1"], ["check", "--select", "BGC2"]):
        script = subprocess.run(
            [sys.executable, "-c", "from bgc.app.launch import main; main()", *args],
            cwd=repo, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert "typer" not in script.stderr
        typed = bgc(*args)
        assert (script.returncode, script.stdout) == (typed.exit_code, typed.stdout), args


@pytest.mark.e2e
def test_gate_and_compile_fast_paths_print_what_typer_prints_without_importing_it(tmp_path: Path) -> None:
    """`bgc gate` and `bgc compile` in their plain forms: same bytes and exit code as the typer
    commands, and neither typer, click, rich nor pydantic in the process."""
    env = {**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    plan = tmp_path / "plan.json"
    order = str(ROOT / "examples/orders/overreach.yaml")
    policy = str(ROOT / "policies/default.bgp")
    bgc("compile", order, "-p", policy, "-f", "json", "-o", str(plan), "--fail-on", "never")
    probe = (
        "import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', *sys.argv[1:]]\n"
        "try:\n    main()\nfinally:\n"
        "    heavy = ('typer', 'click', 'rich', 'pydantic')\n"
        "    print('HEAVY', sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    for args in (
        ["gate", str(plan), "fs:write:/src/a.py", "fs:write:/.git/config", "fs:write:/package.json"],
        ["gate", str(plan), "fs:write:/src/a.py", "--format", "json", "-p", policy],
        ["compile", order, "-p", policy],
        ["compile", order, "-p", policy, "--format", "yaml", "--fail-on", "denied"],
    ):
        script = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True, timeout=60)
        assert "HEAVY []" in script.stderr, (args, script.stderr)
        typed = bgc(*args)
        assert (script.returncode, script.stdout) == (typed.exit_code, typed.stdout), args


@pytest.mark.e2e
def test_fast_path_never_imports_typer_or_lark_on_a_warm_cache(repo: Path) -> None:
    env = {**os.environ, "BGC_CACHE_DIR": str(repo / ".cache")}
    probe = (
        "import sys\nfrom bgc.app.launch import main\nsys.argv = ['bgc', 'check', 'policies/p.bgp']\n"
        "try:\n    main()\nfinally:\n"
        "    heavy = ('typer', 'click', 'rich', 'lark', 'yaml', 'pydantic', 'cbor2', 'bgc.core.values.documents', 'bgc.core.compiler')\n"
        "    print('HEAVY', sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    first = subprocess.run([sys.executable, "-c", probe], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    second = subprocess.run([sys.executable, "-c", probe], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == second.returncode == 0, first.stderr
    # a cold cache reads the policy through bgc.core.values.documents, parses it with lark and runs its
    # expects with the compiler (ids are canonical CBOR, written without cbor2); seeing them here
    # also proves the probe spells right the names it must not see on a warm cache
    assert "HEAVY ['bgc.core.compiler', 'bgc.core.values.documents', 'lark']" in first.stderr, first.stderr
    assert "HEAVY []" in second.stderr, second.stderr


def test_this_repository_passes_its_own_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """bgc.toml at the root: bundled policies, their tests and every example order's recording."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("BGC_CACHE_DIR", str(tmp_path))
    result = bgc("check")
    assert result.exit_code == 0, result.stdout + "\n(if the change is intended: bgc check --update)"


# --- the CI examples -------------------------------------------------------------------------------


def _bgc_commands(lines: list[str]) -> list[list[str]]:
    """The bgc invocations in workflow ``run``/``script`` lines (redirections and fallbacks cut)."""
    import shlex

    commands = []
    for line in lines:
        for part in line.split("||")[0].split("&&"):
            words = shlex.split(part.split(">")[0].split("#")[0])
            if words[:1] == ["bgc"]:
                commands.append(words[1:])
    return commands


def test_ci_examples_run_against_this_repository(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import yaml

    workflow = yaml.safe_load((ROOT / "examples/ci/github-actions.yml").read_text())
    steps = workflow["jobs"]["bgc"]["steps"]
    assert workflow["jobs"]["bgc"]["permissions"]["security-events"] == "write"
    sarif_step = next(step for step in steps if "--format sarif" in step.get("run", ""))
    upload = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert sarif_step["run"].split(">")[1].strip() == upload["with"]["sarif_file"]
    assert upload["if"].startswith("always()")
    assert steps[-1]["run"] == "bgc check --format github"  # the verdict comes last
    gitlab = yaml.safe_load((ROOT / "examples/ci/gitlab-ci.yml").read_text())["bgc"]
    assert gitlab["artifacts"]["reports"]["junit"] in " ".join(gitlab["script"])
    commands = _bgc_commands([step.get("run", "") for step in steps] + gitlab["script"])
    assert len(commands) == 6
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("BGC_CACHE_DIR", str(tmp_path / "cache"))
    for args in commands:
        args = [str(tmp_path / "junit.xml") if arg.endswith(".xml") else arg for arg in args]
        result = bgc(*args)
        assert result.exit_code == 0, (args, result.stdout)


def test_orders_with_a_broken_policy(repo: Path) -> None:
    (repo / "policies/p.bgp").write_text("allow fs:read:/[\n")
    for args in (["check"], ["check", "--orders"]):
        result = bgc(*args)
        assert result.exit_code == 2
        assert result.stdout.count("policies/p.bgp:1:16: error") == 1, result.stdout  # reported once
        assert "bgc check: 1 file could not be parsed" in result.stdout
        assert "orders: not checked, the policy policies/p.bgp does not load" in result.stdout
    sarif = json.loads(bgc("check", "--orders", "--format", "sarif").stdout)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["BGC003"]


def test_closing_line_says_what_went_wrong_and_counts_properly(repo: Path) -> None:
    policies = repo / "policies"
    (policies / "bad.bgp").write_text("alow fs:read:/**\n")
    (policies / "worse.bgp").write_text("allow fs:read:/[\n")
    (policies / "a.bgp").write_text('include "bad.bgp"\n')
    (policies / "b.bgp").write_text('include "bad.bgp"\n')
    (policies / "warn.bgp").write_text("deny fs:write:/.github/**\n")
    cases = {
        ("policies/bad.bgp",): "bgc check: 1 file could not be parsed",
        ("policies/bad.bgp", "policies/worse.bgp"): "bgc check: 2 files could not be parsed",
        ("policies/bad.bgp", "policies/gone.bgp"): "bgc check: 1 file could not be read, 1 file could not be parsed",
        ("policies/a.bgp", "policies/b.bgp"): "bgc check: 1 file could not be parsed",  # one broken base
        ("policies/warn.bgp",): "bgc check: 1 finding (0 errors, 1 warning)",
    }
    for paths, closing in cases.items():
        result = bgc("check", *paths)
        assert result.stdout.splitlines()[-1] == closing, result.stdout
        assert "(s)" not in result.stdout


def test_a_missing_path_is_no_such_file(repo: Path) -> None:
    for path in ("nope", "nope.txt", "/nonexistent"):
        result = bgc("check", path)
        assert result.exit_code == 2
        assert result.stderr == f"{path}: error: no such file\n"
    (repo / "x.txt").write_text("")
    other = bgc("check", "x.txt")
    assert other.stderr.startswith("x.txt: error: not a policy (.bgp)") and other.stderr.count("x.txt") == 1


# --- regressions: what a new user met --------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_a_plan_among_the_orders_is_named_a_plan(repo: Path, suffix: str) -> None:
    """A plan written next to the orders used to fail with "unknown field 'fold_case'"."""
    assert bgc("compile", "orders/one.yaml", "--format", suffix, "-o", f"orders/plan.{suffix}", "--fail-on", "never").exit_code == 0
    result = bgc("check", "--orders")
    assert result.exit_code == 2
    assert f"orders/plan.{suffix}:" in result.stdout and "'bgc.Plan' document, not a work order" in result.stdout
    assert "keep it out of the orders" in result.stdout and "fold_case" not in result.stdout


BAD_CONFIGURATIONS = {
    "unknown key": ('polices = ["policies/*.bgp"]\n', "bgc.toml"),
    "not TOML": ("policy = \n", "bgc.toml"),
    "unknown default mode": ('policy = "policies/p.bgp"\nmode = "nope"\n', "bgc.toml"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGURATIONS))
@pytest.mark.parametrize("command", ["check", "test"])
def test_a_configuration_error_is_carried_by_every_machine_format(repo: Path, case: str, command: str) -> None:
    """A bad configuration with --format sarif|github|json used to print nothing at all: CI then
    showed an empty report. Each format now carries the error, exit 2, and people still see it
    on stderr."""
    text, where = BAD_CONFIGURATIONS[case]
    (repo / "bgc.toml").write_text(text)
    plain = bgc(command)
    assert plain.exit_code == 2 and plain.stdout == "" and plain.stderr
    message = plain.stderr.splitlines()[0].split(": error: ", 1)[-1]

    as_json = bgc(command, "--format", "json")
    assert (as_json.exit_code, as_json.stderr) == (2, plain.stderr)
    document = json.loads(as_json.stdout)
    assert document["findings"] == [] and document["error"]["message"] == message
    assert document["error"]["file"] == where

    github = bgc(command, "--format", "github")
    assert (github.exit_code, github.stderr) == (2, plain.stderr)
    (line,) = github.stdout.splitlines()
    from bgc.app.render.github import escape_data

    assert line.startswith(f"::error file={where},line=") and "::" + escape_data(message) in line

    sarif = bgc(command, "--format", "sarif")
    assert (sarif.exit_code, sarif.stderr) == (2, plain.stderr)
    (run,) = json.loads(sarif.stdout)["runs"]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False and run["results"] == []
    (notification,) = invocation["toolExecutionNotifications"]
    assert notification["level"] == "error" and notification["message"]["text"].startswith(message)
    location = notification["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": where, "uriBaseId": "%SRCROOT%"}
    from tests.app.render.test_machine_formats import validate_sarif

    validate_sarif(json.loads(sarif.stdout))
