"""The bundled tool mappings keep up with the agents: every tool an agent documents (the lists in
tests/adapters/tools/, each with its source and the date it was read) is declared in the agent's
mapping policy, or named there on a ``# not declared: NAME — why`` line, an explicit decision
(the hook then answers ``--unknown``, ask by default; a shell tool the hook reads itself).

When an agent adds a tool, add it to the list from the agent's documentation: this test then
fails until the mapping decides what to do with it."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from bgc.adapters.agents import AGENTS
from bgc.core.policy.loader import load_policy

TOOLS = Path(__file__).parent / "tools"
POLICIES = Path(__file__).parents[2] / "policies"
NOT_DECLARED = re.compile(r"^# not declared: (\S+) — (\S.*)$", re.MULTILINE)


def _documented(agent: str) -> dict[str, object]:
    return tomllib.loads((TOOLS / f"{agent}.toml").read_text(encoding="utf-8"))


def _mapping(agent: str) -> tuple[set[str], dict[str, str]]:
    """The tools the agent's mapping declares (on the agent's own server) and those it says it
    leaves undeclared, with why."""
    path = POLICIES / AGENTS[agent].mapping
    declared = {decl.tool for decl in load_policy(path).tools if "local" in decl.servers}
    return declared, dict(NOT_DECLARED.findall(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_every_documented_tool_has_a_mapping_or_a_decision(agent: str) -> None:
    documented = _documented(agent)
    assert str(documented["source"]).startswith("https://") and re.fullmatch(r"\d{4}-\d\d-\d\d", str(documented["retrieved"]))
    tools = documented["tools"]
    assert isinstance(tools, list) and tools and len(set(tools)) == len(tools)
    declared, undeclared = _mapping(agent)
    missing = sorted(set(tools) - declared - set(undeclared))
    assert not missing, f"{AGENTS[agent].mapping} neither declares nor decides about {missing} (listed in {agent}.toml)"


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_decision_not_to_declare_is_about_a_documented_tool_not_declared(agent: str) -> None:
    """A ``# not declared`` line that names a declared tool contradicts it; one that names no
    documented tool is a decision about nothing (a misspelt name would hide the real one)."""
    declared, undeclared = _mapping(agent)
    assert not set(undeclared) & declared
    assert set(undeclared) <= set(_documented(agent)["tools"])  # type: ignore[arg-type]


def test_the_check_notices_a_tool_the_mapping_falls_behind_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above is a real check: a documented tool the mapping knows nothing of fails it."""
    listed = _documented("claude-code")
    fake = tmp_path / "claude-code.toml"
    tools = ", ".join(f'"{tool}"' for tool in [*listed["tools"], "BrandNewTool"])  # type: ignore[union-attr]
    fake.write_text(f'source = "{listed["source"]}"\nretrieved = "{listed["retrieved"]}"\ntools = [{tools}]\n')
    monkeypatch.setattr(sys.modules[__name__], "TOOLS", tmp_path)
    with pytest.raises(AssertionError, match="BrandNewTool"):
        test_every_documented_tool_has_a_mapping_or_a_decision("claude-code")
