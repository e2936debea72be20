"""bgc.runtime.catalogue: the files a command of the catalogue touches, read as the program reads
its argv; anything it does not read exactly is refused (the command is then decided by its argv).

The table below is written by hand from the programs' manuals, not computed by bgc. The property
tests generate argvs by class (option spellings, combined flags, values attached or apart,
prefixes of long options, ``--``, operands that look like options, unknown options) and check
them against a brute-force reference: Python's ``getopt.gnu_getopt``, which reads an argv as
GNU's getopt_long does for options that take no value or one required value.
"""

from __future__ import annotations

import getopt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.runtime import catalogue
from bgc.runtime.catalogue import GlobWord, Reading, Touch, read_command

R, W = "read", "write"


def _touches(reading: Reading | str | None) -> Any:
    if not isinstance(reading, Reading):
        return reading if reading is None else "refused"
    shown = []
    for touch in reading.touches:
        word = touch.word.written if isinstance(touch.word, GlobWord) else touch.word
        extra = [part for part in (touch.tree, "repository" if touch.repository else "", "fresh" if touch.fresh else "") if part]
        shown.append((touch.action, word, *extra))
    return shown


# (argv, touches: (action, word[, tree][, repository]) in order, or "refused", or None: not catalogued)
TABLE: list[tuple[list[str], Any]] = [
    (["cat", "src/app.py"], [(R, "src/app.py")]),
    (["cat"], []),  # its standard input: nothing
    (["cat", "-"], []),
    (["cat", "-n", "--", "-n"], [(R, "-n")]),  # after `--`, an operand
    (["cat", "a", "-n", "b"], [(R, "a"), (R, "b")]),  # options anywhere (getopt_long permutes)
    (["cat", "--frobnicate", "a"], "refused"),
    (["cat", "-j", "a"], "refused"),
    (["cat", "--show=x", "a"], "refused"),  # a prefix of --show-all, --show-ends, --show-tabs, --show-nonprinting
    (["head", "-n5", "a"], [(R, "a")]),
    (["head", "-n", "5", "a"], [(R, "a")]),
    (["head", "--lines=5", "a"], [(R, "a")]),
    (["head", "--lines", "5", "a"], [(R, "a")]),
    (["head", "--li=5", "a"], [(R, "a")]),  # a unique prefix of --lines
    (["head", "-5", "a"], [(R, "a")]),  # the obsolete count, first
    (["head", "a", "-5"], "refused"),  # anywhere else head refuses it
    (["head", "-n"], "refused"),  # its value missing
    (["tail", "-f", "log"], [(R, "log")]),
    (["tail", "+5", "log"], [(R, "+5"), (R, "log")]),  # tail +5 f f reads `+5` as a file: read either way
    (["wc", "-l", "--files0-from=list"], "refused"),
    (["wc", "--li", "x"], [(R, "x")]),
    (["ls"], [(R, ".")]),
    (["ls", "-la", "src", "build"], [(R, "src"), (R, "build")]),
    (["ls", "-R", "src"], [(R, "src")]),  # a listing: names below it, not their content
    (["ls", "--col=never", "src"], [(R, "src")]),  # --color by a unique prefix, its optional value attached
    (["ls", "--co"], "refused"),  # --color or --context: ambiguous
    (["grep", "foo", "a", "b"], [(R, "a"), (R, "b")]),
    (["grep", "foo"], []),  # its standard input
    (["grep", "-r", "foo"], [(R, ".", "files")]),  # -r with no file: the working directory
    (["grep", "-rn", "foo", "src"], [(R, "src", "files")]),
    (["grep", "-rnA3", "foo", "src"], [(R, "src", "files")]),
    (["grep", "-rnA", "3", "foo", "src"], [(R, "src", "files")]),
    (["grep", "-e", "foo", "-e", "bar", "a"], [(R, "a")]),  # -e gives the pattern: `a` is a file
    (["grep", "-f", "pats", "a"], [(R, "pats"), (R, "a")]),
    (["grep", "-5", "foo", "a"], "refused"),  # -NUM (context) is not in grep(1): not read
    (["grep", "-d", "recurse", "x", "src"], [(R, "src", "files")]),
    (["grep", "--directories=rec", "x", "src"], [(R, "src", "files")]),  # argmatch takes a unique prefix
    (["grep", "-d", "frob", "x", "src"], "refused"),
    (["grep", "--exclude-from", "ex", "-r", "x"], [(R, "ex"), (R, ".", "files")]),
    (["grep"], "refused"),  # no pattern
    (["rg", "foo"], [(R, ".", "files")]),
    (["rg", "foo", "src", "docs"], [(R, "src", "files"), (R, "docs", "files")]),
    (["rg", "-A3", "foo", "src"], [(R, "src", "files")]),
    (["rg", "-A=3", "foo"], "refused"),  # ripgrep versions read the `=` differently
    (["rg", "--context=3", "foo"], [(R, ".", "files")]),
    (["rg", "--cont=3", "foo"], "refused"),  # ripgrep takes no prefixes
    (["rg", "--files"], [(R, ".")]),  # names, not content
    (["rg", "--files", "src"], [(R, "src")]),
    (["rg", "--pre", "cat", "foo"], "refused"),
    (["rg", "-z", "foo"], "refused"),
    (["rg", "-e", "a", "-f", "pats", "src"], [(R, "pats"), (R, "src", "files")]),
    (["sed", "-n", "1,5p", "a"], [(R, "a")]),
    (["sed", "-n", "$p", "a"], [(R, "a")]),
    (["sed", "s/a/b/g", "a"], [(R, "a")]),
    (["sed", "-e", "1p", "-e", "s|x|y|", "a", "b"], [(R, "a"), (R, "b")]),
    (["sed", "-i", "s/a/b/", "a"], [(R, "a"), (W, "a"), (W, "sedXXXXXX", "fresh")]),
    (["sed", "-i.bak", "s/a/b/", "d/a"], [(R, "d/a"), (W, "d/a"), (W, "d/sedXXXXXX", "fresh"), (W, "d/a.bak")]),
    (["sed", "-in", "s/a/b/", "a"], [(R, "a"), (W, "a"), (W, "sedXXXXXX", "fresh"), (W, "an")]),  # -in: -i with suffix n
    (["sed", "--in-place=bak/*", "s/a/b/", "a"], "refused"),  # a backup elsewhere
    (["sed", "s/a/b/w out", "a"], "refused"),  # writes `out`
    (["sed", "1w out", "a"], "refused"),
    (["sed", "s/a/b/e", "a"], "refused"),  # runs the pattern space
    (["sed", "1e rm -rf /", "a"], "refused"),
    (["sed", "1r /etc/passwd", "a"], "refused"),
    (["sed", "/x/R other", "a"], "refused"),
    (["sed", "s/\\/w/x/", "a"], [(R, "a")]),  # an escaped delimiter inside the regex
    (["sed", "y/abc/xyz/", "a"], [(R, "a")]),
    (["sed", "-f", "script.sed", "a"], "refused"),
    (["sed", "1a text", "a"], "refused"),
    (["sed", "-n", "/start/,/end/{p;=}", "a"], [(R, "a")]),
    (["jq", ".a", "f.json"], [(R, "f.json")]),
    (["jq", "-rc", ".a", "f.json"], [(R, "f.json")]),
    (["jq", "--arg", "x", "1", ".a", "f.json"], [(R, "f.json")]),
    (["jq", "--slurpfile", "d", "data.json", "-n", "$d"], [(R, "data.json")]),
    (["jq", "-n", "--args", "$ARGS", "a", "b"], []),  # strings, not files
    (["jq", "env.HOME"], "refused"),
    (["jq", "$ENV"], "refused"),
    (["jq", 'import "x" as x; .'], "refused"),
    (["jq", "--", ".", "f"], "refused"),  # jq 1.6 and later read `--` differently
    (["jq", "--indent=2", ".", "f"], "refused"),  # jq takes long options exact
    (["stat", "-c", "%s", "a"], [(R, "a")]),
    (["diff", "a", "b"], [(R, "a", "files"), (R, "b", "files")]),  # a directory's files are compared
    (["diff", "--from-file=base", "a", "b"], [(R, "base"), (R, "a", "files"), (R, "b", "files")]),
    (["diff", "-l", "a", "b"], "refused"),
    (["du", "-sh"], [(R, ".")]),
    (["sort", "-o", "out", "in"], [(W, "out"), (R, "in")]),
    (["sort", "--compress-program=gzip", "in"], "refused"),
    (["uniq", "in", "out"], [(R, "in"), (W, "out")]),
    (["uniq", "in", "out", "more"], "refused"),
    (["sha256sum", "-c", "sums"], "refused"),
    (["realpath", "--relative-to=base", "a"], [(R, "base"), (R, "a")]),
    (["basename", "src/a.py"], []),
    (["echo", "-n", "hi", "--frobnicate"], []),  # echo reads no option that touches a file
    (["pwd", "-P"], []),
    (["cd", "src"], [(R, "src")]),
    (["cd", "a", "b"], "refused"),
    (["cd", "-P", "src"], "refused"),
    (["mkdir", "-p", "a/b"], [(W, "a/b")]),
    (["rmdir", "-p", "a/b/c"], [(W, "a/b/c"), (W, "a/b"), (W, "a")]),
    (["touch", "-r", "ref", "x"], [(R, "ref"), (W, "x")]),
    (["touch", "-"], []),  # standard output
    (["rm", "x"], [(W, "x")]),
    (["rm", "-"], [(W, "-")]),  # rm removes a file named `-`
    (["rm", "-rf", "build"], [(W, "build", "files")]),
    (["rm", "-r", "-f", "--", "-rf"], [(W, "-rf", "files")]),
    (["rm", "--recursive", "--force", "build"], [(W, "build", "files")]),
    (["rm", "--rec", "build"], [(W, "build", "files")]),
    (["cp", "a", "b"], [(R, "a"), (W, "b"), (W, "b/a")]),  # b is a file, or a directory: b/a
    (["cp", "a", "b", "dir"], [(R, "a"), (W, "dir/a"), (R, "b"), (W, "dir/b")]),
    (["cp", "-t", "dir", "a"], [(R, "a"), (W, "dir/a")]),
    (["cp", "-T", "a", "b"], [(R, "a"), (W, "b")]),
    (["cp", "-r", "src", "dst"], [(R, "src", "files"), (W, "dst", "copied"), (W, "dst/src", "copied")]),
    (["cp", "--parents", "a/b", "dir"], "refused"),
    (["cp", "-b", "a", "b"], "refused"),
    (["cp", "a"], "refused"),
    (["cp", ".", "dst"], "refused"),
    (["mv", "a", "b"], [(R, "a", "files"), (W, "a", "files"), (W, "b", "copied"), (W, "b/a", "copied")]),
    (["find", ".", "-name", "*.py"], [(R, ".")]),
    (["find"], [(R, ".")]),
    (["find", "-L", "src", "docs", "-type", "f"], [(R, "src"), (R, "docs")]),
    (["find", ".", "-delete"], [(R, "."), (W, ".", "files")]),
    (["find", ".", "-newer", "ref", "-fprint", "out"], [(R, "ref"), (W, "out"), (R, ".")]),
    (["find", ".", "-newermt", "2024-01-01"], [(R, ".")]),
    (["find", ".", "-newermm", "ref"], [(R, "ref"), (R, ".")]),
    (["find", ".", "-exec", "rm", "{}", ";"], "refused"),
    (["find", ".", "-execdir", "x", "+"], "refused"),
    (["find", ".", "-ok", "rm", "{}", ";"], "refused"),
    (["find", "-files0-from", "list"], "refused"),
    (["find", ".", "-name"], "refused"),
    (["git", "status"], [(R, ".", "repository")]),
    (["git", "--no-pager", "status", "-sb"], [(R, ".", "repository")]),
    (["git", "status", "-v"], [(R, ".", "any", "repository")]),
    (["git", "-C", "x", "status"], "refused"),
    (["git", "-c", "core.fsmonitor=x", "status"], "refused"),
    (["git", "log", "--oneline", "-5"], [(R, ".", "repository")]),
    (["git", "log", "-n5", "HEAD"], [(R, "HEAD"), (R, ".", "repository")]),
    (["git", "log", "-p", "--", "src"], [(R, "src", "any"), (R, ".", "any", "repository")]),
    (["git", "log", "-S", "secret"], "refused"),
    (["git", "log", "--show-signature"], "refused"),
    (["git", "diff"], [(R, ".", "any", "repository")]),
    (["git", "diff", "--stat"], [(R, ".", "repository")]),
    (["git", "diff", "--cached", "--", ".env"], [(R, ".env", "any"), (R, ".", "any", "repository")]),
    (["git", "diff", "--output=d.patch"], [(W, "d.patch"), (R, ".", "any", "repository")]),
    (["git", "diff", "--no-index", "a", "b"], [(R, "a", "files"), (R, "b", "files")]),
    (["git", "diff", "--ext-diff"], "refused"),
    (["git", "diff", "--", "*.env"], [(R, ".", "any"), (R, ".", "any", "repository")]),  # git's own pattern
    (["git", "diff", "--", ":(top)x"], "refused"),
    (["git", "show", "HEAD:.env"], [(R, ".env", "repository"), (R, ".", "any", "repository")]),
    (["git", "show", ":0:src/a.py"], [(R, "src/a.py", "repository"), (R, ".", "any", "repository")]),
    (["git", "show", "HEAD:./a.py"], [(R, "./a.py"), (R, ".", "any", "repository")]),
    (["git", "show", "-s", "HEAD"], [(R, "HEAD", "any"), (R, ".", "any", "repository")]),  # a blob is shown whole
    (["git", "blame", "src/a.py"], [(R, "src/a.py")]),
    (["git", "blame", "-L", "1,5", "HEAD", "--", "src/a.py"], [(R, "HEAD"), (R, "src/a.py")]),
    (["git", "blame", "--contents", "other", "a"], [(R, "other"), (R, "a")]),
    (["git", "branch"], [(R, ".", "repository")]),
    (["git", "branch", "-a", "-vv", "--list", "feat*"], [(R, ".", "repository")]),
    (["git", "branch", "new-feature"], "refused"),  # makes a branch
    (["git", "branch", "-D", "old"], "refused"),
    (["git", "push"], "refused"),
    (["git", "checkout", "x"], "refused"),
    (["git"], "refused"),
    (["python", "x.py"], None),
    (["/bin/cat", "a"], None),  # run by path: not the catalogue's (a program of that name may be anything)
    (["CAT", "a"], None),
]

