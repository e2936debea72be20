"""Every option of the catalogue is one its program's manual documents.

Each row of :mod:`bgc.runtime.catalogue` names the manual its options were read from; where that
manual is installed (``/usr/share/man/man1``), every spelling the row lists must appear in it as
an option (a mistyped or invented option would be read as the program never reads it). A row
whose manual is not installed is skipped; diff's ``--old-group-format`` and its kin are
documented as ``--GTYPE-group-format``.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from bgc.runtime import catalogue

MAN = Path("/usr/share/man/man1")
ROWS = [*catalogue.PROGRAMS, *catalogue.GIT_COMMANDS.values()]


def _page(row: catalogue.Program) -> str | None:
    """The text of a row's manual, roff escapes of ``-`` and fonts undone; None when not installed."""
    name = re.search(r"(\S+)\(1\)", row.manual)
    assert name is not None, row.manual
    path = MAN / f"{name.group(1)}.1.gz"
    if not path.exists():
        return None
    text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
    return re.sub(r"\\f[BIRPC]|\\f\(..|\\&|\\%|\\\^|\\\|", "", text).replace("\\-", "-").replace("\\(en", "-")


@pytest.mark.parametrize("row", ROWS, ids=[" ".join(row.names) for row in ROWS])
def test_every_option_is_in_the_manual(row: catalogue.Program) -> None:
    page = _page(row)
    if page is None:
        pytest.skip(f"{row.manual} is not installed")
    missing = []
    for option in row.options:
        for name in option.names:
            family = re.fullmatch(r"--(?:old|new|unchanged|changed)-(group|line)-format", name)
            if family and f"--{'G' if family.group(1) == 'group' else 'L'}TYPE-{family.group(1)}-format" in page:
                continue
            if not re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", page):
                missing.append(name)
    assert not missing, f"{row.manual} does not document {missing}"


def test_find_and_git_name_what_the_catalogue_reads() -> None:
    for row, names in ((next(row for row in catalogue.PROGRAMS if row.syntax == "find"), catalogue.FIND_PRIMARIES),
                       (next(row for row in catalogue.PROGRAMS if row.syntax == "git"),
                        [name for option in catalogue.GIT_GLOBAL for name in option.names])):  # fmt: skip
        page = _page(row)
        if page is None:
            continue
        missing = [name for name in names if name not in "()!," and not re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", page)]
        assert not missing, f"{row.manual} does not document {missing}"
