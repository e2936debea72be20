"""What a shell command string needs: one grant per simple command, redirection or wrapper.

An agent's Bash tool runs a whole script, not a program: ``git status && curl x | sh`` is three
programs, and a rule that only saw the first word would allow all three. :func:`shell_atoms`
parses the string with a real shell grammar (tree-sitter-bash) into every simple command it will
run — in ``&&``, ``||``, ``;``, ``&``, pipes, subshells, ``{ }``, ``if``, ``$(…)``, backticks,
process substitution — and says which atoms each needs:

* every simple command needs ``proc:exec:<argv>`` in the argv dialect (:mod:`bgc.core.resources.proc`), its
  words as the shell will pass them (quotes removed, ``$'…'`` decoded);
* a redirection needs ``fs:write`` (``>``, ``>>``, ``>|``, ``&>``) or ``fs:read`` (``<``) on its
  target, resolved against the working directory (``<>`` needs both);
* a wrapper that runs another command (``env``, ``sudo``, ``doas``, ``time``, ``nice``,
  ``nohup``, ``setsid``, ``busybox``, ``command``, ``exec``, ``timeout``, ``sh -c``/``bash -c``,
  ``eval``…: :data:`bgc.runtime.runners.WRAPPER_OPTIONS`) needs its own argv *and* what the command it
  runs needs, looked through recursively to a bounded depth; one whose arguments bgc does not
  read (``flock``, ``strace``, ``chroot``, ``unshare``…: :data:`bgc.runtime.runners.OPAQUE_RUNNERS`) asks.

A program of the catalogue (:mod:`bgc.runtime.catalogue`: ``cat``, ``grep``, ``git status``,
``rm``…) whose argv it reads exactly also needs the files it touches: ``cat src/a.py`` needs
``fs:read`` of ``src/a.py``, resolved against the working directory as a redirection's target
is, and ``rm -r build`` ``fs:write`` of ``build`` and everything below it. Those needs and the
argv's carry the number of the command they belong to (:attr:`ShellNeed.catalogued`), for the
decider to combine (:meth:`bgc.runtime.calls.CallDecider.decide_shell`). There a glob (``cat
src/*.py``) or a path after ``~`` is read as the paths it may expand to (a pattern), where
everywhere else it asks.

Anything whose meaning is not fixed by the text alone — a ``$VAR`` or ``$(…)`` in a word, a glob,
``~``, a brace expansion, a function definition, a loop, a variable assignment, a ``cd`` that
leaves the working directory, ``xargs`` or ``find -exec`` (they run commands made of words read
at run time), an error in the parse — is named in :attr:`ShellAnalysis.needs_ask`: such a command
is at best asked, never allowed. The atoms of what *was* understood are still listed, so a deny
still decides it.

Runtime layer: imports only core modules. The parser is imported when first needed.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from typing import Any

from bgc.runtime import catalogue, runners
from bgc.core import resources
from dataclasses import dataclass, field, replace
from bgc.core.patterns import glob
from bgc.core.resources.fs import normalise_fs_pattern
from bgc.core.resources.proc import ArgvError, encode_argv
from bgc.core.values.limits import MAX_PATTERN_LENGTH

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
    catalogued: int = 0
    """For a command of the catalogue that was read exactly, its number in the string (1, 2, …),
    on its argv's need and on each file it touches; 0 for every other need."""
    pattern: bool = False
    """``value`` is fs pattern text (a glob, or a tree ``DIR/**``), not one path."""
    reach: str = ""
    """How a pattern need is decided (:attr:`bgc.runtime.catalogue.Touch.tree`): ``files``, on the
    files it reaches now when the policy does not grant it whole; ``copied``, on the files of
    ``source`` as put below it; ``any``, by the policy alone; ``absent``, not a need but a
    condition: the command is read so only while the pattern reaches no file (a glob's words
    that would begin with ``-``)."""
    source: str = ""
    """For a ``copied`` need, the path whose files are put below ``value``'s directory."""
    repository: str = ""
    """Not empty: the need is this path (pattern text when ``pattern``; ``.`` the top) inside the
    git repository that holds the directory ``value``, which only the file system can tell."""

    @property
    def atom(self) -> str:
        if self.repository:
            return f"{self.resource}:{self.action}:<git top of {self.value}>/{self.repository}"
        return f"{self.resource}:{self.action}:{self.value}"


@dataclass(frozen=True, slots=True)
class ShellAnalysis:
    """Every atom a command string needs, and why it cannot be allowed outright, if it cannot.

    Decide every need (a deny of any need denies the command); then, if :attr:`needs_ask` is not
    empty, the command is at best **ask**, whatever the needs got: something in it was not
    understood exactly, so its needs may be incomplete. The needs of a catalogued command
    (:attr:`ShellNeed.catalogued`) combine as docs/agents.md, "Commands decided by what they
    touch", says; ``programs`` names each such command's row, by its number less one.
    """

    needs: tuple[ShellNeed, ...]
    needs_ask: tuple[str, ...]
    programs: tuple[str, ...] = ()


MAX_COMMAND_CHARS = 100_000
"""The longest command string analysed (a here-doc that writes a file can be long; 1 MB is not a
command, and parsing it would cost the decision its time)."""
MAX_SIMPLE_COMMANDS = 256
"""The most simple commands (wrappers' inner commands included) one string may hold."""
MAX_NESTING = 32
"""The deepest nesting of subshells, substitutions, groups and clauses that is followed."""
MAX_WRAPPER_DEPTH = 4
"""How many ``sh -c``/``eval`` strings deep a command is re-parsed."""
_SHOWN = 200

_HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"})
"""Redirection targets that are not files: writing to or reading from them touches nothing."""

_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>"})
_READ_OPS = frozenset({"<"})
_DUP_OPS = frozenset({">&", "<&", ">&-", "<&-"})
_CLOSE_OPS = frozenset({">&-", "<&-"})
_RESERVED = frozenset({"for", "do", "done", "while", "until", "if", "then", "else", "elif", "fi", "case", "esac",
                       "select", "function", "{", "}", "!", "[[", "]]", "in"})
"""Bash's reserved words (but ``time`` and ``coproc``, decided as the commands they run): a simple
command the grammar names so, unquoted, is one it parsed otherwise than bash (``! for i in a;
do rm x; done`` is read as the programs ``for``, ``do`` and ``done``)."""
_NAMED_FD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
"""``{fd}`` glued to a redirection: bash opens a new descriptor and sets the variable to it."""
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})

