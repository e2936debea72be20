"""The fast ways host paths are decided (bgc.runtime.calls) against the general way, by class of path.

A host path that is plainly canonical (printable ASCII, absolute, no empty, ``.`` or ``..``
segment) is placed without being read again (``CallDecider._place``), and one inside the
project is decided as its workspace path without being normalised again; a search's directory
that its walk proved to have no link is decided without looking for links again. Each must
give what the general way gives — ``Workspace.place``, ``CallDecider.decide_general`` — for
every class of path: inside and outside the project, through links that stay, leave, come
back, loop and dangle, with ``..`` and ``//``, with bytes that are not UTF-8, dotfiles, the
project itself and its look-alike sibling, paths past the pattern bound, on a case-sensitive
and a case-insensitive file system.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core import gate
from bgc.core import resources
from bgc.core.resources import fs, kind
from bgc.runtime.calls import CallDecider, Workspace, implicit_plan
from bgc.core.gate import GateDecision, worded
from bgc.core.plan import Approvals, RuleRef
from bgc.core.policy.loader import parse_policy

POLICY = """\
tool Read needs fs:read:{file_path} ignores offset
tool Write needs fs:write:{file_path} ignores content
tool Grep needs fs:read:{path}, fs:read:{path}/** ignores pattern
tool Both needs fs:read:{path}, fs:write:{path}
allow fs:read:/** because "read"
allow fs:write:/src/** because "write"
deny fs:*:/**/.env, /.git/**, /**/secrets/** because "secrets"
ask fs:read:/**/*.log because "logs"
allow host:read:/usr/** because "shared"
"""


def deciders(root: str, cwd: str) -> list[CallDecider]:
    """Deciders in the project at ``root``: on a case-sensitive and a case-insensitive file system."""
    workspace = Workspace.at(root, cwd)
    return [
        CallDecider([implicit_plan(parse_policy(text, "p.bgp"), None)], workspace=workspace)
        for text in (POLICY, "filesystem case-insensitive\n" + POLICY)
    ]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with files, secrets and logs, and links that stay inside (to a file, to a
    directory, to a secret), leave, come back, chain, loop and dangle; beside it a directory
    whose name starts with the project's (``px``) and one outside it."""
    base = Path(os.path.realpath(tmp_path_factory.mktemp("host")))
    project, outside, sibling = base / "p", base / "o", base / "px"
    for directory in (project / "src" / "deep" / "er", project / ".git", project / "logs", outside / "d", sibling):
        directory.mkdir(parents=True)
    for file in ("src/a.py", "src/deep/er/b.py", ".env", ".git/config", "logs/x.log", "src/.env.example"):
        (project / file).write_text("x")
    (outside / "d" / "x").write_text("x")
    (sibling / "a.py").write_text("x")
    os.mkdir(os.fsencode(project / "src") + b"/\xff")  # a name that is not UTF-8
    links = {
        project / "src" / "env": "../.env",
        project / "src" / "up": "..",
        project / "src" / "git": str(project / ".git"),
        project / "out": str(outside),
        project / "abs": str(project / "src"),
        project / "chain": "abs",
        project / "loop": "loop",
        project / "dangling": "nowhere/at/all",
        outside / "back": str(project / ".git"),
        project / "via": str(outside / "back"),
        sibling / "in": str(project / "src"),
    }
    for link, target in links.items():
        link.symlink_to(target)
    return project


_SEGMENTS = [
    "src", "a.py", "deep", "er", "b.py", ".env", ".env.example", ".git", "config", "logs", "x.log", "env", "up", "git",
    "out", "abs", "chain", "loop", "dangling", "via", "d", "x", "in", "missing", "..", ".", "", "\udcff", "a\\b", "*",
    "e\u0301", "\u00e9", "\x7f", "secrets",
]  # fmt: skip
"""Names the project holds (files, directories, every kind of link), names it does not, and
segments of every kind a path may not plainly hold: ``..``, ``.``, empty (``//``), a byte that is
not UTF-8 (as ``surrogateescape`` carries it), a backslash, a wildcard, a decomposed accent, a
control character."""


def host_paths(root: str) -> st.SearchStrategy[str]:
    """Host paths by class: under the project, under its parent (outside, or in the sibling whose
    name starts with the project's), relative to the working directory, the project itself."""
    base = os.path.dirname(root)
    tail = st.lists(st.sampled_from(_SEGMENTS), min_size=0, max_size=6).map("/".join)
    return st.one_of(
        tail.map(lambda t: f"{root}/{t}"),
        tail.map(lambda t: f"{root}/{t}"),
        st.tuples(st.sampled_from(["o", "px", "p/../o", "p/./src"]), tail).map(lambda p: f"{base}/{p[0]}/{p[1]}"),
        tail,
        tail.map(lambda t: f"/usr/{t}"),
        st.sampled_from([root, root + "/", f"{root}x", f"{root}x/a", "/", "//" + root.lstrip("/") + "/src/a.py"]),
    )


def _agree(decider: CallDecider, tool: str, params: dict[str, object]) -> None:
    """The call decided the fast way (its compiled form, twice: the tool compiled by the first)
    is the call decided the general way, atom for atom, rule for rule."""
    general = decider.decide_general(tool, None, params)
    assert decider.decide_call(tool, None, params) == general, (tool, params)
    assert decider.decide_call(tool, None, params) == general, (tool, params)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_host_paths_are_placed_as_the_general_way_places_them(project: Path, data: st.DataObject) -> None:
    root = str(project)
    cwd = data.draw(st.sampled_from([root, f"{root}/src", f"{root}/abs", os.path.dirname(root)]))
    path = data.draw(host_paths(root))
    for decider in deciders(root, cwd):
        assert decider.workspace is not None
        places, canonical = decider._place(path)
        assert places == decider.workspace.place(path), path
        if canonical:  # its one place is a workspace path that normalises to itself on this file system
            assert len(places) == 1 and places[0][0] == "fs", path
            folded = decider.gate.case_insensitive
            assert resources.normalise("fs", places[0][1], case_insensitive=folded) == places[0][1], path


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_host_path_calls_decide_as_the_general_way(project: Path, data: st.DataObject) -> None:
    root = str(project)
    cwd = data.draw(st.sampled_from([root, f"{root}/src", os.path.dirname(root)]))
    path = data.draw(host_paths(root))
    for decider in deciders(root, cwd):
        _agree(decider, "Read", {"file_path": path})
        _agree(decider, "Write", {"file_path": path, "content": "x"})
        _agree(decider, "Both", {"path": path})
        _agree(decider, "Grep", {"path": path, "pattern": "x"})


def test_each_class_of_path_decides_as_the_general_way(project: Path) -> None:
    """Every class once, so that none is left to chance: a plain file, a dotfile and a secret,
    a file and a directory through a link that stays, one to a secret, one that leaves and
    comes back to a secret, a chain, a loop, a dangling link, a missing name past a link (a
    search finds no directory there, and proves nothing), ``..`` across a link, ``//``, a name
    that is not UTF-8, the project itself and its look-alike sibling, a path outside, and paths
    about the pattern bound (1,024 characters once escaped)."""
    root = str(project)
    base = os.path.dirname(root)
    tails = [
        "src/a.py", "src/.env.example", ".env", ".git/config", "logs/x.log", "src/deep/er/b.py", "src/deep", "src",
        "abs/a.py", "abs", "chain/deep", "src/env", "src/git/config", "src/git", "out/d/x", "out/d", "via/config", "via",
        "loop", "loop/x", "dangling", "dangling/x", "src/up/.env", "src/up/src", "abs/../.env", "src//a.py",
        "src/./a.py", "src/\udcff", "src/\udcff/x", "missing/new.py", "src/new.py", "src/git/missing", "via/missing",
        "abs/missing", "out/missing", "src/env/x",
    ]  # fmt: skip
    paths = [f"{root}/{tail}" for tail in tails]
    paths += [root, f"{root}/", f"{base}/px/a.py", f"{base}/px/in/a.py", f"{base}/o/d/x", "/usr/share/x", "src/a.py"]
    paths += [f"{root}/src/{'y' * n}" for n in range(1016 - len(root) - 8, 1026 - len(root) - 8)]  # about the bound
    paths += [f"{root}/src/{'*' * n}" for n in (500, 509, 510)]  # each '*' escaped takes two
    for decider in deciders(root, f"{root}/src"):
        for path in paths:
            _agree(decider, "Read", {"file_path": path})
            _agree(decider, "Write", {"file_path": path, "content": "x"})
            _agree(decider, "Both", {"path": path})
            _agree(decider, "Grep", {"path": path, "pattern": "x"})


def test_plain_calls_take_the_fast_ways(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast ways are what decides plain calls (else the properties above compare the
    general way with itself): a plain path, inside or outside, is never placed the general
    way, and a search whose directory has no link looks at each name on its way once (a Grep
    of ``src/deep``: each name from / to it, for its walk; its own atom takes the walk's proof)."""
    root = str(project)
    decider = deciders(root, root)[0]
    assert decider.workspace is not None
    placed: list[str] = []
    place = Workspace.place
    monkeypatch.setattr(Workspace, "place", lambda self, value: placed.append(value) or place(self, value))
    assert decider.decide_call("Read", None, {"file_path": f"{root}/src/a.py"}).effect == "allow"
    assert decider.decide_call("Read", None, {"file_path": f"{root}/.env"}).effect == "deny"
    assert decider.decide_call("Read", None, {"file_path": "/usr/share/x"}).effect == "allow"
    assert decider.decide_call("Grep", None, {"path": f"{root}/src", "pattern": "x"}).effect == "deny"  # src/env
    assert placed == []
    looked: list[str] = []
    lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda path: looked.append(path) or lstat(path))
    assert decider.decide_call("Grep", None, {"path": f"{root}/src/deep", "pattern": "x"}).effect == "allow"
    assert sorted(looked) == sorted({f"/{'/'.join(root.split('/')[1 : n + 1])}" for n in range(1, root.count("/") + 1)} | {
        f"{root}/src", f"{root}/src/deep"})  # fmt: skip
    assert len(looked) == len(set(looked))


@settings(max_examples=500)
@given(st.lists(st.sampled_from(["a", "b.c", ".d", "..", ".", "", "e f", "\u00e9", "e\u0301", "\x7f", "*", "\\", "~1"]), max_size=5))
def test_a_plain_path_and_each_of_its_tails_are_canonical(segments: list[str]) -> None:
    path = "/" + "/".join(segments)
    if fs.plain_path(path):
        for at in [index for index, char in enumerate(path) if char == "/"]:
            assert resources.normalise("fs", path[at:]) == path[at:], path
            assert resources.normalise("host", path[at:]) == path[at:], path


@settings(max_examples=500)
@given(st.lists(st.sampled_from(["a", ".d", "..", ".", "", "\u00e9", "e\u0301", "\\", "x.", "GIT~1", "a:b"]), max_size=5), st.booleans())
def test_fs_paths_are_normalised_as_read_segment_by_segment(segments: list[str], folded: bool) -> None:
    """The shortcut for paths with no empty, ``.`` or ``..`` segment gives what reading the
    path segment by segment gives (the reference, as it was written before the shortcut)."""
    path = "/" + "/".join(segments)
    normalised = resources.normalise("fs", path, case_insensitive=folded)
    text_problem = kind.text_problem(path)
    stack: list[str] = []
    for segment in path.split("/"):
        if segment == ".." and not stack:
            stack = ["<above />"]
            break
        if segment == "..":
            stack.pop()
        elif segment not in ("", "."):
            stack.append(segment)
    if text_problem or stack == ["<above />"]:
        assert isinstance(normalised, resources.Rejection), path
    elif not folded or fs.alias_problem(path, stack) is None:
        assert normalised == "/" + "/".join(stack), path
    else:
        assert isinstance(normalised, resources.Rejection), path


@pytest.mark.parametrize("room", [gate.MAX_WORDED, 3])
def test_each_decision_is_worded_as_it_reads(room: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``worded`` keeps the words of each decision object it is given: decisions made and
    dropped one after another (CPython gives a new one the place of the last, and so its id)
    are each worded as they read, also when the words kept are dropped for room."""
    monkeypatch.setattr(gate, "MAX_WORDED", room)
    rule = RuleRef("p.bgp", 3, "ask", None)
    for n in range(200):
        denied = GateDecision("deny", f"denied by p.bgp:{n}")
        assert worded(denied) == ("deny", f"denied by p.bgp:{n}", None, (), ())
        del denied
        asked = GateDecision("ask", "awaits approval", (Approvals(n + 1),), rule, (rule,))
        count = f"{n + 1} approval" + ("s" if n else "")
        assert worded(asked) == ("ask", f"awaits {count} (ask p.bgp:3)", rule, (Approvals(n + 1),), (rule,))
        del asked
        granted = GateDecision("allow", "", (), RuleRef("p.bgp", n, "allow", None))
        assert worded(granted)[1] == f"granted by p.bgp:{n}"
        assert worded(granted)[1] == f"granted by p.bgp:{n}"  # kept


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_value_a_call_names_itself_decides_as_the_declared_tool_would(project: Path, data: st.DataObject) -> None:
    """``decide_values`` (an editor's file read or write: the path itself, no declaration) gives
    what a tool declared ``needs fs:ACTION:{file_path}`` gives the same path, the general way
    (ACP paths are absolute: the proxy refuses any other before deciding)."""
    root = str(project)
    path = data.draw(host_paths(root).filter(lambda path: path.startswith("/")))
    for decider in deciders(root, root):
        for tool, action, params in (("Read", "read", {"file_path": path}), ("Write", "write", {"file_path": path, "content": "x"})):
            reference = decider.decide_general(tool, None, params)
            decided = decider.decide_values(tool, "acp", [("fs", action, path)])
            assert decided.effect == reference.effect, path
            assert [atom.atom for atom in decided.atoms] == [atom.atom for atom in reference.atoms], path
            assert [atom.rule for atom in decided.atoms] == [atom.rule for atom in reference.atoms], path
