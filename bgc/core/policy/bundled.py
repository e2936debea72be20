"""The policies bgc ships, as includes see them: ``include "claude-code.bgp"`` without a copy.

An include names a file relative to the including one; when nothing is there and the path is a
plain file name of a policy bgc ships, the include takes bgc's (docs/policy-language.md,
"Includes"). A file of the policy's own always comes first, so a project can pin its copy. A
policy records a bundled file as ``bgc:NAME`` with its digest, so its id is the same on every
machine with the same bgc, and a cache of it stays valid only while no file appears where one of
the policy's own would take the bundled one's place (:data:`ABSENT`).

Light on purpose: :mod:`bgc.core.cache` checks entries with it on every cached run.
"""

from __future__ import annotations

import os
import re

BUNDLED = "bgc:"
"""How a policy records a file bgc ships: ``bgc:claude-code.bgp``, the same on every machine,
where a path would name wherever bgc is installed."""

ABSENT = "absent"
"""The digest :meth:`bgc.core.policy.ast.Policy.file_digests` gives a path that must not exist
(where a file of the policy's own would take the place of a bundled one)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*\.bgp")
"""An include path that may name a bundled policy: one plain file name, so no path can climb out
of the bundled directory or name a hidden file there."""


def bundled_directory() -> str:
    """The real path of the directory of the policies bgc ships (the package ``bgc.policies``)."""
    from importlib import resources

    return os.path.realpath(os.fspath(resources.files("bgc.policies")))


def bundled_file(name: str) -> str | None:
    """The bundled policy an include of ``name`` falls back to, or None: ``name`` must be a plain
    file name of a regular file directly in :func:`bundled_directory`, links resolved."""
    if not _NAME.fullmatch(name):
        return None
    directory = bundled_directory()
    path = os.path.realpath(os.path.join(directory, name))
    if os.path.dirname(path) != directory or not os.path.isfile(path):
        return None
    return path


def bundled_names() -> list[str]:
    """The policies an include can name without a copy, sorted."""
    directory = bundled_directory()
    return sorted(name for name in os.listdir(directory) if _NAME.fullmatch(name) and bundled_file(name))


def recorded(path: str) -> str:
    """How a policy records the bundled file at ``path`` (inside :func:`bundled_directory`)."""
    return BUNDLED + os.path.relpath(path, bundled_directory()).replace(os.sep, "/")


def bundled_path(name: str) -> str:
    """Where a file a policy records as ``bgc:NAME`` is read from."""
    return os.path.join(bundled_directory(), name.removeprefix(BUNDLED))
