"""docs/agents.md holds the catalogue's tables exactly as bgc.app.render.catalogue_doc writes them
from the one table, so the page cannot drift from what bgc reads."""

from __future__ import annotations

from pathlib import Path

from bgc.app.render.catalogue_doc import END, START, catalogue_markdown
from bgc.runtime import catalogue

PAGE = Path(__file__).resolve().parents[3] / "docs" / "agents.md"


def test_the_page_holds_the_tables_as_generated() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1
    held = text[text.index(START) : text.index(END) + len(END)] + "\n"
    assert held == catalogue_markdown(), "docs/agents.md is stale: paste `python -m bgc.app.render.catalogue_doc` there"


def test_the_tables_name_every_program_and_option() -> None:
    tables = catalogue_markdown()
    for program in (*catalogue.PROGRAMS, *catalogue.GIT_COMMANDS.values()):
        for name in program.names:
            assert f"`{name}`" in tables, name
        for option in program.options:
            for spelled in option.names:
                assert f"`{spelled}`" in tables, (program.names, spelled)
    for primary in catalogue.FIND_PRIMARIES:
        assert f"`{primary}`" in tables
