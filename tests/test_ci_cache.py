"""The on-disk cache is an optimisation that is never trusted: corrupt, foreign or unsafe
entries are misses, keys follow the code, writes are atomic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bgc import cache


@pytest.fixture()
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("BGC_CACHE_DIR", str(directory))
    return directory


def test_round_trip_and_layout(cache_home: Path) -> None:
    assert cache.load_object("policy", "k") is None
    cache.store_object("policy", "k", {"rules": (1, 2)})
    assert cache.load_object("policy", "k") == {"rules": (1, 2)}
    assert cache.load_object("policy", "other") is None
    assert cache.load_object("parser", "k") is None  # namespaces do not collide
    assert oct(cache_home.stat().st_mode & 0o777) == oct(0o700)
    assert [p.name for p in cache_home.iterdir()] == [cache.entry_key("policy", "k")]  # no temp files left


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1],  # truncated
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one bit flipped in the payload
        lambda data: b"",  # empty
        lambda data: b"not a cache entry at all, just text" * 3,
    ],
)
def test_damaged_entries_are_misses_and_get_replaced(cache_home: Path, damage) -> None:  # type: ignore[no-untyped-def]
    cache.store_object("policy", "k", ["value"])
    entry = cache_home / cache.entry_key("policy", "k")
    entry.write_bytes(damage(entry.read_bytes()))
    assert cache.load_object("policy", "k") is None
    cache.store_object("policy", "k", ["again"])
    assert cache.load_object("policy", "k") == ["again"]


def test_a_verified_payload_that_does_not_unpickle_is_a_miss(cache_home: Path) -> None:
    cache.store_bytes("policy", "k", b"\x80\x05garbage")
    assert cache.load_bytes("policy", "k") == b"\x80\x05garbage"
    assert cache.load_object("policy", "k") is None


def test_keys_follow_the_code(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.store_object("policy", "k", "old code")
    monkeypatch.setattr(cache, "code_digest", lambda: "a different build of bgc")
    assert cache.load_object("policy", "k") is None


def test_code_digest_covers_the_grammar_and_the_sources() -> None:
    cache.code_digest.cache_clear()
    first = cache.code_digest()
    assert len(first) == 64 and cache.code_digest() == first


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_directory_others_can_write_is_never_used(cache_home: Path) -> None:
    cache.store_object("policy", "k", "mine")
    os.chmod(cache_home, 0o777)
    assert cache.load_object("policy", "k") is None
    cache.store_object("policy", "j", "x")
    assert not (cache_home / cache.entry_key("policy", "j")).exists()
    os.chmod(cache_home, 0o700)
    assert cache.load_object("policy", "k") == "mine"


def test_disabled_and_unwritable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BGC_CACHE_DIR", "")
    assert cache.cache_dir() is None
    cache.store_object("policy", "k", 1)
    assert cache.load_object("policy", "k") is None
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("BGC_CACHE_DIR", str(blocker / "cache"))
    cache.store_object("policy", "k", 1)  # no error: a cache that cannot be written is skipped
    assert cache.load_object("policy", "k") is None


def test_default_location_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BGC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "bgc"