GLOBS: list[tuple[list[Any], Any]] = [
    (["cat", GlobWord("src/*.py", "src/*.py", False, False)], [(R, "src/*.py"), (R, "src")]),
    (["rm", "-r", GlobWord("build/*", "build/*", False, False)], [(W, "build/*", "files"), (R, "build")]),
    (["cp", GlobWord("*.py", "*.py", False, True), "dst"], "refused"),  # which word is the destination?
    (["grep", GlobWord("x*", "x*", False, False), "a"], "refused"),  # the pattern would be the first file
    (["grep", "-e", GlobWord("x*", "x*", False, False), "a"], "refused"),  # a value may be several words
    (["uniq", GlobWord("a*", "a*", False, False)], "refused"),
    (["cd", GlobWord("s*", "s*", False, False)], "refused"),
    (["echo", GlobWord("*", "*", False, True)], [(R, ".")]),  # bash lists the directory
    (["sort", GlobWord("-o*.txt", "-o*.txt", False, False), "in"], "refused"),  # -o and a glob: which file is written?
    (["grep", "-r", GlobWord("--include=*.py", "--include=*.py", False, False), "x"], "refused"),
    (["rm", "--", GlobWord("-*", "-*", False, False)], [(W, "-*"), (R, ".")]),  # after `--`, an operand
    (["find", GlobWord("-*", "-*", False, False)], "refused"),  # `-delete` there would be an action
]


