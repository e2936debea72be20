"""Pinned MCP tool descriptions: a server may not change a tool after people trusted it.

A model reads a tool's description and schemas and acts on them, so a server that changes them
after the tool was trusted (a "rug pull"), or that hides instructions in them ("tool
poisoning"), steers the model without anyone seeing. The proxy therefore pins tools:

- A tool's **version** is its name, description, input schema and output schema
  (:func:`tool_version`); it is named by the digest of its canonical CBOR (:func:`version_digest`).
- The first time the policy allows a call to a tool of a server, the version that server last
  listed is **pinned** in the store (trust on first use), and the ledger records it.
- A later ``tools/list`` that shows another version of a pinned tool: the new version is kept in
  the store, the tool is **withheld** (left out of the list, a call to it refused), and a
  :class:`~bgc.runtime.approvals.PermissionRequest` is made for it (tool and server, the new
  version's digest as its parameters, ``mcp:pin:SERVER/TOOL`` as its atom, one trusted approver
  as its requirement). A person reads the change (``bgc mcp-pins show``) and accepts it with a
  signed answer (``bgc mcp-pins accept``, or ``bgc approve``): the next listing finds the request
  approved, pins the new version in place of the old one, uses the request, and the ledger
  records the acceptance and who gave it. A rejected request keeps the tool withheld.
- Every version is **scanned** for text aimed at the model rather than at people
  (:func:`scan`): hidden characters (the tags block, bidirectional controls, zero-width and other
  invisible format characters, variation selectors, private-use and unassigned code points,
  control characters) and phrases that instruct the model ("ignore previous instructions",
  "do not tell the user", ``<IMPORTANT>`` blocks), each reported with its place (the field's
  path and the character's column).

Nothing unsigned decides an acceptance: the request's standing is read from signed answers, as
for any call. A first-use pin is unsigned (nothing else could be): it is trust on first use, and
the ledger says when it was taken.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bgc.core.values import canonical

VERSION_TAG = "bgc.ToolVersion"
PIN_RESOURCE, PIN_ACTION = "mcp", "pin"
PIN_RULE = "(tool pin: a changed tool waits for a trusted approver)"
"""What a pin's permission request names as its rule (no policy line asks it: the proxy does)."""
PIN_LIFETIME_SECONDS = 7 * 24 * 3600
"""How long a changed tool's request stays open for people (then the next listing asks again)."""
VERSION_FIELDS = ("name", "description", "inputSchema", "outputSchema")
MAX_FINDINGS = 20
"""Findings reported per version at most (the rest are counted)."""


def tool_version(tool: Mapping[str, Any]) -> dict[str, Any]:
    """What a tool's version is made of: the fields of :data:`VERSION_FIELDS` it has."""
    return {name: tool[name] for name in VERSION_FIELDS if name in tool}


def version_bytes(version: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a version, as the store keeps it (their digest names it)."""
    return canonical.envelope(VERSION_TAG, 1, dict(version))


def version_digest(version: Mapping[str, Any]) -> str:
    """The digest that names a version (canonical CBOR: the same version, the same digest)."""
    return canonical.digest_text(version_bytes(version))


def version_text(version: Mapping[str, Any]) -> str:
    """A version as people read it (and diff it): JSON, keys sorted, indented."""
    return json.dumps(version, sort_keys=True, indent=2, ensure_ascii=False)


def pin_atom(server: str, tool: str) -> str:
    return f"{PIN_RESOURCE}:{PIN_ACTION}:{server}/{tool}"


# ---- scanning ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """Text aimed at the model: where (a field's path, the 1-based column) and what."""

    where: str
    column: int
    what: str

    def __str__(self) -> str:
        return f"{self.where}:{self.column}: {self.what}"


_PHRASES = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|other|system)\s+"
    r"(?:instructions?|prompts?|rules?|messages?|directions?)"
    r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert|notify|reveal\s+(?:this\s+)?to)\s+the\s+user"
    r"|\bwithout\s+(?:telling|informing|notifying|asking)\s+the\s+user"
    r"|<\s*/?\s*(?:important|system|instructions?|secret|hidden)\s*>"
    r"|\byou\s+(?:must|should)\s+(?:first\s+)?(?:read|send|include|pass|upload)\b[^\n]{0,80}?"
    r"(?:ssh|id_rsa|\.env|passwords?|credentials?|tokens?|secrets?|api[\s_-]?keys?)"
    r"|\b(?:new|updated)\s+(?:system\s+)?instructions\s*:",
    re.IGNORECASE,
)
"""Phrases that speak to the model, not to a person choosing a tool."""

