"""Repository configuration: discovery, every key, and located errors for every mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from bgc.analysis.config import ConfigError, find_config, load_config, repository_root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "policies" / "default.bgp", "allow fs:read:/**\n")
    write(tmp_path / "policies" / "extra" / "more.bgp", "deny fs:write:/**\n")
    write(tmp_path / "tests" / "policy" / "a.bgt.yaml", "tests: []\n")
    write(tmp_path / "tests" / "policy" / "deeper" / "b.bgt.yml", "tests: []\n")
    write(tmp_path / "orders" / "one.yaml", "{}\n")
    write(tmp_path / "orders" / "one.yaml.expected.json", "{}\n")
    write(tmp_path / "orders" / "sub" / "two.json", "{}\n")
    return tmp_path


FULL = """\
[project]
name = "x"

[tool.bgc]
policy = "policies/default.bgp"
mode = "edit"
policies = ["policies/**/*.bgp"]
tests = ["tests/policy"]
orders = "orders"
expectations = "expected"

[tool.other]
policy = 3
"""


def test_pyproject_every_key(repo: Path) -> None:
    write(repo / "pyproject.toml", FULL)
    config = find_config(repo / "orders" / "sub")
    assert config is not None
    assert config.root == repo.resolve()
    assert config.policy == (repo / "policies" / "default.bgp").resolve()
    assert config.mode == "edit"
    assert [p.relative_to(repo.resolve()).as_posix() for p in config.policy_files()] == [
        "policies/default.bgp",
        "policies/extra/more.bgp",
    ]
    assert [p.name for p in config.test_files()] == ["a.bgt.yaml", "b.bgt.yml"]
    assert [p.name for p in config.order_files()] == ["one.yaml", "two.json"]  # expectations excluded
    assert config.expectation_for(repo / "orders" / "sub" / "two.json") == (
        repo / "expected" / "sub" / "two.json.expected.json"
    ).resolve()


def test_expectations_default_next_to_order(repo: Path) -> None:
    write(repo / "bgc.toml", 'policy = "policies/default.bgp"\norders = "orders"\n')
    config = find_config(repo)
    assert config is not None and config.path.name == "bgc.toml"
    assert config.expectation_for(repo / "orders" / "one.yaml") == (repo / "orders" / "one.yaml.expected.json").resolve()
    assert [p.name for p in config.expectation_files()] == ["one.yaml.expected.json"]


def test_bgc_toml_wins_over_pyproject_in_the_same_directory(repo: Path) -> None:
    write(repo / "pyproject.toml", FULL)
    write(repo / "bgc.toml", 'mode = "review"\n')
    config = find_config(repo)
    assert config is not None and config.mode == "review" and config.policy is None


def test_pyproject_without_table_is_not_a_config_and_search_stops_at_git(repo: Path, tmp_path: Path) -> None:
    write(repo / "pyproject.toml", '[project]\nname = "x"\n')
    assert find_config(repo / "policies") is None
    assert load_config(repo / "pyproject.toml") is None
    # a configuration above the repository root is never picked up
    outer = tmp_path.parent / f"{tmp_path.name}-outer"
    inner = outer / "checkout"
    (inner / ".git").mkdir(parents=True)
    write(outer / "bgc.toml", 'mode = "edit"\n')
    assert find_config(inner) is None
    assert repository_root(inner / ".") == inner.resolve()


def error_of(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value


def test_unknown_key_is_located_with_a_suggestion(repo: Path) -> None:
    path = write(repo / "pyproject.toml", '[tool.bgc]\npolicy = "policies/default.bgp"\n  polices = ["x"]\n')
    error = error_of(path)
    assert error.message == "polices: unknown field 'polices' (did you mean 'policies'?)"
    assert (error.span.line, error.span.col) == (3, 3)  # the key, not its value
    assert error.render().endswith("\n    polices = [\"x\"]\n    ^^^^^^^") and "pyproject.toml:3:3" in error.render()


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("POLICIES", "did you mean 'policies'?"),  # case aside, as in policies and test files
        ("colour", "expected one of: policy, mode, policies, tests, orders, expectations, select, ignore"),
    ],
)
def test_unknown_key_hint_is_a_suggestion_or_the_known_keys(repo: Path, key: str, hint: str) -> None:
    error = error_of(write(repo / "bgc.toml", f'{key} = ["x"]\n'))
    assert error.message == f"{key}: unknown field {key!r} ({hint})"


@pytest.mark.parametrize(
    ("body", "line", "col", "words"),
    [
        ("policy = 3", 2, 10, "policy: expected non-empty text, got a number"),
        ("mode = true", 2, 8, "mode: expected non-empty text, got true"),
        ("orders = [1]", 2, 10, "orders: expected non-empty text, got a list"),
        ("expectations = {a = 1}", 2, 16, "expectations: expected non-empty text, got a map"),
        ("policy = 1979-05-27", 2, 10, "policy: expected non-empty text, got a date"),
        ('tests = ["a", 2]', 2, 9, "tests[1]: expected non-empty text, got a number"),
        ("tests = 2.5", 2, 9, "tests: expected text or a list, got a number"),
        ('mode = "two words"', 2, 8, "is not a mode name"),
        ('policies = ["../outside/*.bgp"]', 2, 12, "must be relative and stay inside"),
        ('orders = ""', 2, 10, "orders: expected non-empty text, got empty text"),
    ],
)
def test_bad_values_are_located(repo: Path, body: str, line: int, col: int, words: str) -> None:
    error = error_of(write(repo / "bgc.toml", f"# bgc\n{body}\n"))
    assert words in error.message
    assert (error.span.line, error.span.col) == (line, col)


def test_invalid_toml_is_located(repo: Path) -> None:
    error = error_of(write(repo / "bgc.toml", 'policy = "a"\nmode = = "x"\n'))
    assert error.message.startswith("invalid TOML")
    assert error.span.line == 2 and error.span.col > 0
    assert error.source == 'mode = = "x"'


def test_table_must_be_a_table(repo: Path) -> None:
    error = error_of(write(repo / "pyproject.toml", '[tool]\nbgc = 3\n'))
    assert "must be a table" in error.message


def test_missing_things_are_errors_at_use(repo: Path) -> None:
    write(repo / "bgc.toml", 'policy = "nope.bgp"\npolicies = ["rules/*.bgp"]\ntests = ["missing"]\norders = "x"\n')
    config = find_config(repo)
    assert config is not None
    with pytest.raises(ConfigError, match="nope.bgp is not a file") as caught:
        config.policy_files()
    assert (caught.value.span.line, caught.value.span.col) == (1, 10)
    assert caught.value.source == 'policy = "nope.bgp"'
    with pytest.raises(ConfigError, match="missing does not exist"):
        config.test_files()
    with pytest.raises(ConfigError, match="x is not a directory"):
        config.order_files()
    write(repo / "bgc.toml", 'policies = ["rules/*.bgp"]\n')
    with pytest.raises(ConfigError, match="matches no file") as caught:
        find_config(repo).policy_files()  # type: ignore[union-attr]
    assert caught.value.span.line == 1


def test_errors_name_the_file_from_the_repository_root(repo: Path) -> None:
    """The configuration's directory is the root, so every error names the file by its bare
    name, whichever directory bgc runs in (docs/ci.md: paths are relative to the root)."""
    errors = [
        error_of(write(repo / "bgc.toml", 'policy = "a"\nmode = = "x"\n')),
        error_of(write(repo / "bgc.toml", "polices = []\n")),
        error_of(write(repo / "bgc.toml", 'policies = ["/abs/*.bgp"]\n')),
    ]
    write(repo / "bgc.toml", 'policies = ["rules/*.bgp"]\n')
    with pytest.raises(ConfigError) as caught:
        find_config(repo / "orders").policy_files()  # type: ignore[union-attr]
    errors.append(caught.value)
    assert [error.span.file for error in errors] == ["bgc.toml"] * 4
    assert not any(str(repo) in error.render() for error in errors)


def test_the_configured_mode_is_checked_against_the_configured_policy(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BGC_CACHE_DIR", "")
    write(repo / "policies" / "modes.bgp", "default mode ro\nmode ro {\n  allow fs:read:/**\n}\nmode edit {\n}\n")
    write(repo / "bgc.toml", 'policy = "policies/modes.bgp"\nmode = "edt"\n')
    config = find_config(repo)
    assert config is not None
    with pytest.raises(ConfigError) as caught:
        config.check_mode()
    assert str(caught.value.span) == "bgc.toml:2:8"
    assert caught.value.message == "mode: unknown mode 'edt' (the policy declares: ro, edit)"
    write(repo / "bgc.toml", 'policy = "policies/modes.bgp"\nmode = "edit"\n')
    find_config(repo).check_mode()  # type: ignore[union-attr]
    # a policy that does not load is reported by the checks that load it, not as a mode error
    write(repo / "policies" / "modes.bgp", "alow fs:read:/**\n")
    write(repo / "bgc.toml", 'policy = "policies/modes.bgp"\nmode = "edt"\n')
    find_config(repo).check_mode()  # type: ignore[union-attr]
