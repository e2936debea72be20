"""Bounds on the work one order may cause, in one place (docs/semantics.md, "Bounds").

Security is the product, so bgc must answer every input in seconds, never minutes, and never
crash on it. The order's work budget bounds what the pattern algebra may spend on one order;
a question past it is "unknown", which is never granted.
"""

ORDER_BUDGET = 6_000_000
"""Algebra steps (about a cached automaton transition each) one order may spend, requests and
calls together: about 3 s of the slowest kind of work on a 2-core machine, about three times
what the largest bundled example needs. Counted in steps, not seconds, so that a plan is the
same on every run and machine (bgc.budget)."""
