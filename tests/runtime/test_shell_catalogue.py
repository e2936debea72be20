"""bgc.runtime.shell with the catalogue: the files a catalogued command touches, as fs needs
resolved as a redirection's target is (the directory the command runs in, ``cd`` followed,
``..`` and ``//`` normalised, ``~`` the home directory), globs as the patterns they may expand to.

The table is written by hand; the property tests generate commands by class (quoting, spaces,
non-ASCII and control characters in names, ``..``, absolute paths, ``~``, globs, ``cd``) and check
what must hold whatever the command: a command read by the catalogue needs every file the same
command needs spelled plainly, a name bgc refuses is never read, and the work stays linear.
"""

from __future__ import annotations

import shlex
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.resources.proc import WORD_SLASH as S
from bgc.runtime.shell import MAX_CATALOGUE_NEEDS, shell_atoms
from tests.work_steps import growth

CWD, HOME = "/w", "/home/me"


def _catalogued(command: str, home: str | None = HOME) -> list[str] | None:
    """The fs needs of the catalogue's readings (with how a pattern is decided), or None when it
    read no command of the string."""
    analysis = shell_atoms(command, cwd=CWD, home=home)
    if not analysis.programs:
        return None
    shown = []
    for need in analysis.needs:
        if need.catalogued and need.resource == "fs":
            shown.append(need.atom + (f" [{need.reach}]" if need.reach else ""))
    return shown


TABLE: list[tuple[str, list[str] | None]] = [
    ("cat src/app.py", ["fs:read:/w/src/app.py"]),
    ("cat ./src//app.py", ["fs:read:/w/src/app.py"]),
    ("cat /etc/passwd", ["fs:read:/etc/passwd"]),
    ("cat ../other/x", ["fs:read:/other/x"]),  # climbing the working directory, taken as real
    ("cat src/../.env", None),  # a `..` after a name may climb out of a link: decided by the argv alone
    ("cat 'dir with space/f 1.txt'", ["fs:read:/w/dir with space/f 1.txt"]),
    ('cat "ünï/çé.txt"', ["fs:read:/w/ünï/çé.txt"]),
    (f"cat {unicodedata.normalize('NFD', 'é')}", None),  # not NFC: refused as a path
    ("cat $'a\\nb'", None),  # a newline in the name: refused as a path
    ("cat .e\"\"nv", ["fs:read:/w/.env"]),
    ("cat -- -n", ["fs:read:/w/-n"]),
    ("cat ~/notes.txt", ["fs:read:/home/me/notes.txt [files]"]),
    ("cat ~", ["fs:read:/home/me [files]"]),
    ("cat ~other/x", None),  # another user's home: only running it tells
    ("cat a=~/x", None),  # bash expands a `~` after `=` in an argument too: only running it tells
    ("cat src/*.py", ["fs:read:/w/src/*.[pP][yY] [files]", "fs:read:/w/src [files]"]),
    ("cat 'src/*.py'", ["fs:read:/w/src/*.py"]),  # quoted: the one file of that name
    ("cat src/\\*.py", ["fs:read:/w/src/*.py"]),
    ("cat *.md", ["fs:read:/w/*.[mM][dD] [files]", "fs:read:/w [files]", "fs:read:/w/-*.[mM][dD] [absent]"]),
    ("cat -- *.md", ["fs:read:/w/*.[mM][dD] [files]", "fs:read:/w [files]"]),
    ("cat src/[ab].py", None),  # a bracket: not read
    ("cat {a,b}.py", None),  # a brace expansion: not read
    ("cat $F", None),
    ("rm -rf build", ["fs:write:/w/build", "fs:write:/w/build/** [files]"]),
    ("rm -rf build/*", ["fs:write:/w/build/* [files]", "fs:write:/w/build/*/** [files]", "fs:read:/w/build [files]"]),
    ("cp -r src dst", ["fs:read:/w/src", "fs:read:/w/src/** [files]", "fs:write:/w/dst", "fs:write:/w/dst/** [copied]",
                       "fs:write:/w/dst/src", "fs:write:/w/dst/src/** [copied]"]),
    ("git status", ["fs:read:<git top of /w>/."]),
    ("git diff", ["fs:read:<git top of /w>/.", "fs:read:<git top of /w>/** [any]"]),
    ("git show HEAD:src/a.py", ["fs:read:<git top of /w>/src/a.py", "fs:read:<git top of /w>/.",
                                "fs:read:<git top of /w>/** [any]"]),
    ("cd src && cat a.py", ["fs:read:/w/src", "fs:read:/w/src/a.py"]),
    ("cd src; cat a.py", ["fs:read:/w/src", "fs:read:/w/a.py", "fs:read:/w/src/a.py"]),  # cd may have failed
    ("cd $D && cat a.py", None),  # a relative path after an unknown cd: decided by the argv
    ("(cd src) && cat a.py", ["fs:read:/w/src", "fs:read:/w/a.py"]),
    ("sudo cat .env", ["fs:read:/w/.env"]),  # looked through the wrapper
    ("bash -c 'cat .env'", ["fs:read:/w/.env"]),
    ("time rm -r x", ["fs:write:/w/x", "fs:write:/w/x/** [files]"]),
    ("rg foo", ["fs:read:/w", "fs:read:/w/** [files]"]),
    ("git diff | rg foo", ["fs:read:<git top of /w>/.", "fs:read:<git top of /w>/** [any]"]),  # rg reads the pipe
    ("rg foo < list.txt", []),  # its input is a file; the redirection is a need of its own
    ("rg foo 3< list.txt", ["fs:read:/w", "fs:read:/w/** [files]"]),  # descriptor 3: not its input
    ("rg foo <<< text", []),
    ("cat src/a.py > out.txt", ["fs:read:/w/src/a.py"]),  # the redirection is not the catalogue's
    ("cat /dev/null", []),
    ("echo hi", []),
    ("cat --frobnicate x", None),
    ("find . -exec rm {} +", None),
    ("python x.py", None),
    ("/bin/cat .env", None),
]


