"""bgc.runtime.shell: the work of analysing a command grows with its length, not faster.

A hook decides every Bash call an agent makes; a command whose analysis grows with the square of
its length (a here-document of many ``$(…)`` lines, a word of many commas after a ``{``) stalls
that decision. Each family below builds a command of ``n`` repeated units; the analysis of twice
the units may take at most about twice the steps (tests/work_steps.py counts them, no clock).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.runtime.shell import MAX_COMMAND_CHARS, shell_atoms
from tests.work_steps import growth

LINEAR = 2.5
"""The most the steps may grow when the command doubles (n log n work gives about 2.2)."""

FAMILIES: dict[str, Callable[[int], str]] = {
    "here-doc of $() lines": lambda n: "cat <<EOF > out.txt\n" + "".join(f"line $(echo {i})\n" for i in range(n)) + "EOF\n",
    "here-doc of ${} lines": lambda n: "cat <<EOF > out.txt\n" + "a ${x}\n" * n + "EOF\n",
    "here-doc of $(( )) lines": lambda n: "cat <<EOF > out.txt\n" + "a $((1+2))\n" * n + "EOF\n",
    "here-doc of escaped $()": lambda n: "cat <<EOF > out.txt\n" + "\\\\\\$(x) `y`\n" * n + "EOF\n",
    "here-doc, <<- and tabs": lambda n: "cat <<-EOF > out.txt\n" + "\t$(a) ${b}\n" * n + "\tEOF\n",
    "here-docs, many": lambda n: "".join(f"cat <<E{i} >f{i}\n$(x)\nE{i}\n" for i in range(n)),
    "nested substitutions": lambda n: "echo " + "$(echo " * min(n, 40) + "x" + ")" * min(n, 40) + " y" * n,
    "double-quoted substitutions": lambda n: 'echo "' + "$(a)" * n + '"',
    "long quoted string": lambda n: "echo '" + "a b " * n + "'",
    "long double-quoted string": lambda n: 'echo "' + "a \\$ " * n + '"',
    "many ;": lambda n: "; ".join(f"echo {i}" for i in range(n)),
    "many &&": lambda n: " && ".join(f"cd d{i % 5}" for i in range(n)),
    "many |": lambda n: " | ".join(f"cat {i}" for i in range(n)),
    "backslash run": lambda n: "echo " + "\\\\" * n + "x",
    "backslash run before $()": lambda n: "cat <<EOF\n" + "\\" * n + "$(x)\nEOF\n",
    "escaped blanks": lambda n: "echo " + "'a'\\ b\\ " * n,
    "arithmetic": lambda n: "echo $((" + "+".join("1" for _ in range(n)) + "))",
    "brace of commas": lambda n: "echo {" + "," * n,
    "braces": lambda n: "echo " + "{a,b}c{" * n,
    "many words": lambda n: "echo " + "a\\b " * n,
    "redirections": lambda n: "cat " + "2>/dev/null x " * n,
    "ANSI-C string": lambda n: "echo $'" + "\\x41\\n" * n + "'",
    "line continuations": lambda n: "echo " + "a \\\n" * n,
    "case arms": lambda n: "case x in " + "a) y;; " * n + "esac",
}

SIZE = 1500


@pytest.mark.parametrize("family", list(FAMILIES), ids=list(FAMILIES))
def test_analysis_grows_linearly(family: str) -> None:
    build = FAMILIES[family]
    assert len(build(2 * SIZE)) <= MAX_COMMAND_CHARS  # the analysis runs, rather than refusing the length
    assert growth(lambda n: shell_atoms(build(n), cwd="/w"), SIZE) <= LINEAR


UNITS = st.sampled_from(
    ["$(a)", "`b`", "${c}", "$((1))", "\\", "\\\\", "{", "}", ",", "..", "'q'", '"d"', "\\ ", " ", "\n", ";", "&&",
     "|", "<<E\n", "E\n", ">f", "<(g)", "x", "=", "~", "*", "(", ")"]
)


@settings(max_examples=15)
@given(prefix=st.lists(UNITS, max_size=4), unit=st.lists(UNITS, min_size=1, max_size=6), suffix=st.lists(UNITS, max_size=4))
def test_analysis_of_a_repeated_unit_grows_linearly(prefix: list[str], unit: list[str], suffix: list[str]) -> None:
    """Any short piece of shell syntax, repeated: whatever the grammar makes of it."""

    def command(n: int) -> str:
        return "".join(prefix) + "".join(unit) * n + "".join(suffix)

    assert growth(lambda n: shell_atoms(command(n), cwd="/w"), 400) <= LINEAR
