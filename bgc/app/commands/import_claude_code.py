"""``bgc import claude-code SETTINGS.json``: Claude Code's permission rules as a bgc policy."""

from __future__ import annotations

import os
import sys

from bgc.app.commands.io import Result
from bgc.errors import ExitCode, UsageError
from bgc.text import count, escape_field


def run(settings: str, *, output: str | None = None, home: str | None = None, allow_partial: bool = False) -> Result:
    """Translate ``permissions.allow/ask/deny`` of a settings file (bgc.adapters.imports.claude_code).

    The policy goes to ``output`` (atomically) or stdout; each rule (or other setting) not
    translated is named on stderr with the reason. Exit 0 when everything was translated, 1
    when something was not (listed in the policy's header too), 2 for a file that is not a
    settings file. A deny or ask rule not translated would leave the policy wider than the
    settings (what Claude Code refuses or asks, bgc might allow), so then nothing is written
    unless ``allow_partial``: a rule that protects must never be dropped in silence.
    """
    from bgc.core.values.canonical import DataModelError
    from bgc.adapters.imports.claude_code import translate
    from bgc.core.values.documents import read_document

    if home is not None and not os.path.isabs(home):
        raise UsageError(f"--home {home!r} must be an absolute path")
    document = read_document(settings, "json")
    permissions = document.build(_permissions)
    try:
        imported = translate(permissions, source=os.path.basename(settings), home=home)
    except DataModelError as error:  # pragma: no cover - _permissions checked the shape
        raise document.error_at(error.path, error.message) from None
    for item in imported.untranslated:
        sys.stderr.write(escape_field(f"{settings}: not translated: {item}", backslash=False) + "\n")
    code = ExitCode.FINDINGS if imported.untranslated else ExitCode.OK
    protecting = [item for item in imported.untranslated if item.effect in ("deny", "ask")]
    if protecting and not allow_partial:
        sys.stderr.write(
            f"{settings}: nothing written: {count(len(protecting), 'deny or ask rule')} could not be translated, "
            "so the policy would allow what the settings refuse or ask; decide those by hand, or pass "
            "--allow-partial to write it with them listed in its header\n"
        )
        return Result(code)
    data = imported.text.encode("utf-8")
    return Result(code, files=((output, data),)) if output is not None else Result(code, output=data)


def _permissions(data: object) -> dict[str, object]:
    """The ``permissions`` object of a settings file, its rule lists checked, or a located error
    naming what is wrong. Its other settings are kept: the translation names each one it does
    not follow."""
    from bgc.core.values.canonical import DataModelError

    if not isinstance(data, dict):
        raise DataModelError("a settings file is a JSON object")
    permissions = data.get("permissions", {})
    if not isinstance(permissions, dict):
        raise DataModelError("expected an object with allow, ask and deny lists", ("permissions",))
    out: dict[str, object] = dict(permissions)
    for effect in ("allow", "ask", "deny"):
        rules = permissions.get(effect, [])
        if not isinstance(rules, list):
            raise DataModelError("expected a list of rules", ("permissions", effect))
        for index, rule in enumerate(rules):
            if not isinstance(rule, str):
                raise DataModelError("expected a rule as a string, like \"Bash(git diff:*)\"", ("permissions", effect, index))
        out[effect] = rules
    return out
