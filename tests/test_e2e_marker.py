"""Every test outside tests/e2e that starts a process is marked ``e2e``, so that the inner loop,
``python -m pytest -m "not e2e"``, starts none (tests/conftest.py marks every test in tests/e2e).

What starts a process is read from the test sources, not listed by hand: a function starts one
when it uses one of the ways :data:`STARTS_A_PROCESS` names, or uses (calls, passes on, asks for
as a fixture, gets as an autouse or ``usefixtures`` fixture, takes as a parameter value) a
function or class of the test suite that does, followed through imports across every module of
tests/. The test must carry the mark itself, on its class or in its module's ``pytestmark``.
Type annotations are not uses, and neither are constants such as ``subprocess.PIPE``.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

_EXEC_SUFFIXES = ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")
STARTS_A_PROCESS = frozenset({
    *(f"subprocess.{name}" for name in ("run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput")),
    *(f"os.{name}" for name in ("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp")),
    *(f"os.exec{suffix}" for suffix in _EXEC_SUFFIXES),
    *(f"os.spawn{suffix}" for suffix in _EXEC_SUFFIXES),
    "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
    "asyncio.subprocess.create_subprocess_exec", "asyncio.subprocess.create_subprocess_shell",
    "anyio.open_process", "anyio.run_process",
    "multiprocessing.Process", "multiprocessing.Pool", "multiprocessing.get_context",
    "concurrent.futures.ProcessPoolExecutor",
    "pty.spawn", "pty.fork",
    "mcp.client.stdio.stdio_client",
    *(f"{module}.{name}" for module in ("acp", "acp.stdio")
      for name in ("spawn_agent_process", "spawn_client_process", "spawn_stdio_connection")),
})  # fmt: skip
"""Qualified names of the callables that start a process (the standard library's, and those of the
libraries the tests use to start one)."""

E2E_MARK = "pytest.mark.e2e"


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)
    """Every name the module binds by an import, anywhere in it, to what it names."""
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = field(default_factory=dict)
    """The module's top-level functions and classes."""

    def resolve(self, node: ast.expr) -> str | None:
        """The qualified name an expression such as ``subprocess.run`` or ``helper`` stands for."""
        if isinstance(node, ast.Name):
            if node.id in self.imports:
                return self.imports[node.id]
            return f"{self.name}.{node.id}" if node.id in self.defs else None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None


