"""`bgc mcp-proxy` decides in the project's configured mode, as a hook of the project does."""

from __future__ import annotations

from pathlib import Path

import pytest

from bgc.app.commands.mcp_proxy import proxy_session
from bgc.errors import UsageError

POLICY = """tool write_file on files needs fs:write:{path}
default mode open
mode open {
    allow fs:write:/src/** because "open: source writes"
}
mode strict {
    # nothing: every write is denied
}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "p.bgp").write_text(POLICY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("configured", "flag", "effect"), [
    ("strict", None, "deny"),         # the stricter configured mode is not dropped for the default
    ("open", None, "allow"),
    (None, None, "allow"),            # no configured mode: the policy's default
    ("strict", "open", "allow"),      # --mode overrides the configuration
])  # fmt: skip
def test_the_configured_mode_decides_unless_mode_is_given(
    project: Path, configured: str | None, flag: str | None, effect: str
) -> None:
    mode_line = f'mode = "{configured}"\n' if configured else ""
    (project / "bgc.toml").write_text(f'policy = "p.bgp"\n{mode_line}', encoding="utf-8")
    decision = proxy_session(None, flag).decider.decide_call("write_file", "files", {"path": "/src/a.py"})
    assert decision.effect == effect, decision


def test_an_explicit_policy_ignores_the_configuration(project: Path) -> None:
    (project / "bgc.toml").write_text('policy = "p.bgp"\nmode = "strict"\n', encoding="utf-8")
    decision = proxy_session("p.bgp", None).decider.decide_call("write_file", "files", {"path": "/src/a.py"})
    assert decision.effect == "allow", decision  # -p without --mode: the policy's default, as the hook


def test_no_policy_anywhere_is_a_usage_error(project: Path) -> None:
    with pytest.raises(UsageError, match="no policy"):
        proxy_session(None, None)
