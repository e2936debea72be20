"""What deciding a call needs, built once, for every enforcer.

Every enforcer — ``bgc hook`` (in its own process or in the decision server), ``bgc mcp-proxy``,
``bgc gate --call`` — decides a call the same way: a call decider (:mod:`bgc.runtime.calls`) from a
policy or from compiled plans, then :class:`~bgc.runtime.enforce.Enforcer` settling an ``ask``
through the approvers the policy trusts and recording the decision in the store. A
:class:`Session` holds those pieces, built here once per enforcer (or per hook call), so an
enforcer only translates its protocol and answers.

Where a session's compiled policies and stores come from is a :class:`Sources`: a process that
decides and exits reads compiled policies from bgc's verified on-disk cache and opens and closes
its store; the decision server's :class:`WarmSources` keeps compiled policies in memory while
their files' stamps hold, and SQLite stores open. Nothing read from a store is kept: approvals,
session modes and the ledger's tip are read in every decision.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from bgc.core.cache import stamp
from bgc.errors import UsageError
from bgc.runtime.calls import CallDecider, CompiledPolicy, Workspace, compiled_policy
from bgc.runtime.enforce import Context, Enforced, Enforcer

if TYPE_CHECKING:
    from bgc.core.plan import Plan
    from bgc.runtime.calls import CallDecision
    from bgc.runtime.store import Store

NO_STORE = "none"
"""``--store none``: no store, so no ledger and no approvals (an ``ask`` stays ``ask``)."""
DEFAULT_STORE = os.path.join(".bgc", "kernel.db")
"""The project's store, relative to the project directory (the starter policy denies the agent
writes there)."""

MAX_POLICIES = 32
"""Compiled policies :class:`WarmSources` keeps in memory at most (a project has one or two; a
full memo starts over)."""
RACY_SECONDS = 2.0
"""A policy file changed this recently is checked by its contents, not its stamp (some file
systems keep times in whole seconds, most in ticks of milliseconds)."""
MAX_STORES = 4
"""Open stores :class:`WarmSources` keeps at most (a project has one)."""


@dataclass(frozen=True)
class Session:
    """What deciding calls needs: the decider, the ids a decision is recorded under
    (``context``), the approvers whose signed answers count (name → public key, from the policy's
    ``trust approver`` lines) and the store (None: no ledger, no approvals)."""

    decider: CallDecider
    context: Context
    trusted: Mapping[str, Any] = field(default_factory=dict)
    store: Store | None = None
    settle: bool = True
    """False: only record (``bgc gate --call --ledger``, whose plans name no approvers)."""
    elicitation: bool = False
    """The policy says ``trust elicitation``: an MCP client's dialog may answer an ask anyone may answer."""
    confinement: tuple[str, ...] = ()
    """What ``bgc sandbox`` is given to enforce this session's policy or plans (``-p PATH --mode
    MODE``, ``--plan PATH``): a command allowed only ``in sandbox`` runs under it. Empty: the
    session cannot name them, and such a command is asked."""

    def enforce(self, decision: CallDecision, params: Any) -> Enforced:
        """Settle and record ``decision`` for a call with ``params``; never raises."""
        return Enforcer(self.store, self.trusted, self.context, settle=self.settle).enforce(decision, params)

    def decide_call(self, tool: str, server: str | None, params: Mapping[str, Any]) -> Enforced:
        """The call decided, settled and recorded."""
        return self.enforce(self.decider.decide_call(tool, server, params), params)

    def using(self, store: Store | None) -> Session:
        """The same session recording in ``store`` (an enforcer keeping one connection per thread)."""
        return replace(self, store=store)


def plans_session(
    kind: str, plans: Iterable[Plan], *, root: str | None = None, workspace: Workspace | None = None,
    store: Store | None = None, settle: bool = True, session: str | None = None,
) -> Session:  # fmt: skip
    """A session deciding with compiled plans (their tool declarations travel with them); they
    name no approvers, so nobody's answer settles an ask. The plans' ids are derived only for a
    store to record them under (hashing a large plan costs)."""
    decider = CallDecider(plans, root, workspace)
    plan_id = decider.plan_id if store is not None else None
    return Session(decider, Context(kind, plan_id, None, None, session), {}, store, settle)


