"""Policies read from git history: ``git:REV:path``, includes from the same revision.

CI diffs a pull request's policy against the merge base, and a pre-commit hook against ``HEAD``,
without a second checkout. The files are read with git's plumbing (``git ls-tree``, ``git
cat-file``), never by checking anything out: the root file first, then every file an ``include``
names, from the same commit. They are written to a private temporary directory only so that
the one loader (:func:`bgc.core.policy.loader.load_policy`) reads them with every check it makes
(include cycles, the root directory's boundary, duplicate declarations), and every span is then
relabelled ``git:REV:path``, so errors and rules read as places in that revision.

Bounded: at most :data:`MAX_FILES` files, each at most the loader's size limit, each git call
at most :data:`GIT_TIMEOUT` seconds. A path that is a symbolic link or a submodule in that
revision is refused (what it reaches is not a file of that commit's policy tree). A root file
that does not exist in the revision is an error unless the caller asks for an empty policy
(:func:`load_revision`'s ``missing_ok``: a policy added by the change being checked).
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import re
import subprocess
import tempfile
from typing import Any

from bgc.errors import InputError, Span, UsageError
from bgc.core.values.files import MAX_BYTES
from bgc.core.policy.ast import Include, Policy
from bgc.core.policy.parser import FileParser, PolicyError

PREFIX = "git:"
MAX_FILES = 256
"""Files one policy may span in a revision (the root and everything it includes)."""
GIT_TIMEOUT = 30
"""Seconds one git command may take."""


def is_revision_path(spec: str) -> bool:
    """Does ``spec`` name a policy in git history (``git:REV:path``)?"""
    return spec.startswith(PREFIX)


def split_spec(spec: str) -> tuple[str, str]:
    """``(REV, path)`` of ``git:REV:path``; the path is the rest after the second colon."""
    rev, sep, path = spec[len(PREFIX) :].partition(":")
    if not sep or not rev or not path:
        raise UsageError(f"{spec!r}: write a policy in git history as git:REV:path (git:HEAD:policies/main.bgp)")
    return rev, path


def _git(args: list[str], cwd: str, *, binary: bool = False) -> Any:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT, check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"},
        )  # fmt: skip
    except FileNotFoundError:
        raise UsageError("git is not installed: cannot read a policy from git history") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"git {args[0]} took longer than {GIT_TIMEOUT} s") from None
    if done.returncode != 0:
        return None
    return done.stdout if binary else done.stdout.decode("utf-8", "surrogateescape")


def _repository_path(path: str, cwd: str, spec: str) -> str:
    """The path inside the repository: as ``git show REV:path`` reads it (from the repository's
    top), or from the current directory when it starts with ``./`` or ``../``."""
    if path.startswith(("./", "../")):
        prefix = _git(["rev-parse", "--show-prefix"], cwd)
        if prefix is None:
            raise UsageError(f"{spec!r}: not inside a git repository")
        path = posixpath.join(prefix.strip(), path)
    normal = posixpath.normpath(path)
    if normal.startswith("../") or normal == ".." or posixpath.isabs(normal):
        raise UsageError(f"{spec!r}: the path leaves the repository")
    return normal


def _blob(commit: str, path: str, cwd: str, display: str) -> bytes | None:
    """The bytes of ``path`` at ``commit``, None when there is no such path; refuses links,
    submodules, directories and files over the size limit."""
    listing = _git(["ls-tree", "-z", "--full-tree", "-l", commit, "--", path], cwd)
    if not listing:
        return None
    meta, _, name = listing.rstrip("\0").partition("\t")
    mode, kind, obj, size = meta.split()
    if name != path:
        return None
    if mode == "120000":
        raise InputError(
            "is a symbolic link in this revision: bgc does not follow links read from git history", Span(display)
        )
    if kind != "blob":
        what = "submodule" if kind == "commit" else "directory"
        raise InputError(f"is a {what} in this revision, expected a file", Span(display))
    if int(size) > MAX_BYTES:
        raise InputError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB", Span(display))
    data = _git(["cat-file", "blob", obj], cwd, binary=True)
    if data is None:
        raise InputError("cannot be read from the repository", Span(display))
    return data


def load_revision(spec: str, *, cwd: str = ".", missing_ok: bool = False) -> Policy | None:
    """The policy ``git:REV:path`` names, with its includes read from the same revision.

    Raises :class:`UsageError` (no repository, an unknown revision), :class:`InputError` or
    :class:`PolicyError` with spans relabelled ``git:REV:file``. Returns None for a root file
    the revision does not have when ``missing_ok``.
    """
    rev, raw_path = split_spec(spec)
    if rev.startswith("-"):
        raise UsageError(f"{spec!r}: a revision cannot start with '-'")
    commit = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd)
    if commit is None:
        if _git(["rev-parse", "--git-dir"], cwd) is None:
            raise UsageError(f"{spec!r}: not inside a git repository")
        if missing_ok and rev == "HEAD":
            return None  # a repository without commits yet: nothing to compare with
        raise UsageError(f"{spec!r}: unknown revision {rev!r}")
    commit = commit.strip()
    root = _repository_path(raw_path, cwd, spec)
    label = f"{PREFIX}{rev}:"
    with tempfile.TemporaryDirectory(prefix="bgc-revision-") as tmp:
        pending, fetched = [root], set()
        while pending:
            path = pending.pop()
            if path in fetched or path.startswith("../") or posixpath.isabs(path):
                continue  # outside the repository: the loader refuses the include, located
            fetched.add(path)
            if len(fetched) > MAX_FILES:
                raise InputError(f"includes more than {MAX_FILES} files", Span(label + root))
            data = _blob(commit, path, cwd, label + path)
            if data is None:
                if path == root:
                    if missing_ok:
                        return None
                    raise InputError(f"no such file in revision {rev}", Span(label + path))
                continue  # the loader reports the include that names it
            target = os.path.join(tmp, *path.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
            try:
                text = data.decode("utf-8").removeprefix("\ufeff")
                statements = FileParser(text, label + path).parse().statements
            except (UnicodeDecodeError, PolicyError):
                continue  # the loader reports it, located
            pending.extend(
                posixpath.normpath(posixpath.join(posixpath.dirname(path), s.path))
                for s in statements
                if isinstance(s, Include)
            )
        return _relabelled(os.path.join(tmp, *root.split("/")), tmp, label)


def _relabelled(path: str, tmp: str, label: str) -> Policy:
    from bgc.core.policy.loader import load_policy

    def rename(file: str) -> str:
        return label + os.path.relpath(file, tmp).replace(os.sep, "/") if file.startswith(tmp + os.sep) else file

    def fix(value: Any) -> Any:
        if isinstance(value, Span):
            return dataclasses.replace(value, file=rename(value.file))
        if isinstance(value, tuple):
            return tuple(fix(item) for item in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: fix(getattr(value, f.name)) for f in dataclasses.fields(value)}
            return dataclasses.replace(value, **changes)
        return value

    try:
        policy = load_policy(path)
    except (PolicyError, InputError) as error:
        if error.span is not None:
            error.span = fix(error.span)
        # however the loader spelt the temporary directory (absolute, relative to here), it is the revision
        error.message = re.sub(r"[^\s`'\"]*" + re.escape(os.path.basename(tmp) + os.sep), label, error.message)
        error.args = (error.message,)
        raise
    return dataclasses.replace(fix(policy), path=rename(policy.path))
