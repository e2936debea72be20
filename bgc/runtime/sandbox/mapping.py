"""A granted plan as an operating-system confinement: which host paths a confined command sees,
which it may change, which it reads nothing of, and what it inherits.

The mapping reads the plan's granted parts (an ask is not a grant) and the project as it is on
disk, and never widens: the project is visible read-only, a directory becomes writable only
when the algebra proves every path below it granted for writing (``D/**`` inside the granted
``fs:write`` patterns), and every existing path the plan refuses is covered: a file or directory
it refuses to read is masked (``/dev/null`` over a file, an empty read-only directory over a
directory), one it refuses to write inside a writable directory is bound read-only over itself.
What the plan cannot be asked about by a mount — a *new* name an ``except`` forbids inside a
writable directory — is listed as a :class:`Gap`, for people to read (``bgc sandbox --explain``).

The host beyond the project is invisible but for a documented toolchain set (:data:`TOOLCHAIN`,
the running interpreter, bgc itself) and what ``host:read``/``host:write`` grants name as whole
directories or files. :mod:`bgc.runtime.sandbox.prove` checks the result independently before
anything runs; :class:`Confinement` is the one value every way of applying it reads (bubblewrap,
Landlock, and an agent's settings).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bgc.core.gate import Gate
from bgc.core.patterns import glob
from bgc.core.plan import Part, Plan
from bgc.errors import BgcError

MountKind = Literal["tmpfs", "proc", "dev", "dir", "symlink", "ro", "rw", "mask-file", "mask-dir"]

MAX_ENTRIES = 200_000
"""Entries of the project the mapping reads at most; a larger tree is refused, never half-mapped."""

TOOLCHAIN = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
    "/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf",
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/mime.types",
)  # fmt: skip
"""What a toolchain needs to run, read-only, whatever the plan says: programs and system
libraries (``/usr``, and ``/bin``, ``/lib``… kept as the links or directories they are), the
dynamic linker's cache, TLS certificates, user and group names, the time zone. Nothing of
``/home``, ``/root``, ``/var``, ``/run`` or the rest of ``/etc`` (no ``/etc/resolv.conf`` even
when the plan grants ``net:connect``: the proxy outside resolves names, the sandbox never does)."""
HOME = "/tmp/home"
"""The confined command's ``HOME``: an empty directory in its private ``/tmp``."""

KEPT_ENV = frozenset({"PATH", "LANG", "LANGUAGE", "TERM", "TZ", "COLORTERM", "NO_COLOR", "FORCE_COLOR"})
"""Variables passed through by default (with every ``LC_*``): how to find programs and how to
print; none of them carries a credential."""
CREDENTIAL_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCP_", "GH_", "GITHUB_", "GITLAB_", "SSH_", "GPG_", "GNUPG",
                       "DOCKER_", "KUBE", "VAULT_", "NPM_", "PYPI_", "TWINE_", "ANTHROPIC_", "OPENAI_", "HF_")  # fmt: skip
CREDENTIAL_MARKS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "_KEY",
    "KEY_",
    "AUTH",
    "SESSION",
    "COOKIE",
    "PRIVATE",
)
"""A variable is a credential by class: a provider's prefix, or a mark anywhere in its name
(``*_TOKEN``, ``*_KEY``, ``SSH_AUTH_SOCK``…). Such a variable is passed only when a grant names
it exactly (``allow env:read:NPM_TOKEN``), never through a wildcard."""


class SandboxRefused(BgcError):
    """The plan cannot be enforced by the sandbox here, or its mapping failed its proof: the
    command is not run."""


@dataclass(frozen=True, slots=True)
class Mount:
    """One step of building the confined view, applied in order (a later step covers an earlier
    one at or below its path). ``path`` is the same on the host and inside; ``source`` is a
    symbolic link's target."""

    kind: MountKind
    path: str
    reason: str
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Gap:
    """What a mount cannot say: inside the writable ``directory``, a new name matching one of
    ``patterns`` (the plan's excepts) can be created; the agent's own write tools are still
    decided by the hook."""

    directory: str
    patterns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Confinement:
    """A plan as an operating-system confinement (see the module docstring)."""

    project: str
    mounts: tuple[Mount, ...]
    env: tuple[tuple[str, str], ...]
    net: tuple[str, ...] = ()
    """The granted ``net:connect`` patterns: reached only through the proxy, which decides each
    request by the plan; none: no network at all."""
    gaps: tuple[Gap, ...] = ()

    def paths(self, *kinds: MountKind) -> tuple[str, ...]:
        return tuple(mount.path for mount in self.mounts if mount.kind in kinds)


