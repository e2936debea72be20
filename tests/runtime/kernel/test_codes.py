"""Every BGC5xx code the kernel gives is in the one registry and explained in docs/kernel.md."""

from __future__ import annotations

from pathlib import Path

from bgc import codes

ROOT = Path(__file__).resolve().parents[3]


def test_every_kernel_code_is_documented_in_the_kernel_page() -> None:
    docs = (ROOT / "docs" / "kernel.md").read_text()
    kernel = [code for code in codes.CODES if 500 <= int(code.removeprefix("BGC")) <= 599]
    assert len(kernel) >= 30
    for code in kernel:
        assert code in docs, code
