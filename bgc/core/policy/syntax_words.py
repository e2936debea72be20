"""What a syntax error says, in words: what the grammar expected at the place it stopped (named
as people name it, not as the grammar's terminals) and, where one is obvious, a hint (a keyword
misspelt, `=` for `==`, a word that needs quotes). Only the wording: which error happened, and
where, is the parser's business (:mod:`bgc.core.policy.parser`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bgc.text import did_you_mean

STATEMENT_KEYWORDS = ("allow", "ask", "deny", "otherwise", "tool", "mode", "default", "include", "expect", "filesystem", "trust")
_KEYWORDS: dict[str, tuple[str, ...]] = {
    "EFFECT": ("allow", "ask", "deny"),
    "OTHERWISE": ("otherwise",),
    "WHEN": ("when",),
    "BECAUSE": ("because",),
    "APPROVALS": ("approvals",),
    "OF": ("of",),
    "TOOL": ("tool",),
    "NEEDS": ("needs",),
    "ON": ("on",),
    "IGNORES": ("ignores",),
    "MODE": ("mode",),
    "DEFAULT": ("default",),
    "INCLUDE": ("include",),
    "EXPECT": ("expect",),
    "FILESYSTEM": ("filesystem",),
    "TRUST": ("trust",),
    "ROLE": ("issuer", "approver"),
    "ELICITATION": ("elicitation",),
    "SANDBOX": ("sandbox",),
    "CASE": ("case-insensitive", "case-sensitive"),
    "IN": ("in",),
    "AND": ("and",),
    "OR": ("or",),
    "NOT": ("not",),
    "MATCHES": ("matches",),
}
_DESCRIPTIONS: dict[str, str] = {
    "ATOM": "a permission atom `resource:action:pattern`",
    "PATTERN": "a pattern",
    "STRING": 'a quoted string ("...")',
    "NAME": "a name",
    "FIELD": "a field (intent.kind, origin.model or call.tool)",
    "APPROVER": "an approver's name",
    "CMP": "`==`, `!=`",
    "INT": "a number",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "_LBRACKET": "`[`",
    "_RBRACKET": "`]`",
    "_LPAR": "`(`",
    "_RPAR": "`)`",
    "_COMMA": "`,`",
    "_NL": "the end of the line",
    "$END": "the end of the file",
    "DEFAULT": "`default mode`",
}
_STATEMENT = (
    "a statement (`allow`, `ask`, `deny`, `otherwise`, `tool`, `mode`, `default mode`, `include`, `expect`, "
    "`filesystem` or `trust`)"
)
_ORDER = [
    "OTHERWISE", "EFFECT", "TOOL", "MODE", "DEFAULT", "INCLUDE", "EXPECT", "FILESYSTEM", "TRUST", "CASE", "ROLE", "ELICITATION", "SANDBOX", "ATOM", "PATTERN",
    "NAME", "FIELD", "NOT", "_LPAR", "CMP", "IN", "MATCHES", "STRING", "APPROVER", "INT", "OF", "ON", "NEEDS", "IGNORES",
    "LBRACE", "_LBRACKET", "_COMMA", "WHEN", "APPROVALS", "BECAUSE", "AND", "OR", "_RPAR", "_RBRACKET",
    "RBRACE", "_NL", "$END",
]  # fmt: skip


def describe(terminal: str) -> str:
    if terminal in _DESCRIPTIONS:
        return _DESCRIPTIONS[terminal]
    words = _KEYWORDS.get(terminal, (terminal.lower(),))
    return join_words([f"`{word}`" for word in words])


def join_words(items: Sequence[str], last: str = "or") -> str:
    """``a, b or c``: a list in words, for messages."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]


def expected_text(expected: set[str]) -> str:
    if {"EFFECT", "TOOL", "INCLUDE"} <= expected:
        return _STATEMENT
    if {"EFFECT", "RBRACE"} <= expected:
        return "a rule (`allow`, `ask`, `deny` or `otherwise`) or `}` to close the mode block"
    return join_words([describe(name) for name in _ORDER if name in expected])

def syntax_hint(expected: set[str], found_type: str, found: str) -> str | None:
    keywords = [word for name in _ORDER if name in expected for word in _KEYWORDS.get(name, ())]
    if {"EFFECT", "RBRACE"} <= expected and "TOOL" not in expected and found.lower() in STATEMENT_KEYWORDS:
        return f"`{found}` statements go outside mode blocks"
    if keywords and found_type not in ("_NL", "STRING") and found:
        close = did_you_mean(found, keywords)
        if close:
            return close
    if expected == {"EFFECT"}:  # only after `otherwise`
        return "a fallback is `otherwise ask` or `otherwise deny`, then an atom: `otherwise ask proc:exec:**`"
    if "CMP" in expected and found in ("=", "<>", "is"):
        return "compare with `==` (or `!=`)"
    if "STRING" in expected and "PATTERN" not in expected and re.match(r"\w", found):
        return f'quote it: "{found}"'
    if "ATOM" in expected and found_type == "STRING":
        return 'quote only the pattern, right after `resource:action:`, e.g. fs:write:"/my dir/**"'
    if "_COMMA" in expected and "WHEN" in expected:
        if found_type == "STRING":
            return 'a reason is written `because "..."`; a quoted pattern follows a `,`'
        return "separate several patterns with `,`; a rule may go on with `when`, `approvals` or `because`"
    return None
