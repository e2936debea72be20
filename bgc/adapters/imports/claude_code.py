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
  server, ``mcp__server__tool`` one tool;
* ``Agent(name)`` matches the sub-agent ``name`` (``Agent(Explore)``; ``Task`` is the tool's
  earlier name); any other tool name alone matches every call of that tool (``WebSearch``).

Any other tool is translated through bgc's own mapping of Claude Code's tools (the bundled
``claude-code.bgp``, which the hook decides calls by): a rule about a tool becomes a rule about
the atoms its declaration needs, when that is exact. A ``deny`` or ``ask`` of a tool becomes
one on an atom every call of the tool needs and no other tool's call can (``deny Agent(Explore)``
is ``deny agent:spawn:Explore``; ``deny Glob``, ``deny search:glob:**``); an ``allow`` needs every
atom of the tool to be its own (``allow WebSearch`` is ``allow search:web:**``). A tool whose
atoms other tools share (``Grep`` reads files as ``Read`` does) has no exact translation: a rule
on ``fs:read`` would decide ``Read`` too, so it is listed, not guessed.

What bgc decides is the argv, not the text of the command (bgc.core.resources.proc, bgc.runtime.shell), so a Bash rule
is translated word by word: ``Bash(npm run test:*)`` is ``proc:exec:npm/run/test,
npm/run/test/**``. Workspace paths have the project root as ``/``; Claude Code is taken to run in
the project root, so ``./x`` and ``x`` are relative to it. Paths outside the project (``//abs``,
``~/x`` with ``home``) are :data:`HOST_RESOURCE` atoms, never workspace paths.

Adapter layer: reads a foreign format, writes bgc policy text. The formatter gives the layout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bgc.core.patterns import glob
from dataclasses import dataclass
from bgc.core.resources.proc import decode_argv, pattern_of_words
from bgc.runtime.calls import HOST, MCP_IDENTITY, SHELL_PAIRS
from bgc.core.policy.ast import LOCAL_SERVER, AtomTemplate
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
    """A Claude Code rule with no exact bgc translation (or another setting of ``permissions``:
    ``effect`` empty), and why."""

    effect: str
    source: str
    reason: str

    def __str__(self) -> str:
        said = f"{self.effect} {_comment_safe(self.source)}" if self.effect else _comment_safe(self.source)
        return f"{said}: {self.reason}"


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
    mapping = claude_code_tools()
    for effect in EFFECTS:
        for text in permissions.get(effect, ()):
            try:
                rules.extend(_rule(effect, text, home, mapping))
            except _NoTranslation as why:
                untranslated.append(Untranslated(effect, text, str(why)))
    untranslated.extend(_settings(permissions))
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


def _settings(permissions: Mapping[str, Any]) -> list[Untranslated]:
    """The other keys of ``permissions``, each with what bgc makes of it: nothing is passed over
    in silence. ``defaultMode: "default"`` (Claude Code asks what no rule matches) is the
    header's own sentence; ``disableBypassPermissionsMode`` and ``disableAutoMode`` turn off
    modes bgc does not have."""
    out: list[Untranslated] = []
    for key, value in permissions.items():
        shown = f"{key} {json.dumps(value, ensure_ascii=False)}"
        if key in EFFECTS or key in ("disableBypassPermissionsMode", "disableAutoMode"):
            continue
        if key == "defaultMode":
            if value != "default":
                out.append(Untranslated("", shown, "a Claude Code permission mode: bgc decides by the rules alone "
                                        "(what no rule allows is denied); modes of your own are `mode` blocks"))
        elif key == "additionalDirectories":
            for directory in value if isinstance(value, list) else [value]:
                out.append(Untranslated("", f"{key} {json.dumps(directory, ensure_ascii=False)}",
                                        "a directory outside the project is decided as host paths: allow what the "
                                        "agent may do there with host rules (allow host:read:/that/dir/**)"))
        else:
            out.append(Untranslated("", shown, "not a permissions setting bgc knows"))
    return out


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
        lines.extend(f"#   {u}" for u in untranslated)
    lines.append("")
    return lines


def _comment_safe(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text


def _rule(effect: str, text: Any, home: str | None, mapping: Mapping[str, tuple[AtomTemplate, ...]]) -> list[Rule]:
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
    return _tool(effect, text, tool, spec, mapping)


# ---- any other tool: through the mapping of Claude Code's tools -------------------------------

MAPPING = "claude-code.bgp"
"""The bundled policy that declares Claude Code's tools (what the hook decides calls by)."""

SPECIFIERS = {"Agent": "subagent_type", "Task": "subagent_type"}
"""Tools whose rule takes a specifier, and the parameter it names exactly (``Agent(Explore)``)."""

ALIASES = {"Task": "Agent", "KillBash": "KillShell"}
"""Tools Claude Code renamed: one tool under two names, so they may share atoms."""

_SPECIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]*")


def claude_code_tools() -> dict[str, tuple[AtomTemplate, ...]]:
    """Every tool the bundled mapping declares (on the local server) and the atoms it needs."""
    from bgc.core.policy.bundled import bundled_file
    from bgc.core.policy.loader import cached_policy

    path = bundled_file(MAPPING)
    if path is None:  # pragma: no cover - the mapping ships with bgc
        return {}
    return {decl.tool: decl.needs for decl in cached_policy(path).tools if LOCAL_SERVER in decl.servers}


def _tool(effect: str, text: str, tool: str, spec: str | None, mapping: Mapping[str, tuple[AtomTemplate, ...]]) -> list[Rule]:
    """A rule about a tool other than those with a syntax of their own, as a rule about the atoms
    its declaration needs (see the module's docstring for when that is exact)."""
    needs = mapping.get(tool)
    if needs is None:
        raise _NoTranslation(f"{tool} is not one of the Claude Code tools bgc's mapping ({MAPPING}) declares")
    if spec is not None:
        return [_specified(effect, text, tool, spec, needs)]
    own = [need for need in needs if _own_pair(tool, (need.resource, need.action), mapping)]
    if effect == "allow" and len(own) < len(needs):
        shared = sorted({f"{need.resource}:{need.action}" for need in needs if need not in own})
        raise _NoTranslation(
            f"{tool} needs {', '.join(shared)}, which other tools need too: allowing it would allow them; "
            "allow what it may touch instead (Read(...), Edit(...))"
        )
    if not own:
        shared = sorted({f"{need.resource}:{need.action}" for need in needs})
        raise _NoTranslation(
            f"{tool} needs only {', '.join(shared)}, which other tools need too: a rule would decide them as well; "
            "write rules for what it may touch instead (Read(...), Edit(...))"
        )
    pairs = dict.fromkeys((need.resource, need.action) for need in (own if effect == "allow" else own[:1]))
    return [Rule(effect, resource, action, ("**",), text, ("x",)) for resource, action in pairs]


def _specified(effect: str, text: str, tool: str, spec: str, needs: tuple[AtomTemplate, ...]) -> Rule:
    """``Agent(Explore)``: the atom the declaration needs with the specifier as its parameter."""
    parameter = SPECIFIERS.get(tool)
    if parameter is None:
        raise _NoTranslation(f"{tool}(...) has no specifier Claude Code documents: only {tool} alone is translated")
    if not _SPECIFIER.fullmatch(spec):
        raise _NoTranslation(f"only {tool}(NAME) with a plain name is translated (no wildcards, no spaces)")
    if len(needs) != 1 or needs[0].params != (parameter,):
        raise _NoTranslation(f"the mapping's {tool} needs more than its {parameter}: no one atom says {text}")
    (pattern,) = needs[0].expand({parameter: spec})
    return Rule(effect, needs[0].resource, needs[0].action, (pattern,), text, (spec,))


def _own_pair(tool: str, pair: tuple[str, str], mapping: Mapping[str, tuple[AtomTemplate, ...]]) -> bool:
    """Whether no call but one of ``tool`` (or the tool under another name) can need an atom of
    ``pair``: no other declaration needs it, nor a shell command, an MCP tool's identity or a
    path outside the project."""
    if pair in SHELL_PAIRS or pair == MCP_IDENTITY or pair[0] == HOST:
        return False
    name = ALIASES.get(tool, tool)
    return not any(
        ALIASES.get(other, other) != name and any((need.resource, need.action) == pair for need in needs)
        for other, needs in mapping.items()
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
    if (rule.resource, rule.action) == MCP_ATOM:
        server, _, name = sample.partition("/")
        match = _MCP.fullmatch(rule.source)
        return match is not None and match.group(1) == server and match.group(2) in (None, "*", name)
    return spec is None or spec == sample  # a tool's own atom: the whole tool, or the one name


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
