"""The layers of DESIGN §5, enforced: data flows one way, downwards.

    core      model, canonical, documents, glob, values, policy/, compiler, plan (+ the leaves
              every layer uses: errors, codes, findings, the text escaping of render.fields/words)
    analysis  lints, expects, policy checks and tests, recorded outcomes, configuration, diff
    runtime   calls, kernel, shell, approvals, ledger, store
    adapters  agent hooks, MCP proxy, importers of other tools' settings
    app       commands/, render/, cli, the fast path, the guard

A module imports only modules of its own layer or of the layers above it in this list, and the
import graph has no cycle. Both rules count every import — at module level or inside a function
(a "lazy" import, which bgc uses to keep start-up fast) — except those under
``if TYPE_CHECKING:``, which never run: laziness changes when a dependency is paid for, not
whether it exists, so it must not hide an upward dependency or a cycle. The few imports that
have to break these rules are listed in ALLOWED with the reason.

New packages must be placed in LAYERS before they land; the table already names those being
built (bgc.argv, bgc.kernel, bgc.calls, bgc.shell, bgc.approvals, bgc.ledger, bgc.store, bgc.diff,
bgc.hooks, bgc.mcp_proxy, bgc.claude_import), so merging them changes nothing here.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bgc"

LAYERS: dict[str, tuple[str, ...]] = {
    "core": (
        "bgc", "bgc.__init__", "bgc._dataclasses", "bgc._dataclass_methods", "bgc._dataclass_methods_hook", "bgc._dataclass_methods_rest", "bgc.regexes", "bgc.names", "bgc.sha256", "bgc.limits", "bgc.codes", "bgc.errors", "bgc.files", "bgc.findings",
        "bgc.schema", "bgc.canonical", "bgc.model", "bgc.documents", "bgc._glob_syntax", "bgc._glob_automata",
        "bgc._glob_symbolic", "bgc._glob_regex", "bgc._glob_pattern", "bgc.budget", "bgc.glob", "bgc.values", "bgc.cache", "bgc.answer_cache", "bgc.policy", "bgc.compiler",
        "bgc.plan", "bgc.gate", "bgc._gate_index", "bgc.argv", "bgc.render.fields", "bgc.render.words",
    ),
    "analysis": (
        "bgc.lints", "bgc.expects", "bgc.checks", "bgc.testing", "bgc.outcomes", "bgc.config", "bgc.diff",
    ),
    "runtime": ("bgc.calls", "bgc.trees", "bgc.enforce", "bgc.kernel", "bgc.shell", "bgc.runners", "bgc.approvals", "bgc.ledger", "bgc.store"),
    "adapters": (
        "bgc.hooks", "bgc.hook", "bgc.adapters", "bgc.mcp", "bgc.mcp_proxy", "bgc.importers", "bgc.claude_import",
    ),
    "app": ("bgc.commands", "bgc.render", "bgc.cli", "bgc.cli_base", "bgc.cli_kernel", "bgc.cli_ledger", "bgc.launch", "bgc.guard", "bgc.__main__"),
}  # fmt: skip
"""Each layer's modules and packages (a package stands for everything in it; the longest
matching name decides, so ``bgc.render.fields`` is core while the rest of ``bgc.render`` is app)."""

ORDER = list(LAYERS)

ALLOWED: dict[tuple[str, str], str] = {
    ("bgc.commands.serve", "bgc.launch"): "the decision server runs the launcher's own hook entry (fast_arguments, "
    "FAST_COMMANDS), the very function a hook process runs, so an answer cannot differ by who computed it",
}
"""Imports that may break the rules, (importer, imported) → why; only the edge (the app layer)
may have one, and each must be a lazy import with a comment at its site saying why."""


def layer_of(module: str) -> str:
    matches = [
        (len(name), layer)
        for layer, names in LAYERS.items()
        for name in names
        if module == name or (module.startswith(name + ".") and name != "bgc")  # "bgc" is the package's own module
    ]
    assert matches, f"{module} is in no layer: add it to LAYERS in tests/test_layers.py (DESIGN §5)"
    return max(matches)[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node that may run: ``if TYPE_CHECKING:`` blocks are skipped."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The bgc modules ``module`` imports (``from bgc import glob`` is ``bgc.glob``)."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
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
    return {name for name in found if name != module}


@functools.cache
def graph() -> dict[str, frozenset[str]]:
    """Each module's bgc imports: parsed once per process (three tests read it)."""
    found = modules()
    return {module: frozenset(imports(module, path, set(found))) for module, path in found.items()}


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_only_the_edge_may_break_the_rules() -> None:
    assert [importer for importer, _ in ALLOWED if layer_of(importer) != "app"] == []


def test_imports_only_go_to_the_same_layer_or_above() -> None:
    upward = [
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, targets in graph().items()
        for target in sorted(targets)
        if ORDER.index(layer_of(target)) > ORDER.index(layer_of(module)) and (module, target) not in ALLOWED
    ]
    assert upward == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
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
    edges = {module: {t for t in targets if (module, t) not in ALLOWED} for module, targets in graph().items()}
    assert cycles(edges) == []


def test_the_checks_see_what_they_must() -> None:
    """The walk finds lazy imports and ``from bgc import x``, skips TYPE_CHECKING, and the cycle
    finder finds a cycle: otherwise the tests above would pass by seeing nothing."""
    edges = graph()
    assert "bgc.glob" in edges["bgc.lints.context"]  # from bgc import codes, glob
    assert "bgc.cli" in edges["bgc.launch"]  # a lazy import inside main()
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer_of("bgc.render.fields") == "core" and layer_of("bgc.render.sarif") == "app"
