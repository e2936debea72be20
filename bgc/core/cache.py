"""A small on-disk cache for work that start-up would otherwise repeat: the built LALR parser
and parsed policies. A pre-commit hook runs bgc on every commit, so a cold process must not
rebuild the grammar's tables or re-parse unchanged policies.

The cache is an optimisation only; deleting it is always safe, and it is never *trusted*:

- **Where**: ``$BGC_CACHE_DIR`` if set (empty disables caching), else ``$XDG_CACHE_HOME/bgc``,
  else ``~/.cache/bgc``. The directory is created ``0700``; one that is not owned by the current
  user, or that others may write to, is not used at all (entries are unpickled, and a writable
  shared directory would let someone else choose what gets unpickled).
- **Keys** are digests of the caller's own key (typically the input's content digest) *and* the
  bgc version and a stamp of every file of bgc's code and grammar (:func:`code_digest`), so an
  upgrade or an edited checkout never reads an entry written by different code.
- **Entries** are ``MAGIC + sha256(payload) + payload``, checked before anything is unpickled: a
  truncated, corrupt or foreign file is a miss (and is replaced), never an error.
- **Writes** go to a temporary file in the same directory and are renamed into place, so a
  concurrent reader sees either the old entry or the new one, never half of one.
- **Size**: after each write, entries beyond :data:`MAX_CACHE_BYTES` in all are removed, the
  least recently written first (never the one just written). An entry is removed whole (a
  reader that has it open still reads all of it); other files in the directory are left alone.
"""

from __future__ import annotations

import functools
import os
import pickle
import stat
from collections.abc import Iterable
from hashlib import sha256
from typing import Any

from bgc.errors import InputError
from bgc.core.policy.bundled import ABSENT, BUNDLED, bundled_path
from bgc.core.values.files import read_bounded

MAGIC = b"bgc-cache\x001\n"
_DIGEST_SIZE = 32
MAX_CACHE_BYTES = 512 * 1024 * 1024
"""What the cache directory's entries may take in all, in bytes (:func:`_evict`)."""


def cache_dir() -> str | None:
    """The configured cache directory (it may not exist yet), or ``None`` when disabled.

    A path as text, not a :class:`pathlib.Path`: importing pathlib costs a cold hook or gate
    on a plain install more than reading its entries."""
    configured = os.environ.get("BGC_CACHE_DIR")
    if configured is not None:
        return configured or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "bgc")


def code_files() -> list[str]:
    """Every file of bgc's package (sources, and any data or bytecode shipped beside them; not
    ``__pycache__``) and its grammar, in a fixed order: the code an entry was written by.

    An installed bgc holds its grammar in the package (``bgc/grammar/``, walked with the rest);
    only a checkout installed in editable mode maps the package ``bgc.grammar`` elsewhere, and
    only then is the import system asked where (``importlib.util`` is not cheap to import)."""
    import bgc

    package = os.path.dirname(bgc.__file__)
    files: list[str] = []
    for directory, subdirectories, names in os.walk(package):
        subdirectories[:] = sorted(name for name in subdirectories if name != "__pycache__")
        files.extend(os.path.join(directory, name) for name in sorted(names))
    grammar = os.path.join(package, "grammar", "policy.lark")
    if not os.path.isfile(grammar):
        import importlib.util

        spec = importlib.util.find_spec("bgc.grammar")
        grammar = os.path.join(os.path.dirname(spec.origin or ""), "policy.lark") if spec else ""
    files.append(grammar)
    return files


