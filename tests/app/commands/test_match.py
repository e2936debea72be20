"""``bgc match``: does my pattern cover this path?"""

from __future__ import annotations

from tests.samples import bgc


def run(*args: str, stdin: str | None = None):  # noqa: ANN201 - click's Result
    return bgc("match", *args, input=stdin)


def test_each_text_gets_one_line_and_the_exit_code_says_whether_all_matched() -> None:
    result = run("/src/**/*.py", "/src/a/b.py", "/src//c.py", "/src/../etc/x.py", "src/d.py")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "match\t/src/a/b.py",
        "match\t/src//c.py",  # normalised as the gate does: //
        "no-match\t/src/../etc/x.py",  # normalised to /etc/x.py
        "rejected\tsrc/d.py\tis a relative path (fs paths must start with '/')",
    ]
    assert run("/src/**", "/src/a", "/src/b/c").exit_code == 0


def test_texts_come_from_stdin_one_per_line() -> None:
    result = run("/a/**", stdin="/a/b\n/a\n/a/c d\n")
    assert result.stdout.splitlines() == ["match\t/a/b", "no-match\t/a", "match\t/a/c d"]
    assert result.exit_code == 1
    assert run("/a/**", stdin="/a/b").exit_code == 0  # no final newline


def test_raw_and_resource() -> None:
    assert run("--raw", "a/../b", "a/../b").stdout == "match\ta/../b\n"
    result = run("--resource", "net", "https://h/**", "https://h/x", "https://h/../y")
    assert result.stdout.splitlines() == ["match\thttps://h/x", "rejected\thttps://h/../y\thas a '..' segment"]
    assert result.exit_code == 1
    conflict = run("--raw", "--resource", "net", "x", "x")
    assert conflict.exit_code == 2 and "cannot be combined" in conflict.stderr


def test_control_characters_are_shown_escaped_on_one_line() -> None:
    result = run("/**", "/a\tb")
    assert result.stdout == "rejected\t/a\\tb\tcontains the control character U+0009\n"


def test_a_malformed_pattern_is_exit_2_with_a_caret_under_the_column() -> None:
    result = run("/src/[a-", "/src/a")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[:3] == [
        "<pattern>:1:6: error: unclosed [ at column 6",
        "  /src/[a-",
        "       ^",
    ]


def test_no_texts_at_all_is_a_usage_error() -> None:
    result = run("/a", stdin="")
    assert result.exit_code == 2 and "no texts" in result.stderr


def test_help_explains_output_and_exit_codes() -> None:
    result = bgc("match", "--help", env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0
    for needle in ("no-match", "rejected", "--raw", "--resource", "Exit 0", "[!a]"):
        assert needle in result.stdout
