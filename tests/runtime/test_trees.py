"""A search's tree need decided on the files that exist (bgc.runtime.trees via CallDecider), against a
brute-force reading of the same tree: the call is allowed exactly when no file below is denied."""

from __future__ import annotations

import os
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core.patterns import glob
from bgc.runtime import trees
from bgc.core import resources
from bgc.runtime.calls import CallDecider, Workspace, implicit_plan
from bgc.core.policy.loader import parse_policy

POLICY = """tool grep needs fs:read:{path}, fs:read:{path}/** ignores pattern
allow fs:read:/** because "reading"
deny fs:read:/**/.env, /**/secrets/** because "secrets"
ask fs:read:/**/*.log because "logs"
"""


def decider(root: Path, policy: str = POLICY) -> CallDecider:
    return CallDecider([implicit_plan(parse_policy(policy, "p.bgp"), None)], workspace=Workspace.at(str(root)))


def grep(root: Path, path: str) -> tuple[str, str]:
    decision = decider(root).decide_call("grep", None, {"path": str(root / path), "pattern": "x"})
    return decision.effect, decision.explanation()


def make(root: Path, files: list[str]) -> None:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")


def test_a_clean_tree_is_allowed_and_a_secret_below_denies(tmp_path: Path) -> None:
    make(tmp_path, ["src/a.py", "src/b/c.py"])
    assert grep(tmp_path, "src") == ("allow", "fs:read:/src: granted by p.bgp:2; fs:read:/src/**: every file it reaches now is granted (2 files)")
    make(tmp_path, ["src/b/.env"])
    effect, why = grep(tmp_path, "src")
    assert effect == "deny" and why == "fs:read:/src/**: fs:read:/src/b/.env is below it: denied by p.bgp:3 (secrets)"
    make(tmp_path, ["logs/x.log"])
    assert grep(tmp_path, "logs")[0] == "ask"


def test_links_and_bounds_keep_the_patterns_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = tmp_path / "p", tmp_path / "out"
    make(root, ["src/a.py", "data/a.txt", ".env"])
    make(outside, ["x.txt"])
    (root / "data" / "ext").symlink_to(outside)
    (root / "src" / "env").symlink_to("../.env")
    effect, why = grep(root, "data")
    assert effect == "deny" and "/data/ext is a linked directory" in why
    assert grep(root, "src")[0] == "deny"  # a file link to .env is .env
    (root / "src" / "env").unlink()
    assert grep(root, "src")[0] == "allow"
    monkeypatch.setattr(trees, "MAX_ENTRIES", 0)
    effect, why = grep(root, "src")
    assert effect == "deny" and "not listed one by one" in why


def test_a_directory_whose_name_a_pattern_escapes_is_walked(tmp_path: Path) -> None:
    """The search's directory is the pattern's fixed part unescaped: ``c\\d/[b]`` is the need
    ``/c\\\\d/\\[b]/**``, and its files are those of the directory named ``c\\d/[b]`` (read
    as the escaped text, it names nothing, and a secret there would pass as "0 files")."""
    make(tmp_path, ["c\\d/[b]/a.py", "c\\d/[b]/.env"])
    effect, why = grep(tmp_path, "c\\d/[b]")
    assert (effect, why) == ("deny", "fs:read:/c\\\\d/\\[b]/**: fs:read:/c\\d/[b]/.env is below it: denied by p.bgp:3 (secrets)")


def make_deep(top: Path, levels: int, secret: str = ".env") -> str:
    """``levels`` directories of 200 bytes below ``top`` and ``secret`` at the bottom, made by
    directory handle (their host path may pass PATH_MAX, 4096 bytes); their path from ``top``."""
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d" * 200, dir_fd=here)
            below = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = below
        os.close(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=here))
    finally:
        os.close(here)
    return "/".join(["d" * 200] * levels)


def test_a_directory_too_deep_to_list_keeps_the_patterns_answer(tmp_path: Path) -> None:
    """Below PATH_MAX of host path the walk cannot list a directory by its path (ENAMETOOLONG),
    but a search walking by directory handles (grep -r) reads it: a secret there must not let
    the search through as "0 files"."""
    make(tmp_path, ["src/a.py"])
    make_deep(tmp_path / "src", 25)
    effect, why = grep(tmp_path, "src")
    assert effect == "deny"
    assert why.endswith("fs:read:/src/**: not granted by the plan; a directory below /src cannot be listed (File name too long): its files are not listed")


def test_a_search_directory_past_path_max_keeps_the_patterns_answer(tmp_path: Path) -> None:
    """A project 3.4 KB deep and a search 0.8 KB below it: the directory's host path passes
    PATH_MAX, so it cannot even be looked at, but a search run in the project reads it by its
    relative path. Not "0 files": the pattern's own answer."""
    root = tmp_path / make_deep(tmp_path, 17, "a.py")
    below = make_deep(root, 4)
    effect, why = grep(root, below)
    assert effect == "deny"
    assert why.endswith(f"/**: not granted by the plan; /{below} cannot be listed (File name too long): its files are not listed")

NAMES = st.sampled_from(["a.py", ".env", "secrets", "x.log", "b", "c.txt"])


def test_a_search_through_a_link_loop_reaches_nothing(tmp_path: Path) -> None:
    """A link to itself on the searched path: the search cannot open it (ELOOP) any more than a
    missing directory, so no file is reached, as the simple walk says; unlike a path too long
    to list, which a search does read."""
    (tmp_path / "b").symlink_to("b")
    assert trees.files_reached(str(tmp_path), "/b/b/**") == []
    assert trees.files_reached(str(tmp_path), "/b/b/**") == reference_files_reached(str(tmp_path), "/b/b/**")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(NAMES, min_size=1, max_size=3), max_size=6))
def test_the_answer_is_the_worst_file_below(tmp_path_factory: pytest.TempPathFactory, paths: list[list[str]]) -> None:
    root = tmp_path_factory.mktemp("tree")
    (root / "src").mkdir()
    files = []
    for parts in paths:
        target = root / "src" / os.path.join(*parts)
        if any(p.is_file() for p in target.parents) or target.is_dir():
            continue  # a file where a directory must be, or the reverse
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x")
        files.append("/src/" + "/".join(parts))
    reached = [f for f in files if (root / f.lstrip("/")).is_file()]
    segments = [f.split("/") for f in reached]
    if any(s[-1] == ".env" or "secrets" in s[:-1] for s in segments):  # /**/.env, /**/secrets/**
        expected = "deny"
    elif any(s[-1].endswith(".log") for s in segments):
        expected = "ask"
    else:
        expected = "allow"
    assert grep(root, "src")[0] == expected, reached


# --- the walk and the placement against the simple implementation they replace ------------------


def reference_files_reached(root: str, pattern: str) -> list[str] | str:
    """The walk as it was first written (os.walk, islink a subdirectory, realpath of the start):
    what :func:`bgc.runtime.trees.files_reached` must list, or refuse with the same words."""
    compiled = glob.parse(pattern)
    fixed = trees._fixed_directory(pattern)
    start = os.path.join(root, fixed.lstrip("/"))
    if not os.path.lexists(start):
        return []
    if os.path.realpath(start) != os.path.normpath(start):
        return f"{fixed} is a linked directory: its files are not listed"
    if not os.path.isdir(start):
        return [fixed] if compiled.matches(fixed) else []
    found: list[str] = []
    seen = 0
    for directory, subdirectories, files in os.walk(start):
        seen += len(subdirectories) + len(files)
        if seen > trees.MAX_ENTRIES:
            return f"more than {trees.MAX_ENTRIES:,} entries below {fixed}: its files are not listed one by one"
        for name in subdirectories:
            if os.path.islink(os.path.join(directory, name)):
                linked = "/" + os.path.relpath(os.path.join(directory, name), root)
                return f"{linked} is a linked directory: its files are not listed"
        for name in files:
            path = "/" + os.path.relpath(os.path.join(directory, name), root)
            if compiled.matches(path):
                found.append(path)
    return sorted(found)


def reference_place(workspace: Workspace, value: str) -> list[tuple[str, str]]:
    """Placing a host path as it was first written: the real path of one outside the project by
    os.path.realpath, always."""
    absolute = value if value.startswith("/") else os.path.join(workspace.cwd, value)
    lexical = resources.normalise("fs", absolute)
    assert isinstance(lexical, str)
    inside = workspace._relative(lexical)
    if inside is not None:
        return [("fs", inside)]
    placed = [("host", lexical)]
    real = os.path.realpath(lexical)
    if real != lexical:
        placed.append(("host", real) if workspace._relative(real) is None else ("fs", workspace._relative(real)))  # type: ignore[arg-type]
    return placed


TREE_NAMES = st.sampled_from(["a.py", ".env", "secrets", "x.log", "b", "[b]", "c\\d"])  # names a pattern escapes
TREE_PATHS = st.lists(TREE_NAMES, min_size=1, max_size=3).map("/".join)
LINK_TARGETS = st.one_of(
    TREE_PATHS.map(lambda path: ("inside", path)),  # a file or directory of the tree, or nothing yet
    st.sampled_from([("outside", "x.txt"), ("outside", ""), ("dangling", ""), ("itself", ""), ("parent", "")]),
)
TREE_ENTRIES = st.lists(
    st.one_of(
        st.tuples(st.just("file"), TREE_PATHS, st.none()),
        st.tuples(st.just("dir"), TREE_PATHS, st.none()),
        st.tuples(st.just("link"), TREE_PATHS, LINK_TARGETS),
    ),
    max_size=10,
)
"""A directory tree as it is made, in order: files, directories and symbolic links (to a file or a
directory of the tree, out of it, to nothing, to itself, to its own directory)."""


