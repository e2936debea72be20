"""The one schema reader (bgc.core.values.schema.Fields), through every kind of input it reads: orders,
plans, test files, recordings and the configuration.

Each mistake class is generated over every field of a real document, not listed by example:
an unknown key next to every key (a near miss: "did you mean" the key it misses), a value of
the wrong kind in place of every value, every required key removed. The document is written as
JSON, one key per line, so the place each error must point at is found in the text itself;
the function the commands read it with (a file, as they do) must refuse it at that line and
column. The commands themselves run on one case per kind: golden files hold their messages
(exit 2) as people read them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bgc.errors import BgcError, ExitCode
from bgc.core.values.schema import DataModelError, Fields, ModelError
from tests.samples import bgc, replaced, walk

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "schema"
ORDER = ROOT / "examples" / "orders" / "deploy.yaml"
POLICY = ROOT / "policies" / "default.bgp"
WRONG = 0.25
"""The wrong-kind value: no field whose value is checked takes a fractional number."""

Path_ = tuple[str | int, ...]


def place(text: str, needle: str) -> tuple[int, int]:
    """Line and column (1-based) of the only occurrence of ``needle`` in ``text``."""
    assert text.count(needle) == 1, needle
    offset = text.index(needle)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


class Kind:
    """One input kind: a valid document as data, where it is written, the command that reads
    it, the paths whose value may be anything (free-form data), and the optional keys."""

    def __init__(
        self, name: str, data: Any, file: str, run: Callable[[Path], Any], free: Callable[[Path_], bool],
        optional: Callable[[Path_], bool], fixed: Callable[[Path_], bool] = lambda path: False,
        open_keys: Callable[[Path_], bool] = lambda path: False,
    ) -> None:
        self.name, self.data, self.file, self.run = name, data, file, run
        self.free, self.optional, self.fixed, self.open_keys = free, optional, fixed, open_keys

    def maps(self) -> list[Path_]:
        return [path for path, value in walk(self.data) if isinstance(value, dict) and not self.free(path)]

    def values(self) -> list[Path_]:
        """Every field's path, once per place in the schema (the first item of each list stands
        for the others: one plan has a hundred values, of some forty kinds of field)."""
        shapes: dict[Path_, Path_] = {}
        for path, _ in walk(self.data):
            if path and not self.free(path) and not self.fixed(path):
                shapes.setdefault(tuple("[]" if isinstance(part, int) else part for part in path), path)
        return list(shapes.values())

    def keys(self) -> list[Path_]:
        """The paths whose last part is a key of the schema (not a key that is data, like an
        expected verdict's atom)."""
        return [path for path in self.values() if isinstance(path[-1], str) and not self.open_keys(path[:-1])]


def _order_data() -> Any:
    import yaml

    return yaml.safe_load(ORDER.read_text())


def _compiled(tmp: Path) -> Any:
    out = tmp / "plan.json"
    assert bgc("compile", str(ORDER), "-p", str(POLICY), "--format", "json", "-o", str(out), "--fail-on", "never").exit_code == 0
    return json.loads(out.read_text())


def _free(*prefixes: Path_) -> Callable[[Path_], bool]:
    """Free-form data: each of ``prefixes`` and everything below it. A prefix ending in ``...``
    frees only what is below it (a call's ``params`` must be a map, of anything)."""
    def free(path: Path_) -> bool:
        for prefix in prefixes:
            below = prefix[-1] is ...
            start = prefix[:-1] if below else prefix
            if path[: len(start)] == start and len(path) > len(start) - (0 if below else 1):
                return True
        return False

    return free


def kinds(tmp: Path) -> dict[str, Kind]:
    order = _order_data()
    plan = _compiled(tmp)
    recording = json.loads((ROOT / "examples" / "expected" / "deploy.yaml.expected.json").read_text())
    test_file = {
        "policy": str(POLICY),
        "mode": None,
        "tests": [{"name": "deploy", "order": {k: order[k] for k in ("intent", "calls", "requests")},
                   "verdicts": {"proc:exec:kubectl": "denied"}, "calls": ["uncovered", "pending", "uncovered"],
                   "plan": {"requests": [{"verdict": "denied"}]}}],
    }
    del test_file["mode"]

    from bgc.core.values.documents import load_order, read_document
    from bgc.analysis.outcomes import _read_recording
    from bgc.core.plan import plans_from_data
    from bgc.analysis.testing.schema import read_test_file

    return {
        "order": Kind("order", order, "order.json", lambda path: load_order(str(path)),
                      free=_free(("intent", "payload"), *[("calls", i, "params", ...) for i in range(3)]),
                      optional=lambda path: path[-1] in ("payload", "calls", "server", "params", "parents")),
        "plan": Kind("plan", plan, "plan.json", lambda path: read_document(str(path)).build(plans_from_data),
                     # without a version a plan is of no version this bgc reads: said so, not "missing"
                     free=lambda path: False, optional=lambda path: path == ("version",),
                     fixed=lambda path: path == ("type",)),  # what says it is a plan at all
        "test file": Kind("test file", test_file, "t.bgt.yaml", lambda path: read_test_file(str(path), None),
                          free=_free(("tests", 0, "plan", ...), ("tests", 0, "order", "intent", "payload"),
                                     *[("tests", 0, "order", "calls", i, "params", ...) for i in range(3)]),
                          optional=lambda path: path == ("policy",) or path[-1] in (
                              "name", "payload", "calls", "server", "params", "verdicts", "plan"),
                          open_keys=lambda path: path == ("tests", 0, "verdicts")),
        "recording": Kind("recording", recording, "deploy.yaml.expected.json", lambda path: _read_recording(path),
                          free=lambda path: False, optional=lambda path: False),
    }


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Kind]:
    return kinds(tmp_path_factory.mktemp("kinds"))


