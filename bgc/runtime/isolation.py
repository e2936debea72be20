"""Whether the interpreter deciding a project's calls takes code from inside that project.

An enforcer that imports a module the agent may write is the agent's: a ``sitecustomize.py``,
a ``.pth`` file, a module shadowing one of the standard library's (``json.py``) or bgc itself,
found on an import path inside the project, runs before or instead of bgc and answers every
later call. ``bgc init`` registers every command it writes isolated from the environment
(``python -I``: no ``PYTHON*`` variables, no user site directory, no script or working directory
on ``sys.path``), which keeps the project off the import path; this module checks the result,
so an installation that still reaches into the project (a virtual environment inside it, a
``.pth`` of an editable install naming its ``src``, a checkout of bgc as the project) refuses to
decide instead of deciding with code the agent could change.

What is checked: the interpreter's directory, every ``sys.path`` entry (an empty entry is the
working directory; an entry that does not exist yet counts, since the agent could create it,
unless a path hook that is not the file system's claims it), the directory of every module
already imported (bgc's package first: an editable install's finder maps it without a
``sys.path`` entry), and the import paths a hook's client reports for its own process. A place is
inside the project when the project directory is that place or one of its ancestors, compared by
device and inode (a case-insensitive file system, a bind mount or a symbolic link spelling the
project otherwise still matches).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable


def import_places(extra: Iterable[str] = (), cwd: str | None = None, *, unknown: str = "/") -> list[str]:
    """Where this process has imported code from or may import it: bgc's package directory, the
    interpreter's own directory (a registered command starts it by that path: an interpreter, or
    a link to one, inside the project is a program the agent could replace), every ``sys.path``
    entry, every imported module's directory, then ``extra`` (another process's ``sys.path``,
    whose relative entries are ``cwd``'s), each once, as absolute paths. Relative entries of a
    working directory that is gone are read in ``unknown``."""
    import bgc

    try:
        here = os.getcwd()
    except OSError:  # removed under this process
        here = unknown
    places = [os.path.dirname(os.path.abspath(bgc.__file__))]
    if sys.executable:
        places.append(os.path.dirname(os.path.abspath(sys.executable)))
    places += _entry_places(sys.path, here)
    places += _entry_places(extra, cwd or here)
    return list(dict.fromkeys((*places, *_module_places())))


def _entry_places(entries: Iterable[str], cwd: str) -> list[str]:
    """The directories ``sys.path`` entries name, relative ones read in ``cwd`` ("" is ``cwd``).

    A relative entry that names nothing there and that a path hook other than the file system's
    claims (an editable install's ``__editable__.NAME.finder.__path_hook__``) is a key of that
    hook, not a directory, and is left out; if something appears under that name, the file
    system's hook (tried first) would read it, and it counts from then on."""
    places = []
    for entry in entries:
        where = os.path.abspath(os.path.join(cwd, entry))
        if not os.path.isabs(entry) and not os.path.lexists(where) and _claimed_by_another_hook(entry):
            continue
        places.append(where)
    return places


def _claimed_by_another_hook(entry: str) -> bool:
    """Whether the first of ``sys.path_hooks`` that takes ``entry`` is not a file-system finder
    (the hooks are called, not :data:`sys.path_importer_cache`, so nothing is cached)."""
    from importlib.machinery import FileFinder
    from zipimport import zipimporter

    for hook in sys.path_hooks:
        try:
            finder = hook(entry)
        except ImportError:
            continue
        return not isinstance(finder, (FileFinder, zipimporter))
    return False


_MODULE_PLACES: dict[int, tuple[str, ...]] = {}
"""What :func:`_module_places` found, by the number of modules loaded when it looked (one entry)."""


def _module_places() -> tuple[str, ...]:
    """The directories of the modules loaded, looked up again whenever their number changed (a
    module found later on a ``sys.path`` entry is caught by that entry, checked every time)."""
    count = len(sys.modules)
    found = _MODULE_PLACES.get(count)
    if found is None:
        found = tuple(sorted({os.path.dirname(os.path.abspath(where)) for module in list(sys.modules.values())
                              if isinstance(where := getattr(module, "__file__", None), str)}))  # fmt: skip
        _MODULE_PLACES.clear()
        _MODULE_PLACES[count] = found
    return found


_KNOWN: dict[str, frozenset[tuple[int, int]]] = {}
""":func:`_identities` of places that exist, kept (a directory that exists keeps its identity
and its ancestors'); a place that does not exist yet is examined again every time."""
MAX_KNOWN = 4096
"""Places :data:`_KNOWN` holds at most (it is emptied when full)."""


def _identities(place: str) -> frozenset[tuple[int, int]]:
    """The (device, inode) of ``place`` (its links resolved) and of every directory above it that
    exists."""
    known = _KNOWN.get(place)
    if known is not None:
        return known
    found: set[tuple[int, int]] = set()
    path, exists = os.path.realpath(place), True
    while True:
        try:
            info = os.stat(path)
        except OSError:
            exists = False
        else:
            found.add((info.st_dev, info.st_ino))
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    identities = frozenset(found)
    if exists:
        if len(_KNOWN) >= MAX_KNOWN:
            _KNOWN.clear()
        _KNOWN[place] = identities
    return identities


def imports_inside(project: str, extra: Iterable[str] = (), cwd: str | None = None) -> str | None:
    """Why this process must not decide calls for ``project``: the first place it imports code
    from (:func:`import_places`, ``extra`` read in ``cwd``) that lies inside the project, or that
    the project cannot be found to tell; None when no place does."""
    try:
        info = os.stat(project)
    except OSError as error:
        return f"the project directory {project!r} cannot be examined ({error.strerror or error})"
    identity = (info.st_dev, info.st_ino)
    advice = "install bgc outside the project and run it isolated (`python -I`, as `bgc init` registers it)"
    for place in import_places(extra, cwd, unknown=project):  # a lost directory counts as the project
        if identity in _identities(place):
            return f"bgc imports code from {place!r}, inside the project {project!r}: whoever may write there decides every call; {advice}"
    return None
