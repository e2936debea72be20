"""The compiled form of tool declarations (bgc.runtime.calls._CompiledTool) against the general way.

``CallDecider.decide_call`` decides a call through its tool's compiled declarations when the
call fills them plainly, and through ``decide_general`` (templates expanded to pattern text,
each atom decided by ``Gate.need``) otherwise. The two must give the same decision, atom for
atom, rule for rule, for every call: these tests generate calls by class — declared and unknown
tools and servers, missing, undeclared, nested and non-text parameters, values that are not
canonical, host paths inside, outside and through symbolic links — and compare.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core import resources
from bgc.runtime.calls import CallDecider, Workspace, implicit_plan
from bgc.core.gate import Gate
from bgc.core.policy.loader import parse_policy

POLICY = """\
tool Read needs fs:read:{file_path} ignores offset, limit
tool Write needs fs:write:{file_path} ignores content
tool Grep needs fs:read:{path}, fs:read:{path}/** ignores pattern
tool Fetch needs net:connect:{url} ignores prompt
tool Spawn needs agent:spawn:{kind}
tool Todo needs agent:todo:list ignores todos
tool Config needs fs:read:/etc/app.conf, fs:write:/src/{name}
tool Kill needs proc:kill:{id}
tool Issue on github needs mcp:call:github/issue, net:connect:https://github.com/{owner}/{repo}/issues ignores title, body
tool Read on files needs mcp:call:files/read, fs:read:{path} ignores head
allow fs:read:/** because "read"
allow fs:write:/src/**, /tests/** because "write"
deny fs:*:/**/.env, /.git/** because "secrets"
ask fs:write:/src/migrations/** approvals 2 of [alice, bob] because "schema"
ask net:connect:https://** because "net"
deny net:connect:https://evil.example.com/** because "evil"
allow host:read:/usr/share/** because "shared data"
allow agent:spawn:general-purpose because "agents"
allow agent:todo:* because "to-do lists"
allow mcp:call:files/* because "files"
allow proc:kill:* because "own shells"
"""

SECOND = """\
tool Read needs fs:read:{file_path} ignores offset
tool Fetch needs net:connect:{url}, mcp:call:net/fetch ignores prompt
allow mcp:call:net/fetch because "fetching"
"""
"""A second plan declaring two of the tools again: every declaration of a tool applies (the
needs add up, a parameter must be named or ignored by each)."""


@pytest.fixture(scope="module")
def plans():  # type: ignore[no-untyped-def]
    return [implicit_plan(parse_policy(POLICY, "p.bgp"), None), implicit_plan(parse_policy(SECOND, "q.bgp"), None)]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with files, and links that stay inside, leave, come back, loop and dangle."""
    base = tmp_path_factory.mktemp("compiled")
    project, outside = base / "p", base / "o"
    for directory in (project / "src" / "migrations", project / ".git", outside / "data"):
        directory.mkdir(parents=True)
    for file in (
        project / "src" / "a.py",
        project / ".env",
        project / ".git" / "config",
        project / "file",
        outside / "x",
    ):
        file.write_text("x")
    links = {
        project / "src" / "env": "../.env",
        project / "out": str(outside),
        project / "abs": str(project / "src"),
        project / "chain": "abs",
        project / "loop": "loop",
        project / "dangling": "nowhere/at/all",
        project / "up": "..",
        outside / "back": str(project / ".git"),
        project / "via": str(outside / "back"),
    }
    for link, target in links.items():
        link.symlink_to(target)
    return project


_SEGMENTS = st.sampled_from([
    "src", "a.py", "migrations", ".env", ".git", "config", "env", "out", "abs", "chain", "loop", "dangling", "up",
    "via", "file", "x", "data", "back", "tests", "..", ".", "", "*", "?", "[ab]", "a\\b", "{x}", "e\u0301", "\u00e9",
    "\x00", "\x7f", "\u017f", ":", "%2e%2e", "README.md",
])  # fmt: skip


def _paths(root: str, outside: str) -> st.SearchStrategy[str]:
    """Workspace paths, host paths under the project and outside it, relative ones, long ones."""
    tail = st.lists(_SEGMENTS, min_size=0, max_size=5).map("/".join)
    return st.one_of(
        tail.map(lambda t: "/" + t),
        tail.map(lambda t: f"{root}/{t}"),
        tail.map(lambda t: f"{outside}/{t}"),
        tail,
        st.sampled_from([root, f"{root}x/a", "/etc/passwd", "/usr/share/dict/words", "/", "//src//a.py"]),
        st.text(max_size=12),
    )


_URLS = st.sampled_from([
    "https://example.com/a", "https://evil.example.com/x", "HTTPS://Example.COM/%61", "https://evil.example.com\\.ok.com/",
    "http://example.com:80/a/../b", "ftp://example.com/", "https://xn--e1afmkfd.com/", "not a url", "https://ok.com/a?b=..",
])  # fmt: skip


def _values(root: str, outside: str) -> st.SearchStrategy[Any]:
    scalar = st.one_of(
        _paths(root, outside), _URLS, st.integers(-5, 10**20), st.booleans(), st.none(), st.floats(allow_nan=False)
    )
    return st.one_of(
        scalar, st.lists(scalar, max_size=3), st.dictionaries(st.sampled_from(["path", "url", "x"]), scalar, max_size=2)
    )


_DECLARED = {
    ("Read", None): ["file_path", "offset"],
    ("Read", "files"): ["path", "head"],
    ("Write", "local"): ["file_path", "content"],
    ("Grep", None): ["path", "pattern"],
    ("Fetch", None): ["url", "prompt"],
    ("Spawn", None): ["kind"],
    ("Todo", None): ["todos"],
    ("Config", None): ["name"],
    ("Kill", None): ["id"],
    ("Issue", "github"): ["owner", "repo", "title", "body"],
}
"""The declared tools, each on a server that declares it, and the parameters every declaration
of it names (the first one templated): a call mostly fills those."""
_SERVERS = [None, "local", "github", "files", "elsewhere", "git/hub"]
_OTHER_NAMES = ["extra", "", "file_path", "url", "limit", "path"]


def _calls(root: str, outside: str) -> st.SearchStrategy[tuple[str, str | None, Any]]:
    text = st.one_of(_paths(root, outside), _URLS)
    value = st.one_of(text, text, text, _values(root, outside))

    def params(names: list[str]) -> st.SearchStrategy[Any]:
        declared = st.fixed_dictionaries({names[0]: value}, optional={name: value for name in names[1:]})
        extra = st.dictionaries(st.sampled_from(_OTHER_NAMES), value, max_size=2)
        odd = st.one_of(
            st.lists(st.text(max_size=3), max_size=2), st.dictionaries(st.integers(), st.text(max_size=3), max_size=1)
        )
        return st.one_of(declared, declared, declared, st.tuples(declared, extra).map(lambda p: {**p[0], **p[1]}), odd)

    # mostly a declared tool on its own server; else any tool (two that no declaration names) on any server
    declared = st.sampled_from(sorted(_DECLARED, key=str)).flatmap(
        lambda ts: st.tuples(st.just(ts[0]), st.just(ts[1]), params(_DECLARED[ts]))
    )
    tools = sorted({tool for tool, _ in _DECLARED} | {"Unknown", "read"})
    other = st.tuples(st.sampled_from(tools), st.sampled_from(_SERVERS), params(["path", "file_path", "url"]))
    return st.one_of(declared, declared, declared, other)


def _agree(decider: CallDecider, call: tuple[str, str | None, Any]) -> None:
    compiled, general = decider.decide_call(*call), decider.decide_general(*call)
    assert compiled == general, call
    assert compiled == decider.decide_call(*call), call  # and again, with the tool compiled


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_declarations_decide_as_the_general_way(plans, project: Path, data: st.DataObject) -> None:  # type: ignore[no-untyped-def]
    root, outside = os.path.realpath(project), os.path.realpath(project.parent / "o")
    call = data.draw(_calls(root, outside))
    decider = CallDecider(plans)  # a fresh one: its tools compiled by this call
    _agree(decider, call)
    cwd = data.draw(st.sampled_from([root, f"{root}/src", f"{root}/out", outside]))
    _agree(CallDecider.reuse(decider, Workspace.at(root, cwd)), call)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_decider_read_back_from_the_cache_decides_as_the_one_stored(plans, project: Path, data: st.DataObject) -> None:  # type: ignore[no-untyped-def]
    """A decider pickled as the cache stores it and read back — fresh, or after calls compiled
    some of its tools, whose slots then travel with it — decides every call as the decider it
    was stored from, on its own and for a workspace."""
    import pickle

    root, outside = os.path.realpath(project), os.path.realpath(project.parent / "o")
    call = data.draw(_calls(root, outside))
    stored = CallDecider(plans)
    for earlier in data.draw(st.lists(st.one_of(st.just(call), _calls(root, outside)), max_size=3)):
        stored.decide_call(*earlier)  # its tool compiled before it is stored, or not
    loaded = pickle.loads(pickle.dumps(stored, protocol=pickle.HIGHEST_PROTOCOL))
    cwd = data.draw(st.sampled_from([root, f"{root}/src", outside]))
    assert loaded.decide_call(*call) == stored.decide_call(*call), call
    placed = [CallDecider.reuse(decider, Workspace.at(root, cwd)).decide_call(*call) for decider in (loaded, stored)]
    assert placed[0] == placed[1], call


def test_values_by_class_decide_as_the_general_way(plans, project: Path) -> None:  # type: ignore[no-untyped-def]
    """Every kind of template (a value, a host path, a fixed value beside one, a pattern of its
    own) filled with each character a pattern reads specially, and with every length about the
    bound (1,024 characters of pattern text once escaped: '*' and '\\' take two)."""
    root = os.path.realpath(project)
    base = CallDecider(plans)
    placed = CallDecider.reuse(base, Workspace.at(root, f"{root}/src"))
    odd = [f"/src/{c}" for c in ("*", "?", "[a]", "\\", "\\*", "{x}", "}", "**", "a/../..", "", "\u212a")]
    for decider, start in ((base, "/"), (placed, f"{root}/"), (placed, "")):  # "": relative, placed longer than given
        long = [
            start[: 1024 - count] + char * count
            for char in ("x", "*", "\\", "\u00e9")
            for count in (*range(509, 514), *range(1018, 1027))
        ]
        for value in (*long, *odd, *(start + v.lstrip("/") for v in odd)):
            for tool, name in (("Read", "file_path"), ("Grep", "path"), ("Fetch", "url"), ("Config", "name")):
                _agree(decider, (tool, None, {name: value}))


def test_plain_calls_take_the_compiled_form(plans, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The compiled form is what decides a plain call (else the property above compares the
    general way with itself); a call it was not compiled for still gets its answer."""
    root = os.path.realpath(project)
    decider = CallDecider(plans, workspace=Workspace.at(root))
    general = []
    monkeypatch.setattr(CallDecider, "decide_general", lambda self, *call: general.append(call))
    plain = [
        ("Read", None, {"file_path": f"{root}/src/a.py"}),
        ("Read", "files", {"path": "/usr/share/x", "head": 3}),
        ("Write", None, {"file_path": f"{root}/via/x", "content": "x"}),
        ("Fetch", None, {"url": "https://example.com/a", "prompt": "p"}),
        ("Spawn", None, {"kind": "general-purpose"}),
        ("Todo", None, {}),
        ("Config", None, {"name": "settings.py"}),
    ]
    effects = [decider.decide_call(*call).effect for call in plain]
    assert effects == ["allow", "allow", "deny", "ask", "allow", "allow", "allow"] and not general
    for other in [
        ("Read", None, {"file_path": [f"{root}/a", f"{root}/b"]}),  # a list
        ("Read", None, {"file_path": f"{root}/a", "extra": 1}),  # undeclared
        ("Read", None, {}),  # missing
        ("Kill", None, {"id": "3"}),  # an argv word
        ("Issue", "github", {"owner": "o", "repo": "r"}),  # two parameters in one template
        ("Unknown", None, {}),
    ]:
        decider.decide_call(*other)
    assert len(general) == 6


def _resolved_by_realpath(root: str, raw: str) -> str | resources.Rejection:
    """Where ``raw`` lands under ``root`` by ``os.path.realpath`` of the whole path: the reference
    the gate's walk from the root is held to."""
    real = os.path.realpath(root + raw)
    if real != root and not real.startswith(root.rstrip("/") + "/"):
        return resources.Rejection(raw, f"a symbolic link leaves the root {root}")
    target = "/" + os.path.relpath(real, root) if real != root else "/"
    normalised = resources.normalise("fs", target)
    if isinstance(normalised, resources.Rejection):
        return resources.Rejection(raw, f"rejected: the link target {normalised.reason}")
    return normalised


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=st.lists(_SEGMENTS.filter(lambda s: "\x00" not in s), min_size=1, max_size=6))
def test_links_are_resolved_as_realpath_resolves_them(plans, project: Path, segments: list[str]) -> None:  # type: ignore[no-untyped-def]
    root = os.path.realpath(project)
    gate = Gate(plans, root=root)
    raw = "/" + "/".join(segments)
    assert gate._resolve(raw) == _resolved_by_realpath(root, raw), raw
