"""Exports: a plan's confinement written as the sandbox settings another tool reads, each proven
never wider than the plan.

Every target starts from the same :class:`~bgc.runtime.sandbox.mapping.Confinement` that
``bgc sandbox`` runs, once :mod:`~bgc.runtime.sandbox.prove` has proven it, read as a
:class:`View` (what is shown, written, masked, frozen, and the granted network). A target module
renders the view in its format (``render``) and, independently, reads the document it wrote back
as the tool would apply it (``interpret``: an :class:`Access`, with the tool's own defaults, such
as a working directory that is always writable). :func:`check` then holds that reading against
the plan with bgc's algebra and gate, as the proof does for mounts:

1. every directory the tool lets be written: ``D/**`` inside the granted ``fs:write`` patterns
   (in the project) or the granted ``host:write`` terms (outside it);
2. everything it shows outside the project is something the proven confinement shows read-only
   (the toolchain, what the tool itself needs, ``host:read`` grants);
3. every existing path of the project, with the access the document gives it, is allowed by the
   plan's own decision (read, write; a socket never; every name of a file with several);
4. every network destination it opens: a host and port, reached by any byte stream, lies inside
   the granted ``net:connect`` terms as ``https://HOST[:PORT]/**`` (the reading bgc's proxy gives
   a tunnel: a grant of part of a host opens nothing).

What a format cannot say exactly is dropped, never approximated outward, and each drop is
reported (:class:`Dropped`); what the tool does whatever its settings say (a scratch directory
of its own) is stated (:attr:`Export.notes`). A failed check refuses the export
(:class:`~bgc.runtime.sandbox.mapping.SandboxRefused`): it would mean a renderer widened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bgc.core.plan import Plan
from bgc.runtime.sandbox.exports.common import Access, Dropped, Export, View, check
from bgc.runtime.sandbox.mapping import Confinement, Entry

__all__ = ["TARGETS", "Access", "Dropped", "Export", "Target", "View", "check", "export"]

Render = Callable[[View, Sequence[Plan]], tuple[str, list[Dropped], list[str]]]
Interpret = Callable[[str, str], Access]


@dataclass(frozen=True, slots=True)
class Target:
    """A format bgc exports to: its name, the file it is written to by default (relative to the
    project), whether that file is shared with other settings (then only bgc's part of it is
    replaced) and the module that renders and reads it."""

    name: str
    default_path: str
    describe: str
    module: Callable[[], tuple[Render, Interpret, bool]]
    """The renderer, the reader and whether the tool confines reads at all (Codex's
    workspace-write sandbox reads the whole disk, whatever its settings)."""


def _claude_code() -> tuple[Render, Interpret, bool]:
    from bgc.runtime.sandbox.exports import claude_code

    return claude_code.render, claude_code.interpret, True


def _sandbox_runtime() -> tuple[Render, Interpret, bool]:
    from bgc.runtime.sandbox.exports import sandbox_runtime

    return sandbox_runtime.render, sandbox_runtime.interpret, True


def _codex() -> tuple[Render, Interpret, bool]:
    from bgc.runtime.sandbox.exports import codex

    return codex.render, codex.interpret, False


def _seatbelt() -> tuple[Render, Interpret, bool]:
    from bgc.runtime.sandbox.exports import seatbelt

    return seatbelt.render, seatbelt.interpret, True


TARGETS = {
    target.name: target
    for target in (
        Target("claude-code", ".claude/settings.json", "Claude Code's `sandbox` settings", _claude_code),
        Target("sandbox-runtime", ".bgc/srt-settings.json", "the settings of Anthropic's sandbox runtime (srt)", _sandbox_runtime),
        Target("codex", ".codex/config.toml", "Codex's workspace-write sandbox", _codex),
        Target("seatbelt", ".bgc/seatbelt.sb", "a macOS seatbelt (sandbox-exec) profile", _seatbelt),
    )
}  # fmt: skip
"""The export targets, by the name ``bgc export --target`` takes."""


def export(
    target: str, confinement: Confinement, plans: Sequence[Plan], entries: Sequence[Entry]
) -> Export:
    """``confinement`` (built and proven for ``plans``) written for ``target``, checked never
    wider than the plan; :class:`SandboxRefused` when the check fails."""
    render, interpret, confines_reads = TARGETS[target].module()
    view = View.of(confinement)
    text, dropped, notes = render(view, plans)
    check(interpret(text, view.project), view, plans, entries, confines_reads=confines_reads)
    return Export(target, text, tuple(dropped), view.gaps, tuple(notes))


