"""How every command ``bgc init`` registers starts bgc, so that it never fails open.

An agent runs a hook command through a shell and lets the call through when the command exits
with anything but 0 or 2 (Claude Code, Gemini CLI and Codex all treat another code as a
non-blocking error; Codex also ignores an exit 2 with nothing on stderr). A command naming an
interpreter that is not there exits 127, one whose Python cannot import bgc exits 1: every call
would go through, enforcement gone without a word. So each registered command is
``/bin/sh -c LAUNCHER WORD ARGUMENTS…``: the launcher, a POSIX shell script, starts bgc isolated
(``-I``) with ``ARGUMENTS``, passes its exit code on when it is one of bgc's answers (0, 2), and
turns every other ending — 127, 126, an ``ImportError``'s 1, a signal — into exit 2 with a
message on stderr that names the fix. ``/bin/sh`` by its path: the agent's own shell may be fish
(Codex runs ``$SHELL -lc``), and a ``sh`` found on ``PATH`` could be one the agent wrote.

Two launchers. :data:`MACHINE`'s ``WORD`` is this machine's interpreter by its absolute path (for
the settings of one's own, Claude Code's ``settings.local.json``). :data:`SHARED`'s ``WORD`` is
the project directory, and it starts the ``bgc`` on the agent's ``PATH`` (for the settings a team
commits, which must work on every machine): it reads the interpreter from the script's first line
as pip, pipx and uv write it (``#!/abs/python``, or ``#!/bin/sh`` then a line ``'''exec'
"/abs/python" "$0" "$@"`` for a long path or one with spaces), never runs the script itself (its
interpreter would start without ``-I``), and blocks when there is no ``bgc`` on ``PATH``, when
the first line names no interpreter, or when the interpreter lies in the project (resolved
physically, ``cd -P``): there the agent could replace it.

The scripts are written for where they are stored: no single quote (each is one single-quoted
shell word), no ``${`` (Claude Code expands ``${VAR}`` in ``.mcp.json`` and refuses the whole file
for an unset one), no backslash pair or escaped single quote (fish reads those inside its single
quotes), and only variables named ``bgc_…`` (Gemini CLI replaces ``$NAME`` in its settings by the
environment variable of that name when there is one; ``IFS`` is unset, never read).
"""

from __future__ import annotations

import shlex

SHELL = "/bin/sh"

ENTRY = "from bgc.app.launch import console; console()"
"""What the interpreter runs (``-c``), rather than ``-m bgc``: :mod:`runpy` imports more than a
call the decision server answers needs."""

_RUN = (
    '[ -x "$bgc_py" ] || { printf "%s\\n" "bgc: blocked: there is no Python at $bgc_py to run bgc: install bgc again, or'
    ' register the bgc you use with bgc init" >&2; exit 2; };',
    f'"$bgc_py" -I -c "{ENTRY}" "$@";',
    "bgc_c=$?; case $bgc_c in 0|2) exit $bgc_c;; esac;",
    'printf "%s\\n" "bgc: blocked: $bgc_py -I ended with exit $bgc_c, not an answer bgc gives (0, 2): if bgc did not'
    ' start, install it for that Python again, or register the bgc you use with bgc init" >&2; exit 2',
)
"""Run bgc with the arguments, pass 0 and 2 on, and block on anything else."""