@pytest.mark.parametrize(("command", "expected"), TABLE, ids=[row[0][:40] for row in TABLE])
def test_the_files_a_command_touches(command: str, expected: list[str] | None) -> None:
    assert _catalogued(command) == expected


def test_an_argv_stays_needed_and_numbered_with_its_files() -> None:
    needs = shell_atoms("cat a && python b && rm c > d", cwd=CWD).needs
    assert [(need.atom.replace(S, "S"), need.catalogued) for need in needs] == [
        ("proc:exec:cat/a", 1), ("fs:read:/w/a", 1), ("proc:exec:python/b", 0), ("proc:exec:rm/c", 2), ("fs:write:/w/c", 2),
        ("fs:write:/w/d", 0),
    ]  # fmt: skip
    assert shell_atoms("cat a && rm c", cwd=CWD).programs == ("cat", "rm")


def test_a_glob_is_the_argv_as_written_and_asks_only_where_not_read() -> None:
    read = shell_atoms("cat src/*.py", cwd=CWD)
    assert [need.atom for need in read.needs][0] == f"proc:exec:cat/src{S}*.py" and read.needs_ask == ()
    assert shell_atoms("python src/*.py", cwd=CWD).needs_ask  # not a program the catalogue reads: asked as before
    assert shell_atoms("cat ~/x", cwd=CWD).needs_ask  # the home directory not known


def test_a_home_that_is_not_absolute_is_not_used() -> None:
    assert _catalogued("cat ~/x", home="relative") is None
    assert _catalogued("cat ~/x", home=None) is None


# ---- generated by class -------------------------------------------------------------------------

NAMES = st.sampled_from(["a.py", "dir with space", "ünï", "-n", "x=y", ".env", "*", "a'b", 'q"', "tab\there", "new\nline",
                         "é" + "\u0301", "\u2215", ".", ".."])  # fmt: skip


