"""``bgc compile``'s output kept in the verified cache (bgc.app.commands.compile._CachedOutput): the
same compile again prints the very bytes and exit code a compile without any cache prints,
without loading the parser, compiler, order model or YAML; any change of what the output
depends on (an order's bytes, a policy file, an option, how a file is named) is a miss."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bgc.app.commands import compile as compile_command
from bgc.app.commands.io import Result
from tests.e2e.test_startup_imports import _loaded

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled policies and example orders, the working directory, with a cache."""
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    shutil.copytree(ROOT / "examples" / "orders", tmp_path / "orders")
    default = tmp_path / "policies" / "default.bgp"
    default.write_text(default.read_text() + "mode review {\n  allow fs:write:/tests/**\n}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BGC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def _compile(monkeypatch: pytest.MonkeyPatch, *orders: str, cached: bool = True, **options: object) -> Result:
    with monkeypatch.context() as scope:
        if not cached:
            scope.setenv("BGC_CACHE_DIR", "")
        return compile_command.run(list(orders), policy="policies/default.bgp", **options)  # type: ignore[arg-type]


def _edit_byte(path: Path) -> None:
    """The same size, one word of the intent's payload changed."""
    text = path.read_text()
    assert "off-by-one" in text
    path.write_text(text.replace("off-by-one", "off-by-two"))


EDITS: dict[str, tuple[Callable[[Path], None], dict[str, object], tuple[str, ...]]] = {
    "an order's bytes": (lambda root: _edit_byte(root / "orders" / "fix-bug.yaml"), {}, ()),
    "an included policy file": (lambda root: (root / "policies" / "base.bgp").write_text(
        (root / "policies" / "base.bgp").read_text() + "deny fs:write:/src/parse.py\n"), {}, ()),
    "the root policy": (lambda root: (root / "policies" / "default.bgp").write_text(
        (root / "policies" / "default.bgp").read_text() + "deny fs:read:/src/**\n"), {}, ()),
    "the format": (lambda root: None, {"output_format": "json"}, ()),
    "--fail-on": (lambda root: None, {"fail_on": "never"}, ()),
    "the mode": (lambda root: None, {"mode": "review"}, ()),
    "colour": (lambda root: None, {"color_choice": "always"}, ()),
    "how an order is named": (lambda root: None, {}, ("./orders/fix-bug.yaml",)),
    "another order too": (lambda root: None, {}, ("orders/fix-bug.yaml", "orders/deploy.yaml")),
}  # fmt: skip


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_every_change_of_what_the_output_depends_on_is_a_miss(
    edit: str, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _compile(monkeypatch, "orders/fix-bug.yaml")
    assert _compile(monkeypatch, "orders/fix-bug.yaml") == first  # a hit: the same result
    change, options, orders = EDITS[edit]
    change(tree)
    orders = orders or ("orders/fix-bug.yaml",)
    expected = _compile(monkeypatch, *orders, cached=False, **options)
    assert expected != first  # the change shows in the output (or the test would prove nothing)
    assert _compile(monkeypatch, *orders, **options) == expected  # after the change: compiled afresh
    assert _compile(monkeypatch, *orders, **options) == expected  # and then kept


def test_a_damaged_entry_is_a_miss(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _compile(monkeypatch, "orders/fix-bug.yaml", cached=False)
    assert _compile(monkeypatch, "orders/fix-bug.yaml") == expected
    for entry in (tree / "cache").iterdir():
        data = entry.read_bytes()
        entry.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    assert _compile(monkeypatch, "orders/fix-bug.yaml") == expected


@pytest.mark.e2e
def test_a_repeated_compile_prints_the_same_bytes_without_the_compiler(tmp_path: Path) -> None:
    env = {**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache")}
    args = ["compile", "examples/orders/fix-bug.yaml", "-p", "policies/default.bgp"]
    uncached, _ = _loaded(args, {**env, "BGC_CACHE_DIR": ""})
    cold, cold_loaded = _loaded(args, env)
    warm, warm_loaded = _loaded(args, env)
    assert {"yaml", "bgc.core.compiler", "bgc.core.values.model", "bgc.core.policy.ast"} <= set(cold_loaded), cold_loaded
    assert warm_loaded == [], warm_loaded
    for done in (cold, warm):
        assert (done.returncode, done.stdout) == (uncached.returncode, uncached.stdout) == (1, uncached.stdout)
    written = tmp_path / "plan.json"
    to_file, to_file_loaded = _loaded([*args, "--format", "json", "-o", str(written)], env)
    first = written.read_bytes()
    again, again_loaded = _loaded([*args, "--format", "json", "-o", str(written)], env)
    assert again_loaded == [] and written.read_bytes() == first and again.returncode == to_file.returncode == 1


def test_an_output_over_the_bound_is_not_kept(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _compile(monkeypatch, "orders/fix-bug.yaml")
    kept = {entry.name for entry in (tree / "cache").iterdir()}
    monkeypatch.setenv("BGC_CACHE_DIR", str(tree / "bounded"))
    monkeypatch.setattr(compile_command, "MAX_KEPT_OUTPUT", 10)
    _compile(monkeypatch, "orders/fix-bug.yaml")
    assert len(kept) - len(list((tree / "bounded").iterdir())) == 1
