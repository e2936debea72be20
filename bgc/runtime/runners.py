"""Programs that run other programs: what bgc knows of them, in one catalog.

A shell command's argv is one program, but some programs run another command (``sudo rm x``,
``sh -c 'rm x'``, ``xargs rm``). :mod:`bgc.runtime.shell` needs every command that will run, so for each
such program this module says which kind it is and how it finds the command it runs:

* a shell whose ``-c`` string is Bash (:data:`SHELLS`): the string is parsed again
  (:func:`shell_string`);
* a wrapper that runs the words after its options (:data:`WRAPPER_OPTIONS`): looked through
  (:func:`wrapped_command`), an option it does not list asks;
* a runner whose command bgc cannot read off its words (:data:`OPAQUE_RUNNERS`): asks.

Pure data and functions of an argv: no parsing, no decision (the shell walk asks with the
reasons given here). Runtime layer: imports nothing of bgc.
"""

from __future__ import annotations

import posixpath
import re

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "hush", "mksh", "yash", "posh", "rbash"})
"""Shells whose ``-c`` string is read as Bash (busybox runs its ``ash`` and ``hush`` by name)."""
SHELL_FLAGS = frozenset("eulxvnfhBCEHPT")
"""Single-letter options a shell may take alongside ``-c`` that change nothing about which
commands run (``bash -ec``, ``sh -xc``, ``bash -lc``'s ``l`` is below: it reads profile files)."""

WRAPPER_OPTIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # wrapper: (options without a value, options that take the next word as their value)
    "env": (frozenset({"-i", "-", "--ignore-environment", "-0", "--null"}), frozenset({"-u", "--unset"})),
    "sudo": (frozenset({"-n", "-E", "-H", "-P", "-S", "-k", "-b", "--"}), frozenset({"-u", "-g", "-h", "-p", "-C"})),
    "time": (frozenset({"-p"}), frozenset()),
    "nice": (frozenset(), frozenset({"-n", "--adjustment"})),
    "nohup": (frozenset(), frozenset()),
    "command": (frozenset({"-p"}), frozenset()),
    "builtin": (frozenset(), frozenset()),
    "exec": (frozenset({"-c", "-l"}), frozenset()),
    "timeout": (frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}), frozenset({"-s", "-k", "--signal", "--kill-after"})),
    "stdbuf": (frozenset(), frozenset({"-i", "-o", "-e"})),
    "doas": (frozenset({"-n"}), frozenset({"-u"})),
    "setsid": (frozenset({"-c", "--ctty", "-f", "--fork", "-w", "--wait"}), frozenset()),
    "ionice": (frozenset({"-t", "--ignore"}), frozenset({"-c", "--class", "-n", "--classdata"})),
    "pkexec": (frozenset({"--disable-internal-agent", "--keep-cwd"}), frozenset({"--user"})),
    "caffeinate": (frozenset({"-d", "-i", "-m", "-s", "-u"}), frozenset({"-t", "-w"})),
    "busybox": (frozenset(), frozenset()),
}
"""Programs that run the command after their options with the same words: looked through (an
option not listed asks: ``doas -s`` runs a shell, ``ionice -p`` no command)."""

OPAQUE_RUNNERS = {
    "xargs": "xargs runs a command built from words it reads at run time",
    "parallel": "parallel runs commands built from words it reads at run time",
    "watch": "watch runs its arguments through a shell",
    "su": "su runs a shell as another user",
    "ssh": "ssh runs a command on another host",
    "alias": "an alias changes what a later word runs",
    "trap": "a trap runs a command string later",
    "source": "source runs the commands of a file bgc cannot see",
    ".": "'.' runs the commands of a file bgc cannot see",
    "pushd": "pushd changes the directory of later commands",
    "coproc": "coproc runs a command (or a group) in the background, a word the grammar does not know",
    "popd": "popd changes the directory of later commands",
    "flock": "flock runs a command after a lock file or descriptor (or a -c string through a shell)",
    "taskset": "taskset runs a command after a CPU mask", "chrt": "chrt runs a command after a priority",
    "chroot": "chroot runs a command under another root directory, where paths name other files",
    **dict.fromkeys(("strace", "ltrace", "valgrind", "gdb", "perf"),
                    "a tracer or debugger runs a command after options bgc does not read"),
    **dict.fromkeys(("unshare", "nsenter", "firejail", "bwrap", "systemd-run", "runuser", "sg", "newgrp"),
                    "it runs a command in another namespace, sandbox or identity, after options bgc does not read"),
    **dict.fromkeys(("script", "tmux", "screen", "expect"), "it runs a command string through a shell or terminal"),
    # busybox's and runit's own runners (busybox is looked through to them), and the common ones
    # that run a command under changed limits, identity, personality or environment
    **dict.fromkeys(("chpst", "setuidgid", "envuidgid", "envdir", "softlimit", "setpriv", "setarch", "linux32", "linux64",
                     "prlimit", "numactl", "cttyhack", "start-stop-daemon", "run-parts", "fakeroot", "eatmydata", "unbuffer",
                     "faketime", "torsocks", "proxychains", "proxychains4", "xvfb-run", "dbus-run-session", "systemd-inhibit"),
                    "it runs a command after options or settings bgc does not read"),
    **dict.fromkeys(("at", "batch"), "it runs commands it reads, later"),
    **dict.fromkeys(("fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh"), "a shell whose language bgc does not read"),
}
"""Programs that run something the text does not show: their own argv is needed, and they ask."""

FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
"""``find``'s options that run a command on each file found."""


def wrapped_command(name: str, argv: list[str]) -> tuple[list[str] | None, list[str]]:
    """The command the wrapper ``name`` (of :data:`WRAPPER_OPTIONS`) runs in ``argv``: the words
    after its options (and ``env``'s assignments), None when there is none or an option is one
    this catalog does not list; and why the command is at best asked, if it is."""
    flags, with_value = WRAPPER_OPTIONS[name]
    asks: list[str] = []
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 2 if name == "timeout" else 1  # timeout's duration follows the options' end
            break
        if name == "env" and "=" in word and not word.startswith("-"):
            asks.append(f"env sets variables for the command ({word.split('=', 1)[0]}): it can change what the program does")
        elif name == "time" and index > 1:
            if word.startswith("-"):  # bash's keyword takes one `-p` (`time -p -p x` runs `-p`); /usr/bin/time more
                asks.append(f"time -p {word}: bash's time runs {word}, the program time (`\\time`, `doas time`) the word after")
            break
        elif name == "nice" and re.fullmatch(r"-[0-9]+", word):
            pass
        elif name == "timeout" and not word.startswith("-"):
            index += 1  # the duration; the command follows it
            break
        elif word in flags:
            pass
        elif word in with_value:
            index += 1
        elif word.startswith("-") and "=" in word and word.split("=", 1)[0] in with_value:
            pass
        elif word.startswith("-"):
            asks.append(f"{name} with the option {word}, which bgc does not look through")
            index = len(argv)
            break
        else:
            break
        index += 1
    while name == "env" and index < len(argv) and "=" in argv[index]:  # assignments follow `--` too
        asks.append(f"env sets variables for the command ({argv[index].split('=', 1)[0]}): it can change what the program does")
        index += 1
    inner = argv[index:] or None
    if inner is None and name == "pkexec":  # `echo 'rm x' | pkexec`: with no program it runs the user's shell
        asks.append("pkexec without a program runs a shell, reading commands bgc cannot see")
    return inner, asks


def shell_string(argv: list[str]) -> tuple[int | None, list[str]]:
    """``sh -c STRING``: where the command string is in ``argv`` (a shell of :data:`SHELLS`), None
    when there is none bgc can read: without ``-c`` the shell runs a script (a file or its
    standard input) that bgc cannot see; and why the command is at best asked, if it is."""
    asks: list[str] = []
    for index, word in enumerate(argv[1:], 1):
        if word == "-c" or (re.fullmatch(r"-[a-zA-Z]+", word) and "c" in word):
            if set(word[1:]) - {"c", "l"} - SHELL_FLAGS:
                break
            if "l" in word[1:]:
                asks.append("a login shell (-l) first runs profile files bgc cannot see")
            string = _after_shell_options(argv, index + 1)
            if string is None:
                asks.append(f"{argv[0]} -c with an option bgc does not know, or without a command string")
            return string, asks
        if word.startswith("-") and len(word) > 1 and not set(word[1:]) - SHELL_FLAGS:
            continue
        break
    asks.append(f"{posixpath.basename(argv[0])} runs a script (a file or its input) that bgc cannot see")
    return None, asks


def _after_shell_options(argv: list[str], index: int) -> int | None:
    """Where the command string of ``sh -c`` is: the first word after the options, which may
    follow ``-c`` too (``bash -c -e 'rm x'``, ``bash -c -- 'rm x'``: ``-``/``--`` end them);
    None when an option is one bgc does not know or no word is left."""
    while index < len(argv) and argv[index][:1] in ("-", "+"):
        if argv[index] in ("-", "--"):
            index += 1
            break
        if set(argv[index][1:]) - SHELL_FLAGS:
            return None
        index += 1
    return index if index < len(argv) else None