@pytest.mark.parametrize(("argv", "expected"), TABLE + GLOBS, ids=[" ".join(map(str, row[0]))[:50] for row in TABLE + GLOBS])
def test_readings(argv: list[Any], expected: Any) -> None:
    assert _touches(read_command(argv)) == expected


def test_a_leading_glob_is_read_on_condition() -> None:
    """``*.py`` before ``--`` may expand to ``-rf``: the reading says so (the decider checks that no
    such file exists); after ``--`` it is an operand whatever it expands to."""
    star = GlobWord("*.py", "*.py", False, True)
    assert read_command(["cat", star]).unless == (star,)  # type: ignore[union-attr]
    assert read_command(["cat", "--", star]).unless == ()  # type: ignore[union-attr]
    assert read_command(["find", star, "-name", "x"]).unless == (star,)  # type: ignore[union-attr]


def test_rg_reads_its_input_rather_than_the_directory_when_given_one() -> None:
    assert _touches(read_command(["rg", "foo"], stdin=True)) == []
    assert _touches(read_command(["rg", "foo", "src"], stdin=True)) == [(R, "src", "files")]
    assert _touches(read_command(["rg", "--files"], stdin=True)) == [(R, ".")]
    assert _touches(read_command(["grep", "-r", "foo"], stdin=True)) == [(R, ".", "files")]  # grep -r searches . anyway


