"""Bounds on the work one order may cause, in one place (docs/semantics.md, "Bounds").

Security is the product, so bgc must answer every input in seconds, never minutes, and never
crash on it. Structural limits are checked when an order or a policy is loaded and refused
with a located error (exit 2): they are generous for anything a person or an agent writes,
and they keep what the budget does not count (parsing, building automata, the width of every
automaton step) small. The order's work budget then bounds what the pattern algebra may
spend; a question past it is "unknown", which is never granted.
"""

MAX_REQUESTS = 1_000
"""Atoms one order may request (an order asks for what one task needs: tens, not thousands)."""

MAX_REQUEST_CHARS = 65_536
"""Characters of all the atoms one order requests, together: a thousand requests of 65
characters on average (parsing costs time with every character, before any budget applies)."""

MAX_CALLS = 1_000
"""Tool calls one order may propose."""

MAX_CALL_ATOMS = 1_000
"""Atoms one tool template may expand to for one call: list parameters multiply (two lists of
a thousand paths would otherwise be a million atoms). Each atom is held to MAX_PATTERN_LENGTH,
and the atoms are charged to the order's budget before any is decided."""

MAX_PATTERN_LENGTH = 1_024
"""Characters (NFC) in one pattern of a request or a rule: longer than any path or URL pattern
people write, and short enough that an automaton step stays cheap (its state is a bitmask
about as wide as the pattern)."""

MAX_PATTERN_SEGMENTS = 128
"""``/``-separated segments in one pattern (``/src/**/*.py`` has three)."""

MAX_PATTERN_WILDCARDS = 32
"""Wildcards in one pattern: each ``*``, ``?``, class ``[...]`` and ``**`` counts once. The
algebra's cost grows with them (``*a`` then 17 ``?`` needs 2^17 automaton states); patterns
people write have a handful."""

ORDER_BUDGET = 3_000_000
"""Algebra steps (about a cached automaton transition each) one order may spend, requests and
calls together: well under a second of any kind of work, ten times what the largest bundled
example needs against its policy. Counted in steps, not seconds, so that a plan is the same on
every run and machine (bgc.core.patterns.budget; what fits: docs/semantics.md, "Bounds")."""

MAX_KEPT_QUESTION = 64
"""Patterns in the largest algebra question whose answer is kept in the cache between processes
(bgc.core.answer_cache): a pattern against a few dozen others. Larger questions (a request against
every rule of a large policy) are few, and spelling them out as text on every asking would cost
a noticeable part of working them out."""
