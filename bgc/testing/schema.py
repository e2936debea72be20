"""The test file (``*.bgt.yaml``) as written: its keys, and the values read from it, each
refused at its own line and column (``bgc test`` exits 2 on a malformed file: it is bad input,
not a failing test)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bgc.config import Config
    from bgc.documents import Document
    from bgc.model import WorkOrder

FILE_KEYS = ("policy", "mode", "tests")
CASE_KEYS = ("name", "order", "mode", "verdicts", "calls", "plan")
INLINE_ORIGIN = {"model": "bgc-test", "parents": [], "prompt": "sha256:" + "0" * 64}


def read_order(document: Document, at: tuple[str | int, ...], value: Any, test_file: str) -> WorkOrder:
    from bgc.canonical import DataModelError
    from bgc.documents import load_order
    from bgc.model import WorkOrder

    if isinstance(value, str):
        target = os.path.normpath(os.path.join(os.path.dirname(test_file), value))
        if not os.path.isfile(target):
            raise document.error_at(at, f"no such order file {target!r}")
        return load_order(target)
    if isinstance(value, dict):
        data = {"origin": INLINE_ORIGIN, **value}
        try:
            return WorkOrder.from_data(data)
        except DataModelError as error:
            raise document.error_at((*at, *error.path), error.message) from None
    raise document.error_at(at, "expected an order: a path (relative to this file) or an inline map")


def read_policy_path(document: Document, data: dict[str, Any], config: Config | None) -> str:
    value = data.get("policy")
    if value is None:
        if config is not None and config.policy is not None:
            from bgc.config import local_path

            return local_path(config.policy)
        raise document.error_at(
            (), "no policy: give `policy:` (relative to this file) or name one in [tool.bgc] / bgc.toml"
        )
    if not isinstance(value, str) or not value:
        raise document.error_at(("policy",), "expected the path of a policy file")
    target = os.path.normpath(os.path.join(os.path.dirname(document.path), value))
    if not os.path.isfile(target):
        raise document.error_at(("policy",), f"no such policy file {target!r}")
    return target


def only(document: Document, where: tuple[str | int, ...], data: Mapping[str, Any], keys: Sequence[str]) -> None:
    from bgc.render.words import did_you_mean

    for key in data:
        if key not in keys:
            hint = did_you_mean(key, keys, repr) or f"expected one of: {', '.join(keys)}"
            raise document.error_at((*where, key), f"unknown key {key!r} ({hint})", at_key=True)


def optional_text(document: Document, at: tuple[str | int, ...], value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise document.error_at(at, f"expected text, got {value!r}")
    return value
