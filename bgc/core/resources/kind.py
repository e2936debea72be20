"""What every resource kind shares: the shape of a :data:`~bgc.core.resources.RESOURCES` row, a
refused value, and the checks every value takes before its kind reads it.

Every value, of any resource, is refused when it holds NUL, a control character or a lone
surrogate, or is not NFC (a decomposed accent could name the same file as the composed one a
rule spells). A segment a URL parser or server would read as ``.`` or ``..`` is refused by the
kinds that say so (:func:`dot_segment_problem`): every resource without a row, and ``net``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

__all__ = ["Rejection", "ResourceKind", "decoded_dot_segment", "dot_segment_problem", "text_problem", "unicode_problem"]


@dataclass(frozen=True, slots=True)
class Rejection:
    """A concrete value that must not be matched at all, and why (the gate denies it)."""

    value: str
    reason: str


@dataclass(frozen=True, slots=True)
class ResourceKind:
    """How the values of one resource are read and its patterns matched: a row of
    :data:`~bgc.core.resources.RESOURCES`, defined by the resource's own module."""

    read: Callable[[str, bool], str | Rejection]
    """The canonical form of a value that passed :func:`text_problem`, or why it is refused; the
    flag says the policy declared ``filesystem case-insensitive``."""
    plain: str | None = None
    """A regular expression for values certainly in their canonical form already, so that
    :func:`~bgc.core.resources.normalise` returns them as they are without :attr:`read` (for a URL,
    a parser call), and the gate decides them in one regex pass (:mod:`bgc.core._gate_index`). It
    must be unambiguous (a text can be read one way only: labels, segments and pieces are split at
    characters they cannot hold), so matching stays linear, and accept only values :attr:`read`
    returns unchanged (tests check, on generated values); everything else, every value to refuse
    among it, takes the full reading."""
    plain_split: tuple[str, str] | None = None
    """:attr:`plain` cut at a ``/``: ``(head, rest)``, where every text matching ``head`` (which ends
    in ``/``) followed by text matching ``rest`` is accepted by :attr:`plain` (a test checks), and
    ``rest`` has one group, set when the rest holds a ``/``. Any ``/``-prefix of such a value longer
    than its head is a head too, so the gate finds a plain value's deepest directory among a plan's
    directories that are heads, matched as literal text, and checks only the rest
    (:mod:`bgc.core._gate_index`), instead of reading the value twice."""
    plain_when_case_insensitive: bool = True
    """Whether :attr:`plain` holds on a case-insensitive file system too (not for ``fs``, whose
    refusals there it does not encode)."""
    argv: bool = False
    """Values and patterns are argvs in the argv dialect (:mod:`bgc.core.resources.proc`): one word a
    segment, and ``.`` and ``..`` are words, never refused as segments."""
    url: bool = False
    """Values are URLs (:mod:`bgc.core.resources.net`): a deny or ask stands for every scheme, port
    and query, and the URL lints read its patterns."""
    plain_match: Callable[[str], object] | None = field(init=False, repr=False, compare=False)
    """:attr:`plain` compiled (a full match), or None."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "plain_match", re.compile(self.plain).fullmatch if self.plain is not None else None)


def unicode_problem(value: str) -> str | None:
    """Why ``value`` is not Unicode text (it holds a lone surrogate), or ``None``.

    A lone surrogate U+DC80–U+DCFF is how Python carries a byte that was not UTF-8
    (``surrogateescape``: command-line arguments, ``bgc gate`` and ``bgc match`` input), so it is
    reported as that byte.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        cp = ord(value[error.start])
        if 0xDC80 <= cp <= 0xDCFF:
            return f"is not valid UTF-8 (byte 0x{cp - 0xDC00:02X})"
        return f"is not valid Unicode (lone surrogate U+{cp:04X})"
    return None


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""Unicode's control characters (general category Cc: C0, DEL and C1; fixed by Unicode's
stability policy, and a test compares it with ``unicodedata`` over every code point)."""


def text_problem(value: str) -> str | None:
    """Why ``value`` is refused whatever its resource (see the module docstring), or ``None``."""
    if value.isascii() and value.isprintable():
        return None  # the common case: no control characters, surrogates or decompositions
    problem = unicode_problem(value)
    if problem:
        return problem
    control = _CONTROL.search(value)
    if control:
        cp = ord(control.group())
        return "contains NUL" if cp == 0 else f"contains the control character U+{cp:04X}"
    if not unicodedata.is_normalized("NFC", value):
        return "is not in Unicode NFC form (a decomposed name could dodge a rule)"
    return None


def dot_segment_problem(text: str) -> str | None:
    """Why ``text`` climbs or stays where it seems not to: a ``.`` or ``..`` segment, as written or
    as a URL parser reads it (:func:`decoded_dot_segment`); or ``None``."""
    for seg in text.split("/"):
        if seg in (".", ".."):
            return f"has a '{seg}' segment"
    seg = decoded_dot_segment(text)
    if seg is not None:
        return f"has a segment that decodes to '{seg}' (percent-encoding, '\\', '?', '#' or ';')"
    return None


_URL_SEGMENT_END = re.compile(r"[/\\?#;]")


def decoded_dot_segment(text: str) -> str | None:
    """``.`` or ``..`` when a segment of ``text`` is one the way a URL parser reads it, else None.

    A URL parser percent-decodes ``%2e``, reads ``\\`` as ``/`` and ends a path segment at ``?``
    and ``#`` (WHATWG, RFC 3986 §6.2.2); servers also cut path parameters at ``;``. So
    ``v1/%2e%2e/admin``, ``v1/..\\admin``, ``public/..?x`` and ``a/..;/b`` all climb out of where
    they seem to be. Refusing them errs on the closed side (``..%3Fx`` is refused too).
    """
    if "%" in text:
        text = unquote(text)
    for segment in _URL_SEGMENT_END.split(text):
        if segment in (".", ".."):
            return segment
    return None