def policy_session(
    kind: str, path: str, mode: str | None = None, *, workspace: Workspace | None = None, store: Store | None = None,
    session: str | None = None, sources: Sources | None = None,
) -> Session:  # fmt: skip
    """A session deciding with the policy at ``path`` in ``mode`` (its default when None). With a
    store and the agent's ``session``, the mode a trusted person chose for that session (``bgc
    mode set``) replaces ``mode``."""
    compile_policy = (sources or Sources()).compiled_policy
    compiled = compile_policy(path, mode)
    trusted: dict[str, Any] = {}
    if compiled.trust:  # no trust lines (the starter policy): nobody's key to parse, no mode anyone chose
        from bgc.runtime.approvals import trusted_approvers

        trusted = trusted_approvers(compiled.trust)
        chosen = _chosen_mode(compiled, trusted, store, session)
        if chosen is not None and chosen != mode:
            compiled, mode = compile_policy(path, chosen), chosen
    decider = CallDecider.reuse(compiled.decider, workspace)
    context = Context(kind, decider.plan_id, compiled.policy_id, None, session)
    confinement = ("-p", os.path.abspath(path), *(("--mode", mode) if mode is not None else ()))
    return Session(decider, context, trusted, store, elicitation=compiled.trusts_elicitation, confinement=confinement)


def _chosen_mode(compiled: CompiledPolicy, trusted: Mapping[str, Any], store: Store | None, session: str | None) -> str | None:
    if not trusted or store is None or session is None:
        return None
    from bgc.runtime.modes import ModeRules, decode_mode, mode_state

    rules = ModeRules(compiled.modes, compiled.default_mode, {mode: (count, names) for mode, count, names in compiled.mode_approvals})
    decisions = [found for found in map(decode_mode, store.modes(session)) if found is not None]
    return mode_state(session, decisions, trusted, rules).mode


def configured_policy(project: str, mode: str | None) -> tuple[str, str | None]:
    """The policy (and mode, unless ``mode`` is given) configured for ``project`` as ``policy``
    in ``bgc.toml`` or ``[tool.bgc]``; :class:`UsageError` when there is none."""
    from bgc.analysis.config import find_config

    config = find_config(project)
    if config is None or config.policy is None:
        raise UsageError(f"no policy: pass -p POLICY, or name one as `policy` in bgc.toml or [tool.bgc] of {project}")
    return str(config.policy), mode if mode is not None else config.mode


def store_location(store: str | None, project: str) -> str | None:
    """Where ``--store`` says a session records: the project's :data:`DEFAULT_STORE` when None,
    nowhere for :data:`NO_STORE`."""
    if store is None:
        return os.path.join(project, DEFAULT_STORE)
    return None if store == NO_STORE else store


class Sources:
    """Where a one-shot process's sessions get compiled policies (bgc's verified on-disk cache,
    :func:`bgc.runtime.calls.compiled_policy`) and stores (opened for one session, closed after).
    ``durable``: every commit of a SQLite store is on disk before it returns (a hook's ledger entry
    is written before its answer lets a call run)."""

    def __init__(self, durable: bool = False) -> None:
        self.durable = durable

    def compiled_policy(self, path: str, mode: str | None) -> CompiledPolicy:
        return compiled_policy(path, mode)

    def open_store(self, location: str) -> Store:
        from bgc.runtime.store import open_store

        return open_store(location, durable=self.durable)

    def release_store(self, store: Store, failed: bool) -> None:
        """A store the session is done with (``failed``: the decision did not complete)."""
        store.close()

    @contextmanager
    def project_session(
        self, kind: str, *, policy: str | None, plan: str | None, mode: str | None, store: str | None, project: str,
        workspace: Workspace, session: str | None,
    ) -> Iterator[Session]:  # fmt: skip
        """The session of one call an agent makes in ``project`` (``kind``: the enforcer, as the
        ledger names it): decided with ``plan`` (compiled plans), else ``policy``, else the policy
        configured for the project; recording in the store ``store`` names (:func:`store_location`),
        opened for the call and released after it (as failed when the block raised)."""
        location = store_location(store, project)
        opened = None if location is None else self.open_store(location)
        failed = True
        try:
            if plan is not None:
                from bgc.core.plan import read_plans

                built = plans_session(kind, read_plans(plan), workspace=workspace, store=opened, session=session)
                built = replace(built, confinement=("--plan", os.path.abspath(plan)))
            else:
                if policy is None:
                    policy, mode = configured_policy(project, mode)
                built = policy_session(kind, policy, mode, workspace=workspace, store=opened, session=session, sources=self)
            yield built
            failed = False
        finally:
            if opened is not None:
                self.release_store(opened, failed)

    def close(self) -> None:
        """Close whatever is kept open (nothing, for a one-shot process)."""