# ---- the table itself ---------------------------------------------------------------------------

ROWS = [*catalogue.PROGRAMS, *catalogue.GIT_COMMANDS.values()]


def test_every_row_is_well_formed() -> None:
    names = [name for program in catalogue.PROGRAMS for name in program.names]
    assert len(names) == len(set(names)), "a program in two rows"
    for program in ROWS:
        spellings = [name for option in program.options for name in option.names]
        assert len(spellings) == len(set(spellings)), (program.names, "an option spelled twice")
        assert program.syntax in catalogue.SYNTAXES and program.operands in catalogue.LAYOUTS, program.names
        assert program.empty in catalogue.EMPTY and program.first in ("", "pattern", "script", "filter"), program.names
        assert program.manual, program.names
        for option in program.options:
            assert all(name.startswith("-") and name != "--" for name in option.names), option
            assert option.value in ("", "required", "optional", "two"), option
            assert set(option.does) <= {*catalogue.EFFECTS, catalogue.REFUSE}, option
            assert bool(option.why) == (catalogue.REFUSE in option.does), option
            if program.syntax in ("jq", "tree"):
                assert option.value != "optional", option  # no such spelling in their parsers


# ---- generated argvs against getopt_long's reading ------------------------------------------------

REFERENCE_ROWS = [program for program in catalogue.PROGRAMS
                  if program.syntax in ("gnu", "gnu-count") and program.operands in ("read", "list", "write")
                  and all(option.value in ("", "required") for option in program.options)]  # fmt: skip