@st.composite
def _paths(draw: st.DrawFn) -> str:
    parts = draw(st.lists(NAMES, min_size=1, max_size=3))
    prefix = draw(st.sampled_from(["", "./", "/", "~/", "src/"]))
    return prefix + "/".join(parts)


@settings(max_examples=300, deadline=None)
@given(_paths(), st.sampled_from(["cat", "head -n 5", "rm -rf", "ls -la", "grep -r x", "touch", "wc -l"]))
def test_a_quoted_path_is_read_as_the_plain_path_or_not_at_all(path: str, program: str) -> None:
    """A path, quoted as a shell quotes it, is the path it names: the catalogue either reads it
    as the tools would place that path (canonical, absolute), or does not read the command."""
    quoted = shlex.quote(path) if not path.startswith("~/") else "~/" + shlex.quote(path[2:])
    needs = _catalogued(f"{program} -- {quoted}")
    if needs is None:
        return
    from bgc.core import resources

    base = HOME if path.startswith("~/") else "/" if path.startswith("/") else CWD
    expected = resources.normalise("fs", f"{base}/{path[2:] if path.startswith('~/') else path}")
    assert isinstance(expected, str), (path, needs)  # a refused path is never read
    from bgc.core.patterns import glob

    assert any(need.split(" [")[0] in (f"fs:read:{expected}", f"fs:write:{expected}", f"fs:read:{glob.escape(expected)}",
                                       f"fs:write:{glob.escape(expected)}") for need in needs), (path, needs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["src", "a b", "..", "x/y", "$D", "ünï"]), min_size=1, max_size=3),
       st.sampled_from([" && ", "; ", " || "]))  # fmt: skip
def test_after_cd_a_path_is_read_where_the_command_may_run(dirs: list[str], joiner: str) -> None:
    """Each ``cd`` moves where a relative path is read (both places when it may have failed), as
    for a redirection; after one the text does not name, the path is not read."""
    command = joiner.join(f"cd {shlex.quote(d) if d != '$D' else d}" for d in dirs) + joiner + "cat f"
    analysis = shell_atoms(command, cwd=CWD)
    reads = [need.value for need in analysis.needs if need.catalogued and need.atom.startswith("fs:read:") and need.value.endswith("/f")]
    redirect = [need.value for need in shell_atoms(command.replace("cat f", "echo > f"), cwd=CWD).needs if need.action == "write"]
    assert sorted(reads) == sorted(redirect)


def test_the_needs_a_string_may_add_are_bounded() -> None:
    command = "cat " + " ".join(f"f{index}" for index in range(2 * MAX_CATALOGUE_NEEDS))
    analysis = shell_atoms(command, cwd=CWD)
    assert len(analysis.needs) <= MAX_CATALOGUE_NEEDS + 1
    assert analysis.programs == ()  # past the bound: decided by its argv alone


@pytest.mark.parametrize(
    "family",
    [
        lambda n: "cat " + " ".join(f"src/f{i}.py" for i in range(n)),
        lambda n: "rm -rf " + " ".join(f"build/*/x{i}" for i in range(n)),
        lambda n: "sed -n '" + ";".join(f"{i}p" for i in range(n)) + "' a",
        lambda n: "sed -n 's/" + "\\/" * n + "/x/' a",
        lambda n: "cat " + " ".join(f"'a b {i}'" for i in range(n)),
        lambda n: " && ".join(f"cd d{i % 3} && cat f{i}" for i in range(n)),
        lambda n: "jq '" + ".a" * n + "' f",
        lambda n: "grep " + " ".join(["-e x"] * n) + " f",
    ],
    ids=["operands", "globs", "sed commands", "sed escapes", "quoted", "cd and cat", "jq filter", "options"],
)
def test_reading_grows_linearly(family) -> None:  # type: ignore[no-untyped-def]
    assert growth(lambda n: shell_atoms(family(n), cwd=CWD, home=HOME), 200) <= 2.5