_FIND = (
    "bgc_at=$0;",
    # the first word of the arguments that is a path (or a path after spaces)
    'bgc_pick() { bgc_f=; for bgc_w; do case $bgc_w in /*|" /"*) bgc_f=$bgc_w; return;; esac; done; };',
    # the directory of a path split on /, without dirname (a process)
    'bgc_up() { bgc_r=; while [ $# -gt 1 ]; do [ -z "$1" ] || bgc_r=$bgc_r/$1; shift; done; [ -n "$bgc_r" ] || bgc_r=/; };',
    "bgc_s=$(command -v bgc) || bgc_s=;",
    'case $bgc_s in /*) ;; *) printf "%s\\n" "bgc: blocked: there is no bgc on PATH, and the hooks this project'
    " shares run the bgc found there: install it where the agent finds it (pipx install boundgraph-bgc), or start"
    ' the agent with it on PATH" >&2; exit 2;; esac;',
    'bgc_a=; bgc_b=; { IFS= read -r bgc_a; IFS= read -r bgc_b; } < "$bgc_s";',
    "set -f;",
    'case $bgc_a in "#!/bin/sh") IFS="$(printf "\\047")\\""; bgc_pick $bgc_b;'
    ' case $bgc_f in " "*) IFS=" "; bgc_pick $bgc_f;; esac;;',
    '"#!/"*) IFS="!"; bgc_pick $bgc_a; case $bgc_f in *[[:space:]]*) bgc_f=;; esac;; *) bgc_f=;; esac;',
    "bgc_py=$bgc_f; IFS=/; bgc_up $bgc_py; unset IFS;",
    'case $bgc_py in /*) ;; *) printf "%s\\n" "bgc: blocked: cannot tell which Python runs $bgc_s (its first line'
    ' names none the way pip, pipx and uv write it): install bgc with one of them" >&2; exit 2;; esac;',
    'bgc_r=$(cd -P -- "$bgc_r" 2>/dev/null && pwd -P) || bgc_r=;',
    'bgc_p=$(cd -P -- "$bgc_at" 2>/dev/null && pwd -P) || bgc_p=/;',
    "case $bgc_p in /) bgc_r=/;; esac;",
    'case $bgc_r/ in "$bgc_p"/*) printf "%s\\n" "bgc: blocked: the bgc on PATH ($bgc_s) runs $bgc_py, inside the'
    ' project, where the agent may change it: install bgc outside the project (pipx install boundgraph-bgc)" >&2;'
    " exit 2;; esac;",
)
"""Find the interpreter of the ``bgc`` on ``PATH`` (``$0`` is the project), or block."""

MACHINE = " ".join(("bgc_py=$0;", *_RUN))
"""The launcher of a command that names this machine's interpreter (``$0``)."""
SHARED = " ".join((*_FIND, *_RUN))
"""The launcher of a command a team shares: the ``bgc`` on ``PATH`` (``$0`` is the project)."""

MACHINE_LAUNCHERS = (MACHINE,)
SHARED_LAUNCHERS = (SHARED,)
"""Today's launchers and those earlier versions of ``bgc init`` wrote: changing a launcher
changes every registered command, so keep the old text here for ``bgc init`` to recognise."""


def words(program: str | None, project: str = ".") -> list[str]:
    """The launcher's argv up to bgc's arguments: :data:`MACHINE` starting ``program`` (an
    absolute interpreter path), or with ``program`` None :data:`SHARED`, starting the ``bgc`` on
    ``PATH`` when its interpreter lies outside ``project``."""
    if program is None:
        return [SHELL, "-c", SHARED, project]
    return [SHELL, "-c", MACHINE, program]


def command(program: str | None, project: str, arguments: str) -> str:
    """A registered command for the agent's shell (:func:`words`); ``project`` and ``arguments``
    are shell text (``"$CLAUDE_PROJECT_DIR"`` is left for the agent's shell to expand)."""
    if program is None:
        return f"{shlex.join(words(None)[:-1])} {project} {arguments}"
    return f"{shlex.join(words(program))} {arguments}"


def parse(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """``(program, arguments)`` of an argv a launcher starts, one of today's or an earlier
    version's (``program`` None: the bgc on ``PATH``), or None for any other argv."""
    if len(argv) < 4 or argv[:2] != [SHELL, "-c"]:
        return None
    if argv[2] in MACHINE_LAUNCHERS:
        return argv[3], argv[4:]
    if argv[2] in SHARED_LAUNCHERS:
        return None, argv[4:]
    return None
