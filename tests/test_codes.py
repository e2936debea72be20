"""The one registry of finding codes (bgc/codes.py): every code documented, every documented
code real, and no code spelled anywhere else."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bgc import codes
from bgc.app.render.codes_doc import codes_markdown

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CODE = re.compile(r"\bBGC\d{3}\b")


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


def test_the_codes_page_is_written_from_the_registry() -> None:
    assert (DOCS / "codes.md").read_text(encoding="utf-8") == codes_markdown(), (
        "docs/codes.md is stale: python -m bgc.app.render.codes_doc > docs/codes.md"
    )


@pytest.mark.parametrize("code", list(codes.CODES.values()), ids=lambda code: code.id)
def test_every_code_is_explained_where_it_links(code: codes.Code) -> None:
    page, _, anchor = code.doc.partition("#")
    assert anchor in anchors(DOCS / page), f"{code.id}: no section #{anchor} in docs/{page}"
    assert f"`{code.id}`" in (DOCS / page).read_text(encoding="utf-8"), f"{code.id} is not explained in docs/{page}"
    assert code.severity in (codes.ERROR, codes.WARNING, codes.NOTE)


def test_every_documented_code_exists() -> None:
    def text(page: Path) -> str:  # the blocks table of docs/codes.md names bounds, not codes
        whole = page.read_text(encoding="utf-8")
        return whole.split("## Codes", 1)[1] if page.name == "codes.md" else whole

    pages = [*DOCS.glob("*.md"), ROOT / "README.md"]
    mentioned = {(page.name, found) for page in pages for found in CODE.findall(text(page))}
    assert mentioned, "the docs mention no code at all: the pattern is wrong"
    assert sorted(f"{page}: {found}" for page, found in mentioned if found not in codes.CODES) == []


def test_blocks_do_not_overlap_and_every_code_lies_in_one() -> None:
    blocks = sorted(codes.RANGES, key=lambda block: block.first)
    assert all(a.last < b.first for a, b in zip(blocks, blocks[1:]))
    for code in codes.CODES:
        assert sum(block.first <= int(code[3:]) <= block.last for block in blocks) == 1


def test_a_code_defined_twice_fails_at_import() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        codes._code("BGC001", codes.ERROR, "again", "policy-language.md#x")
    with pytest.raises(ValueError, match="no range"):
        codes._code("BGC899", codes.ERROR, "nowhere", "policy-language.md#x")
    assert "BGC899" not in codes.CODES


def _python_files() -> list[Path]:
    return sorted((ROOT / "bgc").rglob("*.py"))


def test_no_module_spells_a_code_outside_the_registry() -> None:
    """A code written as a string elsewhere escapes the registry (a typo is a new, undocumented
    code); emitters use the registry's names. Docstrings and comments may mention codes."""
    spelled = []
    for path in _python_files():
        if path.name == "codes.py" and path.parent.name == "bgc":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value):
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value}")
    assert spelled == []


def test_the_scan_above_would_find_a_spelled_code() -> None:
    tree = ast.parse('Finding("BGC101", severity, message, span)')
    assert [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and CODE.fullmatch(str(n.value))] == ["BGC101"]


def test_the_registry_imports_nothing_of_bgc() -> None:
    tree = ast.parse((ROOT / "bgc" / "codes.py").read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [name for name in imported if name.split(".")[0] == "bgc"] == []


def test_sarif_rules_take_their_summary_from_the_registry() -> None:
    import json

    from bgc.errors import Span
    from bgc.analysis.findings import Finding, Severity
    from bgc.app.render.machine import render

    findings = [Finding(code, Severity.ERROR, "m", Span("/repo/a.bgp", 1, 1)) for code in codes.CODES]
    rules = json.loads(render(findings, "sarif", root=Path("/repo")))["runs"][0]["tool"]["driver"]["rules"]
    assert {rule["id"]: rule["shortDescription"]["text"] for rule in rules} == {
        code.id: code.summary for code in codes.CODES.values()
    }
