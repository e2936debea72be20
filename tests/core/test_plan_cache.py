"""Plans read by enforcers are verified once per exact content (bgc.core.plan.read_plans): a hit
skips parsing and verification, but never lets through what the verification would refuse —
an edit of any kind is a different content, a pin is checked on every read, and an error is
located in the file as without the cache."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bgc.core import plan as plan_module
from bgc.errors import BgcError
from bgc.core.values.model import Digest
from bgc.core.plan import plans_from_data, read_plans

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plan of an example order, as `bgc compile --format json` writes it."""
    from bgc.core.compiler import Compiler
    from bgc.core.values.documents import load_order
    from bgc.core.policy.loader import load_policy

    monkeypatch.setenv("BGC_CACHE_DIR", str(tmp_path / "cache"))
    order = load_order(str(ROOT / "examples/orders/overreach.yaml"))
    compiled = Compiler(load_policy(ROOT / "policies/default.bgp")).compile(order)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(compiled.to_data(), indent=2))
    return path


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = plan_module._verified_plans
    monkeypatch.setattr(plan_module, "_verified_plans", lambda data: calls.append(1) or real(data))
    return calls


def test_a_plan_is_verified_once_per_content(written: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    verifications = _counting(monkeypatch)
    expected = plans_from_data(json.loads(written.read_text()))
    assert read_plans(str(written)) == expected and len(verifications) == 2  # plans_from_data's, then read_plans'
    assert read_plans(str(written)) == expected and len(verifications) == 2  # a hit
    written.write_text(written.read_text() + "\n")  # the same plan, other bytes: verified again
    assert read_plans(str(written)) == expected and len(verifications) == 3


def _edits(text: str, rng: random.Random) -> list[tuple[str, str]]:
    """Edits of a verified plan's text, by class: every one changes what the id covers."""
    data = json.loads(text)
    request = rng.randrange(len(data["requests"]))
    edits = []
    flipped = json.loads(text)
    verdict = data["requests"][request]["verdict"]
    flipped["requests"][request]["verdict"] = "granted" if verdict != "granted" else "denied"
    edits.append(("a verdict", json.dumps(flipped, indent=2)))
    widened = json.loads(text)
    parts = [p for r in widened["requests"] for key in ("granted", "ask", "denied") for p in r[key] if p["atom"] != "fs:write:/**"]
    rng.choice(parts)["atom"] = "fs:write:/**"  # a part that already says so would be no edit
    edits.append(("a part's atom", json.dumps(widened, indent=2)))
    dropped = json.loads(text)
    for r in dropped["requests"]:
        for part in r["granted"]:
            part["except"] = []
    edits.append(("the excepts", json.dumps(dropped, indent=2)))
    same_size = text.replace('"denied"', '"ask"   ', 1) if '"denied"' in text else text.replace("ask", "asx", 1)
    edits.append(("a word, same size", same_size))
    return edits


@pytest.mark.parametrize("seed", range(4))
def test_an_edited_copy_of_a_verified_plan_is_refused(written: Path, seed: int) -> None:
    text = written.read_text()
    read_plans(str(written))  # verified and cached
    for what, edited in _edits(text, random.Random(seed)):
        written.write_text(edited)
        with pytest.raises(BgcError):
            read_plans(str(written))
        written.write_text(text)
        assert read_plans(str(written)), what


def test_pins_are_checked_on_every_read_and_located_as_without_the_cache(written: Path) -> None:
    from bgc.core.values.documents import read_document

    plan_id = Digest(json.loads(written.read_text())["id"])
    other = Digest("sha256:" + "0" * 64)
    assert read_plans(str(written), expect_plans=[plan_id])  # a miss, pinned
    assert read_plans(str(written), expect_plans=[plan_id])  # a hit, pinned
    for pins in ({"expect_plans": [other]}, {"expect_policy": other}):
        with pytest.raises(BgcError) as hit:
            read_plans(str(written), **pins)  # type: ignore[arg-type]
        with pytest.raises(BgcError) as fresh:
            read_document(str(written)).build(lambda data: plans_from_data(data, **pins))  # type: ignore[arg-type]
        assert hit.value.render() == fresh.value.render()


def test_stdin_plans_are_read_once(written: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    data = written.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert read_plans("-") == read_plans(str(written))