@functools.cache
def code_digest() -> str | None:
    """A key for the code that is running: the bgc and Python versions and, for every file of
    :func:`code_files`, its name and stat stamp (size, modification and change times in
    nanoseconds, inode, device). ``None`` — no entry read or written — when a file cannot be
    stat'ed (a package inside a zip file, a file removed meanwhile).

    Why stamps, not contents: hashing every source costs a cold ``bgc hook`` more than its
    whole decision, and a stamp is as sound a witness of an edit. Writing a file sets its change
    time to the clock, and nothing a user can call sets it back (``touch -r`` and ``cp -p``
    restore the modification time, not the change time; only setting the system clock back
    could); replacing a file (an editor's save,
    ``git checkout``, ``pip install``) gives it a new inode and change time; adding or removing a
    file changes the list. The stamp is finer than the one Python itself trusts to decide whether
    a source's cached bytecode is still current (modification time in seconds and size). A stamp
    that changes with the same content (``touch``, a ``chmod``) only costs a miss.
    """
    import sys

    import bgc

    digest = sha256(f"{bgc.__version__}\0{sys.version}\0".encode())
    for path in code_files():
        found = stamp(path)
        if found is None:
            return None
        digest.update(f"{path}\0{chr(0).join(map(str, found))}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def stamp(path: str) -> tuple[int, int, int, int, int] | None:
    """A file's stamp as the code key takes it (size, modification and change times in
    nanoseconds, inode, device), or None when it cannot be read."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev


def entry_key(namespace: str, key: str) -> str | None:
    """The file name of an entry: a digest of the namespace, the caller's key and the code;
    ``None`` when the code has no key (:func:`code_digest`): then nothing is read or written."""
    code = code_digest()
    if code is None:
        return None
    return sha256(f"{namespace}\0{key}\0{code}".encode()).hexdigest()


def _usable(directory: str, create: bool) -> bool:
    """True when ``directory`` exists (or was just created ``0700``) and only we can write to it."""
    try:
        if create:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        info = os.stat(directory)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    owner_ok = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return owner_ok and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def load_bytes(namespace: str, key: str, limit: int | None = None) -> bytes | None:
    """The payload stored under ``(namespace, key)``, or ``None`` if absent, corrupt or unsafe,
    or (with ``limit``) longer than ``limit`` bytes: such an entry is not even read whole."""
    directory = cache_dir()
    if directory is None:  # disabled: not even bgc's code is stamped (a walk of every file)
        return None
    name = entry_key(namespace, key)
    if name is None or not _usable(directory, create=False):
        return None
    try:
        with open(os.path.join(directory, name), "rb") as handle:
            data = handle.read() if limit is None else handle.read(len(MAGIC) + _DIGEST_SIZE + limit + 1)
    except OSError:
        return None
    if limit is not None and len(data) > len(MAGIC) + _DIGEST_SIZE + limit:
        return None
    head = len(MAGIC) + _DIGEST_SIZE
    if len(data) < head or not data.startswith(MAGIC):
        return None
    payload = data[head:]
    if sha256(payload).digest() != data[len(MAGIC) : head]:
        return None
    return payload


def store_bytes(namespace: str, key: str, payload: bytes) -> None:
    """Store ``payload`` atomically; failures (read-only disk, full disk) are silently skipped."""
    directory = cache_dir()
    if directory is None:
        return
    name = entry_key(namespace, key)
    if name is None or not _usable(directory, create=True):
        return
    try:
        import tempfile  # only a miss writes an entry

        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(MAGIC + sha256(payload).digest() + payload)
        os.replace(temporary, os.path.join(directory, name))
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return
    _evict(directory, name)


def _evict(directory: str, kept: str) -> None:
    """Remove the oldest entries (by the time they were written, then by name) until all of them
    take at most :data:`MAX_CACHE_BYTES`; ``kept``, just written, stays. Only entries (files named
    as :func:`entry_key` names them) are counted or removed; a failure leaves the rest as it is."""
    entries = []
    try:
        with os.scandir(directory) as listing:
            for item in listing:
                if len(item.name) == 64 and all(c in "0123456789abcdef" for c in item.name):
                    info = item.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        entries.append((info.st_mtime_ns, item.name, info.st_size))
    except OSError:
        return
    total = sum(size for _, _, size in entries)
    for _, name, size in sorted(entries):
        if total <= MAX_CACHE_BYTES:
            return
        if name == kept:
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            continue
        total -= size


def load_object(namespace: str, key: str) -> Any | None:
    """A cached Python value, or ``None``; a payload that no longer unpickles is a miss."""
    payload = load_bytes(namespace, key)
    if payload is None:
        return None
    try:
        return pickle.loads(payload)
    except Exception:  # noqa: BLE001 - verified bytes that still fail to load are just a miss
        return None


def store_object(namespace: str, key: str, value: Any) -> None:
    """Pickle and store ``value``; a value that cannot be pickled is simply not cached."""
    if cache_dir() is None:
        return
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return
    store_bytes(namespace, key, payload)


# --- keys for policies: valid while every file that went into one is unchanged ---------------------


def unchanged(root: str, root_digest: str, files: Iterable[tuple[str, str]]) -> bool:
    """True when every file that went into a policy (``(path, digest)`` as
    :meth:`bgc.core.policy.ast.Policy.file_digests` gives them) still has the content it had, a
    bundled one included, and no file has appeared where it would take a bundled one's place.

    The root file was just read and hashed to make the entry's key (``root_digest``); reading it
    again would only repeat that, so its entry is skipped when it records that same digest (one
    that differs — the file changed between keying and parsing — is still re-read, and misses).
    """
    base = os.path.dirname(root) or "."
    root_entry = os.path.relpath(root, base).replace(os.sep, "/")
    for path, digest in files:
        if path == root_entry and digest == root_digest:
            continue
        if digest == ABSENT:  # a file here would take a bundled one's place
            if os.path.lexists(os.path.join(base, path)):
                return False
            continue
        if path.startswith(BUNDLED):
            path = bundled_path(path)
        if _digest(os.path.join(base, path)) != digest:
            return False
    return True


def _digest(path: str) -> str | None:
    """A policy file's content digest (as :class:`~bgc.core.policy.ast.PolicyFile` records it), or
    ``None`` when it cannot be read; reading is bounded (:func:`bgc.core.values.files.read_bounded`), so
    ``/dev/zero`` named as a policy is a miss here and the loader's located "too large" error,
    not a process that eats all memory."""
    try:
        data = read_bounded(path)
    except InputError:
        return None
    return "sha256:" + sha256(data).hexdigest()


def policy_key(path: str, extra: str) -> tuple[str, str] | None:
    """The entry key for the policy at ``path`` — the root file's content digest plus how it was
    named (spans keep the name as given) — and that digest, or ``None`` when it cannot be read."""
    digest = _digest(path)
    if digest is None:
        return None
    return f"{os.getcwd()}\0{path}\0{extra}\0{digest}", digest


def compiled_key(path: str, extra: str) -> tuple[str, str] | None:
    """The entry key for what is compiled from the policy at ``path`` and names its rules
    relative to the root policy's directory (a plan, a call decider): the root file's real path
    and content digest, not how the path was spelled or the working directory — so ``bgc init``'s
    ``.claude/bgc/policy.bgp`` warms the hook's ``$CLAUDE_PROJECT_DIR/.claude/bgc/policy.bgp`` —
    and that digest, or ``None`` when the file cannot be read. The included files are checked
    with :func:`unchanged`, as for a parsed policy."""
    digest = _digest(path)
    if digest is None:
        return None
    return f"{os.path.realpath(path)}\0{extra}\0{digest}", digest
