"""No sockets: a seccomp filter for the launcher when it runs without a network namespace.

Landlock (:mod:`bgc.runtime.sandbox.landlock`) restricts TCP only, and no Landlock version
restricts connecting to a named UNIX socket (``$SSH_AUTH_SOCK``, a container engine's socket)
or sending UDP. Where there is no network namespace (the launcher alone), this filter refuses
``socket(2)`` for every address family and ``io_uring_setup(2)`` (whose operations can open
sockets without ``socket(2)``) with ``EACCES``; ``socketpair(2)`` stays (its two ends reach
nothing but each other). A system call of another architecture than the running one (a 32-bit
program's ``socketcall``) ends the process. The filter is a classic BPF program of a few
instructions, installed with ``prctl(PR_SET_SECCOMP)`` after no-new-privileges is set; it is
inherited across ``execve`` and can never be lifted.
"""

from __future__ import annotations

import ctypes
import errno
import os

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000
LD_W_ABS = 0x20
JEQ_K = 0x15
JGE_K = 0x35
RET_K = 0x06
X32_SYSCALL_BIT = 0x40000000

ARCHES = {
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}
"""Per machine: the audit architecture, and the numbers of ``socket`` and ``io_uring_setup``."""


class SeccompUnavailable(OSError):
    """This machine's architecture is not one the filter is written for, or the kernel refused it."""


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter's instructions ``(code, jump if true, jump if false, k)`` for ``machine``."""
    if machine not in ARCHES:
        raise SeccompUnavailable(errno.ENOSYS, f"no socket filter for the architecture {machine}")
    arch, socket, io_uring_setup = ARCHES[machine]
    deny = RET_ERRNO | errno.EACCES
    return [
        (LD_W_ABS, 0, 0, 4),  # the call's architecture
        (JEQ_K, 1, 0, arch),
        (RET_K, 0, 0, RET_KILL_PROCESS),
        (LD_W_ABS, 0, 0, 0),  # the call's number
        (JGE_K, 3, 0, X32_SYSCALL_BIT),  # another ABI's numbering (x32): refused
        (JEQ_K, 2, 0, socket),
        (JEQ_K, 1, 0, io_uring_setup),
        (RET_K, 0, 0, RET_ALLOW),
        (RET_K, 0, 0, deny),
    ]


def forbid_sockets() -> None:
    """Install the filter on this process (no-new-privileges must already be set)."""
    instructions = program(os.uname().machine)
    array = (_Filter * len(instructions))(*(_Filter(*step) for step in instructions))
    prog = _Program(len(instructions), array)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        code = ctypes.get_errno()
        raise SeccompUnavailable(code, f"cannot install the socket filter: {os.strerror(code)}")
