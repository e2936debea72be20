"""``bgc order new``: write a valid work order by hand, its prompt digest computed, not typed.

A hand-written order must still say where it came from: ``origin.prompt`` is the digest of the
prompt that produced the proposal, and a digest typed by hand is either copied from somewhere
else or made up. This command computes it from the prompt itself.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from bgc.app.commands.io import Result
from bgc.errors import ExitCode, UsageError

ORDER_FORMATS = ("yaml", "json", "cbor")

_OPTION_OF_FIELD = {
    ("intent", "kind"): "--intent",
    ("intent", "payload"): "--payload",
    ("requests",): "--request",
    ("calls",): "--call",
    ("origin", "model"): "--model",
    ("origin", "parents"): "--parent",
}


def prompt_digest(prompt: str | None, prompt_file: str | None, digest: str | None) -> str:
    """``origin.prompt``: ``sha256:`` and the hex SHA-256 of the prompt's exact bytes.

    The bytes are the prompt as given, nothing stripped or normalised: a ``--prompt`` text in
    UTF-8, the bytes of ``--prompt-file`` (``-``, or ``--prompt -``: stdin) as they are, a final
    newline included. Exactly one of the three sources must be given (``digest`` is a digest
    computed elsewhere, checked for its form).
    """
    from bgc.core.values.documents import read_bytes
    from bgc.core.values.model import Digest, ModelError

    given = [name for name, value in (("--prompt", prompt), ("--prompt-file", prompt_file), ("--prompt-digest", digest)) if value is not None]
    if len(given) != 1:
        raise UsageError(
            "an order records the digest of its prompt: give exactly one of --prompt TEXT, --prompt - (stdin), "
            "--prompt-file FILE or --prompt-digest sha256:HEX" + (f" (got {' and '.join(given)})" if given else "")
        )
    if digest is not None:
        try:
            return str(Digest(digest))
        except ModelError as error:
            raise UsageError(f"--prompt-digest: {error.message}") from None
    if prompt_file is not None:
        return str(Digest.of(read_bytes(prompt_file)))
    assert prompt is not None
    return str(Digest.of(read_bytes("-") if prompt == "-" else prompt.encode("utf-8", "surrogateescape")))


def _calls(calls: Sequence[str]) -> list[Any]:
    """Each ``--call`` as data: one JSON object, read as strictly as an order's JSON."""
    from bgc.core.values.documents import parse_document

    out = []
    for index, text in enumerate(calls):
        data = parse_document(text.encode("utf-8", "surrogateescape"), f"--call[{index + 1}]", "json").data
        if not isinstance(data, dict):
            raise UsageError(f'--call {text!r}: expected a JSON object like {{"tool": "fs.write", "params": {{"path": "/src/a.py"}}}}')
        out.append(data)
    return out


def new(
    *,
    intent: str,
    payload: str | None = None,
    requests: Sequence[str] = (),
    calls: Sequence[str] = (),
    model: str,
    parents: Sequence[str] = (),
    prompt: str | None = None,
    prompt_file: str | None = None,
    prompt_digest_text: str | None = None,
    output_format: str = "yaml",
    output: str | None = None,
) -> Result:
    """A work order from its parts, validated exactly as a loaded one is (so what this writes,
    ``bgc digest`` and ``bgc compile`` read), written to ``output`` or stdout.

    A part that is not valid raises a :class:`UsageError` naming the option it came from.
    """
    from bgc.core.values.canonical import DataModelError, format_path
    from bgc.core.values.model import WorkOrder
    from bgc.app.render.plans import render_data

    if output_format not in ORDER_FORMATS:
        raise UsageError(f"--format {output_format!r}: expected one of {', '.join(ORDER_FORMATS)}")
    data = {
        "intent": {"kind": intent, "payload": payload},
        "calls": _calls(calls),
        "requests": list(requests),
        "origin": {
            "model": model,
            "parents": list(parents),
            "prompt": prompt_digest(prompt, prompt_file, prompt_digest_text),
        },
    }
    try:
        order = WorkOrder.from_data(data)
    except DataModelError as error:
        option = _OPTION_OF_FIELD.get(error.path[:2]) or _OPTION_OF_FIELD.get(error.path[:1])
        where = format_path(error.path)
        raise UsageError(f"{option} ({where}): {error.message}" if option else f"{where}: {error.message}") from None
    encoded = render_data(order.to_data(), output_format)
    if output is not None:
        return Result(ExitCode.OK, files=((output, encoded),))
    if output_format == "cbor" and sys.stdout.isatty():
        raise UsageError("--format cbor is binary: write it with -o FILE, or pipe it")
    return Result(ExitCode.OK, encoded)
