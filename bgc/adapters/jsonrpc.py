"""JSON-RPC 2.0 messages as every bgc proxy reads them from a peer, one line each.

MCP and ACP both frame JSON-RPC as newline-delimited JSON over a child's standard streams, and a
proxy between two peers must read each line exactly as strictly on either protocol: a line is one
strict JSON object (:func:`bgc.core.values.jsonline.parse`), never a batch, and a request's id is
one every reader reads back the same (:func:`valid_request_id`), or the line is refused
(:class:`Refused`: the JSON-RPC error to answer, and to which ids) and never passed on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bgc.core.values.jsonline import Unreadable, parse

#: The largest integer a request id may be: every JSON reader (JavaScript's too) reads it exactly.
MAX_ID_INTEGER = 2**53 - 1
#: The longest string a request id may be.
MAX_ID_CHARS = 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class Refused(Exception):
    """A peer's line a proxy does not pass on: the JSON-RPC error it answers, and to which ids."""

    def __init__(self, code: int, message: str, request_ids: Sequence[object] = (None,)) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_ids = request_ids


def valid_request_id(value: object) -> bool:
    """A request id every peer reads back the same: a string of at most :data:`MAX_ID_CHARS`
    characters, or an integer within ±:data:`MAX_ID_INTEGER` (a larger one is rounded by a
    JavaScript reader, a fraction or an exponent may come back spelled otherwise, and ``null``
    is no id): what a proxy matches an answer to its request by."""
    if isinstance(value, str):
        return len(value) <= MAX_ID_CHARS
    return type(value) is int and -MAX_ID_INTEGER <= value <= MAX_ID_INTEGER


def id_key(request_id: object) -> str:
    """The key a request is kept under while it is outstanding: its id as JSON (``1`` and
    ``"1"`` are two ids)."""
    return json.dumps(request_id)


def read_message(line: bytes, batches: str = "JSON-RPC batches are not accepted") -> dict[str, Any]:
    """One line as a JSON-RPC message (:func:`bgc.core.values.jsonline.parse`), or
    :class:`Refused` saying why not and whom to answer; ``batches`` says why a batch is refused."""
    try:
        value = parse(line)
    except Unreadable as error:
        raise Refused(PARSE_ERROR, f"not a JSON-RPC message: {error}") from None
    if isinstance(value, list):
        ids = [
            item["id"]
            for item in value
            if isinstance(item, dict) and "method" in item and valid_request_id(item.get("id"))
        ]
        raise Refused(INVALID_REQUEST, batches, ids or [None])
    if not isinstance(value, dict):
        raise Refused(INVALID_REQUEST, "a JSON-RPC message is an object")
    if "method" in value and "id" in value and not valid_request_id(value["id"]):
        raise Refused(
            INVALID_REQUEST,
            f"a request id is a string of at most {MAX_ID_CHARS} characters or an integer of at most 2**53-1 in size",
        )
    return value