_STRUCTURE = frozenset({"program", "list", "pipeline", "subshell", "compound_statement", "negated_command",
                        "if_statement", "elif_clause", "else_clause", "comment"})
"""Node types whose meaning is only "run the commands inside" (plus their redirections)."""

_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})

_ANSI_C = re.compile(r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|(.))", re.DOTALL)
_ANSI_C_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                  "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_BRACES = re.compile(r"[{}]")
_GLOB_CHARS = frozenset("*?[")
_PLAIN = re.compile(r"[^\\$`*?\[~{]*")
"""Text with no character that quoting, escaping or expansion gives a meaning (read as is)."""
_PLAIN_WORD = re.compile(r"[^\\$`*?\[~{ \t\n]*")
"""An unquoted word read as is: no such character, and no blank (which would end it to bash)."""
_BAD_CONTINUATION = re.compile(r"(?<![ \t\n;&|(])\\\n|\\\n(?![ \t\n])")
"""A line continuation inside a word (``r\\<newline>m`` is ``rm`` to bash): tree-sitter-bash
splits the word there, so such a string is not decided from that parse."""
_SPACES_TO_THE_GRAMMAR = re.compile(r"[\r\f\v]")
"""Characters tree-sitter-bash skips as white space where bash reads them as word characters: a
lone ``\\r`` is a program to bash, nothing to the grammar."""


class _Unknown(Exception):
    """A word whose value the text alone does not fix."""


@dataclass(slots=True)
class _Scope:
    """Where the next command may run: ``dirs``, several after a ``cd`` that may have failed,
    ``None`` after a ``cd`` to a place the text does not name. ``possible`` is every directory the
    commands so far may have left the shell in (what a command after ``;`` or ``||`` may run in);
    ``succeeded`` the directories the last command moved to if it was a ``cd`` (what a command
    after ``&&`` runs in: it runs only if the ``cd`` succeeded)."""

    dirs: tuple[str, ...] | None
    possible: tuple[str, ...] | None = None
    succeeded: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.possible is None:
            self.possible = self.dirs

    def unknown(self) -> None:
        self.dirs = self.possible = self.succeeded = None

    def before(self, operator: str) -> None:
        """Enter the next command of a list, reached through ``operator``."""
        if operator == "&&":
            if self.succeeded is not None:
                self.dirs = self.succeeded
        elif operator:
            self.dirs = self.possible
        self.succeeded = None


