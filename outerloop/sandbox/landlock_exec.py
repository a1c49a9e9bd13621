"""Landlock through plain ctypes, and the exec wrapper that confines a child.

This file imports only the standard library: the kernel runs it as a script
(``python -I -S landlock_exec.py --ro P --rw P -- argv...``) so a sandboxed child
never needs outerloop importable, and it starts in ~10 ms (``bench/sandbox_startup.py``).

Why ctypes and not a PyPI binding: Landlock is three syscalls (444-446, the same
number on every architecture) plus ``prctl``; the two packages that exist are an
alpha with dev-only releases since 2022 and a two-month-old 0.2.0 whose defaults deny
TCP. Fifty lines we test ourselves beat a dependency we would have to audit anyway.

What ``confine_and_exec`` does, in order, and why (``SANDBOX-FACTS.md``):

1. refuses a kernel whose ABI is below 3 (truncate(2) by path is uncontrolled there:
   a child could zero the ledger);
2. creates the read-write directories it is given (the kernel chose them);
3. clears ambient capabilities and, when it holds any, the bounding set and its own
   sets: a root child with CAP_SYS_ADMIN/PERFMON could read the kernel's
   ``/proc/<pid>/environ``; with an empty bounding set exec grants root nothing;
4. sets no_new_privs, builds a ruleset that handles every filesystem right of the ABI
   (network is left open on purpose) and, from ABI 6, scopes signals and abstract
   unix sockets to the sandbox;
5. closes every inherited descriptor above stderr (pre-opened fds bypass Landlock);
6. execs the child. Any failure exits 126 with a message: never runs it unconfined.

Steps 1-6 happen in a forked child: ``main`` stays outside the ruleset as the child's
subreaper (``reaper.py``), forwards TERM/INT/HUP, and when the child exits kills every
process it left behind (``setsid -f``, double forks), then exits as the child did.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
import struct
import sys
import types

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAPS_VERSION_3 = 0x20080522
MIN_ABI = 3
EXIT_REFUSED = 126

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR
SCOPE_ABSTRACT_UNIX = 1 << 0
SCOPE_SIGNAL = 1 << 1


class LandlockError(OSError):
    """Landlock could not be applied; the message says which step failed."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI, or 0 when Landlock is missing or disabled."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = int(libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                               ctypes.c_uint32(CREATE_RULESET_VERSION)))
    return max(0, version)


def handled_rights(abi: int) -> int:
    """Every filesystem right this ABI can control."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def _check(result: int, step: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"{step}: {os.strerror(err)}")
    return result


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    with open("/proc/self/status", encoding="ascii") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    if int(fields.get("CapEff", "0").strip(), 16) == 0 and \
            int(fields.get("CapPrm", "0").strip(), 16) == 0:
        return
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as last:
        last_cap = int(last.read())
    for cap in range(last_cap + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    header = struct.pack("Ii", CAPS_VERSION_3, 0)
    data = bytes(24)
    _check(libc.capset(header, data), "clear capability sets")


def confine(read_only: list[str], read_write: list[str],
            devices: list[str] | None = None) -> int:
    """Restrict this process (and everything it execs) to the given paths.

    Missing read-only paths and devices are skipped (``/lib32``, GPUs on a CPU node);
    missing read-write directories are created. Returns the ABI used. Raises
    ``LandlockError`` on any failure: the caller must then not run the child."""
    abi = abi_version()
    if abi < MIN_ABI:
        raise LandlockError(0, f"Landlock ABI {abi} is below {MIN_ABI} (kernel 6.2+ needed: "
                               f"older ABIs cannot stop truncate)")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    for path in read_write:
        if not os.path.lexists(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
    _drop_capabilities(libc)
    handled = handled_rights(abi)
    scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX if abi >= 6 else 0
    attr = struct.pack("QQQ", handled, 0, scoped)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _check(libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), attr[:size],
                                  ctypes.c_size_t(size), ctypes.c_uint32(0)), "create ruleset")
    for paths, rights, optional in ((read_only, READ_RIGHTS, True),
                                    (read_write, handled, False), (devices or [], handled, True)):
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                if not optional:
                    raise
                continue
            except PermissionError:
                if not optional:
                    raise
                continue  # unreachable to this user anyway: nothing to grant
            try:
                allowed = rights if os.path.isdir(path) else rights & FILE_RIGHTS
                rule = struct.pack("=Qi", allowed & handled, fd)
                _check(libc.syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset),
                                    ctypes.c_int(RULE_PATH_BENEATH), rule,
                                    ctypes.c_uint32(0)), f"grant {path}")
            finally:
                os.close(fd)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "set no_new_privs")
    _check(libc.syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset),
                        ctypes.c_uint32(0)), "restrict self")
    os.close(ruleset)
    return abi


def parse_args(args: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """``--ro P --rw P --dev P ... -- argv`` -> ({"--ro": [...], ...}, argv)."""
    grants: dict[str, list[str]] = {"--ro": [], "--rw": [], "--dev": []}
    rest = list(args)
    while rest and rest[0] != "--":
        flag = rest.pop(0)
        if flag not in grants or not rest:
            raise ValueError(f"unexpected argument {flag!r} (usage: [--ro P] [--rw P] "
                             f"[--dev P] -- argv)")
        grants[flag].append(rest.pop(0))
    if not rest or len(rest) < 2:
        raise ValueError("no command after --")
    return grants, rest[1:]


def _load_reaper() -> types.ModuleType:
    """``reaper.py`` beside this file, loaded by path (``-I`` keeps this directory off
    ``sys.path``)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")
    module = types.ModuleType("outerloop_sandbox_reaper")
    module.__file__ = path
    importlib.machinery.SourceFileLoader(module.__name__, path).exec_module(module)
    return module


def _confine_and_exec(grants: dict[str, list[str]], argv: list[str]) -> int:
    """In the forked child: confine, close inherited descriptors, exec. Returns an
    exit code only when that fails (the child then never ran unconfined)."""
    try:
        confine(grants["--ro"], grants["--rw"], grants["--dev"])
    except (OSError, ValueError) as exc:
        print(f"outerloop sandbox (landlock): refused to start the child: {exc}",
              file=sys.stderr)
        return EXIT_REFUSED
    os.closerange(3, 1 << 16)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"outerloop sandbox (landlock): cannot run {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    return EXIT_REFUSED  # not reached


def main(args: list[str]) -> int:
    """Parse, then run the child confined under the reaper (``reaper.py``): this
    process stays outside the ruleset as the child's subreaper, so every process the
    child leaves (``setsid``, double forks) is killed when the child exits."""
    try:
        grants, argv = parse_args(args)
        reaper = _load_reaper()
    except (OSError, ValueError, ImportError) as exc:
        print(f"outerloop sandbox (landlock): refused to start the child: {exc}",
              file=sys.stderr)
        return EXIT_REFUSED
    os.closerange(3, 1 << 16)
    status: int = reaper.supervise(lambda: _confine_and_exec(grants, argv))
    code: int = reaper.exit_like(status)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
