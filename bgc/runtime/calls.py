"""Run-time call decisions: may this concrete tool call ``(tool, server, params)`` happen now?

Every enforcer asks the same question through :meth:`CallDecider.decide_call` — ``bgc gate
--call``, ``bgc hook claude-code``, and later the MCP proxy and the kernel's authorize — so a
call means one thing wherever it is enforced. A decider holds plans (which carry the policy's
tool declarations, so nothing else is needed) or is built for a policy directly
(:func:`policy_decider`: an implicit order asking for everything the declarations can need,
compiled once and kept in the verified cache).

A call is mapped to atoms through the declaration of its tool *on its server* (``local`` when it
names none); a call no declaration covers is denied. Parameters fill the templates as literal
text and are canonicalised per resource before matching; a missing, nested, non-text or
undeclared parameter is refused (:func:`bgc.core.gate.expand_call`). Each atom's decision names the
rule that decided it.

With a :class:`Workspace` (an agent working in a project on the host), an ``fs`` template that
starts with a parameter takes a host path: inside the project it becomes a workspace path
(``/home/me/proj/src/a.py`` is ``/src/a.py``; symbolic links are resolved under the project, as
``bgc gate --root`` does), outside it is a ``host`` path (``host:read:/etc/passwd``), a resource
of its own that only a rule naming ``host`` can allow. Nothing outside is ever read as inside.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from bgc.core.patterns import glob
from bgc.core import resources
from bgc.core.resources.fs import normalise_fs_pattern, plain_path
from dataclasses import dataclass
from bgc.core.resources import ARGV_RESOURCES
from bgc.core.patterns.budget import Budget, BudgetExhausted
from bgc.core.gate import (
    NEED_STEPS,
    NEED_STEPS_PER_CHAR,
    UNDECIDED,
    Gate,
    expand_call,
    no_link_below,
    refuse_undeclared,
    refuse_unfilled,
    worded,
)
from bgc.core.values.limits import MAX_CALL_ATOMS, MAX_PATTERN_LENGTH, ORDER_BUDGET
from bgc.core.plan import Approvals, CallResult, NeedResult, Plan, RuleRef, ToolSpec, coverage, strongest
from bgc.core.policy.templates import LOCAL_SERVER, AtomTemplate, TemplateError

if TYPE_CHECKING:
    from bgc.runtime.shell import ShellNeed

CallEffect = Literal["allow", "ask", "deny"]

HOST = "host"
"""The resource of a path outside the workspace: ``host:read:/etc/passwd``."""

IMPLICIT_INTENT = "bgc.call"
"""The intent kind of the implicit order a policy is compiled with for run-time calls (a rule
conditioned on another ``intent.kind`` does not apply: an allow grants nothing, a deny or ask
does not cut)."""

IMPLICIT_MODEL = "unknown"
"""The ``origin.model`` of that implicit order."""

_EFFECTS: dict[str, CallEffect] = {"covered": "allow", "pending": "ask", "uncovered": "deny"}


class AtomDecision(NamedTuple):
    """One atom a call needs, and what decided it.

    A named tuple rather than a frozen dataclass, as :class:`~bgc.core.gate.GateDecision` is: every
    call builds one per atom, and a frozen dataclass costs a ``object.__setattr__`` per field
    to build, more than deciding a plain value. It is just as immutable.
    """

    atom: str
    effect: CallEffect
    reason: str
    rule: RuleRef | None = None
    approvals: tuple[Approvals, ...] = ()
    """For ``ask``: every requirement that applies to the atom; all must be met."""
    asked_by: tuple[RuleRef, ...] = ()
    """For ``ask``: every ask rule whose requirement applies."""
    command: str | None = None
    """For a shell command string: the simple command this atom comes from, as written (what a
    person asked to approve it reads)."""

    @classmethod
    def of(cls, need: NeedResult, reason: str | None = None, command: str | None = None) -> AtomDecision:
        return cls(
            need.atom, need.effect, need.reason if reason is None else reason, need.rule, need.approvals, need.asked_by,
            command,
        )  # fmt: skip

    def to_data(self) -> dict[str, Any]:
        rule = None if self.rule is None else str(self.rule)
        data: dict[str, Any] = {"atom": self.atom, "effect": self.effect, "reason": self.reason, "rule": rule}
        if self.approvals:
            data["approvals"] = [requirement.to_data() for requirement in strongest(self.approvals)]
        return data


class CallDecision(NamedTuple):
    """The answer for one call: ``allow`` (every atom granted), ``ask`` (some await a person),
    ``deny`` (something denied, refused, or no declaration covers the call). A named tuple for
    the reason :class:`AtomDecision` is one (``_replace`` makes a changed copy)."""

    tool: str
    server: str
    effect: CallEffect
    reason: str
    atoms: tuple[AtomDecision, ...] = ()
    declared: bool = True
    """False when no declaration covers the tool on its server (an adapter may ask instead)."""
    understood: bool = True
    """False when some of the call was not understood exactly (a shell command bgc cannot read
    fully): its atoms may be incomplete, so no approval of them can settle the ask."""

    @property
    def confined(self) -> bool:
        """Whether an allow holds only for the call run confined: a rule that granted one of its
        atoms says ``in sandbox`` (docs/sandbox.md)."""
        return self.effect == "allow" and any(atom.rule is not None and atom.rule.sandbox for atom in self.atoms)

    def to_data(self) -> dict[str, Any]:
        data = {
            "tool": self.tool,
            "server": self.server,
            "decision": self.effect,
            "reason": self.reason,
            "declared": self.declared,
            "atoms": [atom.to_data() for atom in self.atoms],
        }
        if self.confined:
            data["confined"] = True
        return data

    def explanation(self) -> str:
        """One line for a person: the deciding atom and its rule (the first denied or asked
        atom, else every granted atom's rule)."""
        for effect in ("deny", "ask"):
            for atom in self.atoms:
                if atom.effect == effect:
                    return f"{atom.atom}: {atom.reason}"
        if self.effect == "allow" and self.atoms:
            granted = "; ".join(f"{atom.atom}: {atom.reason}" for atom in self.atoms)
            return f"{CONFINED}: {granted}" if self.confined else granted
        return self.reason


SANDBOX_ONLY = "a rule allows it only in the sandbox, and this call cannot run there"
CONFINED = "runs confined by bgc sandbox (docs/sandbox.md)"


def unconfined(decision: CallDecision) -> CallDecision:
    """``decision`` for a call its enforcer runs as it is: an allow that holds only confined
    (:attr:`CallDecision.confined`) is asked instead, for the person at the session (no stored
    approval of its atoms settles it). Every decision is read this way unless its enforcer runs
    the call under ``bgc sandbox``: fail closed, an allow never loses its confinement by omission."""
    if not decision.confined:
        return decision
    return decision._replace(effect="ask", reason=f"{SANDBOX_ONLY}; {decision.reason}", understood=False)


@dataclass(frozen=True, slots=True)
class Workspace:
    """An agent's project on the host: ``root`` (symbolic links resolved), the directory
    relative paths are read from, and the agent's home directory (``$HOME`` of the agent's
    environment; None when unknown), which a path beginning with ``~`` names."""

    root: str
    cwd: str
    home: str | None = None

    @classmethod
    def at(cls, root: str, cwd: str | None = None, home: str | None = None) -> Workspace:
        real = os.path.realpath(root)
        return cls(real, os.path.realpath(cwd) if cwd else real, home if home and home.startswith("/") else None)

    def _home_path(self, value: str) -> str | None:
        """A path beginning with ``~`` as the agent expands it: ``~`` and ``~/...`` are the home
        directory (when known); None for every other form (``~user``, ``~+``, ``~-``), which names
        a directory bgc cannot know as the agent would, and is refused, never read as a folder
        of the project named ``~``."""
        if self.home is None or not (value == "~" or value.startswith("~/")):
            return None
        return self.home + value[1:]

    def place(self, value: Any) -> list[tuple[str, Any]]:
        """``(resource, value)`` for a host path: ``fs`` and the workspace path inside the root,
        ``host`` and the absolute path outside (and its link target too when that differs).

        A value that is not text is passed on unchanged, for the template to refuse; so is a
        path beginning with ``~`` that is not the home directory or below it (:meth:`_home_path`);
        a path that is not clean (``..`` above ``/``, control characters) is passed on for the gate to
        refuse with its own reason. A ``..`` is read by the text, and also as the kernel reads
        it, after the link before it (``src/link/../x`` with ``src/link`` -> ``../.git`` is
        ``/x``): where the two differ, both are placed.
        """
        if not isinstance(value, str) or not value or "\0" in value:
            return [("fs", value)]
        if value.startswith("~"):
            home_path = self._home_path(value)
            if home_path is None:
                return [("fs", value)]  # not absolute: the gate refuses it
            value = home_path
        absolute = value if value.startswith("/") else os.path.join(self.cwd, value)
        lexical = resources.normalise("fs", absolute)
        if isinstance(lexical, resources.Rejection):
            return [("fs", value)]
        placed = self.place_canonical(lexical)
        if "/.." in absolute and ".." in absolute.split("/"):
            physical = os.path.realpath(absolute)
            if physical != os.path.realpath(lexical):
                placed.append(self._placed_real(physical))
        return placed

    def place_canonical(self, lexical: str) -> list[tuple[str, Any]]:
        """:meth:`place` of an absolute path in its canonical form (so with no ``..`` to read)."""
        inside = self._relative(lexical)
        if inside is not None:
            return [("fs", inside)]  # links under the root: the gate's to resolve (Gate(root=...))
        placed: list[tuple[str, Any]] = [(HOST, lexical)]
        # no link on it (one lstat a segment, stopping where nothing more can be read): it is its
        # own real path, which realpath would find at several times the cost
        real = lexical if no_link_below("/", lexical) else os.path.realpath(lexical)
        if real != lexical:
            placed.append(self._placed_real(real))
        return placed

    def _placed_real(self, real: str) -> tuple[str, str]:
        """A path with its links resolved: a workspace path inside the root, else a host path."""
        inside = self._relative(real)
        return (HOST, real) if inside is None else ("fs", inside)

    def _relative(self, path: str) -> str | None:
        if path == self.root:
            return "/"
        prefix = self.root.rstrip("/") + "/"
        return "/" + path[len(prefix) :] if path.startswith(prefix) else None


class CallDecider:
    """Decides concrete calls against plans: their grants (a :class:`~bgc.core.gate.Gate`) and the
    tool declarations they carry (every plan's declaration of a tool applies: its needs add up)."""

    def __init__(self, plans: Iterable[Plan], root: str | None = None, workspace: Workspace | None = None) -> None:
        plans = tuple(plans)
        specs: dict[tuple[str, str], list[ToolSpec]] = {}
        for plan in plans:
            for spec in plan.tools:
                for server in spec.servers:
                    found = specs.setdefault((spec.tool, server), [])
                    if spec not in found:
                        found.append(spec)
        self._setup(Gate(plans), specs, root, workspace, plans)

    def _setup(
        self,
        gate: Gate,
        specs: dict[tuple[str, str], list[ToolSpec]],
        root: str | None,
        workspace: Workspace | None,
        plans: tuple[Plan, ...],
    ) -> None:
        self.workspace = workspace
        self.gate = gate.rooted(workspace.root if workspace is not None else root)
        self._inside_prefix = (
            workspace.root.rstrip("/") + "/" if workspace is not None and not self.gate.case_insensitive else None
        )
        """What a host path strictly inside the workspace starts with (:meth:`_place`); None on a
        case-insensitive file system."""
        self._link_free_gate = gate.rooted(None)
        """The same grants deciding a workspace path as written: for a file proven to have no
        link on its way (:attr:`bgc.runtime.trees.FileReached.link_free`), which lands where it reads."""
        self.specs = specs
        self.plans = plans
        self._plan_id: str | None = None
        self._compiled: dict[tuple[str, str], _CompiledTool] = {}
        """Each declared (tool, server) compiled on its first call; shared with every decider
        :meth:`reuse` makes (what it holds does not depend on the workspace)."""

    @property
    def plan_id(self) -> str:
        """The ids of the plans it decides with (comma-separated): what a permission request and
        a ledger entry are bound to (computed when first asked: hashing a large plan costs)."""
        if self._plan_id is None:
            self._plan_id = ",".join(str(plan.id()) for plan in self.plans)
        return self._plan_id

    @classmethod
    def reuse(cls, other: CallDecider, workspace: Workspace | None) -> CallDecider:
        """The same grants and declarations (no work redone), for another workspace."""
        decider = cls.__new__(cls)
        decider._setup(other.gate, other.specs, None, workspace, other.plans)
        decider._plan_id = other._plan_id
        decider._compiled = other._compiled
        return decider

    def decide_call(self, tool: str, server: str | None, params: Mapping[str, Any]) -> CallDecision:
        """The decision for one call; never raises for anything the call contains.

        A declared tool's call takes its compiled form (:class:`_CompiledTool`) when the call
        has the shape it was compiled for; every other call, and every refusal, is decided by
        :meth:`decide_general`.
        """
        key = (tool, LOCAL_SERVER if server is None else server)
        compiled = self._compiled.get(key)
        if compiled is None and key in self.specs:
            compiled = self._compiled[key] = _CompiledTool(self.specs[key], self.gate)
        if compiled is not None and compiled.slots is not None:
            decision = self._decide_compiled(compiled, key, params)
            if decision is not None:
                return unconfined(self._other_names(decision))
        return self.decide_general(tool, server, params)

    def _decide_compiled(
        self, compiled: _CompiledTool, key: tuple[str, str], params: Mapping[str, Any]
    ) -> CallDecision | None:
        """The call through its declarations' compiled form. None when the call is not of the
        shape compiled for (a parameter missing, undeclared, not text or too long, a placed path
        that is not text): :meth:`decide_general` decides it and words the refusal."""
        if params.__class__ is not dict or not params.keys() <= compiled.names:
            return None
        if compiled.texts:
            return self._decide_texts(compiled, key, params)
        decided: list[AtomDecision] = []
        workspace, decide_value = self.workspace, self.gate.decide_value
        for kind, resource, action, prefix, param, suffix, fixed in compiled.slots:  # type: ignore[union-attr]
            if fixed is not None:
                decided.append(fixed)
                continue
            value = prefix
            if param is not None:
                given = params.get(param)
                if given.__class__ is not str or not given or len(prefix) + 2 * len(given) + len(suffix) > MAX_PATTERN_LENGTH:
                    return None  # empty, or escaped it could be longer than a pattern may be
                value += given
            if kind == _PATH and workspace is not None:
                places, canonical = self._place(value)
                if canonical and not suffix:
                    inside = places[0][1]
                    atom = f"fs:{action}:{inside}"
                    decided.append(AtomDecision(atom, *worded(self.gate.decide_normalised("fs", action, inside, inside))))
                    continue
                for placed_resource, placed in places:
                    if placed.__class__ is not str or 2 * len(placed) + len(suffix) > MAX_PATTERN_LENGTH:
                        return None
                    atom, decision = decide_value(placed_resource, action, placed + suffix)
                    decided.append(AtomDecision(atom, *worded(decision)))
            else:
                atom, decision = decide_value(resource, action, value + suffix)
                decided.append(AtomDecision(atom, *worded(decision)))
        return _call_decision(*key, tuple(decided))

    def _place(self, value: str) -> tuple[list[tuple[str, Any]], bool]:
        """:meth:`Workspace.place` of a host path, and whether its one place is a workspace path
        in canonical form. A path that is plainly its own canonical form
        (:func:`bgc.core.resources.fs.plain_path`; not on a case-insensitive file system, whose refusals
        that test does not encode) is not read again: strictly inside the root, its workspace
        path is the rest of it, canonical too, for the gate to decide with its links resolved
        and without normalising it again (as :meth:`~bgc.core.gate.Gate.decide_value` would)."""
        assert self.workspace is not None
        if self._inside_prefix is None or not plain_path(value):
            return self.workspace.place(value), False
        if value.startswith(self._inside_prefix):
            return [("fs", value[len(self._inside_prefix) - 1 :])], True
        return self.workspace.place_canonical(value), False  # canonical, and with no '..' to read

    def _decide_texts(
        self, compiled: _CompiledTool, key: tuple[str, str], params: Mapping[str, Any]
    ) -> CallDecision | None:
        """A call of a tool some of whose templates have wildcards of their own
        (``fs:read:{path}/**``), decided as :meth:`_decide_atoms` decides the atoms that
        expanding the templates makes, with less work: an atom of a template with no wildcard,
        escape or brace of its own (``fs:read:{path}``) is the concrete value it names, decided
        as :meth:`~bgc.core.gate.Gate.need` decides such text (its parameter's escapes undone: a value);
        the call's work bound is charged for every atom's text before any is decided, as
        :meth:`~bgc.core.gate.Gate.cover` charges it. None for a call of another shape."""
        atoms = self._texts(compiled, params)
        if atoms is None:
            return None
        budget = Budget(ORDER_BUDGET)
        try:
            budget.charge(sum(NEED_STEPS + NEED_STEPS_PER_CHAR * len(text) for _, _, text, _, _ in atoms))
        except BudgetExhausted:
            return _decision(*key, CallResult(*key, "uncovered", UNDECIDED))
        decided: list[AtomDecision | None] = [None] * len(atoms)
        gate, proven = self.gate, None
        # the atoms with wildcards first: a search's walk may prove its directory has no link,
        # which deciding that directory's own atom then need not look for again
        for index, (resource, action, text, value, _) in enumerate(atoms):
            if value is None:
                decided[index] = need = AtomDecision.of(gate.need(resource, action, text, budget))
                if need.effect != "allow" and self.workspace is not None:
                    decided[index], proven = self._on_disk(resource, action, text, need)
        for index, (resource, action, _, value, canonical) in enumerate(atoms):
            if value is None:
                continue
            if canonical:  # normalising it would give it back
                linked = self._link_free_gate if value == proven else gate
                decision = linked.decide_normalised(resource, action, value, value)
                decided[index] = AtomDecision(f"{resource}:{action}:{value}", *worded(decision))
            else:
                atom, decision = gate.decide_value(resource, action, value)
                decided[index] = AtomDecision(atom, *worded(decision))
        return _call_decision(*key, tuple(decided))  # type: ignore[arg-type]

    def _texts(
        self, compiled: _CompiledTool, params: Mapping[str, Any]
    ) -> list[tuple[str, str, str, str | None, bool]] | None:
        """The atoms ``(resource, action, pattern text, value, canonical)`` the slots make of a
        call's text parameters (escaped, host paths placed), as expanding the templates makes
        them: ``value`` is the concrete value the text names when its template has nothing
        special of its own (else None), ``canonical`` says it is a plain workspace path
        (:meth:`_place`). None for a call of another shape."""
        atoms: list[tuple[str, str, str, str | None, bool]] = []
        # a parameter in several templates (a search's path) is placed once: its places, and
        # whether it is a plain workspace path
        placements: dict[str, tuple[list[tuple[str, Any]], bool]] = {}
        for (kind, resource, action, prefix, param, suffix, _), patterned in zip(compiled.slots, compiled.patterned):  # type: ignore[arg-type]
            if param is None:
                atoms.append((resource, action, prefix + suffix, None if patterned else prefix + suffix, False))
                continue
            given = params.get(param)
            if given.__class__ is not str or not given:
                return None
            if kind == _PATH and self.workspace is not None:
                placement = placements.get(param)
                if placement is None:
                    placement = placements[param] = self._place(given)
                placed, canonical = placement[0], placement[1] and not suffix
            else:
                placed, canonical = [(resource, given)], False
            for placed_resource, value in placed:
                if value.__class__ is not str:
                    return None
                text = prefix + glob.escape(value) + suffix
                if len(text) > MAX_PATTERN_LENGTH:
                    return None
                atoms.append((placed_resource, action, text, None if patterned else prefix + value + suffix, canonical))
        return atoms

    def decide_general(self, tool: str, server: str | None, params: Mapping[str, Any]) -> CallDecision:
        """The decision for any call, through the declarations as written: templates expanded
        to pattern text, each atom decided by :meth:`~bgc.core.gate.Gate.need`. What
        :meth:`decide_call` falls back to for every call its compiled form does not take (list,
        integer and pattern parameters, refusals, undeclared tools and servers), and the
        reference the tests hold the compiled form to. A declared tool is never run confined
        (:func:`unconfined`)."""
        return unconfined(self._decide_general(tool, server, params))

    def _decide_general(self, tool: str, server: str | None, params: Mapping[str, Any]) -> CallDecision:
        server = LOCAL_SERVER if server is None else server
        specs = self.specs.get((tool, server))
        if not specs and server != LOCAL_SERVER:
            return self._decide_mcp_identity(tool, server)
        if not specs:
            return CallDecision(tool, server, "deny", self._undeclared(tool, server), declared=False)
        if not isinstance(params, Mapping) or not all(isinstance(name, str) for name in params):
            return CallDecision(tool, server, "deny", "the parameters are not a map of names to values")
        try:
            atoms: list[tuple[str, str, str]] = []
            for spec in specs:
                atoms.extend(self._atoms(spec, params))
        except TemplateError as error:
            return CallDecision(tool, server, "deny", f"refused: {error}")
        return self._other_names(self._decide_atoms(tool, server, atoms))

    def _other_names(self, decision: CallDecision) -> CallDecision:
        """``decision`` with every granted file that has other names asked instead.

        A hard link gives a file as many names as it has links, and a policy decides a file by
        the name a call gives it: ``src/notes`` linked to ``.env`` (or to ``.git/config``) reads
        and writes the denied file under an allowed name. bgc cannot know a file's other names
        without walking the file system, but it can tell that there are others: a regular file
        whose link count (``st_nlink``) is more than one. Such a file granted by its name is
        asked, for the person at the session (the call is marked not understood, so no stored
        approval of its atoms settles it); a deny stays a deny. Only a decider with a workspace
        looks at the disk: a kernel's call names workspace paths of its plan, no host file."""
        if self.workspace is None or decision.effect == "deny":
            return decision
        atoms, linked = list(decision.atoms), []
        for index, atom in enumerate(atoms):
            if atom.effect != "allow":
                continue
            links = self._links(atom.atom)
            if links > 1:
                reason = (f"{atom.reason}, but the file has {links} names (hard links) and bgc decides it by this one "
                          "only: a person decides")  # fmt: skip
                atoms[index] = AtomDecision(atom.atom, "ask", reason, atom.rule)
                linked.append(atoms[index])
        if not linked:
            return decision
        reason = "; ".join(f"{atom.atom}: {atom.reason}" for atom in linked)
        return decision._replace(effect="ask", reason=reason, atoms=tuple(atoms), understood=False)

    def _links(self, atom: str) -> int:
        """The most links of the host file an ``fs`` or ``host`` atom names (its text read as a
        value, and unescaped when it is a pattern's text for one); 1 for anything else."""
        resource, _, rest = atom.partition(":")
        text = rest.partition(":")[2]
        if resource not in ("fs", HOST) or not text.startswith("/"):
            return 1
        assert self.workspace is not None
        values = {text}
        unescaped = _ESCAPED.sub(r"\1", text)
        if glob.escape(unescaped) == text:
            values.add(unescaped)
        most = 1
        for value in values:
            path = value if resource == HOST else self.workspace.root.rstrip("/") + value
            try:
                info = os.stat(path)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(info.st_mode):
                most = max(most, info.st_nlink)
        return most

    def _decide_atoms(self, tool: str, server: str, atoms: list[tuple[str, str, str]]) -> CallDecision:
        """A call's atoms as pattern text decided by the gate, a search's pattern decided on the
        files it reaches when there is a workspace and the pattern is not granted whole."""
        result = self.gate.cover(tool, server, atoms, Budget(ORDER_BUDGET))
        if result.reason == UNDECIDED or self.workspace is None or result.status == "covered":
            return _decision(tool, server, result)
        decided = list(map(AtomDecision.of, result.needs))
        for index, ((resource, action, text), need) in enumerate(zip(atoms, decided)):
            if need.effect != "allow":
                decided[index] = self._on_disk(resource, action, text, need)[0]
        return _call_decision(tool, server, tuple(decided))

    def _on_disk(
        self, resource: str, action: str, text: str, need: AtomDecision, *, directories: bool = False
    ) -> tuple[AtomDecision, str | None]:
        """An atom the algebra did not grant whole, an ``fs`` pattern, decided again on the files
        it reaches in the workspace now (:mod:`bgc.runtime.trees`): a search reads what exists. With it,
        the workspace path of the directory the walk started from when the walk proved that no
        link lies on its way (a file it reached is ``link_free``), else None."""
        import bgc.runtime.trees as trees  # not `from bgc import trees`: an import already made, at no cost

        pattern = normalise_fs_pattern(text) if resource == "fs" else None
        if pattern is None or isinstance(pattern, resources.Rejection) or not trees.is_pattern(pattern):
            return need, None
        assert self.workspace is not None
        reached = trees.files_reached
        files = reached(self.workspace.root, pattern, directories=True) if directories else reached(self.workspace.root, pattern)
        if isinstance(files, str):
            return AtomDecision(need.atom, need.effect, f"{need.reason}; {files}", need.rule), None
        link_free, rooted, head = self._link_free_gate.decide, self.gate.decide, f"{resource}:{action}:"
        # the first file a rule denies, else the first denied (no rule allows it), else the first
        # asked: a deny rule's file decides whatever the order (an enforcer may let a file no rule
        # decides stand aside, docs/agents.md, and must not let one a rule denies)
        worst, proven, denied, asked = None, None, None, None
        for path, plain in files:
            if plain:
                decided = link_free(head + path)
                # a file reached link-free: the walk found no link from / to where it started
                proven = proven or trees._fixed_directory(pattern)
            else:
                decided = rooted(head + path)
            if decided.effect == "deny" and decided.rule is not None:
                worst = path
                break
            if decided.effect == "deny":
                denied = denied or path
            elif decided.effect == "ask":
                asked = asked or path
        else:
            worst = denied or asked
        if worst is None:
            linked = self._linked_below(path for path, _ in files)
            if linked is not None:  # granted by its names, but a file there has others (_other_names)
                reason = f"{linked[0]} below it has {linked[1]} names (hard links) and bgc decides it by this one only"
                return AtomDecision(need.atom, "ask", f"{reason}: a person decides"), None
            return AtomDecision(need.atom, "allow", f"every file it reaches now is granted ({len(files)} files)"), proven
        found = self.gate.need_value(resource, action, worst)  # its rule and approvals
        reason = f"{found.atom} is below it: {found.reason}"
        return AtomDecision(need.atom, found.effect, reason, found.rule, found.approvals, found.asked_by), proven

    def _linked_below(self, paths: Iterable[str]) -> tuple[str, int] | None:
        """The first of these workspace paths that is a regular file with more than one link,
        and its link count; None when none is."""
        assert self.workspace is not None
        root = self.workspace.root.rstrip("/")
        for path in paths:
            try:
                info = os.stat(root + path)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                return path, info.st_nlink
        return None

    def _decide_mcp_identity(self, tool: str, server: str) -> CallDecision:
        """A tool of an MCP server that no declaration names, decided on its identity alone,
        ``mcp:call:SERVER/TOOL`` (its arguments unchecked: what a rule naming the tool, as
        ``bgc import claude-code`` writes it from ``mcp__SERVER__TOOL``, means). When no rule
        decides that atom either, the call is undeclared (an adapter may ask instead)."""
        if "/" in tool or "/" in server:
            return CallDecision(tool, server, "deny", f"refused: {server}/{tool} is not one server and one tool name")
        need = self.gate.need_value(*MCP_IDENTITY, f"{server}/{tool}")
        if need.rule is None and need.effect == "deny":
            reason = f"{self._undeclared(tool, server)}, and no rule names {need.atom}"
            return CallDecision(tool, server, "deny", reason, declared=False)
        atom = AtomDecision.of(need)  # an ask keeps its approvers: what its permission request is bound to
        return CallDecision(tool, server, need.effect, f"{need.atom}: {need.reason}", (atom,))

    def decide_mcp_message(self, method: str, action: str, server: str, subject: str) -> CallDecision:
        """An MCP message other than a tool call, decided on its atom ``mcp:ACTION:SERVER/SUBJECT``
        (``mcp:read:files/file:///src/a.md`` for a ``resources/read``; the MCP proxy maps
        messages to atoms). ``declared`` is False when no rule decides the atom: the proxy then
        keeps its default (it passes the message, unless it runs closed). A resource URI in a
        spelling a server could read otherwise (:func:`resource_uri_problem`) is refused."""
        if "/" in server or not server:
            return CallDecision(method, server, "deny", f"refused: {server!r} is not one server name")
        uri = subject if action == "read" else subject.partition("/")[2] if subject.startswith("resource/") else None
        problem = resource_uri_problem(uri) if uri is not None else None
        if problem is not None:
            atom = f"mcp:{action}:{server}/{subject}"
            return CallDecision(method, server, "deny", f"{atom}: rejected: {problem}",
                                (AtomDecision(atom, "deny", f"rejected: {problem}"),))  # fmt: skip
        need = self.gate.need_value("mcp", action, f"{server}/{subject}")
        atom = AtomDecision.of(need)
        if need.rule is None and need.effect == "deny" and not need.reason.startswith("rejected"):
            return CallDecision(method, server, "deny", f"no rule names {need.atom}", (atom,), declared=False)
        return CallDecision(method, server, need.effect, f"{need.atom}: {need.reason}", (atom,))

    def _undeclared(self, tool: str, server: str) -> str:
        known = sorted({name for (name_tool, name) in self.specs if name_tool == tool})
        if known:
            return f"tool {tool!r} is not declared on server {server!r} (only on {', '.join(known)})"
        return f"unknown tool {tool!r} on server {server!r}: no declaration covers it"

    def _atoms(self, spec: ToolSpec, params: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """The atoms one declaration needs; with a workspace, host paths placed first."""
        if self.workspace is None:
            return expand_call(spec.needs, spec.ignores, params)
        refuse_undeclared(spec.needs, spec.ignores, params)
        refuse_unfilled(spec.needs, params)
        atoms: list[tuple[str, str, str]] = []
        for need in spec.needs:
            lead = _leading_param(need)
            if lead is None or lead not in params:
                atoms.extend((need.resource, need.action, text) for text in need.expand(params))
                continue
            value = params[lead]
            items = list(value) if isinstance(value, (list, tuple)) else [value]
            if len(items) > MAX_CALL_ATOMS:
                raise TemplateError(f"parameter {lead!r} lists more than {MAX_CALL_ATOMS:,} paths", lead)
            for item in items:
                for resource, placed in self.workspace.place(item):
                    texts = need.expand({**params, lead: placed})
                    atoms.extend((resource, need.action, text) for text in texts)
        return atoms

    def decide_shell(self, command: Any, cwd: str, *, confines: bool = False) -> CallDecision:
        """A shell command string run in the host directory ``cwd`` (an agent's Bash tool):
        every simple command, redirection and wrapper it runs decided on its own
        (:func:`bgc.runtime.shell.shell_atoms`), paths placed in the workspace when there is one.
        ``confines``: the caller runs the command under ``bgc sandbox`` when the decision is
        :attr:`~CallDecision.confined`; otherwise such an allow is asked (:func:`unconfined`).
        """
        decision = self._decide_shell(command, cwd)
        return decision if confines else unconfined(decision)

    def _decide_shell(self, command: Any, cwd: str) -> CallDecision:
        """:meth:`decide_shell`, the command's own decision.

        Denied when any atom is denied; otherwise asked when any atom awaits a person or when
        some of the command was not understood exactly (its needs may be incomplete); allowed
        only when every atom is granted and all of it was understood. A command of the
        catalogue is decided by the files it touches and the rules that name its argv
        (:meth:`_decide_catalogued`); one that touches nothing needs no atom.
        """
        from bgc.runtime.shell import shell_atoms

        home = self.workspace.home if self.workspace is not None else None
        analysis = shell_atoms(command, cwd=cwd, fold_case=self.gate.case_insensitive, home=home)
        work = _ShellWork(analysis.needs)
        atoms: list[AtomDecision] = []
        groups: dict[int, list[ShellNeed]] = {}
        for need in analysis.needs:
            if need.catalogued:
                groups.setdefault(need.catalogued, []).append(need)
        done: set[int] = set()
        asks = list(analysis.needs_ask)
        for need in analysis.needs:
            if not need.catalogued:
                atoms.extend(self._decide_placed(need.resource, need.action, need.value, f" (in `{need.command}`)", need.command))
            elif need.catalogued not in done:
                done.add(need.catalogued)
                decided, refused = self._decide_catalogued(groups[need.catalogued], work)
                atoms.extend(decided)
                if refused:
                    asks.append(refused)
        effects = {atom.effect for atom in atoms}
        if "deny" in effects:
            return CallDecision(SHELL, LOCAL_SERVER, "deny", "a command it runs is denied", tuple(atoms))
        if asks:
            reason = "not understood exactly: " + "; ".join(asks)
            return CallDecision(SHELL, LOCAL_SERVER, "ask", reason, tuple(atoms), understood=False)
        if not atoms and groups:
            programs = ", ".join(dict.fromkeys(analysis.programs))
            return CallDecision(SHELL, LOCAL_SERVER, "allow", f"it touches no file ({programs}: docs/agents.md, the catalogue)")
        if "ask" in effects or not atoms:
            return self._other_names(CallDecision(
                SHELL, LOCAL_SERVER, "ask", "some commands await approval" if atoms else "nothing to run", tuple(atoms)
            ))  # fmt: skip
        return self._other_names(CallDecision(SHELL, LOCAL_SERVER, "allow", "every command it runs is granted", tuple(atoms)))

    def _decide_catalogued(self, needs: list[ShellNeed], work: _ShellWork) -> tuple[list[AtomDecision], str | None]:
        """A command of the catalogue: its argv (``needs[0]``) and the files it touches.

        Each file is decided as a Read or Write of it would be. Then: a file a rule (or a
        fallback) denies or asks for decides as it does; a file no rule decides (not granted,
        and no deny rule: a path no allow covers, a tree the policy does not grant whole) stands
        aside, and the argv's own decision stands for the command as before. The argv's atom is
        needed when a rule names it (so ``deny proc:exec:rm/**`` still denies, ``ask
        proc:exec:**`` still asks; a fallback names nothing) and when some file stood aside;
        when no rule names it and every file is decided by a rule, the files alone decide:
        ``cat src/a.py`` is allowed where reading it is.

        The second value: why the reading does not hold after all (a glob may expand to a word
        beginning with ``-``): the command is then asked as one not understood, as a glob is
        outside the catalogue, its argv's atom kept only when a rule denies it.
        """
        argv, touched = needs[0], needs[1:]
        where = f" (in `{argv.command}`)"
        proc = AtomDecision.of(self.gate.need_value(argv.resource, argv.action, argv.value))
        files: list[AtomDecision] = []
        for need in touched:
            if need.reach == "absent":
                problem = self._absent(need, work)
                if problem:  # as a glob outside the catalogue is: asked, its argv needed only where a rule denies it
                    denied = proc.effect == "deny" and _names_argv(proc)
                    return [proc._replace(reason=proc.reason + where, command=argv.command)] if denied else [], f"`{argv.command}`: {problem}"
                continue
            files.extend(self._decide_touched(need, work))
        kept = [atom for atom in files if atom.effect != "deny" or atom.rule is not None]
        aside = None if len(kept) == len(files) else next(a for a in files if a.effect == "deny" and a.rule is None)
        if aside is not None and not _names_argv(proc):
            proc = proc._replace(reason=f"{proc.reason}, and it touches {aside.atom}, which no rule decides ({aside.reason})")
        decided = [proc, *kept] if aside is not None or _names_argv(proc) else kept
        return [atom._replace(reason=atom.reason + where, command=argv.command) for atom in decided], None

    def _decide_touched(self, need: ShellNeed, work: _ShellWork) -> list[AtomDecision]:
        """A file (or pattern of files) a catalogued command touches, placed and decided."""
        value, pattern = need.value, need.pattern
        if need.repository:
            top = self._repository(need.value)
            if top is None:
                atom = f"fs:{need.action}:<the git repository of {need.value}>/{need.repository}"
                return [AtomDecision(atom, "deny", "which git repository holds the directory is only known on disk")]
            if not top:
                return []  # no repository: git reads nothing
            value = glob.escape(top).rstrip("/") + "/" + need.repository if pattern else posixpath.join(top, need.repository)
            value = posixpath.normpath(value) if not pattern else value
        if not pattern:
            return self._decide_placed(need.resource, need.action, value)
        decided = []
        for resource, text in self._place_pattern(value):
            try:
                found = AtomDecision.of(self.gate.need(resource, need.action, text, work.budget))
            except glob.AlgebraLimit:
                found = AtomDecision(f"{resource}:{need.action}:{text}", "deny", UNDECIDED)
            if found.effect != "allow" and self.workspace is not None and resource == "fs":
                if need.reach == "files" and work.walk():
                    found = self._on_disk(resource, need.action, text, found, directories=True)[0]
                elif need.reach == "copied" and work.walk():
                    found = self._copied(need, text, found)
            decided.append(found)
        return decided

    def _place_pattern(self, text: str) -> list[tuple[str, str]]:
        """A host fs pattern as :meth:`Workspace.place` places a path: its fixed directory
        placed (a workspace path inside the project, a host path outside it, its link target
        too), the rest after it as written."""
        if self.workspace is None:
            return [("fs", text)]
        import bgc.runtime.trees as trees

        fixed = trees._fixed_directory(text)
        rest = text[len(glob.escape(fixed)) :] if text.startswith(glob.escape(fixed)) else None
        if rest is None:
            return [("fs", text)]  # not read back as written: decided as given, never placed elsewhere
        return [(resource, (glob.escape(placed).rstrip("/") + rest) if isinstance(placed, str) else text)
                for resource, placed in self.workspace.place(fixed)]  # fmt: skip

    def _repository(self, directory: str) -> str | None:
        """The work tree of the git repository that holds the host ``directory``, found as git
        finds it (the nearest directory, from it upwards, holding a ``.git``); ``""`` when none
        does; None without a workspace (nothing on disk is looked at)."""
        if self.workspace is None:
            return None
        current = directory
        while True:
            if os.path.lexists(posixpath.join(current, ".git")):
                return current
            if current == "/":
                return ""
            current = posixpath.dirname(current)

    def _absent(self, need: ShellNeed, work: _ShellWork) -> str | None:
        """Why a pattern that must reach no file (a glob's words beginning with ``-``) may reach
        one: it does, or the files there cannot be listed, or there is no workspace to look in."""
        if self.workspace is None or not work.unwritten(need.catalogued) or not work.walk():
            return f"its glob may expand to a word beginning with '-' ({need.value} may reach a file)"
        import bgc.runtime.trees as trees

        for resource, text in self._place_pattern(need.value):
            reached = trees.files_reached(self.workspace.root, text, directories=True) if resource == "fs" else "outside"
            if reached:
                return f"its glob may expand to a word beginning with '-' ({text} reaches a file, or cannot be listed)"
        return None

    def _copied(self, need: ShellNeed, text: str, found: AtomDecision) -> AtomDecision:
        """A copy's or move's destination tree decided on the files of its source, each at the
        place the copy puts it (``cp -r src dst``: ``src/a/b`` is ``dst/a/b``): nothing when the
        source is not a directory, the pattern's own answer when its files cannot be listed."""
        import bgc.runtime.trees as trees

        assert self.workspace is not None
        sources = self.workspace.place(need.source)
        if len(sources) != 1 or sources[0][0] != "fs" or not text.endswith("/**"):
            return found
        source = sources[0][1]
        host = self.workspace.root.rstrip("/") + source
        if os.path.islink(host):
            return found  # where it leads decides what is copied: the pattern's own answer
        if not os.path.isdir(host):
            return AtomDecision(found.atom, "allow", "nothing is put below it: its source is not a directory")
        files = trees.files_reached(self.workspace.root, glob.escape(source).rstrip("/") + "/**", directories=True)
        if isinstance(files, str):
            return found._replace(reason=f"{found.reason}; {files}")
        below = _ESCAPED.sub(r"\1", text[: -len("/**")])
        targets = (self.gate.need_value("fs", need.action, below + path[len(source.rstrip("/")) :]) for path, _ in files)
        worst = None  # as a tree on disk: a file a rule denies first, then one no rule allows, then one asked
        for decided in targets:
            if decided.effect == "deny" and decided.rule is not None:
                worst = decided
                break
            if decided.effect != "allow" and (worst is None or (worst.effect, decided.effect) == ("ask", "deny")):
                worst = decided
        if worst is None:
            return AtomDecision(found.atom, "allow", f"every file copied there is granted ({len(files)} files)")
        reason = f"{worst.atom} is below it: {worst.reason}"
        return AtomDecision(found.atom, worst.effect, reason, worst.rule, worst.approvals, worst.asked_by)

    def _decide_placed(
        self, resource: str, action: str, value: str, note: str = "", command: str | None = None
    ) -> list[AtomDecision]:
        """A concrete value decided by the gate: an ``fs`` path placed in the workspace first
        (a host path outside it is a ``host`` atom, :meth:`Workspace.place`); ``note`` follows
        each reason, ``command`` is the simple command of a shell string it comes from."""
        placed = self.workspace.place(value) if self.workspace and resource == "fs" else [(resource, value)]
        decided = [self.gate.need_value(placed_resource, action, placed_value) for placed_resource, placed_value in placed]
        return [AtomDecision.of(need, need.reason + note, command) for need in decided]

    def decide_values(self, tool: str, server: str, needs: Iterable[tuple[str, str, str]]) -> CallDecision:
        """A call that names the values it touches itself, as ``(resource, action, value)``
        (an editor's file read, ``fs:read`` of its path): each decided as :meth:`decide_shell`
        decides a command's, the call allowed only when every one is granted; a granted file with
        other names is asked (:meth:`_other_names`). Nothing to decide is a deny."""
        atoms = tuple(atom for resource, action, value in needs for atom in self._decide_placed(resource, action, value))
        if not atoms:
            return CallDecision(tool, server, "deny", "refused: the call names nothing bgc can decide")
        return self._other_names(_call_decision(tool, server, atoms))


MAX_SHELL_WALKS = 8
"""The most directory walks (:func:`bgc.runtime.trees.files_reached`) one shell command's
decision makes: each is bounded, and past this number a pattern keeps the policy's own answer."""


class _ShellWork:
    """What deciding one shell command may spend (the algebra's budget, shared by its patterns,
    and its directory walks), and whether the files on disk now are the files its commands
    will meet.

    A walk decides a pattern on the files there when the hook runs; a program earlier in the
    same string could change them first (``ln -s ../.env src/x; cat src/*``). So walks are made
    only when every program in the string is a catalogued command read exactly (none of which
    can put a file's content under another name without reading it, which is decided); and a
    glob's words are known not to begin with ``-`` only when, besides, nothing else in the string
    writes (``touch ./-rf; rm *``, ``> -rf; rm *``)."""

    __slots__ = ("budget", "settled", "walks", "writers")

    def __init__(self, needs: Iterable[ShellNeed]) -> None:
        self.budget = Budget(ORDER_BUDGET)
        needs = tuple(needs)
        self.settled = all(need.catalogued for need in needs if need.resource == "proc")
        self.walks = MAX_SHELL_WALKS if self.settled else 0
        self.writers = {need.catalogued for need in needs if need.action == "write" and need.reach != "absent"}
        """The commands that write (0: a redirection)."""

    def unwritten(self, number: int) -> bool:
        """Whether nothing but the command ``number`` itself may write before its words expand."""
        return self.settled and self.writers <= {number}

    def walk(self) -> bool:
        """Take one walk, if one is left."""
        self.walks -= 1
        return self.walks >= 0


def _names_argv(atom: AtomDecision) -> bool:
    """Whether a rule names a command's argv: an allow, ask or deny rule whose pattern holds it.
    Not so for an argv no rule allows (deny, and no rule), one refused, or one a fallback decides
    (``otherwise ask proc:exec:**`` is the policy's word for commands it does not name, and a
    catalogued command is then decided by the files it touches, docs/agents.md)."""
    return atom.rule is not None and not atom.rule.fallback


_VALUE, _PATH = "value", "path"
"""A :class:`_Slot`'s kind, compared by ``==``, never ``is``: a slot read back from a cache entry
(a decider's compiled tools travel with it) holds an equal text, not the same object."""


class _Slot(NamedTuple):
    """One atom template of a compiled declaration: ``prefix``, the parameter ``param`` (none:
    the template has no parameter) and ``suffix``, as written; ``fixed``, its decision when
    that cannot change (no parameter, not a file, nothing but its literal value); a ``_PATH``
    slot's parameter is a host path when the decider has a workspace."""

    kind: str
    resource: str
    action: str
    prefix: str
    param: str | None
    suffix: str
    fixed: AtomDecision | None


class _CompiledTool:
    """The declarations of one (tool, server), compiled once: which parameters a call may
    name, and each template split around its one parameter.

    When every template is a literal without wildcards, escapes or braces around at most one
    parameter (``fs:read:{file_path}``, ``net:connect:{url}``, ``mcp:call:filesystem/read_file``),
    a text parameter adds no wildcard of its own, so each atom is the concrete value
    ``prefix + parameter + suffix``, decided as the gate decides a value: expanding it to
    pattern text and reading that back is skipped, never a check. Otherwise (``texts``: a
    wildcard of the template's own, ``fs:read:{path}/**``) the atoms are made as pattern text, as
    expanding the templates would make them, and decided as every call's are.

    ``names`` are the parameters every declaration templates or ignores (a call naming another
    is refused by :meth:`CallDecider.decide_general`); ``slots`` is None when some template has
    another shape (an argv word, several parameters), and every call of the tool is decided the
    general way.
    """

    __slots__ = ("names", "patterned", "slots", "texts")

    def __init__(self, specs: list[ToolSpec], gate: Gate) -> None:
        names = (frozenset((*spec.ignores, *(name for need in spec.needs for name in need.params))) for spec in specs)
        self.names = frozenset.intersection(*names)
        slots = [_slot(need, gate) for spec in specs for need in spec.needs]
        self.patterned = tuple(slot is not None and _SPECIAL.search(slot.prefix + slot.suffix) is not None for slot in slots)
        """Per slot, whether its template has a wildcard, escape or brace of its own."""
        self.texts = any(self.patterned)
        # at most two atoms a slot (a host path and its link target), none longer than a pattern may be
        affordable = 2 * len(slots) * (NEED_STEPS + NEED_STEPS_PER_CHAR * MAX_PATTERN_LENGTH) <= ORDER_BUDGET
        self.slots: tuple[_Slot, ...] | None = tuple(slots) if affordable and None not in slots else None  # type: ignore[arg-type]


def _slot(need: AtomTemplate, gate: Gate) -> _Slot | None:
    """A template as a :class:`_Slot`, or None when it has another shape."""
    pieces = need.pieces()
    holes = [index for index, piece in enumerate(pieces) if isinstance(piece, int)]
    if need.resource in ARGV_RESOURCES or len(holes) > 1:
        return None
    if not holes:
        text = "".join(pieces)  # type: ignore[arg-type]
        if need.resource == "fs" or _SPECIAL.search(text):
            return _Slot(_VALUE, need.resource, need.action, text, None, "", None)
        atom, decision = gate.decide_value(need.resource, need.action, text)
        return _Slot(_VALUE, need.resource, need.action, text, None, "", AtomDecision(atom, *worded(decision)))
    prefix, suffix = "".join(pieces[: holes[0]]), "".join(pieces[holes[0] + 1 :])  # type: ignore[arg-type]
    kind = _PATH if need.resource == "fs" and not prefix else _VALUE
    return _Slot(kind, need.resource, need.action, prefix, need.params[0], suffix, None)


_SPECIAL = re.compile(r"[\\*?[{}]")
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
"""A backslash escape in pattern text made of a value (:func:`bgc.core.patterns.glob.escape`)."""
"""Characters that make template text more than its literal value."""


SHELL = "shell"
"""The tool name shell decisions carry (each enforcer's own shell tool: Claude Code's Bash)."""

SHELL_PAIRS = frozenset({("proc", "exec"), ("fs", "read"), ("fs", "write")})
"""What a shell command's atoms can be (:mod:`bgc.runtime.shell`): part of every implicit plan."""

MCP_IDENTITY = ("mcp", "call")
"""The resource and action of an MCP tool's identity, ``mcp:call:SERVER/TOOL``: what an
undeclared MCP tool is decided on, and what a declaration may name among its needs so that rules
about the tool itself apply to it too (the one mapping ``bgc import claude-code`` writes to)."""
MCP_MESSAGE_ACTIONS = ("read", "prompt", "complete", "sample", "elicit")
"""The actions of the ``mcp`` atoms that stand for MCP messages other than a tool call
(:meth:`CallDecider.decide_mcp_message`). A policy's plan asks for them only when one of its
rules can name them (resource ``mcp`` or ``*``, that action or ``*``): for any other policy no
rule decides them, and its plan stays as it was."""


def resource_uri_problem(uri: str) -> str | None:
    """Why a resource URI is not matched as written, or None: bgc matches the text, and the
    server reads a URI, so one that does not start with its scheme in lower case is refused (the
    ``mcp`` resource refuses the rest: escapes, white space, dot segments,
    :mod:`bgc.core.resources.mcp`)."""
    if not re.match(r"[a-z][a-z0-9+.-]*:", uri):
        return "a resource URI starts with its scheme, in lower case"
    return None


def _leading_param(need: AtomTemplate) -> str | None:
    """The parameter an ``fs`` template starts with (``fs:read:{file_path}``): a host path."""
    if need.resource != "fs" or not need.template.startswith("{") or not need.params:
        return None
    return need.params[0] if need.template.startswith("{" + need.params[0] + "}") else None


def _decision(tool: str, server: str, result: CallResult) -> CallDecision:
    if result.reason == UNDECIDED:  # refused before any atom was decided
        return CallDecision(tool, server, "deny", f"{UNDECIDED} (the call's work bound)")
    return _call_decision(tool, server, tuple(map(AtomDecision.of, result.needs)))


def _call_decision(tool: str, server: str, atoms: tuple[AtomDecision, ...]) -> CallDecision:
    status, reason = coverage(atoms)
    return CallDecision(tool, server, _EFFECTS[status], reason, atoms)


# --- deciding against a policy ----------------------------------------------------------------


def implicit_plan(policy: Any, mode: str | None) -> Plan:
    """The plan a policy gives a run-time call: an implicit order asking ``R:A:**`` for every
    resource and action a declaration can need (and ``host:A`` for each ``fs:A``), compiled in
    ``mode``. A concrete atom is then decided by the gate exactly as compiling it alone would:
    granted where an allow holds it and no ask or deny does."""
    from bgc.core.compiler import Compiler
    from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ProposalOrigin, WorkOrder

    pairs = {(need.resource, need.action) for decl in policy.tools for need in decl.needs} | SHELL_PAIRS | {MCP_IDENTITY}
    pairs |= {
        ("mcp", action) for action in MCP_MESSAGE_ACTIONS
        if any(rule.resource in ("mcp", "*") and rule.action in (action, "*") for rule in policy.rules)
    }  # fmt: skip
    pairs |= {(HOST, action) for resource, action in pairs if resource == "fs"}
    order = WorkOrder(
        Intent(IMPLICIT_INTENT, None),
        (),
        GrantSet.of(GrantAtom(resource, action, "**") for resource, action in sorted(pairs)),
        ProposalOrigin(IMPLICIT_MODEL, (), Digest.of(b"")),
    )
    return Compiler(policy).compile(order, mode)


class TrustLine(NamedTuple):
    """A policy's ``trust ROLE NAME KEY`` line as plain text (what :func:`compiled_policy` keeps:
    reading it back needs none of the policy AST)."""

    role: str
    name: str
    key: str


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """What a run-time enforcer needs of a policy: the call decider of its implicit plan (the
    plan's id already derived), the policy's id, its trust lines, the modes it declares, its
    default mode, and who may switch a session to each mode (mode, count, approver names)."""

    decider: CallDecider
    policy_id: str
    trust: tuple[TrustLine, ...]
    modes: tuple[str, ...]
    default_mode: str | None = None
    mode_approvals: tuple[tuple[str, int, tuple[str, ...]], ...] = ()
    trusts_elicitation: bool = False


def compiled_policy(path: str, mode: str | None = None, *, memo: dict[str, Any] | None = None) -> CompiledPolicy:
    """The policy at ``path`` compiled for run-time calls in ``mode`` (its default when None).

    It comes from bgc's verified cache (:mod:`bgc.core.cache`: entries checksummed, keyed by bgc's
    code, the root file's real path and digest, and the mode as asked) while every file the
    policy was read from still has the digest it had: a hit reads the policy's files and nothing
    else (no parse, no policy loaded, no id derived), which is what a hook run before every tool
    call can afford. ``memo`` (a long-lived process's, :class:`bgc.runtime.session.WarmSources`) keeps entries
    in memory too, so a hit there skips reading and unpickling the entry; it is checked against
    the policy's files exactly as an entry read from disk is.
    """
    from bgc.core import cache

    keyed = cache.compiled_key(path, f"compiled-policy\0{mode!r}")
    if keyed is not None:
        entry = memo.get(keyed[0]) if memo is not None else None
        if entry is None:
            entry = cache.load_object("compiled-policy", keyed[0])
        if (
            isinstance(entry, tuple)
            and len(entry) == 3
            and entry[0] == keyed[0]
            and isinstance(entry[2], CompiledPolicy)
            and cache.unchanged(path, keyed[1], entry[1])
        ):
            if memo is not None:
                memo[keyed[0]] = entry
            return entry[2]  # type: ignore[no-any-return]
    from bgc.core.policy.loader import cached_policy

    policy = cached_policy(path)
    decider = CallDecider([implicit_plan(policy, policy.resolve_mode(mode))])
    decider.plan_id  # noqa: B018 - derived now, so the cached decider carries it
    trust = tuple(TrustLine(line.role, line.name, line.key) for line in policy.trust)
    mode_approvals = tuple((mode, rule.count, rule.approvers) for mode, rule in policy.mode_approvals)
    compiled = CompiledPolicy(
        decider, policy.id(), trust, policy.modes, policy.default_mode, mode_approvals, policy.trusts_elicitation
    )
    if keyed is not None:
        entry = (keyed[0], policy.file_digests(), compiled)
        cache.store_object("compiled-policy", keyed[0], entry)
        if memo is not None:
            memo[keyed[0]] = entry
    return compiled


def policy_decider(path: str, mode: str | None = None, workspace: Workspace | None = None) -> CallDecider:
    """A decider for the policy at ``path`` in ``mode`` (its default when None), for calls in
    ``workspace``: :func:`compiled_policy`'s."""
    return CallDecider.reuse(compiled_policy(path, mode).decider, workspace)


def call_from_data(data: Any) -> tuple[str, str | None, Mapping[str, Any]]:
    """``{"tool": …, "server": …, "params": {…}}`` (server and params optional) as a call;
    a :class:`~bgc.core.values.model.ModelError` names the field at fault."""
    from bgc.core.values.model import Fields, ToolCall

    fields = Fields(data, ())
    fields.only("tool", "server", "params")
    call = fields.build(ToolCall, fields.get("tool"), fields.get("server", None), fields.get("params", {}))
    return call.tool, call.server, call.params