def build_tree(base: Path, entries: list[tuple[str, str, tuple[str, str] | None]]) -> tuple[Path, Path]:
    """The tree under ``base/p`` (and a directory outside it, ``base/out``), and ``base/alias``, a
    link to ``base/p``: a project reached through a linked ancestor."""
    root, outside = base / "p", base / "out"
    make(outside, ["x.txt", ".env"])
    root.mkdir()
    (base / "alias").symlink_to(root)
    for kind, path, target in entries:
        place = root / path
        try:
            place.parent.mkdir(parents=True, exist_ok=True)
            if kind == "file":
                place.write_text("x")
            elif kind == "dir":
                place.mkdir()
            else:
                where, name = target  # type: ignore[misc]
                points = {
                    "inside": root / name,
                    "outside": outside / name,
                    "dangling": root / "missing",
                    "itself": place,
                }
                place.symlink_to(place.parent if where == "parent" else os.path.relpath(points[where], place.parent))
        except OSError:
            continue  # a file where a directory must be, a name already taken
    return root, base / "alias"


TREE_PATTERNS = ["/**", "/b/**", "/b/b/**", "/secrets/**", "/**/*.py", "/b/*", "/a.py/**", "/b/a.py/**"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TREE_ENTRIES, st.sampled_from([3, 10_000]))
def test_the_walk_lists_what_the_simple_walk_lists(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[str, str, tuple[str, str] | None]], limit: int
) -> None:
    root, alias = build_tree(tmp_path_factory.mktemp("walk"), entries)
    with patch.object(trees, "MAX_ENTRIES", limit):
        for base in (str(root), str(alias)):
            for pattern in TREE_PATTERNS:
                reached = trees.files_reached(base, pattern)
                listed = reached if isinstance(reached, str) else [file.path for file in reached]
                assert listed == reference_files_reached(base, pattern), (base, pattern)
                for file in [] if isinstance(reached, str) else reached:  # link-free: it lands where it reads
                    host = os.path.join(base, file.path.lstrip("/"))
                    assert not file.link_free or os.path.realpath(host) == host, (base, pattern, file)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TREE_ENTRIES, st.booleans())
def test_a_search_decides_as_when_every_file_is_resolved_under_the_root(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[str, str, tuple[str, str] | None]], folded: bool
) -> None:
    root, _ = build_tree(tmp_path_factory.mktemp("search"), entries)
    search = decider(root, "filesystem case-insensitive\n" + POLICY if folded else POLICY)

    def every_file_resolved(base: str, pattern: str) -> list[trees.FileReached] | str:
        reached = reference_files_reached(base, pattern)
        return reached if isinstance(reached, str) else [trees.FileReached(path, False) for path in reached]

    for directory in ("", "b", "b/b", "secrets", "a.py"):
        call = {"path": str(root / directory), "pattern": "x"}
        decided = search.decide_call("grep", None, call)
        with (
            patch.object(trees, "files_reached", every_file_resolved),
            patch.object(search, "_link_free_gate", search.gate),
        ):
            assert decided == search.decide_call("grep", None, call), directory


def test_a_name_that_is_not_text_is_resolved_by_the_rooted_gate(tmp_path: Path) -> None:
    make(tmp_path, ["src/a.py"])
    (tmp_path / "src" / "n").write_text("x")
    os.rename(tmp_path / "src" / "n", os.fsencode(tmp_path / "src") + b"/\xff.py")
    reached = trees.files_reached(str(tmp_path), "/src/**")
    assert reached == [trees.FileReached("/src/a.py", True), trees.FileReached("/src/\udcff.py", False)]
    why = "fs:read:/src/**: fs:read:/src/\udcff.py is below it: rejected: is not valid UTF-8 (byte 0xFF)"
    assert grep(tmp_path, "src") == ("deny", why)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TREE_ENTRIES, st.lists(st.tuples(st.sampled_from(["p", "alias", "out", "host"]), TREE_PATHS), max_size=6))
def test_a_host_path_is_placed_as_realpath_places_it(
    tmp_path_factory: pytest.TempPathFactory,
    entries: list[tuple[str, str, tuple[str, str] | None]],
    paths: list[tuple[str, str]],
) -> None:
    base = tmp_path_factory.mktemp("place")
    build_tree(base, entries)
    make(base / "host", ["x.txt"])  # outside: a link into the project, to a file, to nothing
    (base / "host" / "in").symlink_to(base / "p")
    (base / "host" / "b").symlink_to("x.txt")
    (base / "host" / "a.py").symlink_to("missing")
    workspace = Workspace.at(str(base / "p"))
    for top, path in [*paths, ("host", "in/b"), ("host", "b"), ("host", "a.py/b"), ("host", "x.txt/b")]:
        value = f"{base}/{top}/{path}"
        assert workspace.place(value) == reference_place(workspace, value), value
