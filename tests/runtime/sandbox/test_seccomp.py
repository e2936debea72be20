"""The socket filter's program, run by a small BPF interpreter over generated system calls."""

from __future__ import annotations

import errno
import struct

import pytest

from bgc.runtime.sandbox import seccomp

DENY = seccomp.RET_ERRNO | errno.EACCES


def run(program: list[tuple[int, int, int, int]], arch: int, nr: int) -> int:
    data = struct.pack("<IIQ6Q", nr, arch, 0, *([0] * 6))
    pc, acc = 0, 0
    for _ in range(len(program) + 1):
        code, jt, jf, k = program[pc]
        if code == seccomp.LD_W_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code == seccomp.JEQ_K:
            pc += 1 + (jt if acc == k else jf)
        elif code == seccomp.JGE_K:
            pc += 1 + (jt if acc >= k else jf)
        elif code == seccomp.RET_K:
            return k
        else:
            raise AssertionError(f"unknown instruction {code:#x}")
    raise AssertionError("the program did not return")


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_sockets_and_io_uring_are_refused_everything_else_allowed(machine: str) -> None:
    arch, socket, io_uring_setup = seccomp.ARCHES[machine]
    program = seccomp.program(machine)
    for nr in range(600):
        expected = DENY if nr in (socket, io_uring_setup) else seccomp.RET_ALLOW
        assert run(program, arch, nr) == expected, nr
    for nr in (seccomp.X32_SYSCALL_BIT + socket, seccomp.X32_SYSCALL_BIT, 0xFFFFFFFF):
        assert run(program, arch, nr) == DENY


@pytest.mark.parametrize("foreign", [0x40000003, 0xC00000B7, 0xC000003E, 0])  # i386, aarch64, x86_64, none
def test_another_architecture_ends_the_process(foreign: int) -> None:
    for machine, (arch, _, _) in seccomp.ARCHES.items():
        if arch != foreign:
            assert run(seccomp.program(machine), foreign, 41) == seccomp.RET_KILL_PROCESS


def test_an_unknown_machine_is_refused() -> None:
    with pytest.raises(seccomp.SeccompUnavailable):
        seccomp.program("sparc64")