def read_modules(root: Path) -> dict[str, Module]:
    """Every module under ``root`` (a package named after its directory), by qualified name."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        module = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
        package = name if parts[-1] == "__init__" else name.rpartition(".")[0]
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.partition(".")[0]
                    module.imports[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        for node in module.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                module.defs[node.name] = node
        modules[name] = module
    return modules


def _walk_uses(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` but those inside type annotations."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.arg):
            continue  # its annotation only; parameter names are read as fixtures
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and child is node.returns:
            continue
        if isinstance(node, ast.AnnAssign) and child is node.annotation:
            continue
        yield child
        yield from _walk_uses(child)


def _is_fixture(node: ast.AST, module: Module) -> bool:
    decorators = getattr(node, "decorator_list", [])
    return any(module.resolve(d.func if isinstance(d, ast.Call) else d) == "pytest.fixture" for d in decorators)


def _is_autouse(node: ast.AST, module: Module) -> bool:
    return any(
        isinstance(d, ast.Call) and module.resolve(d.func) == "pytest.fixture"
        and any(k.arg == "autouse" and isinstance(k.value, ast.Constant) and k.value.value is True for k in d.keywords)
        for d in getattr(node, "decorator_list", [])
    )  # fmt: skip


def _conftests(module: Module, modules: dict[str, Module]) -> list[Module]:
    """The conftest modules whose fixtures ``module`` sees, nearest first."""
    found = []
    package = module.name.rpartition(".")[0]
    while package:
        conftest = modules.get(f"{package}.conftest")
        if conftest is not None and conftest is not module:
            found.append(conftest)
        package = package.rpartition(".")[0]
    return found


class Analysis:
    """Which functions and classes of a test suite start a process, and why."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules = read_modules(root)
        self.units = {f"{m.name}.{name}": (m, node) for m in self.modules.values() for name, node in m.defs.items()}
        self.why: dict[str, str] = {}
        """Each unit that starts a process, with the name through which it does."""
        self.uses = {key: self._uses(module, node) for key, (module, node) in self.units.items()}
        changed = True
        while changed:
            changed = False
            for key, used in self.uses.items():
                if key not in self.why and (reason := self._reason(used)):
                    self.why[key] = reason
                    changed = True

    def _unit(self, qualified: str) -> str | None:
        """The unit (top-level function or class) a qualified name is or is inside of."""
        while qualified and qualified not in self.units:
            qualified = qualified.rpartition(".")[0]
        return qualified or None

    def _fixture(self, name: str, module: Module) -> str | None:
        """The unit a fixture name given to a test in ``module`` resolves to, if the suite defines it."""
        for scope in (module, *_conftests(module, self.modules)):
            if name in scope.imports:
                return self._unit(scope.imports[name])
            node = scope.defs.get(name)
            if node is not None and _is_fixture(node, scope):
                return f"{scope.name}.{name}"
        return None

    def _uses(self, module: Module, node: ast.AST) -> set[str]:
        """Qualified names ``node`` uses (names and attribute chains), and the fixtures it asks for
        by its parameters (a function) or ``usefixtures``."""
        used, fixtures = set(), set()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fixtures.update(a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs)
        for child in [node, *_walk_uses(node)]:
            if isinstance(child, (ast.Name, ast.Attribute)) and (qualified := module.resolve(child)):
                used.add(qualified)
            elif isinstance(child, ast.Call) and module.resolve(child.func) == "pytest.mark.usefixtures":
                fixtures.update(a.value for a in child.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
        used.update(unit for name in fixtures if (unit := self._fixture(name, module)))
        return used

    def _reason(self, used: set[str]) -> str | None:
        for qualified in sorted(used):
            if qualified in STARTS_A_PROCESS:
                return qualified
            unit = self._unit(qualified)
            if unit in self.why:
                return f"{unit} ({self.why[unit]})"
        return None

    def unmarked(self, outside: Path) -> list[str]:
        """Tests outside ``outside`` that start a process without the mark, each with its reason."""
        found = []
        for module in self.modules.values():
            if module.path.is_relative_to(outside) or not module.path.name.startswith("test_"):
                continue
            marked_module = any(
                isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
                and _marks_e2e(node.value, module)
                for node in module.tree.body
            )  # fmt: skip
            autouse = [
                f"{scope.name}.{name}"
                for scope in (module, *_conftests(module, self.modules))
                for name, node in scope.defs.items()
                if _is_autouse(node, scope)
            ]
            for test, enclosing in _tests(module):
                if marked_module or any(_marks_e2e(d, module) for n in (test, *enclosing) for d in n.decorator_list):
                    continue
                used = self.uses[f"{module.name}.{test.name}"] if not enclosing else self._uses(module, test)
                used = used | set(autouse)
                for decorator in (d for test_class in enclosing for d in test_class.decorator_list):
                    used |= self._uses(module, decorator)
                if reason := self._reason(used):
                    found.append(f"{module.path.relative_to(self.root.parent)}::{test.name} starts a process: {reason}")
        return found


def _marks_e2e(node: ast.AST, module: Module) -> bool:
    return any(isinstance(n, ast.Attribute) and module.resolve(n) == E2E_MARK for n in ast.walk(node))


def _tests(module: Module) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, tuple[ast.ClassDef, ...]]]:
    """Each test function of a module, with the test classes it is in."""
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield node, ()
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name.startswith("test"):
                    yield member, (node,)


