"""The launcher a confined command starts through: restrict, then exec.

``python -I -S -c "…; run()" [--list P]... [--read P]... [--write P]... [--port N]... [--no-sockets] -- CMD ARGS…``
(:func:`bgc.runtime.sandbox.bwrap.launcher`) is what bubblewrap runs (or what runs alone where there is no bubblewrap). It applies Landlock
(:func:`bgc.runtime.sandbox.landlock.restrict`, which sets no-new-privileges first), with
``--no-sockets`` a filter refusing every socket (:mod:`bgc.runtime.sandbox.seccomp`, for a run
without a network namespace), and then
replaces itself with the command, so the command and everything it starts carry the restriction.
If the restriction cannot be applied, the command is never run: exit :data:`REFUSED` with the
reason on stderr. It imports nothing but the standard library and :mod:`landlock` (it runs
before every confined command).
"""

from __future__ import annotations

import os
import sys

REFUSED = 126
"""The exit code when the command was not run (the shell's "cannot execute")."""
NOT_FOUND = 127
"""The exit code when the command does not exist (the shell's)."""


def parse(argv: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """The launcher's options (``--list``, ``--read``, ``--write``, ``--port``) and the command after ``--``."""
    options: dict[str, list[str]] = {"--read": [], "--write": [], "--port": [], "--list": [], "--no-sockets": []}
    index = 0
    while index < len(argv) and argv[index] != "--":
        flag = argv[index]
        if flag == "--no-sockets":
            options[flag].append("yes")
            index += 1
            continue
        if flag not in options or index + 1 >= len(argv):
            raise ValueError(f"unknown launcher option {flag!r}")
        options[flag].append(argv[index + 1])
        index += 2
    command = argv[index + 1 :]
    if not command:
        raise ValueError("no command after --")
    return options, command


def main(argv: list[str]) -> int:
    from bgc.runtime.sandbox import landlock

    try:
        options, command = parse(argv)
        rules = landlock.Rules(
            tuple(options["--read"]),
            tuple(options["--write"]),
            tuple(map(int, options["--port"])),
            tuple(options["--list"]),
        )
        landlock.restrict(rules)
        if options["--no-sockets"]:
            from bgc.runtime.sandbox import seccomp

            seccomp.forbid_sockets()
    except (OSError, ValueError) as error:
        print(f"bgc sandbox: not run, the inner confinement failed: {error}", file=sys.stderr)
        return REFUSED
    try:
        os.execvp(command[0], command)
    except FileNotFoundError:
        print(f"bgc sandbox: {command[0]}: command not found", file=sys.stderr)
        return NOT_FOUND
    except OSError as error:
        print(f"bgc sandbox: {command[0]}: {error.strerror}", file=sys.stderr)
        return REFUSED
    return REFUSED  # execvp returns only by raising


def run() -> None:
    """The launcher's entry (:func:`bgc.runtime.sandbox.bwrap.launcher` starts it)."""
    sys.exit(main(sys.argv[1:]))
