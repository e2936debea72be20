"""What every export shares: the :class:`View` of a proven confinement, the reading of a
document back as its tool applies it (:class:`Access`), the check against the plan, the
network destinations a plan grants whole, and the sandbox runtime's path lists (which Claude
Code hands to the same runtime). See :mod:`bgc.runtime.sandbox.exports`."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bgc.core.gate import Gate
from bgc.core.patterns import glob
from bgc.core.plan import Plan
from bgc.runtime.sandbox import mapping, prove
from bgc.runtime.sandbox.mapping import Confinement, Entry, Gap, SandboxRefused


@dataclass(frozen=True, slots=True)
class Dropped:
    """A grant of the plan the target's document does not carry: ``what`` (a path or a network
    grant) and ``why`` the format cannot say it without saying more."""

    what: str
    why: str


@dataclass(frozen=True, slots=True)
class Export:
    """A target's document (``text``, the file's whole content), what of the plan it leaves
    out, what a confinement by names cannot refuse (the mapping's :class:`Gap`\\ s) and what the
    tool does whatever the document says."""

    target: str
    text: str
    dropped: tuple[Dropped, ...]
    gaps: tuple[Gap, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class View:
    """A proven confinement as the grants a settings file can carry: ``shown`` (host paths
    outside the project shown read-only, in the order the mapping binds them), ``written``
    (writable directories, in and outside the project), ``masked`` (paths of the project the
    plan refuses to read: nothing of them may be read or written), ``frozen`` (paths inside a
    writable directory the plan refuses to write) and the granted ``net:connect`` patterns."""

    project: str
    shown: tuple[str, ...]
    written: tuple[str, ...]
    masked: tuple[str, ...]
    frozen: tuple[str, ...]
    net: tuple[str, ...]
    gaps: tuple[Gap, ...]

    @classmethod
    def of(cls, confinement: Confinement) -> View:
        """The view of a proven confinement; a writable directory a later mount covers (a mask
        over it) is not written."""
        project = confinement.project
        outside = [m for m in confinement.mounts if not mapping.inside(m.path, project)]
        return cls(
            project=project,
            shown=tuple(m.path for m in outside if m.kind in ("ro", "symlink")),
            written=tuple(m.path for m in confinement.mounts if m.kind == "rw" and prove.effective(confinement.mounts, m.path) is m),
            masked=confinement.paths("mask-file", "mask-dir"),
            frozen=tuple(m.path for m in confinement.mounts if m.kind == "ro" and m.path != project and mapping.inside(m.path, project)),
            net=confinement.net,
            gaps=confinement.gaps,
        )  # fmt: skip

    def in_project(self, path: str) -> bool:
        return mapping.inside(path, self.project)


class Access(Protocol):
    """A target's document read back as the tool applies it (host paths throughout)."""

    def readable(self, path: str) -> bool: ...

    def writable(self, path: str) -> bool: ...

    def write_roots(self) -> Sequence[str]:
        """Directories below which the tool lets new names be created."""
        ...

    def read_roots(self) -> Sequence[str]:
        """Host paths the tool shows, each with what is below it (before its refusals)."""
        ...

    def destinations(self) -> Sequence[tuple[str, int | None]]:
        """Network destinations opened: (host pattern, port or None for every port); the host
        ``*`` is every host."""
        ...


def check(access: Access, view: View, plans: Sequence[Plan], entries: Sequence[Entry], *, confines_reads: bool = True) -> None:
    """Raise :class:`SandboxRefused` unless ``access`` is never wider than ``plans`` (the steps of
    the module docstring). ``confines_reads`` False: the tool reads the whole disk whatever its
    settings say, and the export says so instead of checking reads."""
    project = view.project
    gate = Gate(plans)
    writes = [part.pattern for part in mapping.granted_parts(plans, "fs", "write")]
    host_writes = [(part.pattern, part.excepts) for part in mapping.granted_parts(plans, "host", "write")]
    for root in access.write_roots():
        if view.in_project(root):
            region = mapping.below(_workspace(project, root))
            _check(prove.subset_of(region, writes), f"{root} is writable but fs:write:{region} is not inside the granted writes")
        else:
            _check(
                prove.subset_of_terms(mapping.below(root), host_writes) and prove.subset_of_terms(glob.escape(root), host_writes),
                f"{root} is writable but host:write does not grant all of it",
            )  # fmt: skip
    if confines_reads:
        # a shown path as written and as it resolves (a Mac's /etc is /private/etc)
        shown = {form for path in (*view.shown, *view.written) if not view.in_project(path) for form in (path, os.path.realpath(path))}
        for root in access.read_roots():
            if not view.in_project(root):
                _check(any(mapping.inside(root, path) for path in shown), f"{root} is readable but the confinement does not show it")
    access_of = {}
    for entry in entries:
        if entry.kind != "l":
            where = mapping.host_path(project, entry.path)
            own = entry.kind == "d" and where in access.write_roots()  # its entries are step 1's
            readable = access.readable(where) if confines_reads else False
            access_of[entry.path] = (readable, access.writable(where) and not own)
    prove.check_access(project, gate, entries, access_of)
    terms = [(part.pattern, part.excepts) for part in mapping.granted_parts(plans, "net", "connect")]
    for host, port in access.destinations():
        _check(
            granted_origin(host, port, terms),
            f"the network to {host}:{port if port is not None else '*'} is open but net:connect does not grant every URL of it",
        )


def _workspace(project: str, path: str) -> str:
    return "/" + path[len(project) :].lstrip("/")


def _check(holds: bool, failure: str) -> None:
    if not holds:
        raise SandboxRefused(f"the export would be wider than the plan: {failure}")


_HOST = re.compile(r"(\*\.)?([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])")
_ORIGIN = re.compile(r"https://" + _HOST.pattern + r"(?::([1-9][0-9]{0,4}))?/\*\*")


def origin_pattern(host: str, port: int | None) -> str | None:
    """The ``net:connect`` pattern of every URL a connection to ``host`` (a name, ``*.`` and a
    name, or an address) on ``port`` can reach, as bgc's proxy decides a tunnel:
    ``https://host[:port]/**`` (443 is the default port, so unwritten); None for a destination
    no pattern covers exactly (every port, every host)."""
    if port is None or not 0 < port < 65536 or host == "*" or _HOST.fullmatch(host) is None:
        return None
    return f"https://{host}{'' if port == 443 else f':{port}'}/**"


def granted_origin(host: str, port: int | None, terms: Sequence[tuple[str, Sequence[str]]]) -> bool:
    """Whether every URL a connection to ``host`` on ``port`` can reach is granted by ``terms``
    (:func:`origin_pattern`). A wildcard host stands for host names only: the texts the glob
    ``*`` also matches that are no host name (one with a character outside ``a-z0-9.-``, or an
    empty first label) are no destination, so an except that cuts only them does not count."""
    pattern = origin_pattern(host, port)
    if pattern is None:
        return False
    extra = []
    if host.startswith("*."):
        rest = pattern.removeprefix("https://*")
        extra = [("https://*[!a-z0-9.-]*" + rest, ()), ("https://" + rest, ())]
    return prove.subset_of_terms(pattern, [*terms, *extra])


def destinations(view: View, plans: Sequence[Plan]) -> tuple[list[tuple[str, int]], list[Dropped]]:
    """The host and port of each granted ``net:connect`` pattern that grants every URL of them
    (``https://api.example.com/**``, ``https://*.example.com:8443/**``), checked by the algebra
    against every granted part (an except anywhere in the host cuts it); the other grants,
    dropped with the reason."""
    terms = [(part.pattern, part.excepts) for part in mapping.granted_parts(plans, "net", "connect")]
    found: list[tuple[str, int]] = []
    dropped = []
    for pattern in view.net:
        shape = _ORIGIN.fullmatch(pattern)
        host = None if shape is None else (shape.group(1) or "") + shape.group(2)
        port = None if shape is None else int(shape.group(3) or 443)
        if host is None or port is None or origin_pattern(host, port) is None:
            dropped.append(Dropped(f"net:connect:{pattern}", "a destination is a whole host and port (every path, any bytes): only https://HOST[:PORT]/** grants one"))
        elif not granted_origin(host, port, terms):
            dropped.append(Dropped(f"net:connect:{pattern}", "the plan refuses part of this host (an except or a deny), which a destination cannot leave out"))
        elif (host, port) not in found:
            found.append((host, port))
    return found, dropped  # fmt: skip


def spelled(host: str, port: int) -> str:
    """A destination as a domain entry of Claude Code and the sandbox runtime: ``host:port``."""
    return f"{host}:{port}"


def read_domain(entry: str) -> tuple[str, int | None]:
    """A domain entry read back (``host``, ``host:port``, ``[addr]:port``): host and port (None:
    every port)."""
    host, colon, port = entry.rpartition(":")
    if colon and port.isdigit() and (not host.count(":") or host.startswith("[")):
        return host, int(port)
    return entry, None


def common_fs(view: View) -> dict[str, list[str]]:
    """The four path lists of the sandbox runtime's filesystem settings, which Claude Code's
    ``sandbox.filesystem`` hands to the same runtime: reads denied from ``/`` down and given back
    to what the confinement shows (``allowRead`` wins over a shallower ``denyRead`` and loses to
    a deeper one), every masked path denied below that, the writable directories, and denied
    writes on what is frozen and on every masked path inside a writable directory.

    No ``allowRead`` holds an ``allowWrite``: on Linux the runtime binds the readable paths back
    after the writable ones, so a readable directory above a writable one would make it
    read-only. Such a directory is given back as its entries instead, split around the
    writable path (:func:`split`)."""
    written = list(view.written)
    inside_written = [path for path in view.masked if any(mapping.inside(path, w) for w in written)]
    shown = [piece for path in (*view.shown, view.project) for piece in split(path, written, view.masked)]
    return {
        "denyRead": ["/", *view.masked],
        "allowRead": shown,
        "allowWrite": written,
        "denyWrite": [*view.frozen, *inside_written],
    }


def split(path: str, written: Sequence[str], masked: Sequence[str]) -> list[str]:
    """``path`` as paths that together show what it shows except the writable directories below
    it (which show themselves): itself when none is below it, else each entry of it, split in
    turn, sorted; the writable directories and the masked paths left out (an ``allowRead``
    naming a denied file exactly would give it back)."""
    if path in written or path in masked:
        return []
    if not any(mapping.inside(w, path) for w in written) or not os.path.isdir(path) or os.path.islink(path):
        return [path]
    with os.scandir(path) as listing:
        names = sorted(entry.name for entry in listing)
    return [piece for name in names for piece in split(os.path.join(path, name), written, masked)]


@dataclass(frozen=True, slots=True)
class RuntimeAccess:
    """The sandbox runtime's reading of its path lists (Linux and macOS agree for literal
    paths): a path is readable unless the deepest ``denyRead`` above it is deeper than every
    ``allowRead`` or ``allowWrite`` above it; writable when an ``allowWrite`` is above it and no
    ``denyWrite`` is (a deny wins). A path spelled as a pattern is read as every path: an allow
    so read opens all, a deny so read refuses nothing."""

    deny_read: tuple[str, ...]
    allow_read: tuple[str, ...]
    allow_write: tuple[str, ...]
    deny_write: tuple[str, ...]
    domains: tuple[tuple[str, int | None], ...]
    literal: frozenset[str] = frozenset()
    """Entries marked as names (``{"path": …, "literal": true}``): never patterns."""

    def readable(self, path: str) -> bool:
        deny = self._deepest(path, self.deny_read, allow=False)
        allow = self._deepest(path, (*self.allow_read, *self.allow_write), allow=True)
        return deny is None or (allow is not None and allow >= deny)

    def writable(self, path: str) -> bool:
        return self._deepest(path, self.allow_write, allow=True) is not None and self._deepest(path, self.deny_write, allow=False) is None

    def _deepest(self, path: str, entries: Sequence[str], *, allow: bool) -> int | None:
        """How deep the deepest of ``entries`` at or above ``path`` is; None when none is. An
        entry that is a pattern or not absolute is read the wide way: as an allow, above every
        path and deeper than any deny; as a deny, above nothing."""
        depths = []
        for entry in entries:
            if not entry.startswith("/") or (_is_pattern(entry) and entry not in self.literal):
                if allow:
                    depths.append(1 << 30)
            elif mapping.inside(path, entry.rstrip("/") or "/"):
                depths.append(entry.rstrip("/").count("/"))
        return max(depths) if depths else None

    def write_roots(self) -> Sequence[str]:
        """Every ``allowWrite`` no ``denyWrite`` at or above takes away."""
        return tuple(root for root in self.allow_write if self._deepest(root, self.deny_write, allow=False) is None)

    def read_roots(self) -> Sequence[str]:
        return (*self.allow_read, *self.allow_write)

    def destinations(self) -> Sequence[tuple[str, int | None]]:
        return self.domains


def _is_pattern(path: str) -> bool:
    return any(c in path for c in "*?[]")