def test_every_test_outside_e2e_that_starts_a_process_is_marked() -> None:
    analysis = Analysis(TESTS)
    assert analysis.unmarked(TESTS / "e2e") == []
    assert analysis.why, "the analysis found no test that starts a process: it no longer reads the suite"


def test_every_test_in_e2e_is_marked(request: pytest.FixtureRequest) -> None:
    """tests/conftest.py marks them as collected (checked on what this run collected)."""
    for item in request.session.items:
        if item.path.is_relative_to(TESTS / "e2e"):
            assert item.get_closest_marker("e2e") is not None, item.nodeid


SUITE = {
    "conftest.py": """
        import pytest, subprocess

        @pytest.fixture
        def server():
            yield subprocess.Popen(["true"])

        @pytest.fixture
        def quiet():
            return subprocess.PIPE
    """,
    "helpers.py": """
        import subprocess as sp
        from os import posix_spawn as start

        def run(*argv):
            return sp.check_output(argv)

        def pipe_only() -> sp.Popen:
            return sp.PIPE

        class Child:
            def __init__(self):
                self.pid = start("/bin/true", ["true"], {})

        def indirect():
            return run("true")
    """,
    "unit/__init__.py": "",
    "unit/test_a.py": """
        import multiprocessing
        import pytest
        from .. import helpers
        from ..helpers import Child, pipe_only

        def test_through_a_helper_in_another_module():
            helpers.indirect()

        def test_through_a_class():
            Child()

        def test_through_a_fixture(server):
            pass

        @pytest.mark.usefixtures("server")
        def test_through_usefixtures():
            pass

        @pytest.mark.parametrize("how", [helpers.run])
        def test_through_a_parameter(how):
            how("true")

        def test_through_a_context():
            multiprocessing.get_context("fork").Process(target=print).start()

        def test_constants_and_annotations_only(quiet) -> None:
            x: helpers.sp.Popen = pipe_only()

        @pytest.mark.e2e
        def test_marked():
            helpers.run("true")

        class TestGrouped:
            def test_in_a_class(self):
                helpers.run("true")

        @pytest.mark.usefixtures("server")
        class TestUsingAFixture:
            def test_under_its_class_fixture(self):
                pass

        @pytest.mark.e2e
        class TestMarked:
            def test_in_a_marked_class(self):
                helpers.run("true")
    """,
    "unit/test_module_marked.py": """
        import pytest, subprocess
        pytestmark = [pytest.mark.e2e]

        def test_marked_by_its_module():
            subprocess.run(["true"])
    """,
    "unit/test_autouse.py": """
        import pytest, subprocess

        @pytest.fixture(autouse=True)
        def started():
            subprocess.call(["true"])

        def test_under_a_starting_autouse_fixture():
            pass
    """,
    "e2e/__init__.py": "",
    "e2e/test_b.py": """
        import subprocess

        def test_in_e2e():
            subprocess.run(["true"])
    """,
}


def test_the_analysis_finds_every_way_a_test_starts_a_process_and_no_other(tmp_path: Path) -> None:
    """The control: a suite written to hold each way, and uses that start nothing."""
    root = tmp_path / "suite"
    for name, text in {"__init__.py": "", **SUITE}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    found = Analysis(root).unmarked(root / "e2e")
    assert [line.split(" starts")[0] for line in found] == [
        "suite/unit/test_a.py::test_through_a_helper_in_another_module",
        "suite/unit/test_a.py::test_through_a_class",
        "suite/unit/test_a.py::test_through_a_fixture",
        "suite/unit/test_a.py::test_through_usefixtures",
        "suite/unit/test_a.py::test_through_a_parameter",
        "suite/unit/test_a.py::test_through_a_context",
        "suite/unit/test_a.py::test_in_a_class",
        "suite/unit/test_a.py::test_under_its_class_fixture",
        "suite/unit/test_autouse.py::test_under_a_starting_autouse_fixture",
    ]
    assert found[0].endswith("suite.helpers.indirect (suite.helpers.run (subprocess.check_output))")
