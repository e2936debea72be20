"""Which lints ``bgc check`` reports: ``--select`` and ``--ignore``, read as ruff reads them.

A selector is a code (``BGC103``), a prefix of codes (``BGC1`` is every BGC1xx lint, ``BGC10``
every BGC10x) or ``ALL``. ``select`` replaces the set reported (by default every lint);
``ignore`` takes codes out of it. Where a select and an ignore selector both match a code, the
more specific (longer) one decides, and an ignore wins a tie: ``--select BGC1 --ignore BGC104``
is every BGC1xx but BGC104, ``--ignore BGC1 --select BGC104`` only BGC104. The configuration's
``select``/``ignore`` (``[tool.bgc]``) come first, then the command line's, each pair as one
layer: a layer that selects starts afresh (``--select BGC103`` on the command line overrides a
configured ``ignore = ["BGC103"]``), one that only ignores removes codes from what the layer
before reported.

Only lints can be selected or ignored (:data:`bgc.analysis.lints.CODES`): a policy that does not
load, an expect that fails or a test that fails are facts about the policy, always reported. A
selector that matches no lint is an error, as a typo must not switch every lint off silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from bgc import codes
from dataclasses import dataclass
from bgc.analysis.findings import Finding

LINT_CODES = (
    codes.ALLOW_SHADOWED,
    codes.ASK_SHADOWED,
    codes.DIRECTORY_ITSELF,
    codes.WRITE_EVERYWHERE,
    codes.ATOM_AS_PATTERN,
    codes.ALLOW_ON_CALL_TOOL,
    codes.NEVER_MATCHES,
    codes.LINT_UNDECIDED,
    codes.UNKNOWN_TARGET,
    codes.PROPOSER_CHOSEN_GRANT,
    codes.HOST_LABEL_WILDCARD,
    codes.FALLBACK_WITHOUT_EFFECT,
    codes.UNUSED_SUPPRESSION,
    codes.APPROVER_NOT_BOUND,
)
"""Every code a lint (:mod:`bgc.analysis.lints`) reports: what ``# bgc: ignore[...]`` and
``--select``/``--ignore`` may name. Here rather than in the lints' package, so that reading the
configuration does not import every lint."""

ALL = "ALL"
_SELECTOR = re.compile(r"BGC\d{0,3}")


def selector_problem(selector: str, lints: Iterable[str] = LINT_CODES) -> str | None:
    """Why ``selector`` selects no lint, or None."""
    if selector == ALL:
        return None
    if not _SELECTOR.fullmatch(selector):
        return f"{selector!r} is not a code or a prefix of codes (BGC101, BGC1, ALL)"
    if not any(code.startswith(selector) for code in lints):
        return (
            f"{selector!r} selects no lint: lints are BGC1xx and BGC541 (load errors, expects and "
            "tests are always reported)"
        )
    return None


def selectors(values: Iterable[str]) -> tuple[str, ...]:
    """Selectors as given on a command line: each value may list several, comma-separated."""
    return tuple(item.strip() for value in values for item in value.split(",") if item.strip())


@dataclass(frozen=True, slots=True)
class Layer:
    """One ``select``/``ignore`` pair: ``select`` None keeps what the layer before selected."""

    select: tuple[str, ...] | None
    ignore: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Selection:
    """The lints to report, from layers applied in order (configuration, then command line)."""

    layers: tuple[Layer, ...] = ()

    def reports(self, code: str) -> bool:
        """Whether a finding of ``code`` (a lint's) is reported."""
        on = True
        for layer in self.layers:
            chosen = _specificity(code, layer.select or ()) if layer.select is not None else None
            ignored = _specificity(code, layer.ignore)
            if layer.select is not None:
                on = chosen is not None and (ignored is None or chosen > ignored)
            elif ignored is not None:
                on = False
        return on

    def kept(self, findings: Iterable[Finding]) -> list[Finding]:
        """``findings`` without the lints this selection leaves out (every other finding kept)."""
        return [f for f in findings if f.rule_id not in LINT_CODES or self.reports(f.rule_id)]


def _specificity(code: str, chosen: Sequence[str]) -> int | None:
    """The length of the longest selector in ``chosen`` that matches ``code`` (``ALL``: 0), or None."""
    best = None
    for selector in chosen:
        length = 0 if selector == ALL else len(selector) if code.startswith(selector) else None
        if length is not None and (best is None or length > best):
            best = length
    return best
