"""git's wildmatch vectors (WM_PATHNAME, case-sensitive): bgc agrees with every one it accepts.

The vectors live in the shared conformance directory beside the repository (CI clones the
repository with ``shared/`` as a sibling); they are read at run time, never copied here.
"""

from __future__ import annotations

import json
from pathlib import Path

from bgc.core.patterns.glob import PatternError, parse
from tests.samples import require_shared_input

VECTORS = Path(__file__).resolve().parents[4] / "shared" / "conformance" / "wildmatch.json"

#: The only reasons bgc may refuse a pattern git accepts (or aborts on): it is malformed.
MALFORMED = ("empty pattern", "unclosed [", "trailing \\", "unknown character class", "a class cannot contain '/'")


def _vectors() -> list[dict[str, str]]:
    path = require_shared_input(VECTORS, "git's wildmatch conformance vectors (shared/ beside the repository)")
    return json.loads(path.read_text(encoding="utf-8"))


def test_bgc_agrees_with_git_on_every_accepted_vector() -> None:
    vectors = _vectors()
    assert len(vectors) > 100
    disagreements, accepted = [], 0
    for v in vectors:
        try:
            pattern = parse(v["pattern"])
        except PatternError:
            continue
        accepted += 1
        if pattern.matches(v["text"]) != (v["expect"] == "1"):
            disagreements.append(v)
    assert disagreements == []
    assert accepted >= len(vectors) - 20


def test_bgc_rejects_only_malformed_patterns() -> None:
    for v in _vectors():
        try:
            parse(v["pattern"])
        except PatternError as error:
            assert error.message.startswith(MALFORMED), (v, error.message)
            # git never matches a malformed pattern, except that it matches "" with "";
            # bgc makes the empty pattern an error (DESIGN §2).
            assert v["expect"] == "0" or v["pattern"] == "", v
