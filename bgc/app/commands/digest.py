"""``bgc digest FILE...``: the content id of work orders."""

from __future__ import annotations

from collections.abc import Sequence

from bgc.app.commands.io import Result
from bgc.errors import ExitCode


def run(files: Sequence[str], *, output_format: str = "text", input_format: str | None = None) -> Result:
    """Each order's id (sha256 of its canonical CBOR), in the order given.

    Every file is read before anything is printed: one bad file raises (exit 2) and no id is
    shown, so a script never takes a partial list for the whole.
    """
    from bgc.core.values.documents import load_order

    ids = [(str(load_order(path, input_format).id()), path) for path in files]
    if output_format == "json":
        import json

        text = json.dumps([{"file": path, "id": order_id} for order_id, path in ids], indent=2, sort_keys=True) + "\n"
    else:
        from bgc.text import escape_field

        text = "".join(f"{order_id}  {escape_field(path, backslash=False)}\n" for order_id, path in ids)
    return Result(ExitCode.OK, text.encode())
