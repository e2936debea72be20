"""Whether the process deciding calls takes code from the project (bgc.runtime.isolation), by the
kinds of place it can take code from, and by the spellings of the project."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from bgc.runtime.isolation import imports_inside


def _spellings(project: Path, tmp_path: Path) -> list[str]:
    link = tmp_path / "link-to-project"
    link.symlink_to(project)
    return [str(project), f"{project}/", f"{project}/.", str(link), f"{project}/src/.."]


def test_nothing_of_this_process_lies_in_a_fresh_project(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    assert imports_inside(str(tmp_path / "p")) is None


@pytest.mark.parametrize("kind", ["sys.path entry", "sys.path entry not made yet", "relative entry", "another process's entry",
                                  "a module loaded without an entry", "the interpreter"])  # fmt: skip
def test_every_kind_of_place_inside_the_project_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    project = tmp_path / "p"
    (project / "src").mkdir(parents=True)
    extra: list[str] = []
    if kind == "sys.path entry":
        monkeypatch.setattr(sys, "path", [*sys.path, str(project / "src")])
    elif kind == "sys.path entry not made yet":
        monkeypatch.setattr(sys, "path", [*sys.path, str(project / "later" / "lib")])
    elif kind == "relative entry":
        monkeypatch.chdir(project)
        monkeypatch.setattr(sys, "path", ["", *sys.path])
    elif kind == "another process's entry":
        extra = [str(project / "src")]
    elif kind == "the interpreter":  # a link to a real one, in a directory the agent may write: it could become anything
        monkeypatch.setattr(sys, "executable", str(project / "bin" / "python3"))
    else:  # an editable install's finder maps a package to a directory no sys.path entry names
        (project / "src" / "mapped_module_for_test.py").write_text("x = 1\n")
        spec = importlib.util.spec_from_file_location("mapped_module_for_test", project / "src" / "mapped_module_for_test.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        monkeypatch.setitem(sys.modules, "mapped_module_for_test", module)
    for spelling in _spellings(project, tmp_path):
        refusal = imports_inside(spelling, extra)
        assert refusal is not None and "inside the project" in refusal, (kind, spelling)


def test_a_project_that_cannot_be_examined_refuses(tmp_path: Path) -> None:
    assert imports_inside(str(tmp_path / "gone")) is not None
    assert imports_inside(os.devnull + "/x") is not None


@pytest.mark.parametrize("whose", ["this process's", "another process's"])
def test_an_entry_another_path_hook_claims_is_no_place_until_something_has_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whose: str
) -> None:
    """An editable install puts a key of its own path hook on ``sys.path``
    (``__editable__.NAME.finder.__path_hook__``): relative, it would read as a folder of the
    working directory (the project) that is not there yet. While nothing has that name it is the
    hook's key and no place; once a folder of that name appears, the file system's hook (tried
    first) would read it, and the project is refused."""
    key = "__editable__.planted.finder.__path_hook__"

    class Claimed:
        def find_spec(self, name: str, target: object = None) -> None:
            return None

    def hook(entry: str) -> Claimed:
        if entry != key:
            raise ImportError(entry)
        return Claimed()

    project = tmp_path / "p"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path_hooks", [*sys.path_hooks, hook])
    if whose == "this process's":
        monkeypatch.setattr(sys, "path", [*sys.path, key])
        extra: list[str] = []
    else:
        extra = [key]
    assert imports_inside(str(project), extra, str(project)) is None
    monkeypatch.setattr(sys, "path_hooks", [item for item in sys.path_hooks if item is not hook])
    assert imports_inside(str(project), extra, str(project)) is not None  # nobody claims it: a folder to be
    monkeypatch.setattr(sys, "path_hooks", [*sys.path_hooks, hook])
    (project / key).mkdir()
    assert imports_inside(str(project), extra, str(project)) is not None