@dataclass(slots=True)
class _Walk:
    cwd: str
    fold_case: bool = False
    """Program names fold case on this file system (:func:`shell_atoms`)."""
    home: str | None = None
    """The home directory a ``~`` names (:func:`shell_atoms`); None when not known."""
    needs: dict[tuple[str, str, str, int], ShellNeed] = field(default_factory=dict)
    asks: dict[str, None] = field(default_factory=dict)
    commands: int = 0
    stopped: bool = False
    programs: list[str] = field(default_factory=list)
    """The catalogue's row of each command it read (:attr:`ShellAnalysis.programs`)."""
    piped: set[tuple[int, int]] = field(default_factory=set)
    """The statements whose input is a pipe (a later part of a pipeline), by the depth of the
    command string they are in and where they start in it."""
    stdin: bool = False
    """Whether the simple command being read gets its input from a pipe or a file."""

    sources: list[bytes] = field(default_factory=list)
    """The command strings being walked, innermost last: node offsets index the innermost."""

    def ask(self, reason: str) -> None:
        self.asks.setdefault(reason, None)

    def text(self, node: Any) -> str:
        """A node's text, from the command as given (the parser saw it masked, see _analyse)."""
        return self.sources[-1][node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    def need(self, resource: str, action: str, value: str, source: str, catalogued: int = 0) -> None:
        key = (resource, action, value, catalogued)
        if key not in self.needs:
            self.needs[key] = ShellNeed(resource, action, value, _shown(source), catalogued)


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def shell_atoms(command: str, *, cwd: str, fold_case: bool = False, home: str | None = None) -> ShellAnalysis:
    """What running ``command`` with ``bash -c`` in the directory ``cwd`` needs.

    ``cwd`` is an absolute path. ``fold_case``: the file system's names fold case (a policy's
    ``filesystem case-insensitive``), so ``RM``, ``/bin/Rm`` and ``SUDO`` run ``rm`` and ``sudo``,
    which neither a rule (matched as written) nor the catalog of runners names so: a program
    named with capitals then asks. ``home``: the home directory (``$HOME`` of the environment the
    command runs in), which a ``~`` in a catalogued command's operand names; None: such a word
    asks. Total: never raises on any input; the work is bounded (command length, nesting depth,
    number of simple commands, wrapper depth), and past a bound the analysis stops with a reason
    in ``needs_ask``. Needs are listed in source order, without duplicates.
    """
    walk = _Walk(cwd, fold_case)
    start = resources.normalise("fs", cwd) if isinstance(cwd, str) else None
    if not isinstance(start, str):
        walk.ask("the working directory is not an absolute path")
        return ShellAnalysis((), tuple(walk.asks))
    walk.cwd = start
    known_home = resources.normalise("fs", home) if isinstance(home, str) else None
    walk.home = known_home if isinstance(known_home, str) else None
    _analyse(walk, command, _Scope((start,)), 0)
    return ShellAnalysis(tuple(walk.needs.values()), tuple(walk.asks), tuple(walk.programs))


def _analyse(walk: _Walk, command: Any, scope: _Scope, wrapped: int) -> None:
    """Parse one command string (the whole input, or an ``sh -c``/``eval`` string) and walk it."""
    if not isinstance(command, str):
        walk.ask("the command is not text")
        return
    if len(command) > MAX_COMMAND_CHARS:
        walk.ask(f"the command is longer than {MAX_COMMAND_CHARS:,} characters")
        return
    if "\x00" in command:
        walk.ask("the command holds a NUL character, where bash would cut it short")
        return
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        walk.ask("the command is not valid UTF-8")
        return
    if _SPACES_TO_THE_GRAMMAR.search(command):
        walk.ask("a carriage return, form feed or vertical tab (a space to the grammar, part of a word to bash)")
    if _BAD_CONTINUATION.search(command):
        walk.ask("a line continuation ('\\' and a newline) inside a word")
    # tree-sitter-bash 0.25 can crash the process on some characters above U+FFFF (seen: `{` and
    # an unassigned code point, in about half the runs); bash's syntax is all ASCII and other bytes
    # are word characters to it, so the parser is given every non-ASCII byte as a letter (the same
    # length: offsets stay valid) and the words are read from the command as given.
    tree = _parser().parse(source.translate(_ASCII_MASK))
    if tree.root_node.has_error:
        walk.ask("the shell grammar cannot parse all of it (unbalanced quotes or brackets, or syntax it does not know)")
    if _dropped_escaped_blank(tree.root_node, source):
        walk.ask("an escaped blank the grammar reads as a space (bash reads it as part of a word)")
    walk.sources.append(source)
    try:
        _statement(walk, tree.root_node, scope, 0, wrapped)
    finally:
        walk.sources.pop()


def _dropped_escaped_blank(root: Any, source: bytes) -> bool:
    """Whether a backslash and a blank (``\\ ``) lies outside every piece of text the grammar
    read: tree-sitter-bash 0.25 skips one as space before or after a quoted or redirected word
    (``'a'\\ b``, ``\\ rm``), where bash reads it as a character of the word."""
    found = [match.end() - 2 for match in _ESCAPED_BLANK.finditer(source)]
    if not found:
        return False
    spans = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _TEXT_NODES:
            spans.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    return _any_uncovered(found, spans)


def _any_uncovered(positions: list[int], spans: list[tuple[int, int]]) -> bool:
    """Whether a position (in ascending order) lies in none of the spans (start inclusive, end
    exclusive): one sweep over the spans sorted by start, so a command of many of both costs its
    length, not their product."""
    spans.sort()
    index = 0
    reach = -1
    for at in positions:
        while index < len(spans) and spans[index][0] <= at:
            reach = max(reach, spans[index][1])
            index += 1
        if at >= reach:
            return True
    return False


_ESCAPED_BLANK = re.compile(rb"(?<!\\)(?:\\\\)*\\[ \t]")
_TEXT_NODES = frozenset({"word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation", "number",
                         "comment", "heredoc_body", "heredoc_content", "heredoc_start", "heredoc_end", "extglob_pattern",
                         "regex"})
"""Nodes that are text as written (a word, a string, a comment, a here-document's body)."""

_PARSER: Any = None
_ASCII_MASK = bytes(range(128)) + b"Z" * 128
"""Every byte above 0x7F read as ``Z``: what the parser sees of a non-ASCII character."""


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER




def _statement(walk: _Walk, node: Any, scope: _Scope, depth: int, wrapped: int) -> None:
    """Walk a statement: every simple command in it, in the order bash meets them."""
    if walk.stopped:
        return
    if depth > MAX_NESTING:
        walk.ask(f"nested more than {MAX_NESTING} deep")
        walk.stopped = True
        return
    kind = node.type
    if kind in ("negated_command", "compound_statement") and _glued(walk, node.children[0]):
        walk.ask(f"`{_shown(walk.text(node))}` starts with a word to bash ({walk.text(node.children[0])} and what follows it)")
    if kind == "command":
        _command(walk, node, scope, depth, wrapped)
        return
    if kind in _SUBSTITUTIONS:
        _statement_children(walk, node, _Scope(scope.dirs), depth, wrapped)  # a subshell: its cd ends with it
        return
    if kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
        _redirect(walk, node, scope, depth, wrapped)
        return
    if kind in ("subshell", "pipeline"):
        # a subshell's `cd` ends with it; so does that of every part of a pipeline
        for index, child in enumerate(node.named_children):
            if kind == "pipeline" and index:
                walk.piped.add((len(walk.sources), child.start_byte))
            _statement(walk, child, _Scope(scope.dirs), depth + 1, wrapped)
        return
    if kind == "redirected_statement":
        body = node.child_by_field_name("body")
        redirects = tuple(child for child in node.named_children if child != body)
        if body is not None and body.type == "command":  # `cat 2>/dev/null .env`: .env is cat's
            _command(walk, body, scope, depth + 1, wrapped, redirects)
            return
        for child in node.named_children:  # the body and its redirections: one place, one directory
            if _trailing_words(walk, child):
                walk.ask(f"words after the redirection of a compound command (`{_shown(walk.text(node))}`)")
            _statement(walk, child, scope, depth + 1, wrapped)
        return
    if kind == "list" or kind in _STRUCTURE:
        _statement_children(walk, node, scope, depth, wrapped)
        return
    if node.is_missing or kind == "ERROR":
        _statement_children(walk, node, scope, depth, wrapped)
        return
    if kind in ("variable_assignment", "variable_assignments", "declaration_command", "unset_command"):
        walk.ask(f"sets or unsets shell variables (`{_shown(walk.text(node))}`): later words and programs may change")
    elif kind == "function_definition":
        walk.ask("defines a function, which can give a command name another meaning")
    else:
        walk.ask(f"`{kind.replace('_', ' ')}` is not decided exactly (`{_shown(walk.text(node))}`)")
    # still walk inside: what it runs is needed, and a deny of it must still decide
    _statement_children(walk, node, _Scope(None), depth, wrapped)  # a loop may cd: where to, unknown


def _glued(walk: _Walk, token: Any) -> bool:
    """Whether a reserved word (``!``, ``{``) is glued to the next word, as in ``!rm`` or
    ``{rm``: bash reads them as one word there, the grammar as the reserved word."""
    after = walk.sources[-1][token.end_byte : token.end_byte + 1]
    return not token.is_named and after not in (b"", *(bytes([c]) for c in b" \t\n()<>;&|"))


def _statement_children(walk: _Walk, node: Any, scope: _Scope, depth: int, wrapped: int) -> None:
    """Walk ``node``'s statements in order, each entered through the operator before it (a ``cd``
    decides where the commands after ``&&`` run). ``a && b && c`` nests to the left, so nested
    lists are flattened here rather than walked one level deeper each: a long chain is long, not
    deep."""
    for operator, child in _sequence(node):
        scope.before(operator)
        _statement(walk, child, scope, depth + 1, wrapped)


def _sequence(node: Any) -> list[tuple[str, Any]]:
    """The statements under ``node`` in order, each with the operator before it: none for the
    first (it runs where ``node`` runs), ``;`` for statements not joined by ``&&`` or ``||``."""
    out: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [("", node)]
    while stack:
        operator, current = stack.pop()
        if current is node or current.type == "list":
            pending: list[tuple[str, Any]] = []
            joiner = operator
            for child in current.children:
                if not child.is_named:
                    if child.type in ("&&", "||", ";", "&", ";;", "\n"):
                        joiner = child.type if child.type in ("&&", "||") else ";"
                    continue  # `{`, `then`, `do`: no separator between statements
                pending.append((joiner, child))
                joiner = ";"
            stack.extend(reversed(pending))
        else:
            out.append((operator, current))
    return out


def _command(walk: _Walk, node: Any, scope: _Scope, depth: int, wrapped: int, trailing: tuple[Any, ...] = ()) -> None:
    """One simple command: its substitutions, its redirections, its argv and what it wraps.
    ``trailing``: the redirections the grammar puts after it (in a ``redirected_statement``),
    whose words after the first are the command's arguments (:func:`_trailing_words`)."""
    walk.commands += 1
    if walk.commands > MAX_SIMPLE_COMMANDS:
        walk.ask(f"more than {MAX_SIMPLE_COMMANDS} simple commands")
        walk.stopped = True
        return
    source = walk.text(node) if not trailing else walk.sources[-1][node.start_byte : trailing[-1].end_byte].decode("utf-8", "surrogateescape")
    words: list[catalogue.Word | None] = []
    redirects = []
    for child in (*node.named_children, *trailing):
        if child.type == "variable_assignment":
            walk.ask(f"sets a variable for the command (`{_shown(source)}`): it can change what the program does")
            _substitutions(walk, child, scope, depth, wrapped)
        elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            redirects.append(child)
            words.extend(_word(walk, word, scope, depth, wrapped, argument=True) for word in _trailing_words(walk, child))
        elif child.type == "command_name":
            words.append(_word(walk, child.named_children[0] if child.named_child_count == 1 else child, scope, depth, wrapped))
        else:
            words.append(_word(walk, child, scope, depth, wrapped, argument=True))
    walk.stdin = (len(walk.sources), node.start_byte) in walk.piped or any(_reads_input(walk, child) for child in redirects)
    name = node.child_by_field_name("name")
    if name is not None and walk.text(name) in _RESERVED:
        walk.ask(f"`{walk.text(name)}` is a reserved word to bash, not a program (`{_shown(source)}`)")
    children = (*node.named_children, *trailing)
    if any(
        second.type == "file_redirect" and first.end_byte == second.start_byte and _NAMED_FD.fullmatch(walk.text(first))
        for first, second in itertools.pairwise(children)
    ):
        walk.ask(f"a redirection that names its descriptor (`{_shown(source)}`): `{{fd}}>file` sets the variable fd")
    pieces = [piece for child in children for piece in _pieces(walk, child)]
    if any(
        first is not None and second is not None and second[1] and _one_word_to_bash(walk, first[0], second[0])
        for first, second in itertools.pairwise(pieces)
    ):
        walk.ask(f"the grammar splits a word of `{_shown(source)}` where bash reads one (`\"--for\"\\ce` is `--force`)")
    unknown = any(word is None for word in words)
    if unknown or any(isinstance(word, catalogue.GlobWord) for word in words):
        if unknown or not _catalogued(walk, words, source, scope):  # type: ignore[arg-type]
            walk.ask(f"a word of `{_shown(source)}` is only known when it runs (an expansion, a glob or a substitution)")
            if isinstance(words[0], str):
                _wrapped_program(walk, [w if isinstance(w, str) else "" for w in words], source, scope, depth, wrapped, known=False)
    elif words:
        _argv(walk, words, source, scope, depth, wrapped)  # type: ignore[arg-type]
    for child in redirects:
        _redirect(walk, child, scope, depth, wrapped)


def _reads_input(walk: _Walk, redirect: Any) -> bool:
    """Whether a redirection gives the command's standard input a file or text (``< f``, a
    here-document or here-string; not ``3< f``, not ``<&-``)."""
    if redirect.type in ("heredoc_redirect", "herestring_redirect"):
        return True
    descriptor = redirect.child_by_field_name("descriptor")
    return _operator(walk, redirect) == "<" and (descriptor is None or walk.text(descriptor) == "0")


def _pieces(walk: _Walk, node: Any) -> list[tuple[Any, bool] | None]:
    """A command's child as the pieces of text bash splits into words, in source order, each
    with whether it is a word of the argv (a redirection's target is not); None where a
    here-document's body breaks the line."""
    if node.type == "file_redirect":
        destinations = [child for index, child in enumerate(node.children) if node.field_name_for_child(index) == "destination"]
        head = node.children[0] if not destinations or _operator(walk, node) in _CLOSE_OPS else destinations[0]
        return [(head, False), *((word, True) for word in _trailing_words(walk, node))]
    if node.type == "heredoc_redirect":
        nested = [piece for child in node.named_children if child.type in _REDIRECTS for piece in _pieces(walk, child)]
        return [(node.children[0], False), *nested, None]
    return [(node, node.type not in ("variable_assignment", "herestring_redirect"))]


def _one_word_to_bash(walk: _Walk, first: Any, second: Any) -> bool:
    """Whether bash reads a word the grammar read apart from the node before it as part of
    another: only blanks and line continuations separate words, and tree-sitter-bash 0.25 also
    starts a new word right after a quote (``"--for"\\ce`` is ``--force`` to bash) and drops an
    escaped blank before one (``'a'\\ b`` is ``a b``)."""
    return not _SEPARATION.fullmatch(walk.sources[-1], first.end_byte, second.start_byte)


_SEPARATION = re.compile(rb"(?:[ \t\n]|\\\n)+")


def _argv(walk: _Walk, argv: list[str], source: str, scope: _Scope, depth: int, wrapped: int) -> None:
    """The needs of a known argv: its own atom (and the files it touches when the catalogue
    reads it), and what it runs if it runs another command."""
    if not _catalogued(walk, argv, source, scope):  # type: ignore[arg-type]
        _proc_need(walk, argv, source)
    _wrapped_program(walk, argv, source, scope, depth, wrapped, known=True)


MAX_CATALOGUE_NEEDS = 1024
"""The most needs the catalogue's readings may add to one command string: past it, a command is
decided by its argv alone (each need is decided, a pattern maybe on the files it reaches)."""


def _catalogued(walk: _Walk, words: list[catalogue.Word], source: str, scope: _Scope) -> bool:
    """Add the needs of a command the catalogue reads exactly: its argv's (a glob as written) and
    the files it touches, all numbered as one command's. False, adding nothing, for a program
    the catalogue does not hold or a command it does not read exactly."""
    if not isinstance(words[0], str) or words[0] not in catalogue.NAMES:
        return False
    reading = catalogue.read_command(words, stdin=walk.stdin)
    if not isinstance(reading, catalogue.Reading):
        return False
    number = len(walk.programs) + 1
    needs: list[ShellNeed] = []
    for touch in reading.touches:
        touched = _touch_needs(walk, touch, scope, source, number)
        if touched is None:
            return False
        needs.extend(touched)
    for word in reading.unless:  # `*.py` holds only while no file `-….py` is there to expand to
        dashed = word._replace(pattern=("-*" if word.pattern.startswith("*") else "-") + word.pattern[1:])
        absent = _touch_needs(walk, catalogue.Touch("read", dashed), scope, source, number)
        if absent is None:
            return False
        needs.extend(replace(need, reach="absent") for need in absent)
    if len(walk.needs) + len(needs) > MAX_CATALOGUE_NEEDS:
        return False
    try:
        value = encode_argv([word if isinstance(word, str) else word.written for word in words])
    except ArgvError:
        return False
    checked = resources.normalise("proc", value)
    if not isinstance(checked, str):
        return False
    walk.programs.append(reading.program)
    walk.need("proc", "exec", checked, source, number)
    for need in needs:
        walk.needs.setdefault((need.resource, need.action, need.value + "\0" + need.repository, number), need)
    return True


def _touch_needs(walk: _Walk, touch: catalogue.Touch, scope: _Scope, source: str, number: int) -> list[ShellNeed] | None:
    """The fs needs of a file a command touches, in every directory the command may run in;
    None when one cannot be read exactly (a relative path after an unknown ``cd``, a ``..`` that
    may climb out of a link, a path refused, a ``~`` with no known home)."""
    word, shown = touch.word, _shown(source)
    if touch.repository:
        if isinstance(word, catalogue.GlobWord) or word.startswith("/") or scope.dirs is None:
            return None
        inside = resources.normalise("fs", "/" + word)
        if not isinstance(inside, str):
            return None
        relative = inside[1:] or "."
        needs = [ShellNeed("fs", touch.action, base, shown, number, repository=relative) for base in scope.dirs]
        if touch.tree:
            below = "**" if relative == "." else glob.escape(relative) + "/**"
            needs += [ShellNeed("fs", touch.action, base, shown, number, True, touch.tree, repository=below) for base in scope.dirs]
        return needs
    text = word.pattern if isinstance(word, catalogue.GlobWord) else word
    if isinstance(word, catalogue.GlobWord) and word.home:
        if walk.home is None:
            return None
        bases: tuple[str, ...] = (walk.home,)
    elif text.startswith("/"):
        bases = ("/",)
    elif scope.dirs is None:
        return None
    else:
        bases = scope.dirs
    needs = []
    for base in bases:
        if _may_climb_a_link(text, base, walk.cwd):
            return None
        if isinstance(word, catalogue.GlobWord):
            value = _glob_pattern(base, text)
            if value is None:
                return None
            needs.append(ShellNeed("fs", touch.action, value, shown, number, True, "any" if touch.fresh else "files"))
        else:
            value = resources.normalise("fs", posixpath.join(base, text))
            if not isinstance(value, str):
                return None
            if value in _HARMLESS_DEVICES:
                continue
            needs.append(ShellNeed("fs", touch.action, value, shown, number))
        if touch.tree:
            copied = ""
            if touch.source is not None:
                copied_from = resources.normalise("fs", posixpath.join(base, str(touch.source)))
                if not isinstance(copied_from, str):
                    return None
                copied = copied_from
            below = (value if isinstance(word, catalogue.GlobWord) else glob.escape(value)).rstrip("/") + "/**"
            if len(below) > MAX_PATTERN_LENGTH:
                return None
            needs.append(ShellNeed("fs", touch.action, below, shown, number, True, touch.tree, copied))
    return needs


def _glob_pattern(base: str, pattern: str) -> str | None:
    """The absolute fs pattern of a glob read in ``base``, normalised as the paths it stands for;
    None when it cannot be (a ``..`` after a wildcard, a malformed or too long pattern)."""
    joined = pattern if pattern.startswith("/") else glob.escape(base).rstrip("/") + "/" + pattern
    normalised = normalise_fs_pattern(joined)
    if not isinstance(normalised, str) or len(normalised) > MAX_PATTERN_LENGTH:
        return None
    try:
        glob.parse(normalised)
    except glob.PatternError:
        return None
    return normalised


def _proc_need(walk: _Walk, argv: list[str], source: str) -> None:
    program = argv[0]
    name = posixpath.basename(program.rstrip("/"))
    if walk.fold_case and name != name.lower():
        walk.ask(f"`{name}` on a case-insensitive file system may be another program's name ({name.lower()})")
    forms = [argv]
    if "/" in program.rstrip("/"):
        # run by path (`/bin/rm`): a rule about the program's name must see it too
        forms.append([posixpath.basename(program.rstrip("/")), *argv[1:]])
    for form in forms:
        try:
            value = encode_argv(form)
        except ArgvError as error:
            walk.ask(f"`{_shown(source)}`: {error}")
            continue
        checked = resources.normalise("proc", value)
        if isinstance(checked, resources.Rejection):
            walk.ask(f"a word of `{_shown(source)}` {checked.reason}")
            continue
        walk.need("proc", "exec", checked, source)


def _wrapped_program(
    walk: _Walk, argv: list[str], source: str, scope: _Scope, depth: int, wrapped: int, *, known: bool
) -> None:
    """Look through a wrapper to the command it runs; note ``cd``; ask for opaque runners."""
    name = posixpath.basename(argv[0])
    if name in ("cd", "chdir"):
        _cd(walk, argv, scope)
        return
    if name in runners.OPAQUE_RUNNERS:
        walk.ask(runners.OPAQUE_RUNNERS[name])
        return
    if name == "find" and runners.FIND_EXEC.intersection(argv[1:]):
        walk.ask("find -exec/-ok runs a command on the files it finds")
        return
    if not known:
        return
    if name == "eval":
        _nested(walk, " ".join(argv[1:]), scope, wrapped, "eval")
    elif name in runners.SHELLS:
        _shell_c(walk, argv, scope, wrapped)
    elif name in runners.WRAPPER_OPTIONS:
        inner, asks = runners.wrapped_command(name, argv)
        for reason in asks:
            walk.ask(reason)
        if inner:
            _command_argv(walk, inner, source, scope, depth, wrapped)


def _command_argv(walk: _Walk, argv: list[str], source: str, scope: _Scope, depth: int, wrapped: int) -> None:
    if wrapped + 1 > MAX_WRAPPER_DEPTH:
        walk.ask(f"wrappers nested more than {MAX_WRAPPER_DEPTH} deep")
        return
    walk.commands += 1
    if walk.commands > MAX_SIMPLE_COMMANDS:
        walk.ask(f"more than {MAX_SIMPLE_COMMANDS} simple commands")
        walk.stopped = True
        return
    _argv(walk, argv, source, scope, depth, wrapped + 1)


def _shell_c(walk: _Walk, argv: list[str], scope: _Scope, wrapped: int) -> None:
    """``sh -c STRING``: the string is a command of its own (:func:`bgc.runtime.runners.shell_string`)."""
    string, asks = runners.shell_string(argv)
    for reason in asks:
        walk.ask(reason)
    if string is not None:
        _nested(walk, argv[string], _Scope(scope.dirs), wrapped, argv[0])


def _nested(walk: _Walk, text: str, scope: _Scope, wrapped: int, how: str) -> None:
    if wrapped + 1 > MAX_WRAPPER_DEPTH:
        walk.ask(f"{how} strings nested more than {MAX_WRAPPER_DEPTH} deep")
        return
    _analyse(walk, text, scope, wrapped + 1)


def _cd(walk: _Walk, argv: list[str], scope: _Scope) -> None:
    """``cd DIR``: a command after ``&&`` runs in DIR; after ``;`` or ``||``, in DIR or (the ``cd``
    may have failed) where it was."""
    args = argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if len(args) != 1 or args[0] in ("", "-") or args[0].startswith("-") or scope.dirs is None:
        scope.unknown()
        walk.ask("cd to a directory the text does not name: relative paths after it are not known")
        return
    moved = []
    for base in scope.dirs:
        target = resources.normalise("fs", posixpath.join(base, args[0]))
        if not isinstance(target, str):
            scope.unknown()
            walk.ask(f"cd to {args[0]!r}, which {target.reason}")
            return
        if not _inside(target, walk.cwd):
            walk.ask(f"cd leaves the working directory ({target}): relative words after it name other files")
        moved.append(target)
    possible = tuple(dict.fromkeys((*(scope.possible or ()), *moved)))
    if len(possible) > 8:
        scope.unknown()
        walk.ask("too many directory changes to follow")
        return
    scope.succeeded = tuple(dict.fromkeys(moved))
    scope.dirs = scope.possible = possible


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _redirect(walk: _Walk, node: Any, scope: _Scope, depth: int, wrapped: int) -> None:
    """A redirection's need (a file read or written) and the substitutions in it."""
    if node.type == "herestring_redirect":
        _substitutions(walk, node, scope, depth, wrapped)
        return
    if node.type == "heredoc_redirect":
        _heredoc(walk, node, scope, depth, wrapped)
        return
    op = _operator(walk, node)
    if op in _CLOSE_OPS:
        return  # closes a descriptor
    destination = node.child_by_field_name("destination")
    if destination is None:
        walk.ask(f"a redirection bgc does not understand (`{_shown(walk.text(node))}`)")
        return
    if op in _DUP_OPS or (op in (">&", "<&") and destination.type == "number"):
        if destination.type == "number" or walk.text(destination) == "-":
            return
        if op == "<&":
            walk.ask(f"a redirection bgc does not understand (`{_shown(walk.text(node))}`)")
            return
        op = "&>"  # `>&file` writes both outputs to file
    target = _word(walk, destination, scope, depth, wrapped)
    if target is None:
        walk.ask(f"a redirection target only known when it runs (`{_shown(walk.text(node))}`)")
        return
    if op in _WRITE_OPS:
        actions = ("write",)
    elif op in _READ_OPS:
        actions = ("read",)
    elif op == "<>":
        actions = ("read", "write")
    else:
        walk.ask(f"a redirection bgc does not understand (`{_shown(walk.text(node))}`)")
        return
    _file_needs(walk, target, actions, walk.text(node), scope)


def _operator(walk: _Walk, node: Any) -> str:
    return "".join(walk.text(child) for child in node.children if not child.is_named)


def _trailing_words(walk: _Walk, node: Any) -> list[Any]:
    """The words the grammar puts in a file redirection after its target: it reads every word
    after ``2>/dev/null`` as a destination (``cat 2>/dev/null .env``), bash only the first, and
    none after ``<&-``; the others are arguments of the command. A here-document holds the
    redirections after it on its line (``cat <<EOF >x .env``): theirs count too."""
    if node.type == "heredoc_redirect":
        return [word for child in node.named_children for word in _trailing_words(walk, child)]
    if node.type != "file_redirect":
        return []
    destinations = [child for index, child in enumerate(node.children) if node.field_name_for_child(index) == "destination"]
    return destinations if _operator(walk, node) in _CLOSE_OPS else destinations[1:]


def _heredoc(walk: _Walk, node: Any, scope: _Scope, depth: int, wrapped: int) -> None:
    """A here-document: its other redirections, and the substitutions of its body (an unquoted
    body's run). The grammar also puts the rest of the line the here-document starts on inside
    it (``cat <<EOF && rm x``, ``>f <<EOF | sh``): those statements run too, each entered through
    the operator before it."""
    start = node.child_by_field_name("delimiter") or next((c for c in node.named_children if c.type == "heredoc_start"), None)
    if start is not None and not walk.text(start).isascii():
        walk.ask("a here-document delimiter with non-ASCII characters (the parser cannot tell such delimiters apart)")
    if not _ends_where_bash_ends(walk, node, start):
        walk.ask("a here-document the grammar ends elsewhere than bash (which ends it at its delimiter with the quotes removed)")
    operator = ""
    for child in node.children:
        if not child.is_named:
            operator = child.type if child.type in ("&&", "||", ";", "&") else operator
        elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
            _redirect(walk, child, scope, depth, wrapped)
        elif child.type == "heredoc_body":
            if start is not None and not set(walk.text(start)) & set("'\"\\") and _unparsed_expansion(walk, child):
                walk.ask("a here-document body with a substitution the grammar does not parse (a `…` command, which bash runs)")
            _substitutions(walk, child, scope, depth, wrapped)
        elif child.type not in ("heredoc_start", "heredoc_end"):
            scope.before(operator)
            _statement(walk, child, scope, depth + 1, wrapped)
            operator = ";"


def _unparsed_expansion(walk: _Walk, body: Any) -> bool:
    """Whether an unquoted here-document body holds a ``$(``, ``${`` or backquote (not escaped)
    that no node of the grammar's covers: bash expands the body, running its substitutions, and
    tree-sitter-bash 0.25 leaves backquotes there as text."""
    covered = []
    stack = list(body.named_children)
    while stack:
        child = stack.pop()
        if child.type in _EXPANSIONS:
            covered.append((child.start_byte, child.end_byte))
        stack.extend(child.named_children)
    source = walk.sources[-1]
    run_start = body.start_byte  # where the run of backslashes the body may start in starts
    while run_start > 0 and source[run_start - 1] == ord("\\"):
        run_start -= 1
    unescaped = [
        found.end(1)
        for found in _EXPANSION_START.finditer(source, run_start, body.end_byte)
        if (found.end(1) - found.start(1)) % 2 == 0
    ]
    return _any_uncovered(unescaped, covered)


_EXPANSIONS = frozenset({"command_substitution", "process_substitution", "expansion", "arithmetic_expansion"})
_EXPANSION_START = re.compile(rb"(?<!\\)(\\*)(?:\$[({]|`)")
"""A ``$(``, ``${`` or backquote with the run of backslashes before it (an odd run escapes it);
the look-behind starts a run at its first backslash only, so a long run is read once."""


def _ends_where_bash_ends(walk: _Walk, node: Any, start: Any) -> bool:
    """Whether the grammar's here-document body is the one bash reads: bash ends it at the first
    line (leading tabs removed for ``<<-``) equal to the delimiter word with its quotes removed
    (``<<E'O'F`` and ``<<$'EOF'`` end at ``EOF``), while the grammar matches the word as written.
    So the line the grammar ends on must be that text, and no line of the body before it may be."""
    end = next((child for child in node.named_children if child.type == "heredoc_end"), None)
    delimiter = None if start is None else _heredoc_delimiter(walk.text(start))
    if end is None or delimiter is None:
        return False
    source = walk.sources[-1]
    body_from = source.find(b"\n", start.end_byte) + 1
    end_from = source.rfind(b"\n", 0, end.start_byte) + 1
    end_to = source.find(b"\n", end.start_byte)
    if body_from == 0 or end_from < body_from:
        return False
    strip = node.children[0].type == "<<-"
    lines = [*source[body_from:end_from].split(b"\n")[:-1], source[end_from : None if end_to < 0 else end_to]]
    ends = [index for index, line in enumerate(lines) if (line.lstrip(b"\t") if strip else line) == delimiter]
    return ends == [len(lines) - 1]


def _heredoc_delimiter(word: str) -> bytes | None:
    """The line that ends a here-document, from its delimiter word as written: the word with its
    quotes removed (bash expands nothing in it). None for a word this does not read exactly (a
    ``$`` or backquote other than ``$'…'``, an unclosed quote)."""
    out: list[str] = []
    index = 0
    try:
        while index < len(word):
            char = word[index]
            if char == "\\":
                out.append(word[index + 1 : index + 2])
                index += 2
            elif char in "'\"" or word.startswith("$'", index):
                opening = index + 1 + (char == "$")
                index = _closing(word, opening, word[opening - 1], escapes=char != "'")
                text = word[opening:index]
                out.append(text if char == "'" else _ansi_c(text) if char == "$" else _double_quoted(text))
                index += 1
            elif char in "$`":
                return None
            else:
                out.append(char)
                index += 1
    except _Unknown:
        return None
    return "".join(out).encode("utf-8", "surrogateescape")


def _closing(word: str, index: int, quote: str, *, escapes: bool) -> int:
    """Where the quote opened before ``index`` closes (a backslash escapes the next character
    when ``escapes``); :class:`_Unknown` when it does not."""
    while index < len(word):
        if word[index] == quote:
            return index
        index += 2 if escapes and word[index] == "\\" else 1
    raise _Unknown


def _file_needs(walk: _Walk, target: str, actions: tuple[str, ...], source: str, scope: _Scope) -> None:
    if target.startswith("/"):
        bases: tuple[str, ...] = ("/",)
    elif scope.dirs is None:
        walk.ask(f"a relative redirection target after a cd to an unknown directory (`{_shown(source)}`)")
        return
    else:
        bases = scope.dirs
    for base in bases:
        if _may_climb_a_link(target, base, walk.cwd):
            walk.ask(f"a '..' in a redirection target that may climb out of a symbolic link (`{_shown(source)}`)")
        path = resources.normalise("fs", posixpath.join(base, target))
        if not isinstance(path, str):
            walk.ask(f"the redirection target {target!r} {path.reason}")
            continue
        if path in _HARMLESS_DEVICES:
            continue
        if path.startswith(("/dev/tcp/", "/dev/udp/")):
            walk.ask(f"bash opens a network connection for {path}")
            continue
        if path.startswith(("/dev/fd/", "/proc/self/fd/")):
            walk.ask(f"a redirection to an open file descriptor ({path})")
            continue
        for action in actions:
            walk.need("fs", action, path, source)


def _may_climb_a_link(target: str, base: str, cwd: str) -> bool:
    """Whether a ``..`` of ``target`` may climb out of a symbolic link: the kernel follows a link
    before the ``..`` after it (``src/link/../x`` with ``src/link`` -> ``../.git`` is ``/x``), and
    bgc reads ``..`` by the text. So a ``..`` after a name of the target, or climbing a directory
    a ``cd`` named (bash's ``cd`` is lexical, the process's directory physical), may; climbing
    the working directory the analysis started in does not (it is taken as real)."""
    named = 0
    for segment in target.split("/"):
        if segment == "..":
            if named or base != cwd:
                return True
        elif segment not in ("", "."):
            named += 1
    return False


def _substitutions(walk: _Walk, node: Any, scope: _Scope, depth: int, wrapped: int) -> None:
    """Every command substitution inside ``node`` (they run, wherever they stand)."""
    stack = list(node.named_children)
    while stack:
        child = stack.pop()
        if child.type in _SUBSTITUTIONS:
            _statement(walk, child, scope, depth + 1, wrapped)
        else:
            stack.extend(child.named_children)


def _word(walk: _Walk, node: Any, scope: _Scope, depth: int, wrapped: int, *, argument: bool = False) -> catalogue.Word | None:
    """The text bash passes for one word, or ``None`` when only running it would tell (then the
    substitutions inside still count). ``argument``: a word of a command's arguments, which may
    be a :class:`~bgc.runtime.catalogue.GlobWord` (the catalogue reads the paths it expands to)."""
    try:
        return _word_text(walk, node)
    except _Unknown:
        expands = _glob_word(walk, node) if argument else None
        if expands is not None:
            return expands
        _substitutions_of_word(walk, node, scope, depth, wrapped)
        return None


def _glob_word(walk: _Walk, node: Any) -> catalogue.GlobWord | None:
    """A word bash expands by pathname expansion (``*`` and ``?``, unquoted) or a leading ``~``
    (alone or before ``/``), and nothing else: its text as written and the glob pattern of what
    it may expand to. None for anything else that expands (``[``, braces, ``$``, a ``~`` after
    ``=`` or ``:``). Letters in a segment with a wildcard match either case in the pattern: the
    environment's shell may set ``nocaseglob``, and ``.E*`` then reads ``.env``."""
    pieces = node.children if node.type == "concatenation" else [node]
    if node.type == "concatenation" and _brace_expansion(walk.text(node)):
        return None
    chars: list[tuple[str, bool]] = []  # each character bash passes, and whether it is a wildcard
    home = False
    for index, piece in enumerate(pieces):
        if piece.type != "word":
            try:
                chars.extend((char, False) for char in _word_text(walk, piece))
            except _Unknown:
                return None
            continue
        raw = walk.text(piece)
        at = 0
        if index == 0 and raw.startswith("~") and (len(raw) == 1 and len(pieces) == 1 or raw[1:2] == "/"):
            home, at = True, 2 if raw[1:2] == "/" else 1
        while at < len(raw):
            char = raw[at]
            if char == "\\":
                if at + 1 < len(raw) and raw[at + 1] != "\n":
                    chars.append((raw[at + 1], False))
                at += 2
                continue
            if char in "[$`{} \t\n" or (char == "~" and (at == 0 or raw[at - 1] in "=:")):
                return None
            chars.append((char, char in "*?"))
            at += 1
    if not home and not any(wild for _, wild in chars):
        return None
    text = "".join(char for char, _ in chars)
    if home and walk.home is None:
        return None  # what the home directory is, only the environment says
    written = (walk.home + ("/" + text if text else "") if home else text)  # type: ignore[operator]
    segments: list[str] = []
    for segment in _split_segments(chars):
        folded = any(wild for _, wild in segment)
        segments.append("".join(char if wild else _pattern_char(char, folded) for char, wild in segment))
    pattern = "/".join(segments)
    if len(pattern) > MAX_PATTERN_LENGTH:
        return None
    leading = not home and bool(chars) and chars[0][1]
    return catalogue.GlobWord(written, pattern, home, leading)


def _split_segments(chars: list[tuple[str, bool]]) -> list[list[tuple[str, bool]]]:
    segments: list[list[tuple[str, bool]]] = [[]]
    for char, wild in chars:
        if char == "/" and not wild:
            segments.append([])
        else:
            segments[-1].append((char, wild))
    return segments


def _pattern_char(char: str, folded: bool) -> str:
    """One literal character in glob text: escaped, or (``folded``) a letter as the class of its
    two cases."""
    lower, upper = char.lower(), char.upper()
    if folded and lower != upper and len(lower) == len(upper) == 1:
        return f"[{lower}{upper}]"
    return glob.escape(char)


def _substitutions_of_word(walk: _Walk, node: Any, scope: _Scope, depth: int, wrapped: int) -> None:
    if node.type in _SUBSTITUTIONS:
        _statement(walk, node, scope, depth + 1, wrapped)
    else:
        _substitutions(walk, node, scope, depth, wrapped)


def _word_text(walk: _Walk, node: Any) -> str:
    kind = node.type
    if kind == "concatenation":
        if _brace_expansion(walk.text(node)):
            raise _Unknown  # `{a,b}` is split into three words by the grammar; bash expands it
        return "".join(_word_text(walk, child) for child in node.children)
    raw = walk.text(node)
    if kind in ("word", "number"):
        return _unquoted(raw)
    if kind == "raw_string":
        return raw[1:-1]
    if kind == "ansi_c_string":
        return _ansi_c(raw[2:-1])
    if kind == "string":
        if not raw.startswith('"') or any(c.type != "string_content" for c in node.named_children):
            raise _Unknown  # $"…" (translated) or an expansion inside
        return _double_quoted(raw[1:-1])
    raise _Unknown


def _unquoted(raw: str) -> str:
    """An unquoted word: backslash escapes removed; a glob, tilde, brace or ``$`` is not known,
    nor a word the grammar read with a blank in it (``] }`` is two words to bash)."""
    if _PLAIN_WORD.fullmatch(raw):
        return raw  # the common case: nothing to remove, nothing that expands
    out: list[str] = []
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\\":
            if index + 1 < len(raw) and raw[index + 1] != "\n":
                out.append(raw[index + 1])
            index += 2
            continue
        if char in _GLOB_CHARS or char in "$` \t\n" or (char == "~" and (index == 0 or raw[index - 1] in "=:")):
            raise _Unknown
        out.append(char)
        index += 1
    if "{" in raw and _brace_expansion(raw):
        raise _Unknown
    return "".join(out)


def _brace_expansion(text: str) -> bool:
    """Whether ``text`` holds a ``{`` closed by the next brace after it with a ``,`` or ``..``
    between them (``{a,b}``, ``{1..3}``), which bash expands. Each stretch between two braces is
    read once (a backtracking pattern reads a long ``{,,,…`` once per comma)."""
    opened = -1
    for brace in _BRACES.finditer(text):
        at = brace.start()
        if brace.group() == "}" and opened >= 0:
            between = text[opened + 1 : at]
            if "," in between or ".." in between:
                return True
        opened = at if brace.group() == "{" else -1
    return False


def _double_quoted(raw: str) -> str:
    if _PLAIN.fullmatch(raw):
        return raw
    out: list[str] = []
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw) and raw[index + 1] in '$`"\\\n':
            if raw[index + 1] != "\n":
                out.append(raw[index + 1])
            index += 2
            continue
        if char in "$`":
            raise _Unknown
        out.append(char)
        index += 1
    return "".join(out)


def _ansi_c(raw: str) -> str:
    """``$'…'``: bash's escapes decoded. One this does not decode exactly is unknown: ``\\c``,
    NUL (bash ends the word there) and a byte above 0x7F (a raw byte to bash, not a character)."""

    def one(match: re.Match[str]) -> str:
        simple, octal, hex_, short_u, long_u, other = match.groups()
        if simple:
            return _ANSI_C_SIMPLE[simple]
        if other is not None:
            raise _Unknown
        code = int(octal, 8) if octal else int(hex_ or short_u or long_u, 16)
        if code == 0 or ((octal or hex_) and code > 0x7F) or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise _Unknown
        return chr(code)

    return _ANSI_C.sub(one, raw)
