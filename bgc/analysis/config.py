"""Repository configuration: ``[tool.bgc]`` in ``pyproject.toml`` or the top level of ``bgc.toml``.

A repository says once where its policies, policy tests and recorded work orders live, so that
``bgc check`` with no arguments (and the pre-commit hooks, and CI) can check all of it, and
``bgc compile`` can omit ``-p``. Command-line flags always override the configuration.

Keys (docs/ci.md is the reference)::

    policy       = "policies/default.bgp"      # the policy orders are compiled against
    mode         = "edit"                      # default mode for compile and order checks
    policies     = ["policies/**/*.bgp"]       # every policy to check (globs, relative)
    tests        = ["tests/policy"]            # directories (or files) holding *.bgt.yaml
    orders       = "examples/orders"           # directory of work orders with recorded results
    expectations = "examples/expected"         # where recorded results live (default: next to orders)
    select       = ["BGC1"]                    # the lints bgc check reports (default: all)
    ignore       = ["BGC104"]                  # lints it leaves out (bgc.analysis.selection)

Paths are relative to the directory holding the configuration file, which is also the
repository root that every output makes paths relative to (:func:`at_root`).
Every mistake is a located :class:`ConfigError` (``pyproject.toml:12:11``), never a silent
default: a typo in a key would otherwise switch a check off. The configured ``mode`` is checked
against the configured ``policy`` too (:meth:`Config.check_mode`), by every command that reads
the configuration, so a mode typo fails ``bgc check`` as it fails ``bgc compile``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from dataclasses import dataclass
from bgc.errors import BgcError, InputError, Span, UsageError
from bgc.core.values.schema import Fields, ModelError, format_path

if TYPE_CHECKING:
    from bgc.core.policy.ast import Policy

CONFIG_FILES = ("bgc.toml", "pyproject.toml")
"""Looked for in this order in each directory; ``bgc.toml`` wins when both configure bgc."""

KEYS = ("policy", "mode", "policies", "tests", "orders", "expectations", "select", "ignore")
TEST_SUFFIXES = (".bgt.yaml", ".bgt.yml")
ORDER_SUFFIXES = (".yaml", ".yml", ".json", ".cbor")
EXPECTED_SUFFIX = ".expected.json"
"""A recorded expectation is named after its order: ``fix-bug.yaml`` → ``fix-bug.yaml.expected.json``."""


class ConfigError(InputError):
    """The configuration is malformed or names something that does not exist."""


@dataclass(frozen=True, slots=True)
class Config:
    """A loaded configuration. Paths are absolute (resolved against :attr:`root`)."""

    path: Path
    policy: Path | None = None
    mode: str | None = None
    policies: tuple[str, ...] = ()
    tests: tuple[Path, ...] = ()
    orders: Path | None = None
    expectations: Path | None = None
    select: tuple[str, ...] | None = None
    """The lints ``bgc check`` reports (None: every lint), before ``--select``."""
    ignore: tuple[str, ...] = ()
    """The lints ``bgc check`` leaves out, before ``--ignore``."""

    @property
    def root(self) -> Path:
        """The repository root: the directory holding the configuration file."""
        return self.path.parent

    def error(self, key: str, message: str, hint: str | None = None) -> ConfigError:
        """A located error about the value of ``key`` (located on demand: only errors need it)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        return _located(self.path, text, key, f"{key}: {message}", hint)

    def resolved_mode(self, policy: Policy) -> str | None:
        """The configured ``mode`` checked against ``policy`` (``None`` when none is configured);
        an unknown mode is a :class:`ConfigError` at the ``mode`` line."""
        if self.mode is None:
            return None
        from bgc.core.compiler import resolve_mode

        try:
            return resolve_mode(policy, self.mode)
        except UsageError as error:
            raise self.error("mode", error.message) from None

    def check_mode(self) -> None:
        """Check the configured ``mode`` against the configured ``policy`` (:meth:`resolved_mode`).

        ``check`` and ``test`` call this whenever they read the configuration, whatever they
        were asked to check: a mode typo must fail them as it fails ``compile``, not pass
        until the first command that compiles in that mode. A policy that does not load is
        left to the checks that load it, which report it at its own place.
        """
        if self.mode is None or self.policy is None:
            return
        from bgc.core.policy.loader import cached_policy

        try:
            policy = cached_policy(local_path(self.policy))
        except BgcError:
            return
        self.resolved_mode(policy)

    def policy_files(self) -> list[Path]:
        """``policy`` and every file the ``policies`` globs match, sorted, without duplicates.

        A glob that matches nothing is an error: it is almost always a typo, and a typo must not
        quietly leave policies unchecked.
        """
        found: set[Path] = set()
        if self.policy is not None:
            found.add(self._existing_file("policy", self.policy))
        for pattern in self.policies:
            matches = [path for path in self.root.glob(pattern) if path.is_file()]
            if not matches:
                raise self.error("policies", f"the glob {pattern!r} matches no file")
            found.update(path.resolve() for path in matches)
        return sorted(found)

    def test_files(self) -> list[Path]:
        """Every ``*.bgt.yaml``/``*.bgt.yml`` below the ``tests`` entries, sorted."""
        found: set[Path] = set()
        for entry in self.tests:
            if not entry.exists():
                raise self.error("tests", f"{_shown(entry, self.root)} does not exist")
            found.update(path.resolve() for path in iter_tests(entry))
        return sorted(found)

    def order_files(self) -> list[Path]:
        """Every work order below ``orders`` (recorded expectations excluded), sorted."""
        if self.orders is None:
            return []
        if not self.orders.is_dir():
            raise self.error("orders", f"{_shown(self.orders, self.root)} is not a directory")
        return sorted(iter_orders(self.orders))

    def expectation_for(self, order: Path) -> Path:
        """Where ``order``'s recorded result lives: beside it, or mirrored under ``expectations``."""
        order = order.resolve()
        if self.expectations is None or self.orders is None:
            return order.with_name(order.name + EXPECTED_SUFFIX)
        try:
            relative = order.relative_to(self.orders)
        except ValueError:
            return order.with_name(order.name + EXPECTED_SUFFIX)
        return self.expectations / relative.parent / (relative.name + EXPECTED_SUFFIX)

    def expectation_files(self) -> list[Path]:
        """Every recorded expectation that exists, so stale ones (order gone) can be found."""
        base = self.expectations if self.expectations is not None else self.orders
        if base is None or not base.is_dir():
            return []
        return sorted(path.resolve() for path in base.rglob("*" + EXPECTED_SUFFIX) if path.is_file())

    def _existing_file(self, key: str, path: Path) -> Path:
        if not path.is_file():
            raise self.error(key, f"{_shown(path, self.root)} is not a file")
        return path