"""Rows Python's getopt reads as glibc's getopt_long does: no option with an optional value."""


@st.composite
def _argv(draw: st.DrawFn, program: catalogue.Program) -> list[str]:
    usable = [option for option in program.options if catalogue.REFUSE not in option.does]
    longs = sorted(name for option in program.options for name in option.names if name.startswith("--"))
    words: list[str] = [program.names[0]]
    pending: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["option", "option", "operand", "cluster", "unknown", "dashes"]))
        if kind == "operand":
            pending.append(draw(st.sampled_from(["a", "src/b.py", "-", "dir with space", "ünï", "x=y"])))
        elif kind == "dashes":
            words.append("--")
            words.append(draw(st.sampled_from(["-n", "--lines", "-", "a"])))
        elif kind == "unknown":
            words.append(draw(st.sampled_from(["--frobnicate", "-Ω", "--zz=1"])))
        elif kind == "cluster":
            flags = [name[1] for option in usable if option.value == "" for name in option.names if len(name) == 2]
            if flags:
                words.append("-" + "".join(draw(st.lists(st.sampled_from(flags), min_size=2, max_size=4))))
        elif usable:
            option = draw(st.sampled_from(usable))
            name = draw(st.sampled_from(option.names))
            if name.startswith("--") and draw(st.booleans()):
                cut = name[: draw(st.integers(3, len(name)))]
                if [long for long in longs if long.startswith(cut)] == [name] or cut == name:
                    name = cut  # a prefix of this name alone: getopt_long and Python agree on it
            if option.value == "":
                words.append(name)
            elif name.startswith("--"):
                words += draw(st.sampled_from([[f"{name}=5"], [name, "5"]]))
            else:
                words += draw(st.sampled_from([[f"{name}5"], [name, "5"]]))
        if pending and draw(st.booleans()):
            words.append(pending.pop())
    return words + pending


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_options_and_operands_are_read_as_getopt_long_reads_them(data: Any) -> None:
    program = data.draw(st.sampled_from(REFERENCE_ROWS))
    argv = data.draw(_argv(program))
    shorts = "".join(name[1] + (":" if option.value else "") for option in program.options for name in option.names if len(name) == 2)
    longs = [name[2:] + ("=" if option.value else "") for option in program.options for name in option.names if name.startswith("--")]
    obsolete = program.syntax == "gnu-count" and len(argv) > 1 and argv[1][1:].isdigit() and argv[1].startswith("-")
    try:
        options, operands = getopt.gnu_getopt(argv[2:] if obsolete else argv[1:], shorts, longs)
    except getopt.GetoptError:
        assert isinstance(catalogue._options(program, argv, 1), str), argv
        return
    parsed = catalogue._options(program, argv, 1)
    assert not isinstance(parsed, str), (argv, parsed)
    assert parsed.operands == operands, argv
    assert [(value or "") for _, value, _ in parsed.options] == [value for _, value in options], argv
    assert all(spelled in option.names for (option, _, _), (spelled, _) in zip(parsed.options, options)), argv
    reading = read_command(argv)
    assert isinstance(reading, Reading), argv
    words = {touch.word for touch in reading.touches}
    assert {word for word in operands if not (program.dash and word == "-")} <= words, argv
    values = {value for _, value in options}
    parents = {part for word in operands for part in _parents(str(word))}
    assert words <= {*operands, *values, ".", *parents}, argv


