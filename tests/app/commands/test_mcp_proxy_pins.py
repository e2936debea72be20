"""`bgc mcp-proxy`'s pins over the store: a call to a pinned tool costs no store access, however
many tools are pinned, and the token file is its owner's alone."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from bgc.app.commands.mcp_proxy import StorePool, StorePins, listen_address, replace_secret
from bgc.errors import UsageError


class Counting(StorePool):
    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.leases = 0

    def lease(self):  # type: ignore[no-untyped-def]
        self.leases += 1
        return super().lease()


@pytest.mark.parametrize("count", [1, 1000])
def test_a_call_to_a_pinned_tool_touches_no_store_whatever_the_number_of_pins(tmp_path: Path, count: int) -> None:
    stores = Counting(str(tmp_path / "k.db"))
    pins = StorePins(stores, "files", {})
    tools: list[dict[str, Any]] = [{"name": f"tool{n}", "description": f"Tool {n}."} for n in range(count)]
    try:
        assert pins.withheld(tools) == {}
        for tool in tools:
            pins.allowed(tool["name"])  # first use: pinned, one lease each
        leases = stores.leases
        assert len(pins.pins.pinned) == count
        for _ in range(50):
            pins.allowed("tool0")
        assert stores.leases == leases
    finally:
        stores.close()


def test_the_token_file_is_its_owners_alone_and_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "t.token"
    replace_secret(str(path), "first")
    os.chmod(path, 0o644)  # a token file someone opened up
    replace_secret(str(path), "second")
    assert path.read_text() == "second\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [name for name in os.listdir(path.parent) if name != "t.token"] == []


@pytest.mark.parametrize(("listen", "address"), [
    ("127.0.0.1:8931", ("127.0.0.1", 8931)), ("8931", ("127.0.0.1", 8931)), ("localhost:0", ("127.0.0.1", 0)),
    ("[::1]:80", ("::1", 80)), ("127.5.6.7:1", ("127.5.6.7", 1)),
])  # fmt: skip
def test_a_loopback_address_is_listened_on(listen: str, address: tuple[str, int]) -> None:
    assert listen_address(listen) == address


@pytest.mark.parametrize("listen", ["0.0.0.0:8931", "192.168.1.2:80", "example.com:80", "[::]:80", "127.0.0.1:99999",
                                    "127.0.0.1:x", "127.0.0.1:", ":80"])  # fmt: skip
def test_any_other_address_is_refused(listen: str) -> None:
    with pytest.raises(UsageError):
        listen_address(listen)
