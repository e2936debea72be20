"""Words in the reports and messages people read: one spelling for every command.

Import-light on purpose (only the standard library): the policy parser, the configuration and
the test-file reader all phrase their "did you mean" from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def count(number: int, noun: str) -> str:
    """``1 rule``, ``0 rules``, ``3 rules``: the noun agrees with the number (regular plurals)."""
    return f"{number} {noun}" + ("" if number == 1 else "s")


def did_you_mean(word: str, choices: Iterable[str], quote: Callable[[str], str] = "`{}`".format) -> str | None:
    """``did you mean `allow`?`` when ``word`` is a near miss (case aside) of one obvious choice.

    One judgement of "near" for every message, so a typo is caught the same way in a policy, a
    configuration file and a test file. ``quote`` spells the choice as the message around it
    does: backticks for policy words, ``repr`` for keys of TOML and YAML files.
    """
    import difflib  # here: only a typo pays for it; the hot commands import this module

    close = difflib.get_close_matches(word.lower(), list(choices), n=1, cutoff=0.6)
    return f"did you mean {quote(close[0])}?" if close else None