def is_test_file(path: str | Path) -> bool:
    return str(path).endswith(TEST_SUFFIXES)


def is_order_file(path: str | Path) -> bool:
    name = str(path)
    return name.endswith(ORDER_SUFFIXES) and not is_test_file(name) and not name.endswith(EXPECTED_SUFFIX)


def iter_tests(entry: Path) -> Iterator[Path]:
    """The test files ``entry`` names (itself, or those below it), spelled from ``entry`` as
    given, so that text output names them the way the user did."""
    if entry.is_file():
        yield entry
        return
    for suffix in TEST_SUFFIXES:
        yield from (path for path in entry.rglob("*" + suffix) if path.is_file())


def policies_below(directory: Path) -> list[str]:
    """Every policy file (``*.bgp``) below ``directory``, sorted, spelled from ``directory`` as
    given: what a directory on the command line of ``check``, ``test`` and ``fmt`` brings."""
    return [str(path) for path in sorted(directory.rglob("*.bgp")) if path.is_file()]


def iter_orders(directory: Path) -> Iterator[Path]:
    for path in directory.rglob("*"):
        if path.is_file() and is_order_file(path.name):
            yield path.resolve()


def split_paths(
    paths: Iterable[str | Path], *, orders: bool, must_exist: bool, other: Callable[[str], NoReturn]
) -> tuple[list[str], list[str], list[str]]:
    """Command-line ``paths`` split into policies, test files and (with ``orders``) work orders,
    each spelled as given. A directory brings the policies and test files below it, sorted (never
    orders: those are found through the configuration). A missing path of no known kind is
    "no such file"; ``must_exist`` says that of any missing path at once (``bgc check`` instead
    lets the reader report a missing policy and goes on). Anything else goes to ``other``, which
    raises the caller's own usage error."""
    policies: list[str] = []
    tests: list[str] = []
    found_orders: list[str] = []
    for entry in map(str, paths):
        path = Path(entry)
        if must_exist and not path.exists():
            raise InputError("no such file", Span(entry))
        if path.is_dir():
            policies.extend(policies_below(path))
            tests.extend(str(p) for p in sorted(iter_tests(path)))
        elif entry.endswith(".bgp"):
            policies.append(entry)
        elif is_test_file(entry):
            tests.append(entry)
        elif orders and is_order_file(entry):
            found_orders.append(entry)
        elif not path.exists():
            raise InputError("no such file", Span(entry))
        else:
            other(entry)
    return policies, tests, found_orders


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def local_path(path: str | Path) -> str:
    """``path`` as this process opens and prints it: relative to the working directory when it
    lies below it, else absolute. Under :func:`at_root` that is the repository-relative path."""
    absolute = Path(os.path.abspath(path))
    return os.path.relpath(absolute) if absolute.is_relative_to(Path.cwd()) else str(absolute)


