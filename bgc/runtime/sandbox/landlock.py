"""Landlock, the kernel's own sandbox for unprivileged processes, over ``ctypes``.

A small layer over the three system calls (landlock_create_ruleset(2), landlock_add_rule(2),
landlock_restrict_self(2)) rather than a PyPI binding: the ABI is three calls and four
structures, and the bindings on PyPI are all pre-releases or 0.x versions (``landlock``
1.0.0.dev5, ``landlockpy`` 0.2, ``py-landlock`` 0.1); the whole surface is tested here against
the running kernel.

A ruleset *handles* access rights (everything handled is denied unless a rule allows it beneath
a path) and is applied to the calling thread and every process it execs; it can never be lifted.
What a kernel supports grows with its ABI version, so the rights handled are the ones the
running kernel knows: ``REFER`` (moving a file between directories) from version 2, ``TRUNCATE``
from 3, TCP bind/connect from 4, ``IOCTL_DEV`` from 5, scoping of abstract UNIX sockets and
signals from 6. A kernel without Landlock answers :class:`LandlockUnavailable`.
"""

from __future__ import annotations

import ctypes
import os
import stat

TYPE_CHECKING = False  # typing's, without importing typing: the launcher imports this before every confined command
if TYPE_CHECKING:
    from collections.abc import Iterable

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
"""The same numbers on every architecture (the calls came after the syscall tables were unified)."""
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
"""Every filesystem right each ABI version knows (a later version knows at least version 5's)."""

READ = EXECUTE | READ_FILE | READ_DIR
"""What a read-only path allows: list, read and run what is beneath it."""
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights a rule on a file (not a directory) may carry; the kernel refuses the others."""


class LandlockUnavailable(OSError):
    """The running kernel has no Landlock (or it is disabled): nothing can be restricted."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _call(number: int, *args: object) -> int:
    result = _libc.syscall(number, *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(result)


def abi_version() -> int:
    """The Landlock ABI version of the running kernel; :class:`LandlockUnavailable` when none."""
    try:
        return _call(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError as error:
        raise LandlockUnavailable(error.errno, f"Landlock is not available: {error.strerror}") from None


class Rules:
    """What stays allowed once restricted: ``listed`` paths (directories listed beneath), ``read`` paths (read and run beneath them), ``write``
    paths (also create, change and remove beneath them), and ``connect_ports`` (the TCP ports
    that may be connected to; none: no TCP at all where the kernel can say so). A plain class, not a
    dataclass: the launcher imports this module before every confined command."""

    __slots__ = ("connect_ports", "listed", "read", "write")

    def __init__(
        self, read: tuple[str, ...] = (), write: tuple[str, ...] = (), connect_ports: tuple[int, ...] = (),
        listed: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        self.read, self.write, self.connect_ports, self.listed = read, write, connect_ports, listed


def handled(abi: int) -> tuple[int, int, int]:
    """The filesystem rights, network rights and scopes a ruleset handles on ABI ``abi``."""
    fs = FS_BY_ABI[min(abi, 5)]
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    return fs, net, scoped


def restrict(rules: Rules) -> int:
    """Restrict this process (and whatever it execs) to ``rules``; return the ABI version used.

    Sets no-new-privileges first (the kernel requires it of an unprivileged caller, and it keeps
    a set-uid program from gaining what the sandbox took away). A path that does not exist is
    skipped (nothing is beneath it to allow); any other failure raises, and the caller must not
    run the command then.
    """
    abi = abi_version()
    fs, net, scoped = handled(abi)
    attr = _RulesetAttr(fs, net, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _call(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for path, access in _path_rules(rules, fs):
            _add_path(ruleset, path, access)
        if net:
            for port in rules.connect_ports:
                _add_port(ruleset, port, NET_CONNECT_TCP)
        _call_prctl()
        _call(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return abi


def _path_rules(rules: Rules, fs: int) -> Iterable[tuple[str, int]]:
    for path in rules.listed:
        yield path, READ_DIR
    for path in rules.read:
        yield path, READ & fs
    for path in rules.write:
        yield path, fs


def _add_path(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FILE_RIGHTS
        attr = _PathBeneathAttr(access, fd)
        _call(
            SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(attr), ctypes.c_uint32(0)
        )
    finally:
        os.close(fd)


def _add_port(ruleset: int, port: int, access: int) -> None:
    attr = _NetPortAttr(access, port)
    _call(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_NET_PORT), ctypes.byref(attr), ctypes.c_uint32(0))


def _call_prctl() -> None:
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot set no-new-privileges: {os.strerror(code)}")
