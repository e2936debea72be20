"""``bgc export --target TARGET [--plan PLAN | -p POLICY] [--root DIR] [-o FILE|-]``: write the
sandbox settings another tool reads, from the same confinement ``bgc sandbox`` runs
(docs/sandbox.md, "Exports").

The plan comes as for ``bgc sandbox``; the mapping is built and proven, then written for the
target and checked never wider than the plan (:mod:`bgc.runtime.sandbox.exports`). The file is
the target's usual one in the project unless ``-o`` names another (``-o -``: stdout); Claude
Code's settings file is shared with bgc's hook, so only its ``sandbox`` key is replaced (the
previous file is kept as ``.bak``), and Codex's is replaced only when bgc wrote it. Exit 0 when the export carries every grant, 1 when the
format made it narrower (each dropped grant is listed), 2 when nothing could be exported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from bgc.app.commands import io
from bgc.errors import ExitCode, UsageError
from bgc.text import escape_field


def run(
    target: str, *, plan: str | None = None, policy: str | None = None, mode: str | None = None, root: str | None = None,
    output: str | None = None, runtime: Sequence[str] = (),
) -> io.Result:  # fmt: skip
    from bgc.app.commands.sandbox import plans_for
    from bgc.runtime.sandbox import exports, mapping, prove

    if target not in exports.TARGETS:
        raise UsageError(f"unknown target {target!r}: one of {', '.join(exports.TARGETS)}")
    project = os.path.realpath(root if root is not None else os.getcwd())
    if not os.path.isdir(project):
        raise UsageError(f"--root {root!r} is not a directory")
    plans = plans_for(plan, policy, mode)
    shown = [os.path.realpath(path) for path in runtime]
    for path, given in zip(shown, runtime, strict=True):
        if not os.path.exists(path) or mapping.inside(path, project):
            raise UsageError(f"--runtime {given!r} must be an existing path outside the project")
    confinement, entries = mapping.build(plans, project, environ=os.environ, extra_read=shown)  # type: ignore[arg-type]
    prove.prove(confinement, plans, entries)  # type: ignore[arg-type]
    done = exports.export(target, confinement, plans, entries)  # type: ignore[arg-type]
    report = _report(done)
    code = ExitCode.FINDINGS if done.dropped else ExitCode.OK
    data = done.text.encode("utf-8")
    if output == "-":
        return io.Result(code, data, notice="".join(line + "\n" for line in report))
    path = output if output is not None else os.path.join(project, exports.TARGETS[target].default_path)
    files = [(path, data)]
    if target == "claude-code":
        files = _merged(path, json.loads(done.text)["sandbox"])
    elif target == "codex" and os.path.exists(path):
        from bgc.runtime.sandbox.exports.codex import HEADER

        with open(path, "rb") as existing:
            if not existing.read(len(HEADER)).decode("utf-8", "replace").startswith(HEADER):
                raise UsageError(f"{path} holds Codex settings bgc did not write: give -o FILE (or -o -) and merge them by hand")
    lines = [f"wrote {escape_field(path)} ({exports.TARGETS[target].describe})", *report]
    return io.Result(code, "".join(line + "\n" for line in lines).encode("utf-8"), files=tuple(files),
                     directories=(os.path.dirname(os.path.abspath(path)),))  # fmt: skip


def _report(done: Any) -> list[str]:
    lines = []
    for dropped in done.dropped:
        lines.append(f"narrowed: {escape_field(dropped.what)}: {escape_field(dropped.why)}")
    for gap in done.gaps:
        lines.append(f"not refused: new names in {escape_field(gap.directory)} matching {', '.join(map(escape_field, gap.patterns))} (the hook decides the agent's own writes)")  # fmt: skip
    lines += [f"note: {note}" for note in done.notes]
    return lines


def _merged(path: str, sandbox: dict[str, Any]) -> list[tuple[str, bytes]]:
    """Claude Code's settings file with its ``sandbox`` key replaced (and the previous file as
    ``.bak``); a file that is not a JSON object is refused, located, and nothing is written."""
    if not os.path.exists(path):
        return [(path, (json.dumps({"sandbox": sandbox}, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))]
    from bgc.core.values.documents import parse_document, read_bytes

    original = read_bytes(path)
    document = parse_document(original, path, "json")
    if not isinstance(document.data, dict):
        raise document.error_at((), "expected a JSON object of settings")
    settings = dict(document.data)
    settings["sandbox"] = sandbox
    merged = (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return [(path + ".bak", original), (path, merged)]