@contextmanager
def at_root(config: Config | None, paths: Sequence[str]) -> Iterator[list[str]]:
    """Run a command from the repository root, with the command-line ``paths`` rewritten to
    match; the working directory is restored afterwards.

    Every path ``check`` and ``test`` print — a finding's place, a test's id and header, a path
    inside a message ("taken by deny at policies/base.bgp:3"), a coverage line — is the path a
    file was opened by, or derived from it. Opening every file by its repository-relative path
    therefore makes all of them repository-relative at once, from whichever subdirectory bgc
    runs (docs/ci.md), instead of each renderer rewriting each path it meets and missing some.
    A path outside the repository becomes absolute. Without a configuration nothing changes:
    paths stay as the user gave them.
    """
    if config is None:
        yield list(paths)
        return
    given = [os.path.abspath(path) for path in paths]
    here = os.getcwd()
    os.chdir(config.root)
    try:
        yield [local_path(path) for path in given]
    finally:
        os.chdir(here)


# --- finding and reading ------------------------------------------------------------------------


def find_config(start_dir: str | Path = ".") -> Config | None:
    """The configuration governing ``start_dir``: the nearest ``bgc.toml`` or ``pyproject.toml``
    with a ``[tool.bgc]`` table, looking upwards but not past the repository root (the first
    directory holding ``.git``), so a stray file above a checkout never configures it.
    Returns ``None`` when there is none; raises :class:`ConfigError` when one is malformed.
    """
    directory = Path(start_dir).resolve()
    for candidate in (directory, *directory.parents):
        bgc_toml = candidate / "bgc.toml"
        if bgc_toml.is_file():
            return load_config(bgc_toml)
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            config = load_config(pyproject)
            if config is not None:
                return config
        if (candidate / ".git").exists():
            return None
    return None


def repository_root(start_dir: str | Path = ".") -> Path:
    """The directory machine outputs make paths relative to: the configuration's directory,
    else the nearest enclosing git work tree, else ``start_dir`` itself."""
    config = find_config(start_dir)
    return config.root if config is not None else git_root(start_dir)


def git_root(start_dir: str | Path = ".") -> Path:
    """The nearest enclosing directory holding ``.git``, else ``start_dir`` itself."""
    directory = Path(start_dir).resolve()
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return directory


def load_config(path: str | Path) -> Config | None:
    """Read one configuration file. A ``pyproject.toml`` without ``[tool.bgc]`` gives ``None``."""
    import tomllib

    path = Path(path).resolve()
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read: {error.strerror}", Span(path.name)) from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"not valid UTF-8 (offset {error.start})", Span(path.name)) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _toml_error(error, path, text) from None
    except ValueError:  # tomllib converts integers with int(), which refuses over 4300 digits
        raise _long_integer_error(path, text) from None
    if _table(path) is not None:
        tool = document.get("tool", {})
        if not isinstance(tool, dict) or "bgc" not in tool:
            return None
        table = tool["bgc"]
    else:
        table = document
    return _build(path, table, text)


def _table(path: Path) -> str | None:
    """The TOML table holding bgc's keys: ``tool.bgc`` in pyproject.toml, the top of bgc.toml."""
    return "tool.bgc" if path.name == "pyproject.toml" else None


def _located(
    path: Path, text: str, key: str, message: str, hint: str | None = None, *, at_key: bool = False
) -> ConfigError:
    """An error at ``key``'s value in ``text`` (``at_key``: at the key itself; the table header
    when the key is not found). The file is named by its path from the repository root, which
    is its bare name: the configuration's directory is the root."""
    keys, values = _key_spans(text, path.name, _table(path))
    span = (keys if at_key else values).get(key) or values.get("", Span(path.name))
    lines = text.splitlines()
    source = lines[span.line - 1] if 0 < span.line <= len(lines) else None
    return ConfigError(message, span, hint=hint, source=source)


def _build(path: Path, table: Any, text: str) -> Config:
    """The configuration in ``table``, read with the one schema reader (:class:`bgc.core.values.schema.Fields`,
    as orders, plans and test files are), each error located at its key or value in ``text``."""
    if not isinstance(table, dict):
        raise _located(path, text, "", "[tool.bgc] must be a table")
    try:
        return _read(Fields(table, ()), path)
    except ModelError as error:
        key = str(error.path[0]) if error.path else ""
        raise _located(path, text, key, f"{format_path(error.path)}: {error.message}", at_key=error.at_key) from None


