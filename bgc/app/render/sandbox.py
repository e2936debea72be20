"""``bgc sandbox --explain``: a confinement as a person reads it."""

from __future__ import annotations

from bgc.runtime.sandbox.mapping import Confinement, inside
from bgc.runtime.sandbox.netbridge import BRIDGE_PORT
from bgc.text import escape_field

WORDS = {
    "proc": "process view", "dev": "devices", "tmpfs": "empty", "dir": "empty directory", "symlink": "link",
    "ro": "read-only", "rw": "writable", "mask-file": "masked (cannot be opened)", "mask-dir": "masked (empty directory)",
}  # fmt: skip


def explain_text(confinement: Confinement) -> str:
    """The view (each step, in the order it is applied, with why), the environment (names only:
    values may be anything), the network and what the sandbox cannot say."""
    project = confinement.project
    lines = [f"project {escape_field(project)}", "", "view (later lines cover earlier ones):"]
    for mount in confinement.mounts:
        shown = "<project>" + mount.path[len(project) :] if inside(mount.path, project) else mount.path
        target = f" -> {mount.source}" if mount.source is not None else ""
        lines.append(f"  {WORDS[mount.kind]:<26} {escape_field(shown)}{escape_field(target)}  ({mount.reason})")
    lines += ["", "environment: " + " ".join(escape_field(name) for name, _ in confinement.env)]
    if confinement.net:
        lines.append(
            f"network: only through the proxy (127.0.0.1:{BRIDGE_PORT} in the sandbox, HTTP_PROXY and HTTPS_PROXY set), "
            "which lets through net:connect:" + ", ".join(map(escape_field, confinement.net))
        )
    else:
        lines.append("network: none")
    if confinement.gaps:
        lines += ["", "not refused by the sandbox (the hook still decides the agent's own writes):"]
        for gap in confinement.gaps:
            shown = "<project>" + gap.directory[len(project) :]
            lines.append(f"  new names in {escape_field(shown)} matching {', '.join(map(escape_field, gap.patterns))}")
    return "\n".join(lines) + "\n"


def failure_note(confinement: Confinement, code: int) -> str:
    """One line for a confined command that failed: what it could write and reach, so that a
    person (or an agent reading the output) sees that the sandbox, not a prompt, stopped it and
    what the policy would have to grant."""
    project = confinement.project
    writable = sorted(
        ("<project>" + mount.path[len(project) :] if inside(mount.path, project) else mount.path) + "/"
        for mount in confinement.mounts
        if mount.kind == "rw"
    )
    written = ", ".join(map(escape_field, writable)) or "nothing"
    reached = ("net:connect:" + ", ".join(map(escape_field, confinement.net))) if confinement.net else "no network"
    return (
        f"bgc sandbox: the command exited {code}, confined by the policy: it may write {written} and reach "
        f"{reached}; anything else fails inside the sandbox (a rule can grant more, no prompt will)"
    )
