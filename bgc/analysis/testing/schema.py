"""The test file (``*.bgt.yaml``) as written, read whole before any test runs.

Read with the one schema reader (:class:`bgc.core.values.schema.Fields`), like orders, plans, recordings and
the configuration: an unknown key is refused at the key with a "did you mean", a wrong kind
names the kind found, a missing required key is named, and every error is located at its own
line and column (``bgc test`` exits 2 on a malformed file: it is bad input, not a failing test).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dataclasses import dataclass
from bgc.core.values.model import GrantAtom, WorkOrder
from bgc.core.plan import CALL_STATUSES, VERDICTS
from bgc.core.values.schema import Fields, ModelError

if TYPE_CHECKING:
    from bgc.analysis.config import Config
    from bgc.core.values.documents import Document

FILE_KEYS = ("policy", "mode", "tests")
CASE_KEYS = ("name", "order", "mode", "verdicts", "calls", "plan")
EXPECTATIONS = ("verdicts", "calls", "plan")
INLINE_ORIGIN = {"model": "bgc-test", "parents": [], "prompt": "sha256:" + "0" * 64}
"""The origin an inline order is given: a test's order is written by the policy's author, not
proposed by a model, and its origin decides nothing."""

Where = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """One expected verdict: the requested atom (normalised as a request is) and what it gets."""

    atom: str
    verdict: str
    at: Where


@dataclass(frozen=True, slots=True)
class TestCase:
    """One test: its order (a file, read when the test runs, or inline), its mode, and what
    must come of it; ``at`` is its place in the file, ``mode_at`` where its mode is written (its
    own, or the file's: an unknown mode is reported there)."""

    __test__ = False  # a policy test, not one for pytest to collect

    name: str
    at: Where
    order: str | WorkOrder
    mode: str | None
    mode_at: Where
    verdicts: tuple[Verdict, ...] | None
    calls: tuple[str, ...] | None
    plan: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class TestFile:
    """A test file read and checked: the policy its tests compile against, and its tests."""

    __test__ = False

    document: Document
    policy: str
    cases: tuple[TestCase, ...]


def read_test_file(path: str, config: Config | None) -> TestFile:
    """Read and check the test file at ``path``; a :class:`~bgc.core.values.documents.DocumentError`
    located in it when it is malformed. Order files are found now, and read when their test runs."""
    from bgc.core.values.documents import read_document

    document = read_document(path)
    return document.build(lambda data: _read(document, Fields(data, ()), config))


def _read(document: Document, root: Fields, config: Config | None) -> TestFile:
    root.only(*FILE_KEYS)
    policy = _policy(document.path, root, config)
    mode = root.text("mode", None)
    cases = root.maps("tests")
    if not cases:
        raise ModelError("expected at least one test", ("tests",))
    names: dict[str, int] = {}
    read = []
    for index, case in enumerate(cases):
        read.append(_case(document.path, case, index, mode))
        name = read[-1].name
        if name in names:
            raise ModelError(f"the name {name!r} is already used by test {names[name] + 1}", (*case.path, "name"))
        names[name] = index
    return TestFile(document, policy, tuple(read))


def _policy(test_file: str, root: Fields, config: Config | None) -> str:
    """The policy's path: ``policy`` relative to the test file, else the configured one."""
    value = root.text("policy", None)
    if value is None:
        if config is not None and config.policy is not None:
            from bgc.analysis.config import local_path

            return local_path(config.policy)
        raise ModelError("no policy: give `policy:` (relative to this file) or name one in [tool.bgc] / bgc.toml")
    target = os.path.normpath(os.path.join(os.path.dirname(test_file), value))
    if not os.path.isfile(target):
        raise ModelError(f"no such policy file {target!r}", ("policy",))
    return target


def _case(test_file: str, case: Fields, index: int, file_mode: str | None) -> TestCase:
    case.only(*CASE_KEYS)
    if not any(key in case.data for key in EXPECTATIONS):
        raise ModelError("a test needs at least one of `verdicts`, `calls`, `plan`", case.path)
    return TestCase(
        case.text("name", None) or f"test {index + 1}",
        case.path,
        _order(test_file, case.at("order")),
        case.text("mode", None) or file_mode,
        (*case.path, "mode") if "mode" in case.data else ("mode",),
        _verdicts(case.map("verdicts")) if "verdicts" in case.data else None,
        tuple(item.is_one_of(CALL_STATUSES, "call status") for item in case.maps("calls")) if "calls" in case.data else None,
        case.map("plan").data if "plan" in case.data else None,
    )


def _order(test_file: str, order: Fields) -> str | WorkOrder:
    """An order file's path (relative to the test file, which must exist) or an inline order."""
    if isinstance(order.data, str):
        target = os.path.normpath(os.path.join(os.path.dirname(test_file), order.data))
        if not os.path.isfile(target):
            raise ModelError(f"no such order file {target!r}", order.path)
        return target
    if isinstance(order.data, dict):
        return order.build(WorkOrder.from_data, {"origin": INLINE_ORIGIN, **order.data})
    raise ModelError("expected an order: a path (relative to this file) or an inline map", order.path)


def _verdicts(verdicts: Fields) -> tuple[Verdict, ...]:
    if not verdicts.data:
        raise ModelError("expected a map of requested atom → verdict, got an empty map", verdicts.path)
    read = []
    for text in verdicts.data:
        field = verdicts.at(text)
        verdict = field.is_one_of(VERDICTS, "verdict")
        read.append(Verdict(str(field.build(GrantAtom.parse, text)), verdict, field.path))
    return tuple(read)


def order_of(case: TestCase) -> WorkOrder:
    """A test's order: the inline one, or the file's, read now (its errors located in it)."""
    from bgc.core.values.documents import load_order

    return case.order if isinstance(case.order, WorkOrder) else load_order(case.order)
