"""The peers bgc's gate is compared with, each built as well as its library allows, and the
glob references they are all checked against.

Every peer gets the rules of workload W as ``(effect, resource, action, pattern)`` and decides
concrete atoms ``resource:action:value`` with deny-overrides: allowed when some allow rule of
that resource/action matches the value and no deny rule does. Each dispatches on
``resource:action`` first (a dict lookup, as the gate does), then:

- ``re``: one compiled regex per resource/action, ``(?!(?:deny|…)\\Z)(?:allow|…)`` with
  ``fullmatch`` — one alternation of the translated patterns;
- ``pathspec``: one ``PathSpec`` (gitwildmatch) per resource/action, allows then ``!denies``
  (last match wins, so any deny wins); an allow ending in a one-segment ``*`` is followed by
  ``!…/*/*`` (in gitignore a matched directory covers its contents); values lose their
  leading ``/`` (a URL is spelled ``https/host/path``), as pathspec expects relative paths;
- ``cedarpy``: one pre-parsed ``PolicySet`` of ``permit``/``forbid`` policies whose conditions
  are ``context.v like "…"``; a batch of requests per call (cedarpy's fastest interface).

Values are given already normal (the gate normalises them anyway; the peers do not).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

Rule = tuple[str, str, str, str]
Decider = Callable[[Sequence[str]], list[bool]]


def translate(pattern: str) -> str:
    """A regex for a glob of bgc's dialect, written independently of bgc (literals, ``*``,
    ``?`` and whole-segment ``**``; classes are not used by the workloads)."""
    segments = pattern.split("/")
    out = []
    for k, segment in enumerate(segments):
        last = k == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:.*/)?")
            continue
        out.append("".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in segment))
        if not last:
            out.append("/")
    return "".join(out)


def _by_key(rules: Sequence[Rule]) -> dict[str, tuple[list[str], list[str]]]:
    keys: dict[str, tuple[list[str], list[str]]] = {}
    for effect, resource, action, pattern in rules:
        allows, denies = keys.setdefault(f"{resource}:{action}", ([], []))
        (denies if effect == "deny" else allows).append(pattern)
    return keys


def _split(atom: str) -> tuple[str, str]:
    resource, action, value = atom.split(":", 2)
    return f"{resource}:{action}", value


# --- references ------------------------------------------------------------------------------


def reference_bgc_glob(rules: Sequence[Rule]) -> Decider:
    """Rule by rule with ``bgc.core.patterns.glob`` (no pattern sets, no plan): the dialect's own matcher."""
    from bgc.core.patterns import glob

    keys = {key: ([glob.Pattern(p) for p in a], [glob.Pattern(p) for p in d]) for key, (a, d) in _by_key(rules).items()}

    def decide(atoms: Sequence[str]) -> list[bool]:
        out = []
        for atom in atoms:
            key, value = _split(atom)
            allows, denies = keys.get(key, ((), ()))
            out.append(any(p.matches(value) for p in allows) and not any(p.matches(value) for p in denies))
        return out

    return decide


def reference_translation(rules: Sequence[Rule]) -> Decider:
    """Rule by rule with :func:`translate` (one regex per pattern)."""
    keys = {
        key: ([re.compile(translate(p), re.S) for p in a], [re.compile(translate(p), re.S) for p in d])
        for key, (a, d) in _by_key(rules).items()
    }

    def decide(atoms: Sequence[str]) -> list[bool]:
        out = []
        for atom in atoms:
            key, value = _split(atom)
            allows, denies = keys.get(key, ((), ()))
            out.append(any(p.fullmatch(value) for p in allows) and not any(p.fullmatch(value) for p in denies))
        return out

    return decide


# --- peers ------------------------------------------------------------------------------------


def combined_re(rules: Sequence[Rule]) -> Decider:
    compiled = {}
    for key, (allows, denies) in _by_key(rules).items():
        allow = "|".join(translate(p) for p in allows) or "(?!)"
        deny = f"(?!(?:{'|'.join(translate(p) for p in denies)})\\Z)" if denies else ""
        compiled[key] = re.compile(f"{deny}(?:{allow})", re.S).fullmatch
    never = re.compile("(?!)").fullmatch

    def decide(atoms: Sequence[str]) -> list[bool]:
        out = []
        for atom in atoms:
            resource, action, value = atom.split(":", 2)
            out.append(compiled.get(f"{resource}:{action}", never)(value) is not None)
        return out

    return decide


def _relative(value: str) -> str:
    return value.replace("://", "/", 1) if "://" in value else value[1:]


def pathspec_peer(rules: Sequence[Rule]) -> Decider:
    import pathspec

    specs = {}
    for key, (allows, denies) in _by_key(rules).items():
        # a pattern that matches a directory covers what is below it in gitignore; a one-segment
        # '*' allow is kept to its segment by re-excluding '*/*' right after it
        lines = [line for p in allows for line in ["/" + _relative(p)] + (["!/" + _relative(p) + "/*"] if p.endswith("/*") else [])]
        lines += ["!/" + _relative(p) for p in denies]
        specs[key] = pathspec.PathSpec.from_lines("gitwildmatch", lines).match_file

    def decide(atoms: Sequence[str]) -> list[bool]:
        out = []
        for atom in atoms:
            resource, action, value = atom.split(":", 2)
            match = specs.get(f"{resource}:{action}")
            out.append(match is not None and match(_relative(value)))
        return out

    return decide


def _cedar_condition(pattern: str) -> str:
    """``like`` for the workload's patterns: ``*`` in ``like`` crosses ``/``, so a one-segment
    ``*`` is ``like "x/*" && !(like "x/*/*")``; ``x/**`` is ``like "x/*"``."""
    if pattern.endswith("/**") and not re.search(r"[*?\[]", pattern[:-3]):
        return f'context.v like "{pattern[:-3]}/*"'
    if pattern.endswith("/*") and not re.search(r"[*?\[]", pattern[:-2]):
        return f'context.v like "{pattern[:-2]}/*" && !(context.v like "{pattern[:-2]}/*/*")'
    raise ValueError(f"no cedar translation for {pattern!r}")


def cedar_action(resource: str, action: str) -> str:
    return f'Action::"{resource}_{action}"'


def cedar_policies(rules: Sequence[Rule]) -> str:
    out = []
    for effect, resource, action, pattern in rules:
        verb = "forbid" if effect == "deny" else "permit"
        out.append(f"{verb}(principal, action == {cedar_action(resource, action)}, resource) when {{ {_cedar_condition(pattern)} }};")
    return "\n".join(out)


def cedar_peer(rules: Sequence[Rule]) -> Decider:
    import cedarpy

    policies = cedarpy.PolicySet.from_str(cedar_policies(rules)) if hasattr(cedarpy, "PolicySet") else cedar_policies(rules)
    entities = cedarpy.Entities.from_json_str("[]") if hasattr(cedarpy, "Entities") else []

    def decide(atoms: Sequence[str]) -> list[bool]:
        requests = []
        for atom in atoms:
            resource, action, value = atom.split(":", 2)
            requests.append(
                {"principal": 'User::"agent"', "action": cedar_action(resource, action), "resource": 'R::"r"', "context": {"v": value}}
            )
        return [result.allowed for result in cedarpy.is_authorized_batch(requests, policies, entities)]

    return decide


PEERS: dict[str, tuple[Callable[[Sequence[Rule]], Decider], str | None]] = {
    "one combined re": (combined_re, None),
    "pathspec": (pathspec_peer, "pathspec"),
    "cedarpy": (cedar_peer, "cedarpy"),
}
"""name → (builder, the module it needs or None): a missing module makes the peer 'skipped'."""