def _parents(word: str) -> list[str]:
    parts = word.split("/")
    return ["/".join(parts[:index]) for index in range(1, len(parts))]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_an_option_the_row_does_not_list_is_never_read(data: Any) -> None:
    """Wherever it stands before ``--`` (a builtin's: before its operands), an unknown option
    makes the command not understood (it is decided by its argv alone), in every row and syntax."""
    program = data.draw(st.sampled_from([row for row in catalogue.PROGRAMS if row.syntax not in ("words", "git")]))
    known = {name for option in program.options for name in option.names}
    unknown = data.draw(st.sampled_from(["--frobnicate", "--x-y-z=1", "-Ω", "-\u2215"]).filter(lambda word: word not in known))
    first = {"pattern": ["foo"], "script": ["p"], "filter": ["."]}.get(program.first, [])
    operands = data.draw(st.lists(st.sampled_from(["a", "src/b"]), max_size=2))
    argv = [program.names[0], *first, *operands]
    at = data.draw(st.integers(1, len(argv))) if program.syntax != "builtin" else 1  # a builtin's options come first
    assert isinstance(read_command([*argv[:at], unknown, *argv[at:]]), str), (argv, at, unknown)
    sub = data.draw(st.sampled_from(sorted(catalogue.GIT_COMMANDS)))
    assert isinstance(read_command(["git", sub, "--frobnicate"]), str)


@pytest.mark.parametrize("option", [option for row in ROWS for option in row.options if catalogue.REFUSE in option.does],
                         ids=lambda option: option.names[0])  # fmt: skip
def test_an_option_that_runs_code_or_writes_elsewhere_is_never_read(option: catalogue.Option) -> None:
    row = next(row for row in ROWS if option in row.options)
    words = row.names[0].split()
    value = {"": [], "required": ["x"], "optional": [], "two": ["x", "y"]}[option.value]
    first = {"pattern": ["foo"], "script": ["p"], "filter": ["."]}.get(row.first, [])
    for name in option.names:
        assert isinstance(read_command([*words, name, *value, *first, "a", "b"]), str), name


def test_touch_words_are_operands_or_option_values_or_made_from_them() -> None:
    """Every file a reading names comes from the argv (an operand, an option's value), or is the
    working directory, a destination's name made of a source's, or a temporary file beside one."""
    for argv, expected in TABLE:
        reading = read_command(argv)
        if not isinstance(reading, Reading):
            continue
        for touch in reading.touches:
            word = touch.word.written if isinstance(touch.word, GlobWord) else touch.word
            made = word == "." or word in argv or any(
                str(part) in word or str(part).endswith(("=" + word, ":" + word)) for part in argv[1:] if part not in ("-", "--")
            )
            made = made or (touch.fresh and word.endswith("sedXXXXXX")) or any(str(part).startswith(word + "/") for part in argv)
            assert made, (argv, touch)


def test_the_touch_of_a_copy_names_its_source() -> None:
    reading = read_command(["cp", "-r", "src", "dst"])
    assert isinstance(reading, Reading)
    assert [touch.source for touch in reading.touches if touch.tree == "copied"] == ["src", "src"]
    assert Touch("read", "src", "files") in reading.touches
