"""`bgc test`: policy test files, inline expects, -k, coverage, machine formats, exit codes."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.analysis.testing.runner import mismatches
from bgc.analysis.testing.selection import keyword_filter
from tests.samples import PROMPT, bgc

POLICY = """\
allow fs:read:/**
allow fs:write:/src/** because "source"
deny fs:write:/src/secrets/** because "secrets"
allow fs:write:/docs/**
tool fs.write needs fs:write:{path}
mode review {
  deny fs:write:/**
}
expect deny fs:write:/src/secrets/key
"""

ORDER = f"""\
intent: {{kind: patch.apply}}
calls:
  - {{tool: fs.write, params: {{path: /src/a.py}}}}
  - {{tool: fs.write, params: {{path: /etc/passwd}}}}
requests: ["fs:write:/src/**", "fs:write:/etc/passwd"]
origin: {{model: m, parents: [], prompt: "{PROMPT}"}}
"""

TESTS = """\
policy: p.bgp
tests:
  - name: writes source
    order: order.yaml
    verdicts:
      "fs:write:/src/**": narrowed
      "fs:write:/etc/passwd": denied
    calls: [covered, uncovered]
  - name: review mode denies
    mode: review
    order: {intent: {kind: patch.apply}, requests: ["fs:write:/src/a.py"]}
    verdicts: {"fs:write:/src/a.py": denied}
"""


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "p.bgp").write_text(POLICY)
    (tmp_path / "order.yaml").write_text(ORDER)
    (tmp_path / "a.bgt.yaml").write_text(TESTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BGC_CACHE_DIR", str(tmp_path / ".cache"))
    return tmp_path


def test_all_pass_pytest_style(project: Path) -> None:
    result = bgc("test", "a.bgt.yaml")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["a.bgt.yaml ..", "p.bgp .", "3 passed, 0 failed"]


def test_failures_are_located_and_exit_1(project: Path) -> None:
    (project / "a.bgt.yaml").write_text(
        TESTS.replace('"fs:write:/etc/passwd": denied', '"fs:write:/etc/passwd": granted').replace(
            "[covered, uncovered]", "[covered, covered]"
        )
    )
    result = bgc("test", "a.bgt.yaml")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "a.bgt.yaml F."
    assert lines[-1] == "2 passed, 1 failed"
    assert "a.bgt.yaml:7:31: error[BGC211]: fs:write:/etc/passwd: expected granted, got denied" in result.stdout
    assert "a.bgt.yaml:8:22: error[BGC212]: call 2 (fs.write): expected covered, got uncovered" in result.stdout
    assert "FAILED a.bgt.yaml::writes source - fs:write:/etc/passwd: expected granted, got denied" in result.stdout


def test_inline_expects_are_cases_and_fail_with_check_s_id(project: Path) -> None:
    (project / "p.bgp").write_text(POLICY + "expect allow fs:write:/src/secrets/other\n")
    result = bgc("test", "p.bgp", "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["summary"] == {"passed": 1, "failed": 1}
    (finding,) = document["findings"]
    assert finding["rule"] == "BGC201" and (finding["file"], finding["line"], finding["col"]) == ("p.bgp", 10, 1)


def test_keyword_selects_by_id(project: Path) -> None:
    result = bgc("test", "a.bgt.yaml", "-k", "review and not source")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["a.bgt.yaml .", "1 passed, 0 failed"]
    assert bgc("test", "a.bgt.yaml", "-k", "expect").stdout.splitlines()[-1] == "1 passed, 0 failed"
    bad = bgc("test", "a.bgt.yaml", "-k", "review and")
    assert bad.exit_code == 2 and "ends too early" in bad.stderr


def test_a_keyword_that_selects_nothing_is_a_usage_error(project: Path) -> None:
    for args in (["a.bgt.yaml"], ["p.bgp", "--junit-xml", "r.xml"]):
        result = bgc("test", *args, "-k", "nomatch")
        assert (result.exit_code, result.stdout) == (2, ""), args
        assert result.stderr == "error: no test matches -k 'nomatch'\n"
    assert not (project / "r.xml").exists()
    as_json = bgc("test", "a.bgt.yaml", "--format", "json", "-k", "nomatch")  # a machine format carries the error
    assert as_json.exit_code == 2 and as_json.stderr == "error: no test matches -k 'nomatch'\n"
    assert json.loads(as_json.stdout)["error"]["message"] == "no test matches -k 'nomatch'"


def test_nothing_to_test_is_a_usage_error(project: Path) -> None:
    (project / "bare.bgp").write_text("allow fs:read:/**\n")
    result = bgc("test", "bare.bgp")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("error: no tests found")


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("src", {"a::src write", "b::SRC"}),
        ("src and not write", {"b::SRC"}),
        ("(a:: or b::) and not SRC", {"a::docs"}),
        ("not (src or docs)", set()),
        ("docs or b::", {"a::docs", "b::SRC"}),
    ],
)
def test_keyword_expressions(expression: str, selected: set[str]) -> None:
    names = ["a::src write", "a::docs", "b::SRC"]
    assert {name for name in names if keyword_filter(expression)(name)} == selected


def test_coverage_counts_exactly_and_lists_the_rest(project: Path) -> None:
    result = bgc("test", "a.bgt.yaml", "--coverage")
    # the three tests exercise allow /src/** and deny /src/secrets/** (narrowed write, expect),
    # and the review-mode deny; nothing reads, nothing writes /docs
    assert "rule coverage: 3 of 5 rules exercised" in result.stdout
    assert "  not exercised: p.bgp:1  allow fs:read:/**" in result.stdout
    assert "  not exercised: p.bgp:4  allow fs:write:/docs/**" in result.stdout
    only_review = bgc("test", "a.bgt.yaml", "--coverage", "-k", "review", "--format", "json")
    coverage = json.loads(only_review.stdout)["summary"]["coverage"]
    assert (coverage["exercised"], coverage["rules"]) == (1, 5)
    assert [item["line"] for item in coverage["not_exercised"]] == [1, 2, 3, 4]


def test_plan_excerpt_matches_like_to_match_object(project: Path) -> None:
    (project / "b.bgt.yaml").write_text(textwrap.dedent("""\
        policy: p.bgp
        tests:
          - order: order.yaml
            plan:
              mode: null
              requests:
                - {atom: "fs:write:/etc/passwd", verdict: denied}
                - granted: [{atom: "fs:write:/src/**", except: ["/src/secrets/**"]}]
          - order: order.yaml
            plan:
              requests:
                - {verdict: denied}
    """))
    result = bgc("test", "b.bgt.yaml")
    assert result.exit_code == 1
    assert "b.bgt.yaml::test 2" in result.stdout and "b.bgt.yaml .F" in result.stdout
    assert "b.bgt.yaml:12:9: error[BGC213]: plan.requests: expected 1 items, got 2" in result.stdout


def test_mismatches_semantics() -> None:
    actual = {"a": [1, {"b": 2, "c": 3}], "d": None}
    assert list(mismatches({"a": [1, {"b": 2}]}, actual)) == []
    assert list(mismatches({"a": [1]}, actual)) == [(("a",), "expected 1 items, got 2: [1, {'b': 2, 'c': 3}]")]
    assert list(mismatches({"a": [1, {"b": 5}]}, actual)) == [(("a", 1, "b"), "expected 5, got 2")]
    assert list(mismatches({"x": 1}, actual))[0][0] == ("x",)
    assert list(mismatches({"d": False}, actual)) == [(("d",), "expected False, got None")]
    assert list(mismatches({"a": [True, {}]}, actual)) == [(("a", 0), "expected True, got 1")]  # 1 is not True


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_a_value_matches_itself_and_any_map_excerpt_of_itself(value: object) -> None:
    assert list(mismatches(value, value)) == []
    if isinstance(value, dict) and value:
        first = next(iter(value))
        assert list(mismatches({first: value[first]}, value)) == []


@pytest.mark.parametrize(
    ("text", "line", "col", "words"),
    [
        ("policy: p.bgp\ntests:\n  - order: order.yaml\n    verdict: {}\n", 4, 5, "unknown field 'verdict' (did you mean 'verdicts'?)"),
        ("policy: p.bgp\ntests:\n  - order: order.yaml\n    VERDICTS: {}\n", 4, 5, "unknown field 'VERDICTS' (did you mean 'verdicts'?)"),
        ("Policy: p.bgp\n", 1, 1, "unknown field 'Policy' (did you mean 'policy'?)"),
        ("policy: p.bgp\ncolour: red\n", 2, 1, "unknown field 'colour' (expected one of: policy, mode, tests)"),
        ("policy: p.bgp\ntests:\n  - order: order.yaml\n    mode: admin\n    calls: []\n", 4, 11, "unknown mode 'admin'"),
        ("policy: p.bgp\ntests:\n  - order: order.yaml\n    verdicts: {\"fs:write:/src/**\": allowed}\n", 4, 36, "unknown verdict 'allowed'"),
        ("policy: p.bgp\ntests:\n  - order: {intent: {kind: x}, requests: [\"fs:write:relative/..\"]}\n    calls: []\n", 3, 43, "requests[0]"),
        ("policy: p.bgp\ntests:\n  - order: missing.yaml\n    calls: []\n", 3, 12, "no such order file"),
        ("policy: nope.bgp\ntests: []\n", 1, 9, "no such policy file"),
        ("tests:\n  - order: order.yaml\n    calls: []\n", 1, 1, "no policy"),
        ("policy: p.bgp\ntests:\n  - order: order.yaml\n", 3, 5, "at least one of"),
    ],
)
def test_malformed_test_files_are_bad_input(project: Path, text: str, line: int, col: int, words: str) -> None:
    (project / "bad.bgt.yaml").write_text(text)
    result = bgc("test", "bad.bgt.yaml")
    assert result.exit_code == 2
    assert f"bad.bgt.yaml:{line}:{col}:" in result.stderr and words in result.stderr, result.stderr


def test_an_unknown_key_is_located_at_the_key(project: Path) -> None:
    (project / "bad.bgt.yaml").write_text("modee: edit\ntests:\n  - {order: order.yaml, calls: [], nmae: x}\n")
    result = bgc("test", "bad.bgt.yaml")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "bad.bgt.yaml:1:1: error: modee: unknown field 'modee' (did you mean 'mode'?)\n  modee: edit\n  ^^^^^\n"
    )
    (project / "bad.bgt.yaml").write_text("policy: p.bgp\ntests:\n  - {order: order.yaml, calls: [], nmae: x}\n")
    assert bgc("test", "bad.bgt.yaml").stderr.startswith("bad.bgt.yaml:3:36: error: tests[0].nmae: unknown field 'nmae'")


def test_check_names_a_malformed_test_file_with_its_id(project: Path) -> None:
    (project / "bad.bgt.yaml").write_text("modee: edit\ntests: []\n")
    result = bgc("check", "bad.bgt.yaml")
    assert result.exit_code == 2
    assert "bad.bgt.yaml:1:1: error[BGC099]: modee: unknown field 'modee' (did you mean 'mode'?)" in result.stdout
    document = json.loads(bgc("check", "bad.bgt.yaml", "--format", "json").stdout)
    assert [(f["rule"], f["line"], f["col"]) for f in document["findings"]] == [("BGC099", 1, 1)]


def test_documents_locate_keys_apart_from_values() -> None:
    from bgc.core.values.documents import parse_document

    yaml_doc = parse_document(b"a: 1\nmap:\n  long key: [x]\n", "d.yaml", "yaml")
    json_doc = parse_document(b'{"a": 1,\n "map": {"long key": ["x"]}}', "d.json", "json")
    for document, key, value in ((yaml_doc, (3, 3, 3, 11), (3, 13)), (json_doc, (2, 10, 2, 20), (2, 22))):
        span = document.key_span(("map", "long key"))
        assert (span.line, span.col, span.end_line, span.end_col) == key
        assert (document.span(("map", "long key")).line, document.span(("map", "long key")).col) == value
        assert document.key_span(("map", "long key", 0)) == document.span(("map", "long key", 0))  # no key: the value
    assert yaml_doc.locations == {(): (1, 1), ("a",): (1, 4), ("map",): (3, 3), ("map", "long key"): (3, 13),
                                  ("map", "long key", 0): (3, 14)}  # fmt: skip


def test_without_configuration_paths_are_shown_as_given(project: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub/a.bgt.yaml").write_text(TESTS.replace("p.bgp", "../p.bgp").replace("order.yaml", "../order.yaml")
                                            .replace("[covered, uncovered]", "[covered, covered]"))  # fmt: skip
    for as_given in ("sub", "./sub", str(project / "sub")):
        result = bgc("test", as_given)
        assert result.exit_code == 1
        shown = str(Path(as_given) / "a.bgt.yaml")  # as given ("./sub" is "sub" to pathlib), never resolved
        assert result.stdout.splitlines()[0] == f"{shown} F."
        assert f"\n{shown}:8:22: error[BGC212]: call 2 (fs.write): expected covered, got uncovered (" in result.stdout


def test_junit_file_and_format(project: Path) -> None:
    (project / "a.bgt.yaml").write_text(TESTS.replace("[covered, uncovered]", "[covered, covered]"))
    result = bgc("test", "a.bgt.yaml", "--junit-xml", "report.xml")
    assert result.exit_code == 1 and result.stdout.endswith("2 passed, 1 failed\n")
    suite = ElementTree.parse(project / "report.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("3", "1")
    names = [case.get("name") for case in suite.findall("testcase")]
    assert names == ["writes source", "review mode denies", "line 9: expect deny fs:write:/src/secrets/key"]
    untimed = lambda text: re.sub(r' time="[0-9.]+"', "", text)  # noqa: E731
    assert untimed(bgc("test", "a.bgt.yaml", "--format", "junit").stdout) == untimed((project / "report.xml").read_text())


def test_an_unwritable_junit_report_is_bad_input(project: Path) -> None:
    result = bgc("test", "a.bgt.yaml", "--junit-xml", "no/such/dir/report.xml")
    assert result.exit_code == 2
    assert "no/such/dir/report.xml: error: cannot write the output" in result.stderr


def test_without_paths_runs_the_configuration(project: Path) -> None:
    (project / "tests").mkdir()
    (project / "a.bgt.yaml").rename(project / "tests" / "a.bgt.yaml")
    (project / "tests" / "a.bgt.yaml").write_text(TESTS.replace("p.bgp", "../p.bgp").replace("order.yaml", "../order.yaml"))
    assert bgc("test").exit_code == 2  # nothing configured: usage error
    (project / "bgc.toml").write_text('policies = ["*.bgp"]\ntests = ["tests"]\n')
    result = bgc("test")
    assert result.exit_code == 0 and result.stdout.splitlines() == [
        "tests/a.bgt.yaml ..", "p.bgp .", "3 passed, 0 failed"
    ]


def test_coverage_is_the_same_from_a_subdirectory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "bgc.toml").write_text('policy = "p.bgp"\ntests = ["."]\n')
    at_root = bgc("test", "--coverage").stdout
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    assert bgc("test", "--coverage").stdout == at_root
    assert "rule coverage: 3 of 5 rules exercised" in at_root


def test_expects_of_an_include_name_the_including_policy(project: Path) -> None:
    (project / "base.bgp").write_text("deny fs:*:/**/.env\nexpect deny fs:read:/.env\n")
    (project / "one.bgp").write_text('include "base.bgp"\nallow fs:read:/**\n')
    (project / "two.bgp").write_text('include "base.bgp"\n')
    result = bgc("test", "one.bgp", "two.bgp", "-k", "expect", "--format", "junit")
    names = sorted(case.get("name") for case in ElementTree.fromstring(result.stdout.split("\n", 1)[1]).iter("testcase"))
    assert names == ["line 2: expect deny fs:read:/.env"]  # one case, run in both policies


