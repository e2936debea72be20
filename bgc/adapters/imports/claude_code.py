"""Claude Code's ``permissions`` rules as a bgc policy: translated exactly, or listed as not.

A team that already wrote ``permissions.allow/ask/deny`` in ``.claude/settings.json`` should not
have to write them again. :func:`translate` reads those rules and gives bgc rules that decide the
same way, plus an ``expect`` per example that proves it, and lists every rule it cannot translate
exactly, with the reason, rather than guess.

Claude Code's rule syntax and precedence are as its permissions page gives them
(https://code.claude.com/docs/en/permissions, "Permission rule syntax", "Tool-specific
permission rules"):

* rules are evaluated deny, then ask, then allow, and the first list with a match decides, whatever
  the rules' specificity — bgc's "deny beats ask beats allow", so each rule becomes one bgc rule
  of the same effect, and no ordering needs to be rebuilt;
* ``Bash(cmd)`` matches the command exactly; ``*`` matches any characters, spaces included; a
  trailing `` *`` (space, star) or the legacy ``:*`` suffix matches the prefix alone or followed
  by a space and anything; compound commands (``&&``, ``|``, ...) are matched per subcommand;
* ``Read(path)`` and ``Edit(path)`` follow gitignore: ``//path`` is absolute, ``~/path`` is in the
  home directory, ``/path`` is relative to the project root, ``path`` and ``./path`` to the current
  directory (a pattern without a ``/`` but at its end matches at any depth); ``Edit`` rules govern
  every tool that edits files, ``Read`` rules every tool that reads them;
* ``WebFetch(domain:host)`` matches fetches of that host; ``mcp__server`` every tool of an MCP
  server, ``mcp__server__tool`` one tool.

What bgc decides is the argv, not the text of the command (bgc.core.resources.proc, bgc.runtime.shell), so a Bash rule
is translated word by word: ``Bash(npm run test:*)`` is ``proc:exec:npm/run/test,
npm/run/test/**``. Workspace paths have the project root as ``/``; Claude Code is taken to run in
the project root, so ``./x`` and ``x`` are relative to it. Paths outside the project (``//abs``,
``~/x`` with ``home``) are :data:`HOST_RESOURCE` atoms, never workspace paths.

Adapter layer: reads a foreign format, writes bgc policy text. The formatter gives the layout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from bgc.core.patterns import glob
from dataclasses import dataclass
from bgc.core.resources.proc import decode_argv, pattern_of_words
from bgc.runtime.calls import MCP_IDENTITY
from bgc.core.policy.format import atom_word, format_text, pattern_word, quote_string

__all__ = ["HOST_RESOURCE", "MCP_ATOM", "Imported", "Rule", "Untranslated", "translate"]

HOST_RESOURCE = "host"
"""The resource of a host path outside the project (``//tmp/x`` is ``host:read:/tmp/x``)."""

MCP_ATOM = MCP_IDENTITY
"""The resource and action of a call to an MCP tool: ``mcp:call:SERVER/TOOL``, the atom the hook
decides an MCP tool's identity on (:data:`bgc.runtime.calls.MCP_IDENTITY`), so an imported rule decides
the calls it names."""

EFFECTS = ("deny", "ask", "allow")
"""Claude Code's lists, in the order it evaluates them."""

_SHELL_SYNTAX = re.compile(r"""['"\\$`;&|<>(){}\n\r\t]""")
_DOMAIN = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*")
_MCP = re.compile(r"mcp__([A-Za-z0-9_-]+?)(?:__([A-Za-z0-9_-]+|\*))?")
_PATH_SPECIAL = re.compile(r"[\\\[\]!{}]")
_FILL = re.compile(r"\\(.)|\*\*|\*|\?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    """One bgc rule translated from one Claude Code rule (``source``, in list ``effect``)."""

    effect: str
    resource: str
    action: str
    patterns: tuple[str, ...]
    source: str
    samples: tuple[str, ...]
    """Concrete values the source rule matches, one per pattern shape: the expects' subjects."""


@dataclass(frozen=True, slots=True)
class Untranslated:
    """A Claude Code rule with no exact bgc translation, and why."""

    effect: str
    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class Imported:
    """The translation of one settings file: the policy text (in ``bgc fmt`` layout), the rules it
    holds and the rules it could not translate."""

    text: str
    rules: tuple[Rule, ...]
    untranslated: tuple[Untranslated, ...]


class _NoTranslation(Exception):
    """Raised by a translator: the rule has no exact translation; the message says why."""


def translate(permissions: Mapping[str, Any], *, source: str, home: str | None = None) -> Imported:
    """Translate ``permissions`` (the ``permissions`` object of a settings file, already checked
    to hold lists of strings under ``allow``/``ask``/``deny``) into a bgc policy.

    ``source`` names the settings file in the policy's header; ``home`` is the absolute home
    directory that ``~/`` stands for (without it, ``~/`` rules are not translated: whose home
    directory is meant depends on who runs Claude Code).
    """
    rules: list[Rule] = []
    untranslated: list[Untranslated] = []
    for effect in EFFECTS:
        for text in permissions.get(effect, ()):
            try:
                rules.extend(_rule(effect, text, home))
            except _NoTranslation as why:
                untranslated.append(Untranslated(effect, text, str(why)))
    lines = _header(source, untranslated)
    for rule in rules:
        first, *rest = rule.patterns
        extra = "".join(f", {pattern_word(p)}" for p in rest)
        reason = quote_string(f"Claude Code: {rule.effect} {rule.source}")
        lines.append(f"{rule.effect} {atom_word(rule.resource, rule.action, first)}{extra} because {reason}")
    expects = _expects(rules, home)
    if expects:
        lines.append("")
        lines.append("# each example below is decided as Claude Code decides it (deny, then ask, then allow)")
        lines.extend(expects)
    return Imported(format_text("\n".join(lines) + "\n", source), tuple(rules), tuple(untranslated))


def _header(source: str, untranslated: list[Untranslated]) -> list[str]:
    lines = [
        f"# Translated by `bgc import claude-code` from {source}: Claude Code's permission rules,",
        "# deny before ask before allow, as bgc decides them. Workspace paths have the project root",
        "# as /, and Claude Code is taken to run there (./x and x are relative to it). What no rule",
        "# matches is denied here; Claude Code would ask.",
    ]
    if untranslated:
        lines.append("#")
        lines.append("# NOT translated (no exact bgc rule; decide these by hand):")
        lines.extend(f"#   {u.effect} {_comment_safe(u.source)}: {u.reason}" for u in untranslated)
    lines.append("")
    return lines


def _comment_safe(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text


def _rule(effect: str, text: Any, home: str | None) -> list[Rule]:
    if not isinstance(text, str) or not text:
        raise _NoTranslation("not a rule (expected a non-empty string)")
    if not text.isprintable():
        raise _NoTranslation("holds control or invisible characters")
    tool, paren, spec = text.partition("(")
    if paren:
        if not spec.endswith(")"):
            raise _NoTranslation("unbalanced parentheses")
        spec = spec[:-1]
    else:
        spec = None
    if tool == "Bash":
        return [_bash(effect, text, spec)]
    if tool in ("Read", "Edit"):
        return _path(effect, text, "read" if tool == "Read" else "write", spec, home)
    if tool == "WebFetch":
        return [_webfetch(effect, text, spec)]
    if tool.startswith("mcp__") and not paren:
        return [_mcp(effect, text)]
    if tool == "Write" and paren:
        raise _NoTranslation("a path belongs in Edit(...): Claude Code applies Edit rules to every tool that writes")
    raise _NoTranslation(
        f"bgc decides what a call touches (files, commands, hosts), not which tool makes it: {tool} has no atom of its own"
    )


# ---- Bash ----------------------------------------------------------------------------------------


def _bash(effect: str, text: str, spec: str | None) -> Rule:
    """``Bash(spec)`` as argv patterns; see :func:`bash_patterns`."""
    patterns = bash_patterns(spec)
    samples = [_filled(p) for p in patterns]
    return Rule(effect, "proc", "exec", patterns, text, tuple(dict.fromkeys(samples)))


def bash_patterns(spec: str | None) -> tuple[str, ...]:
    """The argv patterns matching the commands ``Bash(spec)`` matches, word by word.

    ``*`` as a whole word is any number of words (``**``); at the end, the prefix alone or with
    more words. A ``*`` glued to the end of the last word (``test*``) is that word's tail and any
    words after it; glued to the start of the first word (``*install``), any words before and that
    word's head. Any other ``*`` could split a word in two, and shell syntax (quotes, ``$``,
    operators) means the text is not the words: both raise :class:`_NoTranslation`.
    """
    if spec is None or spec.strip() in ("*", ""):
        if spec is not None and not spec.strip():
            raise _NoTranslation("an empty command")
        return ("**",)
    if _SHELL_SYNTAX.search(spec):
        raise _NoTranslation("shell syntax (quotes, $, operators, escapes): its words are not its text")
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    words = spec.split()
    out: list[str] = []
    optional_tail = False
    for index, word in enumerate(words):
        last = index == len(words) - 1
        if word == "*":
            if last:
                optional_tail = True
            else:
                out.append("**")
        elif "*" not in word:
            out.append(glob.escape(word))
        elif last and word.endswith("*") and word.count("*") == 1:
            out.append(glob.escape(word[:-1]) + "*")
            optional_tail = True
        elif index == 0 and word.startswith("*") and word.count("*") == 1:
            out.extend(["**", "*" + glob.escape(word[1:])])
        else:
            raise _NoTranslation(f"the * in {word!r} can match across a word boundary, which no argv pattern says")
    if not out:
        return ("**",)
    exact = pattern_of_words(out)
    return (exact, exact + "/**") if optional_tail else (exact,)


def _filled(pattern: str) -> str:
    """A concrete text the pattern matches: every wildcard filled with ``x``, escapes resolved."""
    return _FILL.sub(lambda m: m.group(1) if m.group(1) is not None else "x", pattern)


# ---- Read and Edit -------------------------------------------------------------------------------


def _path(effect: str, text: str, action: str, spec: str | None, home: str | None) -> list[Rule]:
    if spec is None:
        return [
            Rule(effect, "fs", action, ("/**",), text, ("/x",)),
            Rule(effect, HOST_RESOURCE, action, ("/**",), text, ("/x",)),
        ]
    resource, patterns = path_patterns(spec, home)
    return [Rule(effect, resource, action, patterns, text, tuple(dict.fromkeys(_filled(p) for p in patterns)))]


def path_patterns(spec: str, home: str | None) -> tuple[str, tuple[str, ...]]:
    """The resource and patterns of a gitignore-style ``Read``/``Edit`` path.

    A gitignore pattern also covers everything below a directory it matches, so ``X`` becomes
    ``X`` and ``X/**`` (a trailing ``/``, "directories only", becomes ``X/**``).
    """
    if not spec:
        raise _NoTranslation("an empty path")
    if spec.startswith("!"):
        raise _NoTranslation("a negated gitignore pattern (!) re-includes paths; a bgc rule cannot subtract")
    if _PATH_SPECIAL.search(spec):
        raise _NoTranslation("escapes, classes or braces in a gitignore pattern are not translated")
    resource = "fs"
    if spec.startswith("//"):
        resource, rest, anchored = HOST_RESOURCE, spec[2:], True
    elif spec.startswith("~/"):
        if home is None:
            raise _NoTranslation("~/ is the home directory of whoever runs Claude Code: pass --home DIR")
        resource, rest, anchored = HOST_RESOURCE, home.strip("/") + "/" + spec[2:], True
    elif spec.startswith("/"):
        rest, anchored = spec[1:], True
    elif spec.startswith("./"):
        rest, anchored = spec[2:], True
    else:
        rest, anchored = spec, "/" in spec.rstrip("/")
    directory = rest.endswith("/")
    rest = rest.rstrip("/")
    segments = rest.split("/")
    if not rest or any(seg in ("", ".", "..") for seg in segments):
        raise _NoTranslation("empty, '.' or '..' segments: the path it names depends on normalisation bgc does not guess")
    body = "/" + rest if anchored else "/**/" + rest
    if directory:
        return resource, (body + "/**",)
    if body.endswith("/**"):
        return resource, (body,)
    return resource, (body, body + "/**")


# ---- WebFetch and MCP ----------------------------------------------------------------------------


def _webfetch(effect: str, text: str, spec: str | None) -> Rule:
    if spec is None:
        return Rule(effect, "net", "connect", ("**",), text, ("https://example.com/",))
    kind, _, domain = spec.partition(":")
    if kind != "domain" or not _DOMAIN.fullmatch(domain):
        raise _NoTranslation("only WebFetch(domain:HOST) with a plain lower-case host name is translated")
    patterns = (f"https://{domain}/**", f"http://{domain}/**", f"https://{domain}:*/**", f"http://{domain}:*/**")
    return Rule(effect, "net", "connect", patterns, text, (f"https://{domain}/x", f"http://{domain}:8080/x"))


def _mcp(effect: str, text: str) -> Rule:
    match = _MCP.fullmatch(text)
    if match is None:
        raise _NoTranslation("not an MCP tool name (mcp__SERVER or mcp__SERVER__TOOL)")
    server, tool = match.groups()
    if tool is None or tool == "*":
        return Rule(effect, *MCP_ATOM, (f"{glob.escape(server)}/*",), text, (f"{server}/x",))
    return Rule(effect, *MCP_ATOM, (f"{glob.escape(server)}/{glob.escape(tool)}",), text, (f"{server}/{tool}",))


# ---- expects: what Claude Code would decide for each sample --------------------------------------


def _expects(rules: Sequence[Rule], home: str | None) -> list[str]:
    """``expect`` lines: each sample of each rule, with the effect Claude Code gives it.

    The effect is computed from the *source* rules with Claude Code's own matching (text
    matching for Bash, gitignore for paths, host names, tool names), not from the translation;
    ``bgc check`` then shows the translation decides the same.
    """
    out: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for rule in rules:
        for sample in rule.samples:
            key = (rule.resource, rule.action, sample)
            if key in seen:
                continue
            seen.add(key)
            effect = _claude_effect(rules, rule.resource, rule.action, sample, home)
            value = glob.escape(sample)
            out.append(f"expect {effect} {atom_word(rule.resource, rule.action, value)}")
    return out


def _claude_effect(rules: Sequence[Rule], resource: str, action: str, sample: str, home: str | None) -> str:
    for effect in EFFECTS:
        if any(r.effect == effect and r.resource == resource and r.action == action and _claude_matches(r, sample, home)
               for r in rules):  # fmt: skip
            return effect
    return "deny"  # no rule: bgc's default (Claude Code would ask)


def _claude_matches(rule: Rule, sample: str, home: str | None) -> bool:
    _, _, spec = rule.source.partition("(")
    spec = spec[:-1] if spec else None
    if rule.resource == "proc":
        return spec is None or _bash_text_matches(spec, " ".join(decode_argv(sample)))
    if rule.resource in ("fs", HOST_RESOURCE):
        return spec is None or _gitignore_matches(spec, rule.resource, sample, home)
    if rule.resource == "net":
        host = sample.split("/")[2].split(":")[0]
        return spec is None or spec == f"domain:{host}"
    server, _, name = sample.partition("/")
    match = _MCP.fullmatch(rule.source)
    return match is not None and match.group(1) == server and match.group(2) in (None, "*", name)


def _bash_text_matches(spec: str, command: str) -> bool:
    """Claude Code's text match of a Bash rule: ``*`` any characters; a trailing `` *`` or ``:*``
    the prefix alone or followed by a space."""
    if spec.strip() == "*":
        return True
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    if spec.endswith(" *"):
        head = ".*".join(re.escape(part) for part in spec[:-2].split("*"))
        return re.fullmatch(f"{head}(?: .*)?", command, re.DOTALL) is not None
    return re.fullmatch(".*".join(re.escape(part) for part in spec.split("*")), command, re.DOTALL) is not None


def _gitignore_matches(spec: str, resource: str, sample: str, home: str | None) -> bool:
    """gitignore matching (the pathspec library) of the path relative to the rule's base: the
    file system's root for ``//`` and ``~/`` (the home directory written out), else the project's."""
    import pathspec

    if spec.startswith(("//", "~/")):
        if resource != HOST_RESOURCE:
            return False
        pattern = "/" + spec[2:] if spec.startswith("//") else f"/{(home or '').strip('/')}/{spec[2:]}"
    else:
        if resource != "fs":
            return False
        pattern = spec[1:] if spec.startswith("./") else spec
    return pathspec.GitIgnoreSpec.from_lines([pattern]).match_file(sample.lstrip("/"))
