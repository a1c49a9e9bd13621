"""The wrapper's choice of what closes host unix sockets, and its seccomp program."""

from __future__ import annotations

import pytest

from outerloop.sandbox import landlock_exec as lx


def test_landlock_closes_host_sockets_itself_from_abi_9() -> None:
    assert lx.host_sockets_closed_by(9, "x86_64") == "landlock"
    assert lx.handled_rights(9) & lx.RESOLVE_UNIX
    assert not lx.handled_rights(8) & lx.RESOLVE_UNIX


def test_seccomp_closes_them_below_abi_9_on_known_architectures_only() -> None:
    assert lx.host_sockets_closed_by(7, "x86_64") == "seccomp"
    assert lx.host_sockets_closed_by(7, "aarch64") == "seccomp"
    assert lx.host_sockets_closed_by(7, "ppc64le") is None
    with pytest.raises(KeyError):
        lx.unix_socket_filter("ppc64le")


@pytest.mark.parametrize("machine", sorted(lx.SECCOMP_ARCHES))
def test_filter_checks_the_architecture_first_and_every_jump_lands_inside(machine: str) -> None:
    program = lx.unix_socket_filter(machine)
    assert program[0] == (lx.BPF_LD_W_ABS, 0, 0, lx.SECCOMP_ARCH)
    assert program[1][3] == lx.SECCOMP_ARCHES[machine][0]
    assert program[2] == (lx.BPF_RET_K, 0, 0, lx.SECCOMP_RET_KILL_PROCESS)
    for at, (code, jt, jf, _) in enumerate(program):
        if code in (lx.BPF_JEQ_K, lx.BPF_JGE_K):
            assert at + 1 + max(jt, jf) < len(program)
    assert program[-1][0] == lx.BPF_RET_K


def test_abstract_listeners_are_the_listening_at_names_of_proc_net_unix() -> None:
    from outerloop.sandbox.proof import abstract_listeners

    table = ("Num       RefCount Protocol Flags    Type St Inode Path\n"
             "0000: 00000002 00000000 00010000 0001 01 10032 /run/munge/munge.socket.2\n"
             "0000: 00000002 00000000 00010000 0001 01 10033 @/containerd-shim/x.sock\n"
             "0000: 00000003 00000000 00000000 0001 03 10034 @client-end\n"
             "0000: 00000003 00000000 00000000 0001 03  1058\n")
    assert abstract_listeners(table) == ["@/containerd-shim/x.sock"]