def write(kind: Kind, data: Any, tmp: Path) -> tuple[Path, str]:
    """The document as JSON, one key per line."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path = tmp / kind.file
    path.write_text(text, encoding="utf-8")
    return path, text


def refusals(
    kind: Kind, paths: list[Path_], edit: Callable[[Path_], Callable[[Any, str | int], None]], tmp: Path
) -> Iterator[tuple[Path_, str, tuple[int, int], str]]:
    """For each path, the document with ``edit(path)`` applied there, read as its commands
    read it: refused and located in it (the path, the text, line and column, the message)."""
    for path in paths:
        file, text = write(kind, replaced(kind.data, path, edit(path)), tmp)
        with pytest.raises(BgcError) as caught:
            kind.run(file)
        error = caught.value
        assert error.span is not None and error.span.file == str(file), error.render()
        yield path, text, (error.span.line, error.span.col), error.message


KINDS = ["order", "plan", "test file", "recording"]


@pytest.mark.parametrize("name", KINDS)
def test_the_valid_document_reads(name: str, every_kind: dict[str, Kind], tmp_path: Path) -> None:
    """The control: unedited, each document is read without an error."""
    kind = every_kind[name]
    path, _ = write(kind, kind.data, tmp_path)
    kind.run(path)


@pytest.mark.parametrize("name", KINDS)
def test_an_unknown_key_anywhere_is_refused_at_the_key_with_a_suggestion(
    name: str, every_kind: dict[str, Kind], tmp_path: Path
) -> None:
    kind = every_kind[name]
    paths = kind.keys()

    def typo_of(path: Path_) -> str:
        key = str(path[-1])
        return key + "_x" if len(key) < 4 else key[:-1] + key[-1] * 2

    def beside(path: Path_) -> Callable[[Any, str | int], None]:
        return lambda parent, key: parent.__setitem__(typo_of(path), parent[key])

    for path, text, place_found, message in refusals(kind, paths, beside, tmp_path):
        assert place_found == place(text, f'"{typo_of(path)}"'), (path, message)
        assert f"unknown field {typo_of(path)!r} (did you mean {path[-1]!r}?)" in message, (path, message)
    assert len(paths) >= 8


@pytest.mark.parametrize("name", KINDS)
def test_a_value_of_the_wrong_kind_anywhere_is_refused_at_the_value(
    name: str, every_kind: dict[str, Kind], tmp_path: Path
) -> None:
    kind = every_kind[name]
    paths = kind.values()
    for path, text, place_found, message in refusals(kind, paths, lambda path: lambda parent, key: parent.__setitem__(key, WRONG), tmp_path):
        assert place_found == place(text, str(WRONG)), (path, message)
        if "got" in message:  # the kind found, or the value itself
            assert "got a number" in message or f"got {WRONG}" in message, (path, message)
    assert len(paths) >= 10


@pytest.mark.parametrize("name", KINDS)
def test_a_missing_required_key_is_named(name: str, every_kind: dict[str, Kind], tmp_path: Path) -> None:
    kind = every_kind[name]
    paths = [path for path in kind.keys() if not (kind.optional(path) or kind.fixed(path))]
    for path, _, _, message in refusals(kind, paths, lambda path: lambda parent, key: parent.__delitem__(key), tmp_path):
        assert f"missing required field {path[-1]!r}" in message, (path, message)
    assert len(paths) >= 3


# --- the configuration (TOML): every key -------------------------------------------------------

CONFIG_KEYS = ("policy", "mode", "policies", "tests", "orders", "expectations")


@pytest.mark.parametrize("key", CONFIG_KEYS)
def test_every_config_key_refuses_a_typo_and_a_wrong_kind_where_it_is_written(key: str, tmp_path: Path) -> None:
    """TOML has no positions of its own: the key's line is found, and its value's start."""
    from bgc.analysis.config import ConfigError, load_config

    typo = key[:-1] + key[-1] * 2
    listed = key in ("policies", "tests")  # one text or a list of texts
    for body, at, words in (
        (f'{typo} = "x"\n', typo, f"{typo}: unknown field {typo!r} (did you mean {key!r}?)"),
        (f"{key} = {WRONG}\n", str(WRONG), f"{key}: expected {'text or a list' if listed else 'non-empty text'}, got a number"),
        (f"{key} = [{WRONG}]\n", "[", f"{key}[0]: expected non-empty text, got a number" if listed else f"{key}: expected non-empty text, got a list"),
        (f'{key} = " "\n', '" "', f"{key}: expected non-empty text, got empty text"),
    ):
        text = "# bgc\n" + body
        (tmp_path / "bgc.toml").write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError) as caught:
            load_config(tmp_path / "bgc.toml")
        assert caught.value.message == words
        assert (caught.value.span.line, caught.value.span.col) == place(text, at), body


# --- the reader itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(("kinds", "value", "words"), [
    ((str,), 1, "expected text, got a number"),
    ((int,), True, "expected an integer, got true"),
    ((bool,), 1, "expected true or false, got a number"),
    ((bytes,), "x", "expected bytes, got text"),
    ((dict,), [], "expected a map, got a list"),
    ((list,), {}, "expected a list, got a map"),
    ((float,), "x", "expected a number, got text"),
    ((str, type(None)), 2, "expected text or null, got a number"),
])
def test_every_kind_a_reader_asks_for_is_named(kinds: tuple[type, ...], value: Any, words: str) -> None:
    with pytest.raises(ModelError) as caught:
        Fields({"f": value}, ("top",)).value("f", *kinds)
    assert (caught.value.message, caught.value.path, caught.value.at_key) == (words, ("top", "f"), False)


def test_build_keeps_the_key_at_fault_and_prefixes_the_path() -> None:
    def inner(data: Any) -> None:
        Fields(data, ()).only("kind")

    with pytest.raises(DataModelError) as caught:
        Fields({"kinf": 1}, ("intent",)).build(inner, {"kinf": 1})
    assert (caught.value.path, caught.value.at_key) == (("intent", "kinf"), True)
    assert caught.value.message == "unknown field 'kinf' (did you mean 'kind'?)"


# --- golden: the commands' messages as people read them ------------------------------------------

PROMPT = "sha256:" + "0" * 64


def _plan_with(tmp: Path, edit: Callable[[dict[str, Any]], None]) -> str:
    plan = _compiled(tmp)
    edit(plan)
    (tmp / "plan.json").write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
    return "plan.json"


def _recording_with(tmp: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    (tmp / "bgc.toml").write_text(f'policy = "{POLICY}"\norders = "orders"\n', encoding="utf-8")
    (tmp / "orders").mkdir()
    (tmp / "orders" / "deploy.yaml").write_text(ORDER.read_text(), encoding="utf-8")
    recording = json.loads((ROOT / "examples" / "expected" / "deploy.yaml.expected.json").read_text())
    edit(recording)
    (tmp / "orders" / "deploy.yaml.expected.json").write_text(json.dumps(recording, indent=2) + "\n", encoding="utf-8")


GOLDEN_CASES: dict[str, Callable[[Path], list[str]]] = {
    "order-unknown-key": lambda tmp: (
        (tmp / "order.yaml").write_text(f"intent:\n  knd: x\nrequests: []\norigin: {{model: m, prompt: '{PROMPT}'}}\n"),
        ["digest", "order.yaml"])[1],
    "order-missing-key": lambda tmp: ((tmp / "order.yaml").write_text("intent: {kind: x}\nrequests: []\n"), ["digest", "order.yaml"])[1],
    "plan-wrong-kind": lambda tmp: ["gate", _plan_with(tmp, lambda plan: plan["requests"][0].__setitem__("unknown", "no")), "fs:read:/x"],
    "test-wrong-kind": lambda tmp: (
        (tmp / "t.bgt.yaml").write_text(f"policy: {POLICY}\ntests:\n  - order: {{intent: {{kind: x}}, requests: []}}\n    calls: covered\n"),
        ["test", "t.bgt.yaml"])[1],
    "recording-unknown-key": lambda tmp: (
        _recording_with(tmp, lambda data: data["requests"][0].__setitem__("verdit", "denied")), ["check", "--orders"])[1],
    "config-unknown-key": lambda tmp: ((tmp / "bgc.toml").write_text('policy = "p.bgp"\npolcy = "x"\n'), ["check"])[1],
}
"""One case per kind of input, through the command a user runs on it."""


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_error_messages_match_their_golden_files(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    result = bgc(*GOLDEN_CASES[case](tmp_path))
    assert result.exit_code == ExitCode.BAD_INPUT
    shown = result.stderr + result.stdout  # check reports an unreadable file as a finding on stdout
    golden = GOLDEN / f"{case}.txt"
    if os.environ.get("BGC_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(shown, encoding="utf-8")
    assert shown == golden.read_text(encoding="utf-8")
