"""Codex's sandbox settings in ``config.toml``: ``sandbox_mode`` and ``[sandbox_workspace_write]``.

From Codex's configuration (``SandboxWorkspaceWrite`` in codex-rs, whose JSON schema refuses
unknown fields): ``sandbox_mode`` is ``read-only``, ``workspace-write`` or
``danger-full-access``; in ``workspace-write`` the working directory is always writable, with
``writable_roots`` (absolute directories) besides it, ``/tmp`` unless ``exclude_slash_tmp`` and
``$TMPDIR`` unless ``exclude_tmpdir_env_var``; ``network_access`` opens the whole network or
nothing. Both modes let commands read the whole disk.

So the format says less than a plan: no read is refused (the export states it; the hook still
decides the agent's own reads), no path inside a writable directory can be kept from being
written, no single host can be reached. A writable directory holding a path the plan refuses
is dropped, the working directory with it when it is the project, and then the mode is
``read-only``; the temporary directories are excluded (the plan does not grant the host's;
bgc's own sandbox gives a private one); the network is off. Newer Codex versions have permission
profiles (``default_permissions``, beta) that can refuse reads; they are not written here.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass

from bgc.core.plan import Plan
from bgc.runtime.sandbox import mapping
from bgc.runtime.sandbox.exports.common import Dropped, View
from bgc.runtime.sandbox.mapping import SandboxRefused

HEADER = "# Written by `bgc export --target codex`: the plan's sandbox for Codex, proven never wider than the plan.\n"
NOTES = (
    "Codex lets commands read the whole disk in every sandbox mode: the plan's read refusals are the hook's to enforce",
    "the working directory is the directory Codex runs in: run it from the project root",
    "Codex keeps .git, .codex and .agents read-only inside writable directories whatever the settings say",
)


def render(view: View, plans: Sequence[Plan]) -> tuple[str, list[Dropped], list[str]]:
    dropped = [Dropped(f"net:connect:{pattern}", "Codex's network_access opens every host or none") for pattern in view.net]
    refused = (*view.frozen, *view.masked)
    held = {root: next((path for path in refused if mapping.inside(path, root)), None) for root in view.written}
    workspace = view.project in held and held[view.project] is None
    for root, path in held.items():
        if path is not None:
            dropped.append(Dropped(f"write {root}", f"Codex cannot keep {path} from being written inside it"))
        elif not workspace:
            dropped.append(Dropped(f"write {root}", "Codex always lets its working directory be written, and the plan "
                                   "does not grant writing the whole project: the export is read-only"))  # fmt: skip
    if not workspace:
        return HEADER + 'sandbox_mode = "read-only"\n', dropped, list(NOTES)
    roots = ", ".join(_string(root) for root, path in held.items() if path is None and not view.in_project(root))
    text = (
        HEADER + 'sandbox_mode = "workspace-write"\n\n[sandbox_workspace_write]\n'
        f"writable_roots = [{roots}]\nnetwork_access = false\nexclude_tmpdir_env_var = true\nexclude_slash_tmp = true\n"
    )
    return text, dropped, list(NOTES)


def _string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's); a path that is not text is refused."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SandboxRefused(f"{value!r} is not text Codex's settings can hold") from None
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class CodexAccess:
    """The settings as Codex applies them: writable below each root, readable everywhere."""

    roots: tuple[str, ...]
    network: bool

    def readable(self, path: str) -> bool:
        return True

    def writable(self, path: str) -> bool:
        return any(mapping.inside(path, root) for root in self.roots)

    def write_roots(self) -> Sequence[str]:
        return self.roots

    def read_roots(self) -> Sequence[str]:
        return ("/",)

    def destinations(self) -> Sequence[tuple[str, int | None]]:
        return (("*", None),) if self.network else ()


def interpret(text: str, project: str) -> CodexAccess:
    settings = tomllib.loads(text)
    mode = settings.get("sandbox_mode", "read-only")
    if mode == "read-only":
        return CodexAccess((), False)
    if mode != "workspace-write":
        return CodexAccess(("/",), True)
    table = settings.get("sandbox_workspace_write", {})
    roots = [project, *table.get("writable_roots", [])]
    if not table.get("exclude_slash_tmp", False):
        roots.append("/tmp")
    if not table.get("exclude_tmpdir_env_var", False):
        roots.append("/")  # $TMPDIR is wherever the environment says: anywhere
    return CodexAccess(tuple(roots), bool(table.get("network_access", False)))
