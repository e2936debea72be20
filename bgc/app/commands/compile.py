"""``bgc compile ORDER... -p POLICY``: work orders into granted plans, asked vs granted."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from hashlib import sha256
from typing import TYPE_CHECKING

from bgc.app.commands.io import Result
from bgc.errors import ExitCode

if TYPE_CHECKING:
    from bgc.core.plan import Plan


def run(
    orders: Sequence[str],
    *,
    policy: str | None = None,
    mode: str | None = None,
    output_format: str = "text",
    output: str | None = None,
    fail_on: str = "narrowed",
    input_format: str | None = None,
    quiet: bool = False,
    color_choice: str = "auto",
    ledger: str | None = None,
) -> Result:
    """Compile every order against one policy (one compiler: shared answers), then render, to
    ``output`` when given, else to stdout (nothing with ``quiet``: the exit code answers).

    Exit 0 when everything was granted as asked and every call is covered, 1 at ``fail_on`` or
    worse; a bad order or policy raises (exit 2) before anything is written. With ``ledger`` (a
    store), every request's verdict is appended to the ledger there first; a store that cannot
    record is exit 2, and nothing is written.

    The rendered output is a pure function of the orders' bytes, the policy's files, the
    options and bgc's code, so it is kept in bgc's verified cache (:class:`_CachedOutput`): the
    same compile again — a CI job whose orders and policy did not change — prints the very bytes
    without loading a parser, compiler or order model.
    """
    from bgc.app.render.color import use_color

    color = output_format == "text" and output is None and use_color(color_choice, sys.stdout)
    cached = _CachedOutput.of(orders, policy, mode, output_format, fail_on, input_format, color, ledger)
    if cached is not None:
        hit = cached.recall()
        if hit is not None:
            return _result(ExitCode(hit[0]), hit[1], output, quiet)

    from bgc.core.answer_cache import kept_answers
    from bgc.app.commands import io
    from bgc.core.compiler import Compiler
    from bgc.core.values.documents import document_from_bytes, read_bytes
    from bgc.core.values.model import WorkOrder
    from bgc.app.render import plans as render

    loaded, mode = io.load_policy(policy, mode)
    compiler = Compiler(loaded)
    contents = cached.contents if cached is not None else [read_bytes(path) for path in orders]
    with kept_answers(loaded.path):  # the algebra's answers from earlier compiles, and this one's for later ones
        plans = [
            (compiler.compile(document_from_bytes(data, path, input_format).build(WorkOrder.from_data), mode), path)
            for data, path in zip(contents, orders)
        ]
    if ledger is not None:
        _record(ledger, [plan for plan, _ in plans], loaded.id())
    if output_format == "text":
        data = render.render_text(plans, color).encode()
    elif output_format in ("sarif", "github"):
        from bgc.analysis.config import repository_root
        from bgc.core.values.documents import read_document
        from bgc.analysis.outcomes import plan_findings
        from bgc.app.render.machine import render as render_findings

        # the plans' findings, located in their order files
        findings = [f for plan, path in plans for f in plan_findings(plan, read_document(path), fail_on)]
        data = render_findings(findings, output_format, root=repository_root()).encode()
    else:
        data = render.render_data(render.plans_data([plan for plan, _ in plans]), output_format)
    code = io.plan_exit_code([plan for plan, _ in plans], fail_on)
    if cached is not None:
        cached.keep(code, data, loaded.file_digests())
    return _result(code, data, output, quiet)


def _result(code: ExitCode, data: bytes, output: str | None, quiet: bool) -> Result:
    if output is not None:
        return Result(code, files=((output, data),))
    return Result(code, b"" if quiet else data)


MAX_KEPT_OUTPUT = 16 * 1024 * 1024
"""Bytes of the largest output kept (the cache has no eviction: each kept output stays until the
cache is cleared, so one compile of thousands of orders must not add hundreds of megabytes)."""

_CACHED_FORMATS = ("text", "json", "yaml", "cbor")
"""Output formats that depend only on the plans (SARIF and GitHub annotations also locate
findings in the repository, so they are always compiled)."""


class _CachedOutput:
    """What one ``bgc compile`` printed, kept under everything it depends on.

    The key: the working directory, the policy as named and its root file's digest, every
    order's path as named and the digest of its bytes, the mode, format, ``--fail-on``, input
    format and whether the text is coloured; with bgc's code digest (:func:`bgc.core.cache.entry_key`).
    The entry also records the digest of every file the policy included, checked on every hit
    (:func:`bgc.core.cache.unchanged`). A miss compiles the very bytes the key was made from, so an
    order edited meanwhile is never kept under its old digest. Not used with ``--ledger`` (the
    ledger needs the plans), for stdin, without ``-p`` (the configuration chooses the policy),
    or for SARIF and GitHub output.
    """

    def __init__(self, key: str, root: str, root_digest: str, contents: list[bytes]) -> None:
        self.key, self.root, self.root_digest, self.contents = key, root, root_digest, contents

    @classmethod
    def of(
        cls, orders: Sequence[str], policy: str | None, mode: str | None, output_format: str, fail_on: str,
        input_format: str | None, color: bool, ledger: str | None,
    ) -> _CachedOutput | None:  # fmt: skip
        """The key of this compile, or None when its output is not kept (see the class)."""
        if policy is None or ledger is not None or output_format not in _CACHED_FORMATS or "-" in orders:
            return None
        from bgc.core import cache
        from bgc.errors import InputError
        from bgc.core.values.files import read_bounded

        keyed = cache.policy_key(policy, "compile-output")
        if keyed is None:
            return None
        try:
            contents = [read_bounded(path) for path in orders]
        except InputError:
            return None  # compiled without the cache, which reports it where it is
        named = "".join(f"{path}\0{sha256(data).hexdigest()}\0" for path, data in zip(orders, contents))
        key = f"{keyed[0]}\0{mode}\0{output_format}\0{fail_on}\0{input_format}\0{color}\0{named}"
        return cls(key, policy, keyed[1], contents)

    def recall(self) -> tuple[int, bytes] | None:
        """The exit code and output kept for this key, when every policy file is unchanged."""
        from bgc.core import cache

        entry = cache.load_object("compile-output", self.key)
        if not (isinstance(entry, tuple) and len(entry) == 3):
            return None
        code, data, files = entry
        if type(code) is not int or type(data) is not bytes or not cache.unchanged(self.root, self.root_digest, files):
            return None
        return code, data

    def keep(self, code: int, data: bytes, files: tuple[tuple[str, str], ...]) -> None:
        """Keep the output, if the policy compiled is the one the key names (not edited meanwhile)
        and the output is at most :data:`MAX_KEPT_OUTPUT` bytes."""
        from bgc.core import cache

        if files and files[0][1] == self.root_digest and len(data) <= MAX_KEPT_OUTPUT:  # the root file comes first
            cache.store_object("compile-output", self.key, (int(code), data, files))


def _record(location: str, plans: Sequence[Plan], policy_id: str) -> None:
    """One ledger entry per requested atom: its verdict and the rules that decided it."""
    import time

    from bgc.runtime import ledger
    from bgc.app.commands import io
    from bgc.errors import InputError, Span
    from bgc.runtime.store import StoreError

    store = io.open_ledger(location)
    now = int(time.time())
    try:
        for plan in plans:
            plan_id = str(plan.id())
            for request in plan.requests:
                rules = tuple(str(rule) for rule in request.rules)
                ledger.append(store, ledger.Record(
                    "compile", request.verdict, now, order=plan.order, plan=plan_id, policy=policy_id,
                    **ledger.subjects((request.atom,), rules),
                ))  # fmt: skip
    except StoreError as error:
        raise InputError(str(error), Span(location)) from None
    finally:
        store.close()