_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
_ZERO_WIDTH = {0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E, 0x00AD}


def _hidden(char: str) -> str | None:
    """Why a character is hidden from a person reading the text, or None."""
    point = ord(char)
    if 0xE0000 <= point <= 0xE007F:
        return "a tag character (invisible; readable by a model as ASCII)"
    if point in _BIDI:
        return "a bidirectional control (reorders what a person sees)"
    if point in _ZERO_WIDTH:
        return "a zero-width or invisible character"
    if 0xFE00 <= point <= 0xFE0F or 0xE0100 <= point <= 0xE01EF:
        return "a variation selector (can carry hidden bytes)"
    category = unicodedata.category(char)
    if category == "Cc" and char not in "\n\t":
        return "a control character"
    if category == "Cf":
        return "an invisible format character"
    if category == "Co":
        return "a private-use character"
    if category == "Cn":
        return "an unassigned code point"
    return None


def scan_text(text: str, where: str) -> Iterator[Finding]:
    """The findings of one string: every run of hidden characters (a run of tag characters is
    decoded, since a model reads it), every phrase aimed at the model."""
    index = 0
    while index < len(text):
        why = _hidden(text[index])
        if why is None:
            index += 1
            continue
        end = index + 1
        while end < len(text) and _hidden(text[end]) == why:
            end += 1
        run = text[index:end]
        what = f"U+{ord(run[0]):04X}, {why}" + (f", {end - index} in a row" if end - index > 1 else "")
        if why.startswith("a tag"):
            decoded = "".join(chr(ord(char) - 0xE0000) for char in run if 0x20 <= ord(char) - 0xE0000 < 0x7F)
            what += f": {decoded[:120]!r}" if decoded else ""
        yield Finding(where, index + 1, what)
        index = end
    for match in _PHRASES.finditer(text):
        yield Finding(where, match.start() + 1, f"an instruction to the model: {match.group(0)[:120]!r}")


def scan(version: Any, where: str = "") -> list[Finding]:
    """Every string of a version (its description, and every string in its schemas and in the
    keys of their maps) scanned (:func:`scan_text`), at most :data:`MAX_FINDINGS`."""
    found: list[Finding] = []
    for path, text in _strings(version, where):
        for finding in scan_text(text, path):
            found.append(finding)
            if len(found) >= MAX_FINDINGS:
                return found
    return found


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            yield child, str(key)
            yield from _strings(item, child)
    elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        for number, item in enumerate(value):
            yield from _strings(item, f"{path}[{number}]")


# ---- the request people answer --------------------------------------------------------------------


def pin_request(server: str, tool: str, digest: str, summary: str, now: int) -> Any:
    """The permission request to accept version ``digest`` of ``tool``: one trusted approver."""
    from bgc.runtime.approvals import PermissionRequest, Requirement

    return PermissionRequest(
        tool, server, digest, summary[:600], (pin_atom(server, tool),), PIN_RULE, (Requirement(1),), now,
        now + PIN_LIFETIME_SECONDS,
    )  # fmt: skip


def change_summary(server: str, tool: str, old: Mapping[str, Any] | None, new: Mapping[str, Any], findings: Sequence[Finding]) -> str:
    """One line for the person deciding: which fields changed, and what the scan found."""
    changed = [name for name in VERSION_FIELDS if (old or {}).get(name) != new.get(name)] if old is not None else []
    line = f"tools/list of {server} changed {tool}" + (f" ({', '.join(changed)})" if changed else "")
    if findings:
        line += f"; {len(findings)} finding(s), first: {findings[0]}"
    return line


def diff(old: Mapping[str, Any] | None, new: Mapping[str, Any], name: str) -> list[str]:
    """A unified diff of two versions as people read them (:func:`version_text`)."""
    import difflib

    before = version_text(old).splitlines() if old is not None else []
    return list(difflib.unified_diff(before, version_text(new).splitlines(), f"{name} (trusted)", f"{name} (listed now)", lineterm=""))


# ---- one proxy's pins -----------------------------------------------------------------------------


def read_version(body: bytes) -> dict[str, Any] | None:
    """A version as the store keeps it, or None when the bytes are not one."""
    import cbor2

    try:
        tag, number, version = cbor2.loads(body)
    except Exception:  # noqa: BLE001 - bytes that are not a version are none
        return None
    return version if (tag, number) == (VERSION_TAG, 1) and isinstance(version, dict) else None


