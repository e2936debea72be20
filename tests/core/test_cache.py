"""The on-disk cache is an optimisation that is never trusted: corrupt, foreign or unsafe
entries are misses, keys follow the code, writes are atomic."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core import cache
from bgc.analysis import checks
from bgc.errors import BgcError
from bgc.core.policy import loader
from tests.samples import examples


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


def test_a_disabled_cache_does_not_stamp_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """``BGC_CACHE_DIR=""``: nothing is read or written, and bgc's files are not walked for a
    key no entry will have (a cold ``bgc gate`` without a cache paid a millisecond for it)."""
    monkeypatch.setenv("BGC_CACHE_DIR", "")

    def walked() -> str:
        raise AssertionError("the code was stamped for a disabled cache")

    monkeypatch.setattr(cache, "code_digest", walked)
    cache.store_object("policy", "k", "value")
    cache.store_bytes("policy", "k", b"value")
    assert cache.load_object("policy", "k") is None
    assert cache.load_bytes("policy", "k") is None


def test_code_files_are_the_package_and_the_grammar() -> None:
    import bgc
    from bgc.core.policy.parser import grammar_text

    files = cache.code_files()
    assert set(Path(bgc.__file__).parent.rglob("*.py")) <= {Path(f) for f in files}  # nested ones too
    assert not any("__pycache__" in f for f in files)  # bytecode Python rewrites is no edit
    assert Path(files[-1]).read_text(encoding="utf-8") == grammar_text()  # the grammar the parser is built from


def _edits() -> dict[str, Callable[[Path], None]]:
    """Every way a file of the code can change, each one that keeps what a careless key would
    look at: same size, the modification time put back."""

    def keep_times(path: Path, change: Callable[[], None]) -> None:
        before = path.stat()
        change()
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    def same_size(path: Path) -> None:
        data = path.read_bytes()
        keep_times(path, lambda: path.write_bytes(data[:-1] + (b"#" if data[-1:] != b"#" else b"!")))

    def replaced(path: Path) -> None:  # an editor's save: a new file renamed over the old, times copied
        twin = path.with_name(path.name + ".new")
        twin.write_bytes(path.read_bytes().replace(b"return", b"return ", 1) or b"x")
        os.utime(twin, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
        os.replace(twin, path)

    def grown(path: Path) -> None:
        keep_times(path, lambda: path.write_bytes(path.read_bytes() + b"\n"))

    def added(path: Path) -> None:
        (path.parent / "added_module.py").write_text("")

    def removed(path: Path) -> None:
        path.unlink()

    return {"same size": same_size, "replaced": replaced, "grown": grown, "added": added, "removed": removed}


@pytest.mark.parametrize("edit", sorted(_edits()))
def test_every_edit_of_the_code_changes_its_key(edit: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key is a stamp per file, not a hash (hashing every source cost a cold hook more than
    its decision): each edit, in a copy of the package, made by class on files chosen across the
    tree, changes it; untouched code and rewritten bytecode keep it."""
    import random
    import shutil

    import bgc

    copy = tmp_path / "bgc"
    shutil.copytree(Path(bgc.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(bgc, "__file__", str(copy / "__init__.py"))
    sources = sorted(copy.rglob("*.py"))

    def key() -> str | None:
        cache.code_digest.cache_clear()
        return cache.code_digest()

    try:
        unedited = key()
        assert unedited is not None and key() == unedited  # stable while nothing changes
        (copy / "__pycache__").mkdir()
        (copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"bytecode")
        assert key() == unedited
        for path in random.Random(edit).sample(sources, 5):
            before = key()
            _edits()[edit](path)
            assert key() != before, (edit, path.relative_to(copy))
    finally:
        cache.code_digest.cache_clear()


def test_code_that_cannot_be_stamped_disables_the_cache(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "code_files", lambda: [str(tmp_path / "gone.py")])
    cache.code_digest.cache_clear()
    try:
        assert cache.code_digest() is None
        cache.store_object("policy", "k", "value")
        assert cache.load_object("policy", "k") is None
        assert not cache_home.exists() or not list(cache_home.iterdir())
    finally:
        cache.code_digest.cache_clear()


@pytest.mark.e2e
def test_an_edited_copy_of_bgc_never_reads_what_the_unedited_one_wrote(tmp_path: Path) -> None:
    """End to end, as a user's checkout: `bgc hook` run from a copy of the package compiles the
    policy once and then serves it from the cache; after an edit that a size-and-time key would
    miss, the next run must not take the old entry (it writes its own)."""
    import json
    import shutil
    import subprocess
    import sys
    import sysconfig

    import bgc

    copy = tmp_path / "code" / "bgc"  # the grammar and the bundled policies come along: the package holds them
    shutil.copytree(Path(bgc.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    policy = project / "p.bgp"
    policy.write_text('tool Read needs fs:read:{file_path}\nallow fs:read:/src/** because "sources"\n')
    entries = tmp_path / "cache"
    packages = sysconfig.get_paths()["purelib"]  # the dependencies; -S: no editable install's finder
    env = {**os.environ, "PYTHONPATH": f"{copy.parent}{os.pathsep}{packages}", "BGC_CACHE_DIR": str(entries),
           "CLAUDE_PROJECT_DIR": str(project)}  # fmt: skip
    call = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": str(project),
                       "tool_input": {"file_path": f"{project}/src/a.py"}})  # fmt: skip

    def hook() -> set[str]:
        argv = [sys.executable, "-S", "-c", "import bgc, sys; assert bgc.__file__.startswith(sys.argv[1]); "
                "from bgc.app.launch import main; sys.argv[1:] = sys.argv[2:]; main()", str(copy),
                "hook", "claude-code", "-p", str(policy)]  # fmt: skip
        done = subprocess.run(argv, input=call, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and '"allow"' in done.stdout, done
        return {path.name for path in entries.iterdir()}

    first = hook()
    assert hook() == first  # a hit writes nothing
    _edits()["same size"](copy / "core" / "plan.py")
    assert not hook() <= first  # a miss: new entries, keyed by the edited code


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
    assert cache.cache_dir() == str(tmp_path / "bgc")


# --- cached policies and checks: an entry is valid only while every file it read is unchanged ----------


@pytest.fixture()
def policy_tree(cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """``p/root.bgp`` including ``p/lib/inc.bgp``, cwd at their parent; the returned log records
    each real parse and check, so a test can tell a cache hit (nothing logged) from a miss."""
    from bgc.analysis import checks as check
    from bgc.core.policy import loader

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p" / "lib").mkdir(parents=True)
    (tmp_path / "p" / "root.bgp").write_text('include "lib/inc.bgp"\nexpect allow fs:read:/a\n')
    (tmp_path / "p" / "lib" / "inc.bgp").write_text("allow fs:read:/**\n")
    log: dict[str, list[str]] = {"parsed": [], "checked": []}
    load_policy, check_paths = loader.load_policy, check.check_paths
    monkeypatch.setattr(loader, "load_policy", lambda path: log["parsed"].append(path) or load_policy(path))
    monkeypatch.setattr(check, "check_paths", lambda paths: log["checked"].extend(paths) or check_paths(paths))
    return log


def test_an_edited_included_file_invalidates_cached_policies_and_checks(policy_tree: dict[str, list[str]]) -> None:
    assert [rule.effect for rule in loader.cached_policy("p/root.bgp").rules] == ["allow"]
    assert checks.cached_check("p/root.bgp").findings == ()
    misses = {name: len(paths) for name, paths in policy_tree.items()}
    assert misses["parsed"] >= 1 and misses["checked"] == 1
    assert [rule.effect for rule in loader.cached_policy("p/root.bgp").rules] == ["allow"]
    assert checks.cached_check("p/root.bgp").findings == ()
    assert {name: len(paths) for name, paths in policy_tree.items()} == misses  # hits: nothing parsed

    Path("p/lib/inc.bgp").write_text("deny fs:read:/**\n")  # the root file is as it was
    assert [rule.effect for rule in loader.cached_policy("p/root.bgp").rules] == ["deny"]
    assert len(policy_tree["parsed"]) > misses["parsed"]
    assert [f.rule_id for f in checks.cached_check("p/root.bgp").findings if f.rule_id != "BGC110"] == ["BGC201"]
    assert len(policy_tree["checked"]) == 2

    Path("p/lib/inc.bgp").unlink()  # gone: a miss, and the loader's own error
    with pytest.raises(BgcError, match="cannot include"):
        loader.cached_policy("p/root.bgp")


def test_a_root_file_edited_while_it_was_parsed_is_not_served_for_its_old_content(
    policy_tree: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry is keyed by the root's content read *before* parsing; a hit skips re-reading the
    root only when the entry recorded that same content, so a parse of newer bytes stored under
    the older key is a miss when the older content comes back."""
    from bgc.core.policy import loader

    root = Path("p/root.bgp")
    original = root.read_text()
    parse = loader.load_policy

    def edited_meanwhile(path: str):  # type: ignore[no-untyped-def]
        root.write_text(original + "deny fs:read:/a\n")
        return parse(path)

    monkeypatch.setattr(loader, "load_policy", edited_meanwhile)
    assert len(loader.cached_policy("p/root.bgp").rules) == 2  # parsed the edited file, keyed by the original
    root.write_text(original)
    monkeypatch.setattr(loader, "load_policy", parse)
    assert len(loader.cached_policy("p/root.bgp").rules) == 1
    assert policy_tree["parsed"][-1] == "p/root.bgp"


def test_the_suite_never_writes_into_the_users_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """tests/conftest.py points BGC_CACHE_DIR into this run's temporary directory, for every test."""
    configured = Path(os.environ["BGC_CACHE_DIR"]).resolve()
    assert configured.is_relative_to(tmp_path_factory.getbasetemp().resolve())


REGEX_TEXTS = ["", "a", "[a-c]+x", "(?:ab)*\\Z", "(a)(b)?", "(?i)straße", "/(?:.*/)?\\.env\\Z", "(?!)", "x|y{2,3}"]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(REGEX_TEXTS), st.sampled_from([0, re.IGNORECASE, re.DOTALL]), st.text("abcxy/.enSsTRAßE\n", max_size=12))
def test_a_cached_regex_answers_as_the_pattern(cache_home: Path, text: str, flags: int, subject: str) -> None:
    """A compiled pattern in an entry — alone or as a bound method, as deciders hold them — is
    read back as the pattern it was stored from and answers every method exactly as it does."""
    pattern = re.compile(text, flags)
    cache.store_object("policy", "regex", {"pattern": pattern, "match": pattern.match, "sub": pattern.sub})
    loaded = cache.load_object("policy", "regex")
    assert loaded["pattern"] == pattern and loaded["match"].__self__ == pattern
    assert loaded["match"](subject) is None if pattern.match(subject) is None else loaded["match"](subject).span() == pattern.match(subject).span()
    assert loaded["sub"]("-", subject) == pattern.sub("-", subject)
    for method in ("fullmatch", "search"):
        got, want = getattr(loaded["pattern"], method)(subject), getattr(pattern, method)(subject)
        assert (got and got.span()) == (want and want.span())
    assert loaded["pattern"].findall(subject) == pattern.findall(subject)
    assert (loaded["pattern"].pattern, loaded["pattern"].groups) == (pattern.pattern, pattern.groups)
    cache.store_object("policy", "again", loaded)  # a loaded entry stores again
    again = cache.load_object("policy", "again")
    assert again["match"]("a") is None if pattern.match("a") is None else again["match"]("a").span() == pattern.match("a").span()


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 400), min_size=1, max_size=12),
       namespaces=st.lists(st.sampled_from(["parser", "policy", "algebra-answers"]), min_size=1))  # fmt: skip
def test_the_directory_stays_within_its_bytes_oldest_first(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch, sizes: list[int], namespaces: list[str]
) -> None:
    """Entries of every namespace and size, written one after another past the bound: after each
    write the entries take at most the bound (the one just written always stays), the ones left
    are the latest written, whole, and files that are not entries are never touched."""
    bound = 1_000
    monkeypatch.setattr(cache, "MAX_CACHE_BYTES", bound)
    for item in cache_home.iterdir() if cache_home.exists() else ():
        item.unlink()
    cache_home.mkdir(mode=0o700, exist_ok=True)
    (cache_home / "notes.txt").write_bytes(b"x" * 2 * bound)
    (cache_home / ".tmp-writing").write_bytes(b"x" * 2 * bound)  # another process's write under way
    written: list[tuple[str, str, bytes]] = []
    for index, size in enumerate(sizes):
        namespace, key = namespaces[index % len(namespaces)], f"key-{index}"
        payload = bytes([index % 256]) * size
        cache.store_bytes(namespace, key, payload)
        name = cache.entry_key(namespace, key)
        assert name is not None
        os.utime(cache_home / name, ns=(index * 10**9, index * 10**9))  # written in this order
        written.append((namespace, key, payload))
        entries = [path for path in cache_home.iterdir() if re.fullmatch("[0-9a-f]{64}", path.name)]
        total = sum(path.stat().st_size for path in entries)
        assert total <= bound or len(entries) == 1
        assert cache.load_bytes(namespace, key) == payload
        present = [cache.load_bytes(n, k) == p for n, k, p in written]
        assert present == sorted(present)  # gone: only the oldest; the rest read back whole
        assert sum(present) == len(entries)
    assert (cache_home / "notes.txt").stat().st_size == (cache_home / ".tmp-writing").stat().st_size == 2 * bound
