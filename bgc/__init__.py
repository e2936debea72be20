"""bgc — the BoundGraph policy compiler.

A work order *asks* for permissions; bgc intersects what was asked with a policy and emits a
content-addressed granted plan. The package is a library first: every stage (values, canonical
encoding, patterns, policy front end, compiler, plan and gate, renderers) is importable on its
own, and ``bgc.app.cli`` is only the thin command-line edge.
"""

__version__ = "0.1.0"
