"""Values that do not fill a declaration, and paths beginning with ``~``, by class.

A declared parameter is checked through the atoms its value makes. A value that makes no atom
(a list of nothing), that is not one value (a list inside a list), that is empty text, or that is
not text where the template is a whole path, URL or command, checks nothing: it is refused, on
every path that decides calls (the compiled form and the general one, with a workspace as the
hooks and the MCP proxy decide and without one as the kernel and ``bgc gate --call`` do, and the
kernel's ``authorize`` itself). The policies here allow everything, so any allow is a fail-open.

A path beginning with ``~`` is the agent's home directory (``~``, ``~/…``) when the workspace knows
it, a host path then; any other form (``~user``, ``~+``, ``~-``, or ``~`` with no home known) is
refused; never a folder of the project named ``~``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core.policy.loader import parse_policy
from bgc.runtime.calls import CallDecider, Workspace, implicit_plan

POLICY = """\
tool read needs fs:read:{path}
tool fetch needs net:connect:{url}
tool run needs proc:exec:{argv0}
tool move needs fs:write:{src}, fs:write:{dst}
tool grep needs fs:read:{path}, fs:read:{path}/** ignores pattern
tool issue needs net:connect:https://github.com/{owner}/issues/{number}
tool read_file on files needs fs:read:{path}
allow fs:*:/** because "everything in the workspace"
allow host:*:/** because "everything on the host"
allow net:connect:** because "every site"
allow proc:exec:** because "every command"
"""

# (tool, server, the parameter under test, the other parameters, whether the template is whole)
SLOTS: list[tuple[str, str | None, str, dict[str, Any], bool]] = [
    ("read", None, "path", {}, True),
    ("fetch", None, "url", {}, True),
    ("run", None, "argv0", {}, True),
    ("move", None, "src", {"dst": "/tmp/x"}, True),
    ("move", None, "dst", {"src": "/tmp/x"}, True),
    ("grep", None, "path", {"pattern": "x"}, True),
    ("issue", None, "number", {"owner": "o"}, False),
    ("issue", None, "owner", {"number": 1}, False),
    ("read_file", "files", "path", {}, True),
]

GOOD = {"path": "/tmp/a", "url": "https://example.com/", "argv0": "ls", "src": "/tmp/a", "dst": "/tmp/b",
        "number": 7, "owner": "o"}  # fmt: skip
"""A value that fills each parameter: the call is allowed with it (checked below)."""

unfilling_scalar = st.one_of(
    st.just(""), st.none(), st.booleans(), st.floats(allow_nan=False), st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)  # fmt: skip
"""Never fills any template."""


def unfilling(whole: bool, good: Any) -> st.SearchStrategy[Any]:
    """Values that do not fill a parameter: the class's members, alone and among good ones in a list."""
    scalar = unfilling_scalar | st.integers() if whole else unfilling_scalar
    single = st.one_of(
        scalar,
        st.just([]),
        st.just(()),
        st.lists(st.just(good), min_size=1, max_size=2).map(lambda items: [items]),  # a list inside a list
        st.lists(st.just(good) | st.just("/etc/passwd"), max_size=2).map(lambda items: [items, *items]),
    )
    return single | st.tuples(st.lists(st.just(good), max_size=2), single).map(lambda pair: [*pair[0], pair[1]])


def deciders(tmp_path: Path) -> list[CallDecider]:
    plan = implicit_plan(parse_policy(POLICY, "p.bgp"), None)
    (tmp_path / "p").mkdir(exist_ok=True)
    return [CallDecider([plan]), CallDecider([plan], workspace=Workspace.at(str(tmp_path / "p"), home=str(tmp_path / "home")))]


def test_each_parameter_is_allowed_with_a_value_that_fills_it(tmp_path: Path) -> None:
    for decider in deciders(tmp_path):
        for tool, server, name, others, _ in SLOTS:
            params = {**others, name: GOOD[name]}
            if decider.workspace is None and tool in ("read", "move", "grep", "read_file"):
                continue  # without a workspace, host paths are not what these take
            assert decider.decide_call(tool, server, params).effect == "allow", (tool, params)


@pytest.mark.parametrize(("tool", "server", "name", "others", "whole"), SLOTS, ids=[f"{s[0]}.{s[2]}" for s in SLOTS])
def test_a_value_that_does_not_fill_its_parameter_is_refused(
    tmp_path: Path, tool: str, server: str | None, name: str, others: dict[str, Any], whole: bool
) -> None:
    checked = deciders(tmp_path)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(unfilling(whole, GOOD[name]))
    def check(value: Any) -> None:
        for decider in checked:
            params = {**others, name: value}
            for decision in (decider.decide_call(tool, server, params), decider.decide_general(tool, server, params)):
                assert decision.effect == "deny", (value, decision)
                assert "refused" in decision.reason or "rejected" in decision.explanation(), (value, decision)

    check()


def test_an_integer_fills_part_of_a_template_but_never_a_whole_one(tmp_path: Path) -> None:
    for decider in deciders(tmp_path):
        assert decider.decide_call("issue", None, {"owner": "o", "number": 42}).effect == "allow"
        for tool, name in (("read", "path"), ("fetch", "url"), ("run", "argv0")):
            decision = decider.decide_call(tool, None, {name: 42})
            assert decision.effect == "deny" and "whole path, URL or command" in decision.reason, decision


HOME_FORMS = ["~", "~/", "~/x", "~/src/a.py", "~//x", "~/./x", "~/../x"]
"""Paths the agent reads as its home directory or below it."""
OTHER_FORMS = ["~root", "~root/x", "~+", "~+/x", "~-", "~-/x", "~x", "~~/x", "~\\/x", "~ /x", "~.", "~0/x"]
"""Other forms beginning with ``~``: a user's home, the shell's $PWD and $OLDPWD, none known as the agent knows them."""


@pytest.fixture()
def tilde_project(tmp_path: Path) -> dict[str, Any]:
    """A project with a folder named ``~`` (holding src/a.py and x), and a home outside it."""
    project, home = tmp_path / "p", tmp_path / "home"
    for base in (project / "~", home):
        (base / "src").mkdir(parents=True)
        (base / "src" / "a.py").write_text("a = 1\n")
        (base / "x").write_text("x\n")
    plan = implicit_plan(parse_policy("tool read needs fs:read:{path}\nallow fs:read:/** because \"the project\"\n", "p.bgp"), None)
    return {"project": project, "home": home, "plan": plan}


@pytest.mark.parametrize("form", HOME_FORMS)
def test_a_path_beginning_with_tilde_is_the_agents_home(tilde_project: dict[str, Any], form: str) -> None:
    """``~`` and ``~/…`` are the home directory: a host path, which this policy does not allow,
    though the project has a folder named ``~`` it does allow; with no home known, refused."""
    project, home = tilde_project["project"], tilde_project["home"]
    for cwd in (project, project / "~"):
        decider = CallDecider([tilde_project["plan"]], workspace=Workspace.at(str(project), str(cwd), str(home)))
        decision = decider.decide_call("read", None, {"path": form})
        assert decision.effect == "deny", decision
        assert all(atom.atom.startswith("host:read:" + str(home.parent)) for atom in decision.atoms), decision
        unknown = CallDecider([tilde_project["plan"]], workspace=Workspace.at(str(project), str(cwd), None))
        assert unknown.decide_call("read", None, {"path": form}).effect == "deny"
        relative_home = CallDecider([tilde_project["plan"]], workspace=Workspace.at(str(project), str(cwd), "home"))
        assert relative_home.decide_call("read", None, {"path": form}).effect == "deny"


@given(st.sampled_from(OTHER_FORMS) | st.text(min_size=1, max_size=8).map(lambda rest: "~" + rest).filter(
    lambda path: not (path == "~" or path.startswith("~/"))))  # fmt: skip
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_other_path_beginning_with_tilde_is_refused(tilde_project: dict[str, Any], form: str) -> None:
    project, home = tilde_project["project"], tilde_project["home"]
    decider = CallDecider([tilde_project["plan"]], workspace=Workspace.at(str(project), str(project), str(home)))
    decision = decider.decide_call("read", None, {"path": form})
    assert decision.effect == "deny" and not any(atom.effect == "allow" for atom in decision.atoms), decision


def test_the_project_folder_named_tilde_is_reached_by_naming_it(tilde_project: dict[str, Any]) -> None:
    """The folder is the project's: named as such (absolute, ``./~``), it is a workspace path."""
    project, home = tilde_project["project"], tilde_project["home"]
    decider = CallDecider([tilde_project["plan"]], workspace=Workspace.at(str(project), str(project), str(home)))
    for path in (f"{project}/~/x", "./~/x", "./~/src/a.py"):
        decision = decider.decide_call("read", None, {"path": path})
        assert decision.effect == "allow" and decision.atoms[0].atom.startswith("fs:read:/~/"), decision


KERNEL_VALUES = [[], (), [[]], [["/src/parse.py"]], ["/src/parse.py", []], ["/src/parse.py", ["/src/parse.py"]], "", [""],
                 ["/src/parse.py", ""], {}, None, 42, 1.5, True, [42]]  # fmt: skip
"""``fs.write``'s ``path`` in a ToolCallRequest, none filling ``fs:write:{path}`` (base.bgp)."""


@pytest.mark.parametrize("value", KERNEL_VALUES, ids=repr)
@pytest.mark.parametrize("tool", ["fs.write", "fs.read"])
def test_the_kernel_refuses_a_value_that_does_not_fill_the_declaration(tmp_path: Path, tool: str, value: Any) -> None:
    """The kernel's ``authorize``, with a token that grants writing /src: refused (BGC517, the
    parameters), never allowed for a call that names no file."""
    from bgc.runtime.kernel.authorize import Kernel
    from bgc.runtime.store.sqlite import SqliteStore
    from tests.kernel_support import ISSUER, KERNEL, NOW, line, make_token, request

    store = SqliteStore(str(tmp_path / "kernel.db"))
    try:
        kernel = Kernel([ISSUER.public], KERNEL, store, clock=lambda: NOW + 10)
        token = make_token()
        assert kernel.authorize_line(line(request(token, tool=tool, params={"path": "/src/parse.py"}))).decision == "allow"
        decision = kernel.authorize_line(line(request(token, tool=tool, params={"path": value})))
        assert (decision.decision, decision.code) == ("deny", "BGC517"), decision
    finally:
        store.close()


@pytest.mark.parametrize("value", KERNEL_VALUES, ids=repr)
def test_a_work_orders_call_is_refused_the_same(value: Any) -> None:
    """``bgc compile`` decides an order's calls through the same expansion: refused there too."""
    from bgc.core.gate import expand_call
    from bgc.core.policy.templates import TemplateError

    declaration = parse_policy(POLICY, "p.bgp").tools[0]
    with pytest.raises(TemplateError):
        expand_call(declaration.needs, declaration.ignores, {"path": value})
