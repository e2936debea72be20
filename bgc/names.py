"""The words of atoms and calls, shared by work orders, policies, plans and the gate.

Kept in a module of their own (no imports) so the policy parser and the gate's fast paths can
use the very same definitions as :mod:`bgc.model` without importing the model's machinery.
"""

import re

ATOM_NAME = re.compile(r"[a-z][a-z0-9_.-]*")
"""A resource or action of an atom (``fs``, ``write``); a policy may also write ``*``."""

DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
"""An intent kind or a tool name (``patch.apply``, ``fs.write``)."""
