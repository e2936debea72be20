"""docs/codes.md, written from the one registry (:mod:`bgc.codes`): every code bgc reports and
every block of codes, reserved ones included. tests/test_codes.py checks the file is what this
module writes; after changing the registry, regenerate it with
``python -m bgc.app.render.codes_doc > docs/codes.md``."""

from __future__ import annotations

from bgc.codes import CODES, RANGES

_INTRO = """\
# Finding codes

Every finding and every policy error bgc reports carries a stable code, `BGCnnn`: it is the
`ruleId` in SARIF (so code scanning keeps a dismissal when lines move), the `title` of a GitHub
annotation, the `rule` in JSON, and the `[BGCnnn]` in text output. Codes are never reused for
another meaning.

This page is generated from `bgc/codes.py`, the one registry of codes
(`python -m bgc.app.render.codes_doc > docs/codes.md`); each code links to the section that explains
it. The level is the default: `compile` results are errors at or above `--fail-on` and notes
below it.
"""


def codes_markdown() -> str:
    """The whole of docs/codes.md."""
    lines = [_INTRO, "## Blocks", "", "| codes | for |", "|---|---|"]
    lines += [f"| `BGC{block.first:03d}`–`BGC{block.last:03d}` | {table_cell(block.owner)} |" for block in RANGES]
    lines += ["", "## Codes", "", "| code | level | meaning |", "|---|---|---|"]
    for code in CODES.values():
        lines.append(f"| [`{code.id}`]({code.doc}) | {code.severity} | {table_cell(code.summary)} |")
    return "\n".join(lines) + "\n"


def table_cell(text: str) -> str:
    """``text`` inside a Markdown table cell, where a bare ``|`` would end the cell."""
    return text.replace("|", "\\|")


if __name__ == "__main__":  # pragma: no cover - the documented way to regenerate the page
    print(codes_markdown(), end="")
