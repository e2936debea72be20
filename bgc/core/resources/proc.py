"""Argvs: the values of ``proc``, a command line written in the argv dialect, matched word by word.

A rule about a command must be able to name its arguments (``allow git status``, ``deny git push
...``), and it must be decided by the same exact algebra as every other atom (:mod:`bgc.core.patterns.glob`), so
that lints, expects and diffs work on it unchanged. The glob dialect already has exactly the
structure an argv needs: ``/`` separates segments, ``*`` and ``?`` never cross it, ``**`` as a
whole segment spans any number of segments. So an argv is written with **one word per segment**:

    argv ["git", "diff", "--stat"]          proc:exec:git/diff/--stat
    argv ["cat", "/etc/passwd"]             proc:exec:cat/∕etc∕passwd
    rule  git diff with anything after it   proc:exec:git/diff/**

A ``/`` *inside* a word is written as U+2215 DIVISION SLASH (``∕``), one character for one, so a
word can never forge a word boundary (``cat`` with the one argument ``a/b`` is ``cat/a∕b``, never
``cat/a/b``) and ``*`` inside a pattern word still stands for exactly the characters of one word
(``*.py`` matches the word ``src/a.py``: ``src∕a.py``). A word that already holds U+2215 cannot
be written and is refused (an argv is rarely spelled with it; if one is, it is not decided).
Words ``.`` and ``..`` are ordinary words here (``find .``, ``git add .``), not path segments:
``proc`` values and patterns are exempt from the ``.``/``..`` segment refusals of other
resources. An empty word (``echo ""``) is an empty segment. So a value is matched as given, once
it passed the checks every value takes (:func:`bgc.core.resources.kind.text_problem`).

The dialect lives here, with the resource, rather than among the pattern dialects of
:mod:`bgc.core.patterns`: it adds no pattern algebra (the glob's is used unchanged), it is the
spelling of ``proc`` values, and whoever writes one (the shell reader, the importers, a
template's parameter) writes a ``proc`` value.
"""

from __future__ import annotations

from bgc.core.resources.kind import Rejection, ResourceKind

__all__ = [
    "PROC",
    "WORD_SLASH",
    "ArgvError",
    "decode_argv",
    "encode_argv",
    "encode_word",
    "pattern_of_words",
    "word_problem",
]

WORD_SLASH = "\u2215"
"""How a ``/`` inside one argv word is written (DIVISION SLASH): one character for one."""


class ArgvError(ValueError):
    """A word that has no spelling in the dialect (it holds :data:`WORD_SLASH` itself)."""


def word_problem(word: str) -> str | None:
    """Why ``word`` cannot be written in the dialect, or ``None``."""
    if WORD_SLASH in word:
        return f"holds U+2215 ('{WORD_SLASH}'), which the argv dialect uses for '/' inside a word"
    return None


def encode_word(word: str) -> str:
    """One argv word as one segment: ``/`` becomes :data:`WORD_SLASH`; raises :class:`ArgvError`."""
    problem = word_problem(word)
    if problem:
        raise ArgvError(f"argv word {word!r} {problem}")
    return word.replace("/", WORD_SLASH)


def encode_argv(argv: list[str] | tuple[str, ...]) -> str:
    """The value of a ``proc`` atom for ``argv`` (at least one word); raises :class:`ArgvError`."""
    if not argv or argv == [""] or argv == ("",):
        raise ArgvError("an argv has at least one word, and a program name is not empty")
    return "/".join(encode_word(word) for word in argv)


def decode_argv(value: str) -> tuple[str, ...]:
    """The argv a ``proc`` value stands for: the inverse of :func:`encode_argv`."""
    return tuple(segment.replace(WORD_SLASH, "/") for segment in value.split("/"))


def pattern_of_words(words: list[str] | tuple[str, ...]) -> str:
    """A ``proc`` pattern from one pattern per word: each is glob text for a single word (``*``,
    ``?``, classes, ``\\x`` escapes) in which ``/`` means a slash *inside* the word; a word that is
    exactly ``**`` stands for any number of whole words (at the end: at least one)."""
    if not words or list(words) == [""]:
        raise ArgvError("an argv pattern has at least one word, and a program name is not empty")
    return "/".join(word if word == "**" else word.replace("/", WORD_SLASH) for word in words)


def _read(value: str, case_insensitive: bool) -> str | Rejection:
    """An argv is matched as given: ``.`` and ``..`` are words."""
    return value


PROC = ResourceKind(read=_read, argv=True)
"""``proc``: an argv (``proc:exec:git/status``)."""