class ToolPins:
    """The pins of one server's tools as one proxy session sees them: the versions the server
    last listed, the pins read with that listing, the changes already reported. Every method
    takes the store to use (the proxy lends one per operation)."""

    def __init__(self, server: str, trusted: Mapping[str, Any], say: Any) -> None:
        self.server = server
        self.trusted = trusted
        self.say = say
        self.listed: dict[str, tuple[str, dict[str, Any]]] = {}
        self.pinned: dict[str, str] = {}
        self.reported: set[tuple[str, str]] = set()

    def check(self, store: Any, tools: Sequence[Mapping[str, Any]], now: int) -> dict[str, str]:
        """A listing: each tool's version noted and scanned (findings said once); the tools that
        may not be offered, with why (a pinned tool listed in another version, not accepted)."""
        listed: dict[str, tuple[str, dict[str, Any]]] = {}
        withheld: dict[str, str] = {}
        for tool in tools:
            name, version = tool["name"], tool_version(tool)
            try:
                listed[name] = (version_digest(version), version)
            except Exception as error:  # noqa: BLE001 - a version bgc cannot name is not offered
                withheld[name] = f"bgc cannot read the tool's description or schemas ({type(error).__name__})"
        self.listed = listed
        self.pinned = store.tool_pins(self.server)
        for name, (digest, version) in listed.items():
            findings = scan(version)
            if (name, digest) not in self.reported:
                for finding in findings:
                    self.say(f"{self.server}/{name}: {finding}")
            trusted = self.pinned.get(name)
            if trusted is not None and trusted != digest:
                why = self._changed(store, name, trusted, digest, version, findings, now)
                if why is not None:
                    withheld[name] = why
            self.reported.add((name, digest))
        return withheld

    def _changed(self, store: Any, name: str, trusted: str, digest: str, version: dict[str, Any],
                 findings: list[Finding], now: int) -> str | None:  # fmt: skip
        """A pinned tool listed in another version: accepted (and pinned) when a trusted person
        said so, else why it is withheld."""
        from bgc.runtime import ledger
        from bgc.runtime.approvals import RequestUnreadable, stand_ask, use_request

        store.put_tool_version(self.server, name, digest, version_bytes(version), now)
        old = next((read_version(body) for _, tool, found, body, _ in store.tool_versions(self.server)
                    if tool == name and found == trusted), None)  # fmt: skip
        summary = change_summary(self.server, name, old, version, findings)
        try:
            request, standing = stand_ask(store, pin_request(self.server, name, digest, summary, now), self.trusted, now)
        except RequestUnreadable as error:
            return f"{self.server}/{name} changed since it was trusted, and {error}"
        subjects = {"tool": name, "server": self.server, "params": digest, "atom": pin_atom(self.server, name),
                    "rule": PIN_RULE, "request": request.id}  # fmt: skip
        if standing.state == "approved":
            if use_request(store, request) and store.pin_tool(self.server, name, digest, trusted):
                reason = f"the new version was accepted by {', '.join(standing.counted)}"
                ledger.append(store, ledger.Record("pin", "accepted", now, reason=reason, approvers=standing.counted, **subjects))
                self.say(f"{self.server}/{name}: {reason}; it is trusted from now")
            self.pinned = store.tool_pins(self.server)
            if self.pinned.get(name) == digest:
                return None  # accepted (here, or by another proxy on the same store)
        where = standing.describe(request) if standing.state == "pending" else f"the request is {standing.state}"
        why = (f"{self.server}/{name} changed since it was trusted ({summary}); withheld until a trusted approver "
               f"accepts it: bgc mcp-pins accept {self.server}/{name} (request {request.id}, {where})")  # fmt: skip
        if (name, digest) not in self.reported:
            ledger.append(store, ledger.Record("pin", "withheld", now, reason=why, **subjects))
            self.say(why)
        return why

    def first_use(self, store: Any, name: str, now: int) -> None:
        """A call to ``name`` was allowed: the version last listed is trusted, when none is yet."""
        from bgc.runtime import ledger

        if name in self.pinned or name not in self.listed:
            return
        digest, version = self.listed[name]
        store.put_tool_version(self.server, name, digest, version_bytes(version), now)
        if store.pin_tool(self.server, name, digest, None):
            ledger.append(store, ledger.Record(
                "pin", "pinned", now, tool=name, server=self.server, params=digest, atom=pin_atom(self.server, name),
                rule=PIN_RULE, reason="its first allowed call: the version listed then is trusted",
            ))  # fmt: skip
        self.pinned[name] = digest
