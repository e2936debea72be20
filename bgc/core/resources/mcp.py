"""The values of ``mcp``: what an MCP message names, read as written.

A value is the server's name, a ``/``, then what the message is about: a tool
(``mcp:call:github/create_issue``, a call decided on its identity), a resource's URI
(``mcp:read:files/file:///notes/a.md``), a prompt (``mcp:prompt:files/deploy``), a completion's
reference, or what the server asks the client for (``mcp:sample:files/createMessage``,
``mcp:elicit:files/url``). The MCP proxy writes them (:mod:`bgc.adapters.mcp.mediator`).

They are matched as written: bgc never decodes them. So a spelling a server could read as
another value is refused, as it is for every resource without a row (:data:`OTHER`), and more: a
segment that is or decodes to ``.`` or ``..``; white space or a ``\\`` (a URI holds neither; a
server may read ``\\`` as ``/``); a ``%`` escape of printable ASCII (``%2F``, ``%61``: a server may
decode it where a rule matched the escape) or a malformed one. An escape of anything else (a
space, a UTF-8 byte) stays as written. Tool and prompt names, which hold none of these, are
unaffected.
"""

from __future__ import annotations

import re

from bgc.core.resources.kind import Rejection, ResourceKind, dot_segment_problem

__all__ = ["MCP", "escape_problem"]

_ESCAPE = re.compile(r"%(.{0,2})", re.DOTALL)


def escape_problem(value: str) -> str | None:
    """Why the white space, backslashes or ``%`` escapes of ``value`` could be read apart from
    its text, or None."""
    if re.search(r"[\s\\]", value):
        return "holds white space or a backslash"
    for escape in _ESCAPE.finditer(value):
        digits = escape.group(1)
        if not re.fullmatch(r"[0-9A-Fa-f]{2}", digits):
            return "holds a malformed % escape"
        if 0x21 <= int(digits, 16) <= 0x7E:
            return f"escapes {chr(int(digits, 16))!r} as %{digits}, which a server may decode where the text was matched"
    return None


def _read(value: str, case_insensitive: bool) -> str | Rejection:
    problem = dot_segment_problem(value) or escape_problem(value)
    return Rejection(value, problem) if problem else value


MCP = ResourceKind(read=_read)
