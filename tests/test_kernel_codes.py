"""Every BGC5xx code the kernel can give is registered and documented, and none is registered idly."""

from __future__ import annotations

import re
from pathlib import Path

from bgc.kernel.codes import CODES

ROOT = Path(__file__).resolve().parent.parent


def test_codes_in_the_code_are_registered_and_documented() -> None:
    sources = "".join(path.read_text() for path in (ROOT / "bgc").rglob("*.py") if path.name != "codes.py")
    used = set(re.findall(r'"(BGC5\d\d)"', sources))
    docs = (ROOT / "docs" / "kernel.md").read_text()
    assert used == set(CODES)
    for code in CODES:
        assert code in docs, code
