"""Golden files: every example order compiled against the default policy, as people see it.

Run with BGC_UPDATE_GOLDEN=1 to rewrite `examples/expected/` after an intended change, then
review the diff like any other change to the product's face.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bgc.errors import ExitCode
from tests.samples import bgc

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples" / "orders").glob("*.yaml"))
EXPECTED = ROOT / "examples" / "expected"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.mark.parametrize("order", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_text_output(order: Path) -> None:
    relative = order.relative_to(ROOT).as_posix()
    result = bgc("compile", relative, "-p", "policies/default.bgp")
    assert result.exit_code in (0, 1), result.output
    golden = EXPECTED / f"{order.stem}.txt"
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(result.stdout, encoding="utf-8")
    assert result.stdout == golden.read_text(encoding="utf-8")
    assert "\x1b[" not in result.stdout
    summary = result.stdout.splitlines()[-1]
    findings = any(word in summary for word in ("narrowed", "ask", "denied", "pending", "uncovered"))
    assert result.exit_code == (1 if findings else 0)


def test_colour_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = bgc("compile", "examples/orders/deploy.yaml", "-p", "policies/default.bgp").stdout
    assert "\x1b[" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    plain = bgc("compile", "examples/orders/deploy.yaml", "-p", "policies/default.bgp").stdout
    assert "\x1b[" not in plain


@pytest.mark.parametrize(("fail_on", "code"), [("never", 0), ("denied", 1), ("ask", 1), ("narrowed", 1)])
def test_fail_on_levels(fail_on: str, code: int) -> None:
    result = bgc("compile", "examples/orders/upgrade-dependency.yaml", "-p", "policies/default.bgp", "--fail-on", fail_on)
    # upgrade-dependency: everything asks, nothing is denied
    assert result.exit_code == (0 if fail_on == "denied" else code)


def test_machine_formats_and_output_file(tmp_path: Path) -> None:

    import cbor2
    import yaml

    args = ["compile", "examples/orders/overreach.yaml", "-p", "policies/default.bgp", "--fail-on", "never"]
    as_json = json.loads(bgc(*args, "--format", "json").stdout)
    as_yaml = yaml.safe_load(bgc(*args, "--format", "yaml").stdout)
    out = tmp_path / "plan.cbor"
    assert bgc(*args, "--format", "cbor", "-o", str(out)).exit_code == 0
    assert as_json == as_yaml == cbor2.loads(out.read_bytes())
    assert as_json["requests"][0]["verdict"] == "narrowed"


def test_plan_json_matches_documented_schema() -> None:

    import jsonschema

    schema = json.loads((ROOT / "docs" / "plan.schema.json").read_text())
    for order in EXAMPLES:
        result = bgc("compile", str(order), "-p", "policies/default.bgp", "--format", "json")
        jsonschema.validate(json.loads(result.stdout), schema)


def test_gate_reads_compiled_plans(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    bgc("compile", "examples/orders/overreach.yaml", "-p", "policies/default.bgp", "--format", "json", "-o", str(plan))
    result = bgc("gate", str(plan), "fs:write:/src/a.py", "fs:write:/.git/config", "fs:write:/package.json")
    assert result.exit_code == ExitCode.DENIED  # deny beats ask beats allow
    lines = result.stdout.splitlines()
    assert lines[0] == "allow\tfs:write:/src/a.py"
    assert lines[1].startswith("deny\tfs:write:/.git/config\tdenied by base.bgp:")
    assert lines[2] == "ask\tfs:write:/package.json\t1 approval"
    from_stdin = bgc("gate", str(plan), "--format", "json", input="fs:write:/src/a.py\n")
    assert from_stdin.exit_code == 0
    assert json.loads(from_stdin.stdout)["decision"] == "allow"


def test_gate_refuses_an_edited_plan(tmp_path: Path) -> None:

    plan = tmp_path / "plan.json"
    bgc("compile", "examples/orders/overreach.yaml", "-p", "policies/default.bgp", "--format", "json", "-o", str(plan))
    data = json.loads(plan.read_text())
    data["requests"][0]["granted"][0]["atom"] = "fs:write:/**"
    plan.write_text(json.dumps(data))
    result = bgc("gate", str(plan), "fs:write:/.git/config")
    assert result.exit_code == 2
    assert "does not match its id" in result.stderr and result.stdout == ""


def test_explain_command() -> None:
    result = bgc("explain", "examples/orders/overreach.yaml", "fs:write:/**", "-p", "policies/modes.bgp")
    assert result.exit_code == 1, result.output
    assert "deny" in result.stdout and "result" in result.stdout


def test_compile_errors_exit_2() -> None:
    missing_policy = bgc("compile", "examples/orders/fix-bug.yaml", "-p", "nope.bgp")
    assert missing_policy.exit_code == 2 and "nope.bgp" in missing_policy.stderr
    bad_mode = bgc("compile", "examples/orders/fix-bug.yaml", "-p", "policies/modes.bgp", "--mode", "admin")
    assert bad_mode.exit_code == 2 and "unknown mode 'admin'" in bad_mode.stderr
    bad_format = bgc("compile", "examples/orders/fix-bug.yaml", "-p", "policies/default.bgp", "--format", "xml")
    assert bad_format.exit_code == 2


def test_policy_and_mode_from_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.bgc]\npolicy = "p.bgp"\nmode = "edit"\n')
    (tmp_path / "p.bgp").write_text("mode ro {\n  allow fs:read:/**\n}\nmode edit {\n  allow fs:write:/src/**\n}\ndefault mode ro\n")
    (tmp_path / "o.yaml").write_text((ROOT / "examples" / "orders" / "fix-bug.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    result = bgc("compile", "o.yaml", "--format", "json")
    plan = json.loads(result.stdout)
    assert plan["mode"] == "edit"
    assert plan["requests"][1]["granted"][0]["rules"][0]["file"] == "p.bgp"
    assert json.loads(bgc("compile", "o.yaml", "--mode", "ro", "--format", "json").stdout)["mode"] == "ro"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    missing = bgc("compile", "o.yaml")
    assert missing.exit_code == 2 and "no policy" in missing.stderr


def test_readme_shows_real_output() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert (EXPECTED / "deploy.txt").read_text(encoding="utf-8") in readme


def test_plan_does_not_depend_on_how_the_policy_path_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    def plan_id(*args: str) -> str:
        return json.loads(bgc("compile", *args, "--format", "json").stdout)["id"]

    here = plan_id("examples/orders/fix-bug.yaml", "-p", "policies/default.bgp")
    assert plan_id("examples/orders/fix-bug.yaml", "-p", "./policies/default.bgp") == here
    assert plan_id("examples/orders/fix-bug.yaml", "-p", str(ROOT / "policies" / "default.bgp")) == here
    monkeypatch.chdir(ROOT / "policies")
    assert plan_id("../examples/orders/fix-bug.yaml", "-p", "default.bgp") == here


def test_gate_command_input_errors(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    bgc("compile", "examples/orders/overreach.yaml", "-p", "policies/default.bgp", "--format", "json", "-o", str(plan))
    not_dir = bgc("gate", "--root", str(plan), str(plan), "fs:write:/src/a")
    assert not_dir.exit_code == 2 and "is not a directory" in not_dir.stderr
    empty = bgc("gate", str(plan), input="")
    assert empty.exit_code == 2 and "no atoms to decide" in empty.stderr
    from_stdin = bgc("gate", "-", "--input-format", "json", "fs:write:/src/a", input=plan.read_text())
    assert from_stdin.exit_code == 0 and from_stdin.stdout == "allow\tfs:write:/src/a\n"
    no_atoms = bgc("gate", "-", "--input-format", "json", input=plan.read_text())
    assert no_atoms.exit_code == 2 and "must be given as arguments" in no_atoms.stderr


def test_output_that_cannot_be_written_is_a_located_error(tmp_path: Path) -> None:
    args = ["compile", "examples/orders/fix-bug.yaml", "-p", "policies/default.bgp", "--format", "json"]
    missing_dir = bgc(*args, "-o", str(tmp_path / "no" / "plan.json"))
    assert missing_dir.exit_code == 2
    assert missing_dir.stderr.startswith(f"{tmp_path / 'no' / 'plan.json'}: error: cannot write the output")
    assert bgc(*args, "-o", str(tmp_path)).exit_code == 2
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.e2e
def test_full_disk_on_stdout_is_reported_without_traceback() -> None:
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-c", "from bgc.app.launch import main; main()", "compile", "examples/orders/fix-bug.yaml",
             "-p", "policies/default.bgp", "--format", "json"],
            cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True,
        )
    assert result.returncode == 2
    assert result.stderr.startswith("bgc: cannot write output:") and "Traceback" not in result.stderr


def test_unknown_configured_mode_points_at_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bgc.toml").write_text('policy = "p.bgp"\nmode = "nope"\n')
    (tmp_path / "p.bgp").write_text("mode ro {\n  allow fs:read:/**\n}\n")
    (tmp_path / "o.yaml").write_text((ROOT / "examples" / "orders" / "fix-bug.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    result = bgc("compile", "o.yaml")
    assert result.exit_code == 2
    assert "bgc.toml:2:" in result.stderr and "unknown mode 'nope'" in result.stderr


def test_readme_policy_example_checks(tmp_path: Path) -> None:
    import re
    import shutil

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```bgp\n(.*?)```", readme, flags=re.S)
    shutil.copy(ROOT / "policies" / "base.bgp", tmp_path / "base.bgp")
    (tmp_path / "readme.bgp").write_text(example, encoding="utf-8")
    result = bgc("check", str(tmp_path / "readme.bgp"))
    assert result.exit_code == 0, result.output


def test_readme_gate_example_is_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import shlex

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n(\$ bgc compile [^\n]*-o plan\.json[^\n]*)\n(\$ bgc gate [^\n]*)\n(.*?)```", readme, re.S)
    assert block is not None
    compile_line, gate_line, expected = block.groups()
    monkeypatch.chdir(ROOT)
    out = tmp_path / "plan.json"
    args = shlex.split(compile_line[2:])[1:]
    assert bgc(*(a if a != "plan.json" else str(out) for a in args)).exit_code == 0
    gate_args = shlex.split(gate_line[2:])[1:]
    result = bgc(*(a if a != "plan.json" else str(out) for a in gate_args))
    assert result.stdout == expected
