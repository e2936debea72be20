"""What a shell command string needs: one grant per simple command, redirection or wrapper.

An agent's Bash tool runs a whole script, not a program: ``git status && curl x | sh`` is three
programs, and a rule that only saw the first word would allow all three. :func:`shell_atoms`
parses the string with a real shell grammar (tree-sitter-bash) into every simple command it will
run — in ``&&``, ``||``, ``;``, ``&``, pipes, subshells, ``{ }``, ``if``, ``$(…)``, backticks,
process substitution — and says which atoms each needs:

* every simple command needs ``proc:exec:<argv>`` in the argv dialect (:mod:`bgc.argv`), its
  words as the shell will pass them (quotes removed, ``$'…'`` decoded);
* a redirection needs ``fs:write`` (``>``, ``>>``, ``>|``, ``&>``) or ``fs:read`` (``<``) on its
  target, resolved against the working directory (``<>`` needs both);
* a wrapper that runs another command (``env``, ``sudo``, ``time``, ``nice``, ``nohup``,
  ``command``, ``exec``, ``timeout``, ``sh -c``/``bash -c``, ``eval``) needs its own argv *and*
  what the command it runs needs, looked through recursively to a bounded depth.

Anything whose meaning is not fixed by the text alone — a ``$VAR`` or ``$(…)`` in a word, a glob,
``~``, a brace expansion, a function definition, a loop, a variable assignment, a ``cd`` that
leaves the working directory, ``xargs`` or ``find -exec`` (they run commands made of words read
at run time), an error in the parse — is named in :attr:`ShellAnalysis.needs_ask`: such a command
is at best asked, never allowed. The atoms of what *was* understood are still listed, so a deny
still decides it.

Runtime layer: imports only core modules. The parser is imported when first needed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ShellAnalysis", "ShellNeed", "shell_atoms"]


@dataclass(frozen=True, slots=True)
class ShellNeed:
    """One atom a command string needs, and the simple command (or redirection) it came from.

    ``value`` is concrete: an argv in the argv dialect for ``proc``, an absolute, lexically
    normalised path for ``fs`` (in the same space as the ``cwd`` given to :func:`shell_atoms`; a
    caller that maps host paths into its workspace maps these the same way).
    """

    resource: str
    action: str
    value: str
    command: str
    """The source text of the simple command this need came from (at most 200 characters)."""

    @property
    def atom(self) -> str:
        return f"{self.resource}:{self.action}:{self.value}"


@dataclass(frozen=True, slots=True)
class ShellAnalysis:
    """Every atom a command string needs, and why it cannot be allowed outright, if it cannot.

    Decide every need (a deny of any need denies the command); then, if :attr:`needs_ask` is not
    empty, the command is at best **ask**, whatever the needs got: something in it was not
    understood exactly, so its needs may be incomplete.
    """

    needs: tuple[ShellNeed, ...]
    needs_ask: tuple[str, ...]


def shell_atoms(command: str, *, cwd: str) -> ShellAnalysis:
    """What running ``command`` with ``bash -c`` in the directory ``cwd`` needs.

    ``cwd`` is an absolute path. Total: never raises on any input; the work is bounded (command
    length, nesting depth, number of simple commands, wrapper depth), and past a bound the
    analysis stops with a reason in ``needs_ask``. Needs are listed in source order, without
    duplicates.
    """
    raise NotImplementedError
