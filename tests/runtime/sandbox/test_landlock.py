"""The Landlock layer's ABI handling and the launcher's argument reading (no process started)."""

from __future__ import annotations

import pytest

from bgc.runtime.sandbox import enter, landlock


@pytest.mark.parametrize("abi", range(1, 9))
def test_rights_handled_grow_with_the_abi(abi: int) -> None:
    fs, net, scoped = landlock.handled(abi)
    assert fs & landlock.WRITE_FILE and fs & landlock.READ_FILE and fs & landlock.MAKE_REG
    assert bool(fs & landlock.REFER) == (abi >= 2)
    assert bool(fs & landlock.TRUNCATE) == (abi >= 3)
    assert bool(fs & landlock.IOCTL_DEV) == (abi >= 5)
    assert bool(net & landlock.NET_CONNECT_TCP) == (abi >= 4)
    assert bool(scoped & landlock.SCOPE_SIGNAL) == bool(scoped & landlock.SCOPE_ABSTRACT_UNIX_SOCKET) == (abi >= 6)


def test_file_rules_carry_only_file_rights() -> None:
    assert landlock.FILE_RIGHTS & landlock.READ_DIR == 0
    assert landlock.FILE_RIGHTS & landlock.MAKE_REG == 0


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--read"],
        ["--read", "/usr"],
        ["--bogus", "x", "--", "true"],
        ["--read", "/usr", "--"],
        ["--port", "x", "--", "true"],
    ],
)
def test_the_launcher_refuses_what_it_cannot_read(argv: list[str]) -> None:
    if argv[:1] == ["--port"]:
        assert enter.main(argv) == enter.REFUSED  # a port that is not a number: nothing runs
        return
    with pytest.raises(ValueError):
        enter.parse(argv)


def test_the_launcher_reads_its_options() -> None:
    options, command = enter.parse(["--read", "/usr", "--write", "/tmp", "--list", "/", "--", "ls", "--", "-l"])
    assert options["--read"] == ["/usr"] and options["--write"] == ["/tmp"] and options["--list"] == ["/"]
    assert command == ["ls", "--", "-l"]