class WarmSources(Sources):
    """The decision server's sources, kept between requests: compiled policies in memory while
    every file they were read from keeps its stamp, and SQLite stores open while their file is
    the same file. Every commit of a kept store is synced: a connection kept open is never
    checkpointed by a close."""

    def __init__(self, racy_seconds: float = RACY_SECONDS) -> None:
        super().__init__(durable=True)
        self.racy_seconds = racy_seconds
        self.policies: dict[str, Any] = {}
        self.stamped: dict[tuple[str, str | None], tuple[tuple[str, ...], tuple[Any, ...] | None, Any]] = {}
        self.stores: dict[str, tuple[Store, tuple[int, int]]] = {}

    def compiled_policy(self, path: str, mode: str | None) -> CompiledPolicy:
        """:func:`bgc.runtime.calls.compiled_policy`, its answer kept while the stamp of every file
        the policy was read from is unchanged (a stat each, the cache's own witness of an edit,
        :func:`bgc.core.cache.code_digest`); when one moved, the files' contents decide, as they do
        for an entry of the on-disk cache. Stamps are taken before the contents are checked, so an
        edit racing the check moves a stamp and is seen on the next call; and stamps younger than
        ``racy_seconds`` (:data:`RACY_SECONDS`) are not trusted (a file system's clock ticks
        coarsely: a second edit of the same size within one tick would keep the stamp), as git
        treats a "racily clean" file. ``path`` is absolute (a session's paths are anchored to its
        caller's working directory)."""
        key = (path, mode)
        files, stamps, compiled = self.stamped.get(key, ((path,), None, None))
        settled = time.time_ns() - int(self.racy_seconds * 1e9)
        before = tuple(map(stamp, files))
        if compiled is not None and stamps == before and None not in before:
            return compiled  # type: ignore[no-any-return]
        if len(self.policies) >= MAX_POLICIES:
            self.policies.clear()
            self.stamped.clear()
        compiled = compiled_policy(path, mode, memo=self.policies)
        entry = next((entry for entry in self.policies.values() if entry[2] is compiled), None)
        if entry is not None:
            base = os.path.dirname(path)
            read = (path, *(os.path.join(base, name) for name, _ in entry[1]))
            trusted = read == files and all(found is not None and found[2] < settled for found in before)
            self.stamped[key] = (read, before if trusted else None, compiled)  # else: contents decide next time too
        return compiled  # type: ignore[no-any-return]

    def open_store(self, location: str) -> Store:
        """The open store at ``location`` when it is still the same file, else a new one (kept
        when it is a SQLite file that did not change while it was opened)."""
        from bgc.runtime.store import URLS, open_store

        if location.startswith(URLS):
            return open_store(location, durable=True)  # a network connection may have gone: one per request
        kept = self.stores.pop(location, None)
        if kept is not None:
            if file_identity(location) == kept[1]:
                self.stores[location] = kept
                return kept[0]
            kept[0].close()
        before = file_identity(location)
        store = open_store(location, durable=True)  # kept open, so never checkpointed by a close: every commit synced
        if before is not None and before == file_identity(location):  # the file opened is the file stamped
            if len(self.stores) >= MAX_STORES:
                self.close()
            self.stores[location] = (store, before)
        return store

    def release_store(self, store: Store, failed: bool) -> None:
        """Kept, unless the request failed or it was not kept."""
        for location, (kept, _) in list(self.stores.items()):
            if kept is store:
                if failed:
                    del self.stores[location]
                    store.close()
                return
        store.close()

    def close(self) -> None:
        for store, _ in self.stores.values():
            store.close()
        self.stores.clear()


def file_identity(path: str) -> tuple[int, int] | None:
    """Which file ``path`` is (device and inode), or None when there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino
