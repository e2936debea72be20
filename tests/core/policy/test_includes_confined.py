"""An include stays inside the root policy's directory tree and never shows a foreign file.

``include "../../../etc/hostname"`` used to be read, and its first line echoed in the syntax
error; ``include "a<NUL>b.bgp"`` was an internal error. The class is every way an include path
can reach out of the tree — climbing with ``..`` (from the root file or from a file it includes),
a symbolic link to a file or to a directory outside, an absolute path — tried from every kind of
including file, plus every control character in the path. Each must be refused (BGC010 at the
path, BGC017 for a character) with exit 2, no traceback, nothing of the outside file's content in
the output, and the policy not loaded. Includes that stay inside (a ``..`` back into the tree, a
link within it) still load.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bgc.core.policy.loader import load_policy
from bgc.core.policy.parser import PolicyError
from tests.samples import bgc, characters_in

SECRET = "root:x:0:0:TOP-SECRET-LINE"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``outside/`` holds a secret and a valid policy; ``repo/`` is the policy tree, with links
    leading out of it and one staying in."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(SECRET + "\n")
    (outside / "ok.bgp").write_text("deny fs:*:/.env\n")
    repo = tmp_path / "repo"
    (repo / "sub" / "deeper").mkdir(parents=True)
    (repo / "base.bgp").write_text("deny fs:*:/.git/**\n")
    (repo / "sub" / "lib.bgp").write_text('include "../base.bgp"\ndeny fs:*:/.ssh/**\n')
    (repo / "file-link.bgp").symlink_to(outside / "passwd")
    (repo / "policy-link.bgp").symlink_to(outside / "ok.bgp")
    (repo / "dir-link").symlink_to(outside, target_is_directory=True)
    (repo / "inside-link.bgp").symlink_to(repo / "sub" / "lib.bgp")
    monkeypatch.chdir(repo)
    return repo


ESCAPES = [
    "../outside/passwd",
    "../outside/ok.bgp",
    "../../../../../../../../etc/hostname",
    "sub/../../outside/passwd",
    "./../outside/ok.bgp",
    "file-link.bgp",
    "policy-link.bgp",
    "dir-link/passwd",
    "dir-link/ok.bgp",
    "sub/../dir-link/ok.bgp",
]
"""Include paths that leave ``repo/`` (relative to ``repo/``: the root file's directory)."""

# (file that includes, how the escape is written relative to that file, where the include sits)
INCLUDERS = {
    "root": ("root.bgp", "{path}", 2),
    "included": ("sub/lib2.bgp", "../{path}", 2),
    "nested": ("sub/deeper/lib3.bgp", "../../{path}", 2),
}


def _write_chain(repo: Path, includer: str, path: str) -> Path:
    """A root policy that reaches ``includer``, which includes ``path`` on its line 2."""
    file, template, _ = INCLUDERS[includer]
    (repo / file).write_text(f'deny fs:*:/.env\ninclude "{template.format(path=path)}"\n')
    if file != "root.bgp":
        (repo / "root.bgp").write_text(f'include "{file}"\n')
    return repo / "root.bgp"


@pytest.mark.parametrize("includer", INCLUDERS)
@pytest.mark.parametrize("path", ESCAPES)
def test_an_include_leaving_the_tree_is_refused(tree: Path, includer: str, path: str) -> None:
    root = _write_chain(tree, includer, path)
    file, _, line = INCLUDERS[includer]
    with pytest.raises(PolicyError) as caught:
        load_policy(root)
    error = caught.value
    assert error.code == "BGC010", error.render()
    assert os.path.realpath(error.span.file) == os.path.realpath(tree / file)
    assert (error.span.line, error.span.col) == (line, 9)
    assert "outside the root policy's directory" in error.message
    assert "TOP-SECRET" not in error.render()


def test_bgc_check_refuses_every_escape_without_echoing_the_file(tree: Path) -> None:
    names = []
    for index, path in enumerate(ESCAPES):
        name = f"root{index}.bgp"
        (tree / name).write_text(f'include "{path}"\n')
        names.append(name)
    result = bgc("check", *names)
    assert result.exit_code == 2
    for name in names:
        assert f"{name}:1:9: error[BGC010]:" in result.output
    assert "TOP-SECRET" not in result.output and "/.env" not in result.output
    assert f"bgc check: {len(names)} files could not be parsed" in result.output


def test_includes_inside_the_tree_load_however_the_root_is_named(tree: Path) -> None:
    (tree / "root.bgp").write_text('include "sub/lib.bgp"\ninclude "inside-link.bgp"\ninclude "sub/../base.bgp"\n')
    policy = load_policy("root.bgp")
    assert [rule.patterns for rule in policy.rules] == [("/.git/**",), ("/.ssh/**",)]
    os.chdir(tree.parent)
    (tree.parent / "alias").symlink_to(tree, target_is_directory=True)
    for named in ("repo/root.bgp", tree / "root.bgp", "alias/root.bgp", "alias/sub/../root.bgp"):
        assert load_policy(named).rules == policy.rules, named


def test_an_included_file_may_climb_back_to_the_root_directory(tree: Path) -> None:
    (tree / "sub" / "deeper" / "lib3.bgp").write_text('include "../../base.bgp"\n')
    (tree / "root.bgp").write_text('include "sub/deeper/lib3.bgp"\n')
    assert [file.path for file in load_policy("root.bgp").files] == ["root.bgp", "sub/deeper/lib3.bgp", "base.bgp"]


CONTROLS = [char for char in characters_in("Cc") if char not in "\t\n"]


def test_every_control_character_in_an_include_path_is_a_located_error(tree: Path) -> None:
    names = []
    for char in CONTROLS:
        name = f"ctl-{ord(char):02x}.bgp"
        (tree / name).write_text(f'deny fs:*:/.env\ninclude "sub/a{char}b.bgp"\n', newline="")
        names.append(name)
    result = bgc("check", *names)
    assert result.exit_code == 2
    for name in names:
        assert f"{name}:2:15: error[BGC017]:" in result.output, name
    assert "internal error" not in result.output


@pytest.mark.parametrize("path", ["/etc/hostname", "//etc/hostname", "/" + "../" * 8 + "etc/hostname"])
def test_absolute_includes_stay_refused(tree: Path, path: str) -> None:
    (tree / "root.bgp").write_text(f'include "{path}"\n')
    result = bgc("check", "root.bgp")
    assert result.exit_code == 2 and "root.bgp:1:9: error[BGC010]: include paths are relative" in result.output