@dataclass(frozen=True, slots=True)
class Entry:
    """One path of the project as it was read: its workspace path (``/src/a.py``), its kind
    (``d`` directory, ``f`` regular file, ``l`` symbolic link, ``s`` anything else: sockets,
    pipes, devices) and its inode and link count."""

    path: str
    kind: str
    inode: tuple[int, int]
    links: int


def granted_parts(plans: Sequence[Plan], resource: str, action: str) -> list[Part]:
    """Every granted part of ``resource:action`` in ``plans`` (an ask part is not a grant)."""
    return [
        part for plan in plans for request in plan.requests for part in request.granted
        if part.resource == resource and part.action == action
    ]  # fmt: skip


def host_path(project: str, path: str) -> str:
    """The host path of the workspace path ``path`` of ``project``."""
    return project if path == "/" else project.rstrip("/") + path


def below(path: str) -> str:
    """The pattern of every path below the workspace or host path ``path``: ``path/**``."""
    return "/**" if path == "/" else glob.escape(path) + "/**"


def walk(project: str, limit: int = MAX_ENTRIES, start: str = "/") -> Iterator[Entry]:
    """Every entry under ``project`` (not the root itself), or under its workspace directory
    ``start``, parents before children, symbolic links not followed; :class:`SandboxRefused` past
    ``limit`` entries."""
    seen = 0
    stack = [start]
    while stack:
        directory = stack.pop()
        try:
            listing = sorted(os.scandir(host_path(project, directory)), key=lambda item: item.name)
        except OSError as error:
            raise SandboxRefused(
                f"cannot read the project directory {host_path(project, directory)}: {error.strerror}"
            ) from None
        children = []
        for item in listing:
            seen += 1
            if seen > limit:
                raise SandboxRefused(f"the project has more than {limit} entries: too large to map")
            try:
                info = item.stat(follow_symlinks=False)
            except OSError as error:  # it vanished or cannot be read: the mapping would be a guess
                raise SandboxRefused(f"cannot read {item.path}: {error.strerror}") from None
            path = ("" if directory == "/" else directory) + "/" + item.name
            mode = info.st_mode
            kind = "d" if stat.S_ISDIR(mode) else "f" if stat.S_ISREG(mode) else "l" if stat.S_ISLNK(mode) else "s"
            yield Entry(path, kind, (info.st_dev, info.st_ino), info.st_nlink)
            if kind == "d":
                children.append(path)
        stack.extend(reversed(children))


def writable_candidates(project: str, plans: Sequence[Plan]) -> list[str]:
    """Workspace directories a granted ``fs:write`` pattern names whole (``L/**`` with ``L``
    literal, ``/**`` or ``**`` for the root) that exist as real directories (no link on the
    way), outermost only, sorted."""
    found = set()
    for part in granted_parts(plans, "fs", "write"):
        if part.pattern in ("**", "/**"):
            found.add("/")
            continue
        if not part.pattern.endswith("/**"):
            continue
        literal = glob.parse(part.pattern[:-3]).literal
        if literal is None or not literal.startswith("/"):
            continue
        full = host_path(project, literal)
        if os.path.isdir(full) and os.path.realpath(full) == full:
            found.add(literal)
    outer = [d for d in sorted(found) if not any(inside(d, other) for other in found if other != d)]
    return outer


def inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or below it (workspace or host paths)."""
    return directory == "/" or path == directory or path.startswith(directory.rstrip("/") + "/")


def build(
    plans: Sequence[Plan], project: str, *, environ: Mapping[str, str], extra_read: Sequence[str] = (),
    limit: int = MAX_ENTRIES,
) -> tuple[Confinement, list[Entry]]:  # fmt: skip
    """The confinement of ``plans`` for ``project`` (a real, absolute directory), and the entries
    read (what :func:`bgc.runtime.sandbox.prove.prove` checks). ``extra_read``: host paths the
    confined command needs to start (the interpreter's prefix, bgc's package), bound read-only
    unless inside the project."""
    if project == "/" or not os.path.isabs(project) or os.path.realpath(project) != project:
        raise SandboxRefused(f"the project root must be a real absolute directory other than /, not {project!r}")
    net = tuple(sorted({part.pattern for part in granted_parts(plans, "net", "connect")}))
    mounts: list[Mount] = [
        Mount("proc", "/proc", "a process view of the sandbox's own PID namespace"),
        Mount("dev", "/dev", "a minimal /dev (null, zero, random, tty)"),
        Mount("tmpfs", "/tmp", "a private, empty /tmp"),
        Mount("dir", HOME, "a private, empty home directory"),
    ]
    for path in TOOLCHAIN:
        if os.path.islink(path):
            mounts.append(Mount("symlink", path, "the toolchain", os.readlink(path)))
        elif os.path.exists(path):
            mounts.append(Mount("ro", path, "the toolchain"))
    home = os.path.realpath(environ.get("HOME") or os.path.expanduser("~"))
    for path in sorted(set(extra_read)):
        if os.path.exists(path) and not inside(path, project) and not any(inside(path, t) for t in TOOLCHAIN):
            if path == "/" or inside(home, path):
                raise SandboxRefused(
                    f"the interpreter or bgc lives in {path}, which holds the home directory {home}: showing it would show "
                    "the home directory",
                    hint="run bgc from a virtual environment or an interpreter installed outside the home directory's root",
                )
            mounts.append(Mount("ro", path, "what starts the confined command (interpreter, bgc)"))
    mounts.extend(_host_grants(plans, project))
    gate = Gate(plans)
    entries = list(walk(project, limit))
    mounts.append(Mount("ro", project, "the project, read-only"))
    candidates = writable_candidates(project, plans)
    mounts.extend(Mount("rw", host_path(project, d), "granted fs:write") for d in candidates)
    mounts.extend(_covers(project, gate, entries, candidates))
    gaps = _gaps(project, plans, candidates)
    return Confinement(project, tuple(mounts), filtered_env(environ, plans), net, gaps), entries


def _host_grants(plans: Sequence[Plan], project: str) -> list[Mount]:
    """Host directories and files that ``host:read``/``host:write`` grants name whole and that
    exist; the proof checks each against the granted terms."""
    mounts = []
    for action, kind in (("read", "ro"), ("write", "rw")):
        for part in granted_parts(plans, "host", action):
            pattern = part.pattern.removesuffix("/**")
            literal = glob.parse(pattern).literal if pattern else None
            if literal is None or not literal.startswith("/") or inside(project, literal) or inside(literal, project):
                continue
            if os.path.exists(literal) and os.path.realpath(literal) == literal:
                mounts.append(Mount(kind, literal, f"granted host:{action}"))
    return sorted(set(mounts), key=lambda mount: (mount.path, mount.kind))


def _covers(project: str, gate: Gate, entries: Sequence[Entry], writable: Sequence[str]) -> list[Mount]:
    """Masks over what the plan refuses to read, read-only binds over what it refuses to write
    inside a writable directory, for every existing entry. Sockets, pipes and devices are masked
    whatever the plan says (a socket is a door out); a file with a hard link the project does
    not show all of, or one of whose names is refused, is treated as its strictest name."""
    names: dict[tuple[int, int], list[Entry]] = {}
    for entry in entries:
        if entry.kind == "f" and entry.links > 1:
            names.setdefault(entry.inode, []).append(entry)
    holding = holding_readable(gate, entries)
    covers: list[Mount] = []
    hidden: list[str] = []  # masked directories: nothing below them is visible
    frozen: list[str] = []  # read-only directories inside writable ones
    for entry in entries:
        if entry.kind == "l" or any(inside(entry.path, h) for h in hidden):
            continue
        full = host_path(project, entry.path)
        if entry.kind == "s":
            covers.append(Mount("mask-file", full, "a socket, pipe or device"))
            continue
        group = names.get(entry.inode, [entry]) if entry.kind == "f" else [entry]
        if entry.kind == "f" and len(group) < entry.links:
            covers.append(Mount("mask-file", full, "a hard link whose other names are outside the project"))
            continue
        if entry.kind == "d" and entry.path in holding:
            pass  # shown for what may be read below it: its refused entries are masked one by one
        elif not all(allowed(gate, "read", member.path) for member in group):
            refused = (
                "refused by the plan"
                if not allowed(gate, "read", entry.path)
                else "a hard link of a file the plan refuses"
            )
            covers.append(Mount("mask-dir" if entry.kind == "d" else "mask-file", full, f"fs:read {refused}"))
            if entry.kind == "d":
                hidden.append(entry.path)
            continue
        if entry.path in writable:
            continue  # its entries are what D/** says; the directory itself cannot be moved (a mount point)
        in_writable = any(inside(entry.path, d) for d in writable) and not any(inside(entry.path, f) for f in frozen)
        if in_writable and not all(allowed(gate, "write", member.path) for member in group):
            covers.append(Mount("ro", full, "fs:write refused by the plan"))
            if entry.kind == "d":
                frozen.append(entry.path)
    return covers


def holding_readable(gate: Gate, entries: Sequence[Entry]) -> set[str]:
    """The directories with an entry below them the plan lets be read (a file, or a directory
    named readable). Such a directory is shown even where its own name is refused (``/src``
    under a grant of ``/src/**``, which matches ``/src/`` and what is below it but not ``/src``):
    a directory is a container, what is refused in it is masked entry by entry."""
    holding: set[str] = set()
    for entry in entries:
        if entry.kind in ("f", "d") and allowed(gate, "read", entry.path):
            parent = entry.path.rpartition("/")[0]
            while parent and parent not in holding:
                holding.add(parent)
                parent = parent.rpartition("/")[0]
    return holding


def allowed(gate: Gate, action: str, path: str) -> bool:
    """Whether the plan allows ``fs:ACTION:path`` (a concrete workspace path)."""
    return gate.decide(f"fs:{action}:{path}").effect == "allow"


def _gaps(project: str, plans: Sequence[Plan], writable: Sequence[str]) -> tuple[Gap, ...]:
    gaps = []
    for directory in writable:
        region = below(directory)
        patterns = sorted({
            cut for part in granted_parts(plans, "fs", "write") if glob.overlaps(part.pattern, region)
            for cut in part.excepts if glob.overlaps(cut, region)
        })  # fmt: skip
        if patterns:
            gaps.append(Gap(host_path(project, directory), tuple(patterns)))
    return tuple(gaps)


def sweep(confinement: Confinement, plans: Sequence[Plan], before: Sequence[Entry], limit: int = MAX_ENTRIES) -> list[str]:
    """Close the gaps once the confined command has ended (its PID namespace, and every process
    of it, ended with it): every entry created in a writable directory under a name the plan
    refuses to write (``src/.git``, ``src/.env``: what no mount could refuse, :class:`Gap`) is
    removed, symbolic links not followed. The host paths removed, outermost only; an entry that
    was there before the command (``before``) is never touched."""
    if not confinement.gaps:
        return []
    project = confinement.project
    gate = Gate(plans)
    known = {entry.path for entry in before}
    refused: list[str] = []
    for gap in confinement.gaps:
        for entry in walk(project, limit, gap.directory[len(project.rstrip("/")) :] or "/"):
            if entry.path not in known and not any(inside(entry.path, r) for r in refused) and not allowed(gate, "write", entry.path):
                refused.append(entry.path)
    for path in refused:
        full = host_path(project, path)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)
    return [host_path(project, path) for path in refused]


def is_credential(name: str) -> bool:
    """Whether the variable ``name`` is a credential by class (:data:`CREDENTIAL_MARKS`)."""
    upper = name.upper()
    return upper.startswith(CREDENTIAL_PREFIXES) or any(mark in upper for mark in CREDENTIAL_MARKS)


def filtered_env(environ: Mapping[str, str], plans: Sequence[Plan]) -> tuple[tuple[str, str], ...]:
    """The confined command's environment: :data:`KEPT_ENV` and ``LC_*`` unless credentials by
    class, what ``env:read`` grants allow (a credential only when a grant names it exactly), and
    ``HOME`` and ``TMPDIR`` pointing at the private ones."""
    gate = Gate(plans)
    named = {glob.parse(part.pattern).literal for part in granted_parts(plans, "env", "read")}
    kept = {}
    for name, value in environ.items():
        if name in ("HOME", "TMPDIR") or "=" in name or not name:
            continue
        if is_credential(name):
            if name in named and gate.decide(f"env:read:{name}").effect == "allow":
                kept[name] = value
        elif name in KEPT_ENV or name.startswith("LC_") or gate.decide(f"env:read:{name}").effect == "allow":
            kept[name] = value
    kept["HOME"] = HOME
    kept["TMPDIR"] = "/tmp"
    return tuple(sorted(kept.items()))


def interpreter_paths() -> list[str]:
    """What running ``python -I -m bgc.runtime.sandbox.enter`` needs besides the toolchain: the
    interpreter's prefixes (a virtual environment, pyenv) and the directory bgc is imported from."""
    import bgc

    package = os.path.dirname(os.path.realpath(bgc.__file__))
    paths = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix), package}
    executable = os.path.realpath(sys.executable)
    paths.add(os.path.dirname(os.path.dirname(executable)))
    return sorted(paths)
