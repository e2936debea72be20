"""The layers of DESIGN §5, enforced: data flows one way, downwards.

    leaves    bgc, errors, codes, names, text: what every layer may use
    core      values, patterns, resources, policy/, compiler, plan, gate, cache
    analysis  lints, expects, checks, testing, outcomes, config, diff
    runtime   calls, session, shell, kernel/, approvals, ledger, store/
    adapters  agents/, mcp/, imports/
    app       cli, launch, commands/, render/, the servers

The package's folders are the layers. A module imports only modules of its own layer or of the
layers above it in this list, and the import graph has no cycle. Both rules count every import
the code can make: at module level, inside a function, and under ``if TYPE_CHECKING:`` (an
annotation names a dependency as surely as a call does). ``__import__`` and
``importlib.import_module`` are allowed only with a literal name, which then counts as an import;
a name computed at run time hides the dependency and is itself a failure. Nothing is exempt.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bgc"

ORDER = ["leaves", "core", "analysis", "runtime", "adapters", "app"]
LEAVES = {"bgc", "bgc.errors", "bgc.codes", "bgc.names", "bgc.text"}


def layer_of(module: str) -> str:
    if module in LEAVES:
        return "leaves"
    if module == "bgc.__main__":
        return "app"
    layer = module.split(".")[1]
    assert layer in ORDER, f"{module} is in no layer: bgc/ holds the leaves and one folder per layer (DESIGN §5)"
    return layer


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _dynamic_target(node: ast.Call) -> str | None | bool:
    """The literal module a dynamic import names, None for a call that is no import, and False
    for a dynamic import whose name is computed."""
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name not in {"__import__", "import_module"}:
        return None
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return False


def imports(module: str, path: Path, known: set[str]) -> tuple[set[str], list[str]]:
    """The bgc modules ``module`` imports (``from bgc import text`` is ``bgc.text``), and the
    lines of dynamic imports whose target cannot be read."""
    found: set[str] = set()
    computed: list[str] = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "bgc")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "bgc":
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        elif isinstance(node, ast.Call):
            target = _dynamic_target(node)
            if target is False:
                computed.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}")
            elif target and target.split(".")[0] == "bgc":
                found.add(target)
    return {name for name in found if name != module}, computed


@functools.cache
def _parsed() -> dict[str, tuple[frozenset[str], tuple[str, ...]]]:
    found = modules()
    out = {}
    for module, path in found.items():
        targets, computed = imports(module, path, set(found))
        out[module] = (frozenset(targets), tuple(computed))
    return out


def graph() -> dict[str, frozenset[str]]:
    """Each module's bgc imports: parsed once per process."""
    return {module: targets for module, (targets, _) in _parsed().items()}


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_no_dynamic_import_computes_its_module() -> None:
    assert [site for _, computed in _parsed().values() for site in computed] == []


def test_imports_only_go_to_the_same_layer_or_above() -> None:
    upward = [
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, targets in graph().items()
        for target in sorted(targets)
        if ORDER.index(layer_of(target)) > ORDER.index(layer_of(module))
    ]
    assert upward == []


def cycles(edges: dict[str, set[str]] | dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_the_checks_see_what_they_must(tmp_path: Path) -> None:
    """The walk finds imports inside functions, under TYPE_CHECKING and through a literal
    ``import_module``, flags a computed one, and the cycle finder finds a cycle: otherwise the
    tests above would pass by seeing nothing."""
    source = tmp_path / "m.py"
    source.write_text(
        "import importlib\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bgc.core import plan\n"
        "def f(name):\n    from bgc import text\n    importlib.import_module('bgc.app.cli')\n    __import__(name)\n"
    )
    targets, computed = imports("bgc.core.m", source, {"bgc.text", "bgc.core.plan"})
    assert targets == {"bgc.core.plan", "bgc.text", "bgc.app.cli"}
    assert computed == [f"{source}:8"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer_of("bgc.text") == "leaves" and layer_of("bgc.app.render.sarif") == "app"