def _read(table: Fields, path: Path) -> Config:
    table.only(*KEYS)
    mode = table.text("mode", None)
    if mode is not None and not re.fullmatch(r"[^\s,#\"{}()\[\]]+", mode):
        raise ModelError(f"{mode!r} is not a mode name", ("mode",))
    policies = _texts(table, "policies")
    for pattern in policies:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise ModelError(f"the glob {pattern!r} must be relative and stay inside the repository", ("policies",))

    def resolve(key: str) -> Path | None:
        value = table.text(key, None)
        return None if value is None else (path.parent / value).resolve()

    return Config(
        path=path,
        policy=resolve("policy"),
        mode=mode,
        policies=policies,
        tests=tuple((path.parent / entry).resolve() for entry in _texts(table, "tests")),
        orders=resolve("orders"),
        expectations=resolve("expectations"),
        select=_selectors(table, "select") if table.get("select", None) is not None else None,
        ignore=_selectors(table, "ignore"),
    )


def _selectors(table: Fields, key: str) -> tuple[str, ...]:
    """A ``select``/``ignore`` list of lint codes or prefixes, each checked (a typo must not
    switch lints off silently)."""
    from bgc.analysis.selection import selector_problem

    chosen = _texts(table, key)
    for index, selector in enumerate(chosen):
        problem = selector_problem(selector)
        if problem is not None:
            raise ModelError(problem, (key, index) if isinstance(table.get(key), list) else (key,))
    return chosen


def _texts(table: Fields, key: str) -> tuple[str, ...]:
    """The key's one text or list of texts, each non-empty (``tests = "t"`` is ``tests = ["t"]``)."""
    value = table.value(key, str, list, default=None)
    if value is None:
        return ()
    if isinstance(value, str):
        return (table.text(key),)
    return tuple(Fields(item, (key, i)).is_text() for i, item in enumerate(value))


def _toml_error(error: Exception, path: Path, text: str) -> ConfigError:
    """tomllib puts the position in the message text; lift it into a proper span."""
    message = str(error)
    match = re.search(r"\(at line (\d+), column (\d+)\)$", message)
    if not match:
        return ConfigError(f"invalid TOML: {message}", Span(path.name))
    line, col = int(match.group(1)), int(match.group(2))
    lines = text.splitlines()
    source = lines[line - 1] if 0 < line <= len(lines) else None
    return ConfigError(f"invalid TOML: {message[: match.start()].rstrip()}", Span(path.name, line, col), source=source)


def _long_integer_error(path: Path, text: str) -> ConfigError:
    """An integer too long for Python to convert, at the first run of over 4300 digits: TOML
    integers are 64-bit, so it is out of range whatever it says."""
    message = "invalid TOML: integer out of range (TOML integers are 64-bit)"
    match = re.search(r"(?<![\w.\"'])[-+]?[0-9](?:_?[0-9]){4300,}", text)
    if match is None:  # another ValueError of tomllib (none is known): name the file, no wrong place
        return ConfigError(message, Span(path.name))
    line = text.count("\n", 0, match.start()) + 1
    col = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
    return ConfigError(message, Span(path.name, line, col), source=text.split("\n")[line - 1].removesuffix("\r"))


_HEADER = r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$"
_KEY = r"""^(\s*)("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*=\s*"""


def _key_spans(text: str, file: str, table: str | None) -> tuple[dict[str, Span], dict[str, Span]]:
    """Where each key of ``table`` (``None``: the top level) is written, and where its value
    starts: ``(keys, values)``.

    tomllib reports no positions, so a light line scan finds them; in ``values``, ``""`` maps to
    the table header. Keys it cannot place (inline tables, dotted keys) fall back to the header.
    """
    keys: dict[str, Span] = {}
    spans: dict[str, Span] = {}
    current: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(_HEADER, line)
        if header and not line.lstrip().startswith("[["):
            current = re.sub(r"\s*\.\s*", ".", header.group(1)).replace('"', "")
            if current == table:
                spans[""] = Span(file, number, line.index("[") + 1)
            continue
        if current != table:
            continue
        key = re.match(_KEY, line)
        if key:
            name = key.group(2).strip("\"'")
            keys.setdefault(name, Span(file, number, key.start(2) + 1, number, key.end(2) + 1))
            spans.setdefault(name, Span(file, number, key.end() + 1))
    return keys, spans

