"""``include "claude-code.bgp"`` works without a copy: a plain file name bgc ships, taken when the
including file's directory has no such file.

A new user wrote the include from the docs and got "no such file" (only ``bgc init`` copied the
mapping). The include now falls back to the bundled policies, and everything that makes a
policy mean one thing holds for it: its id names the bundled file as ``bgc:NAME`` with its
digest (the same on every machine, wherever bgc is installed), plans name its rules so, a local
file of the same name shadows it (and a cached policy notices one appearing), and nothing but a
plain name of a file directly in the bundled directory is ever taken from there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.compiler import Compiler, decide, rule_source
from bgc.core.policy.bundled import bundled_directory, bundled_file, bundled_names
from bgc.core.policy.loader import cached_policy, load_policy
from bgc.core.policy.parser import PolicyError
from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder
from tests.samples import bgc, examples

POLICY = 'include "claude-code.bgp"\nallow fs:read:/**\nexpect allow fs:read:/src/a.py\n'


def _project(root: Path, text: str = POLICY) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "policy.bgp").write_text(text)
    return root / "policy.bgp"


def test_a_bundled_mapping_is_included_without_a_copy(tmp_path: Path) -> None:
    policy = load_policy(_project(tmp_path / "p"))
    assert [file.path for file in policy.files] == ["policy.bgp", "bgc:claude-code.bgp", "bgc:agents.bgp"]
    assert policy.tool("Read") is not None and policy.tool("read_file", "filesystem") is not None
    assert policy.absent == ("claude-code.bgp",)  # where a file of the project's own would take its place
    deny = next(rule for rule in policy.rules if rule.effect == "deny")
    ref = Compiler(policy).ref(deny)
    assert ref.file == "bgc:agents.bgp"  # plans name it so, wherever bgc is installed
    assert os.path.realpath(rule_source(policy, ref)) == os.path.realpath(bundled_file("agents.bgp"))  # type: ignore[arg-type]
    assert decide(policy, "search", "glob", "/etc/x", {}).rules == (ref,)


def test_the_id_and_the_plan_are_the_same_wherever_the_project_lies(tmp_path: Path) -> None:
    one, two = load_policy(_project(tmp_path / "a")), load_policy(_project(tmp_path / "b" / "deeper"))
    assert one.id() == two.id()
    work = WorkOrder(
        Intent("x", None), (), GrantSet.of([GrantAtom.parse("search:glob:/etc/**")]), ProposalOrigin("m", (), Digest.of(b""))
    )
    plans = [Compiler(policy).compile(work).to_data() for policy in (one, two)]
    assert plans[0] == plans[1] and "bgc:agents.bgp" in str(plans[0])


def test_a_file_of_the_projects_own_comes_first(tmp_path: Path) -> None:
    path = _project(tmp_path)
    (tmp_path / "claude-code.bgp").write_text("tool Read needs fs:read:{file_path}\n")
    policy = load_policy(path)
    assert [file.path for file in policy.files] == ["policy.bgp", "claude-code.bgp"] and policy.absent == ()
    assert policy.tool("Write") is None


def test_a_cached_policy_notices_a_file_that_takes_the_bundled_ones_place(tmp_path: Path) -> None:
    path = str(_project(tmp_path))
    assert cached_policy(path).tool("Write") is not None
    assert cached_policy(path).tool("Write") is not None  # from the cache
    (tmp_path / "claude-code.bgp").write_text("tool Read needs fs:read:{file_path}\n")
    assert cached_policy(path).tool("Write") is None


def test_includes_of_a_bundled_file_stay_in_the_bundled_directory(tmp_path: Path) -> None:
    """claude-code.bgp includes agents.bgp: the bundled one, even where the project has its own."""
    path = _project(tmp_path)
    (tmp_path / "agents.bgp").write_text("deny fs:*:/**\n")
    policy = load_policy(path)
    assert "bgc:agents.bgp" in [file.path for file in policy.files]
    assert not any(rule.resource == "fs" and rule.effect == "deny" for rule in policy.rules)


def test_a_missing_include_names_what_bgc_ships(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(_project(tmp_path, 'include "claude.bgp"\n'))
    assert caught.value.code == "BGC010" and "did you mean `claude-code.bgp`?" in (caught.value.hint or "")
    with pytest.raises(PolicyError) as caught:
        load_policy(_project(tmp_path, 'include "nothing-like-it.bgp"\n'))
    assert "bgc ships `agents.bgp`" in (caught.value.hint or "")


def test_bgc_check_and_explain_use_the_bundled_mapping(tmp_path: Path) -> None:
    _project(tmp_path)
    checked = bgc("check", "policy.bgp", cwd=tmp_path)
    assert checked.exit_code == 0, checked.output
    explained = bgc("explain", "-p", "policy.bgp", "search:glob:/etc/x", cwd=tmp_path)
    assert "deny /**  bgc:agents.bgp:" in explained.stdout


NAMES = st.one_of(
    st.sampled_from(["claude-code.bgp", "../claude-code.bgp", "./claude-code.bgp", "policies/claude-code.bgp",
                     ".claude-code.bgp", "claude-code.bgp/", "claude-code", "CLAUDE-CODE.BGP", "tests",
                     "claude-code.bgp\\", "/claude-code.bgp", "..", "."]),
    st.text(alphabet="abcdegilmnoprst-_./\\", min_size=1, max_size=20),
    st.sampled_from(sorted(bundled_names())).map(lambda name: name.replace("-", "/")),
)  # fmt: skip


@settings(max_examples=examples(60, thorough=600), deadline=None)
@given(NAMES)
def test_only_a_plain_name_of_a_bundled_file_falls_back(name: str) -> None:
    """What the fallback may read is exactly the bundled directory's own ``*.bgp`` files, by a
    plain name: no path, no climbing, no hidden file (a reference written from the definition)."""
    found = bundled_file(name)
    directory = bundled_directory()
    plain = "/" not in name and "\\" not in name and not name.startswith(".") and name.endswith(".bgp")
    expected = plain and os.path.isfile(os.path.join(directory, name))
    assert (found is not None) == expected, name
    if found is not None:
        assert os.path.dirname(found) == directory


def test_an_escape_stays_refused_even_when_its_name_is_bundled(tmp_path: Path) -> None:
    """The fallback is for a name that is not there; a climbing include is refused as before,
    never taken from the bundled directory."""
    root = tmp_path / "repo"
    shutil.copy(bundled_file("base.bgp"), tmp_path / "base.bgp")  # type: ignore[arg-type]
    with pytest.raises(PolicyError) as caught:
        load_policy(_project(root, 'include "../base.bgp"\n'))
    assert "outside the root policy's directory" in caught.value.message
    with pytest.raises(PolicyError) as caught:
        load_policy(_project(root, 'include "sub/base.bgp"\n'))
    assert "no such file" in caught.value.message