@pytest.mark.parametrize("path", ["/nonexistent", "nope.bgt.yaml", "nope.bgp"])
def test_a_missing_path_is_no_such_file(project: Path, path: str) -> None:
    result = bgc("test", path)
    assert result.exit_code == 2
    assert result.stderr == f"{path}: error: no such file\n"


@pytest.mark.parametrize("path", ["order.yaml", "notes.txt"])
def test_a_path_of_another_kind_is_a_usage_error(project: Path, path: str) -> None:
    """``bgc test`` takes no work orders (``bgc check`` does): an order is "another kind" here."""
    (project / "notes.txt").write_text("")
    result = bgc("test", path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{path}: error: not a test file (*.bgt.yaml), a policy (*.bgp) or a directory")


def test_a_parameter_of_the_wrong_kind_is_named_in_the_order_s_words(project: Path) -> None:
    (project / "a.bgt.yaml").write_text(
        "policy: p.bgp\ntests:\n  - order: {intent: {kind: x}, requests: [], calls: "
        "[{tool: fs.write, params: {path: {nested: /src/a.py}}}]}\n    calls: [covered]\n"
    )
    result = bgc("test", "a.bgt.yaml")
    assert result.exit_code == 1
    assert "call 1 (fs.write): expected covered, got uncovered (parameter 'path' is not text or an integer (got a map))" in result.stdout
    assert "FrozenMap" not in result.stdout


# --- inline expects: one runner for `bgc check` and `bgc test` -----------------------------------


def _hints(output: str) -> list[str]:
    return sorted(line.strip() for line in output.splitlines() if line.strip().startswith("hint:"))


def test_check_and_test_report_an_included_expect_alike(project: Path) -> None:
    """Run from outside the policy's directory, both commands name the deciding rule by a path that
    exists from here (`inc/sub/base.bgp`, not `sub/base.bgp` relative to the root policy) and say
    which policy a shared file's expect failed in: it is the same finding whichever command runs it."""
    (project / "inc/sub").mkdir(parents=True)
    (project / "inc/sub/base.bgp").write_text("allow fs:read:/src/**\nexpect deny fs:read:/src/a.py\n")
    (project / "inc/root.bgp").write_text('include "sub/base.bgp"\nexpect deny fs:read:/src/b.py\n')
    checked, tested = bgc("check", "inc/root.bgp"), bgc("test", "inc/root.bgp")
    assert checked.exit_code == tested.exit_code == 1
    assert _hints(checked.stdout) == _hints(tested.stdout) == ["hint: decided by allow at inc/sub/base.bgp:1"] * 2
    assert "inc/sub/base.bgp:2:1: error[BGC201]: expected deny for `fs:read:/src/a.py`, got allow (granted) (in policy inc/root.bgp)\n" in (
        tested.stdout
    )
    as_json = [json.loads(bgc(command, "inc/root.bgp", "--format", "json").stdout) for command in ("check", "test")]
    assert as_json[0]["findings"] == as_json[1]["findings"]
    assert [(f["file"], f["hint"]) for f in as_json[0]["findings"]] == [
        ("inc/root.bgp", "decided by allow at inc/sub/base.bgp:1"),
        ("inc/sub/base.bgp", "decided by allow at inc/sub/base.bgp:1"),
    ]


def test_an_expect_the_compiler_cannot_decide_is_bgc202_in_both_commands(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error while deciding one expect is that expect's BGC202 finding (unknown is not a pass);
    the other expects and tests still run, and `bgc test` exits 1, not 2."""
    from bgc.analysis import expects as compiler  # where run_expect finds the compiler's decide
    from bgc.core.patterns.glob import AlgebraLimit

    decide = compiler.decide

    def bounded(policy, resource, action, value, *rest):  # type: ignore[no-untyped-def]
        if value == "/src/hard":
            raise AlgebraLimit("the pattern algebra hit its work bound")
        return decide(policy, resource, action, value, *rest)

    monkeypatch.setattr(compiler, "decide", bounded)
    (project / "p.bgp").write_text(POLICY + "expect allow fs:write:/src/hard\n")
    tested = bgc("test", "a.bgt.yaml", "--format", "json")
    assert tested.exit_code == 1, tested.output
    document = json.loads(tested.stdout)
    assert document["summary"] == {"passed": 3, "failed": 1}
    checked = json.loads(bgc("check", "p.bgp", "--format", "json").stdout)
    assert [f for f in checked["findings"] if f["rule"] != "BGC103"] == document["findings"]  # check also lints
    assert [(f["rule"], f["line"], f["message"]) for f in document["findings"]] == [
        ("BGC202", 10, "could not decide this expect: the pattern algebra hit its work bound")
    ]


def test_each_expect_line_is_one_case_however_many_policies_include_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled policies all include base.bgp: its 8 expects used to run, and show, once per
    including policy (32 dots for 8 lines). One case per line written, whoever includes it."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    policies = sorted(str(path.relative_to(root)) for path in (root / "policies").glob("*.bgp"))
    written = sum(line.startswith("expect ") for path in policies for line in Path(path).read_text().splitlines())
    result = bgc("test", *policies, "--format", "junit")
    assert result.exit_code == 0, result.stdout
    cases = list(ElementTree.fromstring(result.stdout.split("\n", 1)[1]).iter("testcase"))
    assert len(cases) == written
    assert len({(case.get("classname"), case.get("name")) for case in cases}) == written
    dots = bgc("test", *policies).stdout
    assert sum(len(found) for found in re.findall(r"^\S+ ([.F]+)$", dots, re.MULTILINE)) == written
