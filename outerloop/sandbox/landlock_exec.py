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
3. with ``--user UID:GID`` (a root kernel, ``uid.py``): in its own mount namespace,
   makes every grant reachable by that user (``expose``: a tmpfs over ``/root`` or a
   0700 home, holding only the grants bound back);
4. builds a ruleset that handles every filesystem right of the ABI (network is left
   open on purpose) and, from ABI 6, scopes signals and abstract unix sockets to the
   sandbox; then clears ambient capabilities and, when it holds any, the bounding set,
   switches to ``--user`` (a root child without capabilities still *owns*
   ``/etc/shadow``) and clears its own sets, checking the result: a root child with
   CAP_SYS_ADMIN/PERFMON could read the kernel's ``/proc/<pid>/environ``; with an
   empty bounding set exec grants root nothing; then sets no_new_privs and restricts
   itself;
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
import stat
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
RESOLVE_UNIX = 1 << 16
RESOLVE_UNIX_ABI = 9
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
    if abi >= RESOLVE_UNIX_ABI:
        rights |= RESOLVE_UNIX
    return rights


def _check(result: int, step: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"{step}: {os.strerror(err)}")
    return result


def _drop_capabilities(libc: ctypes.CDLL, user: tuple[int, int] | None = None) -> None:
    """Clear the ambient set; when this process holds any capability, empty the
    bounding set, switch to ``user`` (groups, gid, then uid: a uid change clears the
    permitted and effective sets) and clear the sets. Checked afterwards: a process
    still uid 0 or holding a capability raises ``LandlockError``."""
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if _capabilities() == (0, 0) and user is None:
        return
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as last:
        last_cap = int(last.read())
    for cap in range(last_cap + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    if user is not None:
        uid, gid = user
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    header = struct.pack("Ii", CAPS_VERSION_3, 0)
    data = bytes(24)
    _check(libc.capset(header, data), "clear capability sets")
    if user is not None and (os.getresuid() != (user[0],) * 3 or
                             os.getresgid() != (user[1],) * 3 or os.getgroups()):
        raise LandlockError(0, f"still uid {os.getresuid()} gid {os.getresgid()} "
                               f"groups {os.getgroups()} after switching to {user}")
    if _capabilities() != (0, 0):
        raise LandlockError(0, "capabilities left after dropping them")


def _capabilities() -> tuple[int, int]:
    """(CapEff, CapPrm) of this process."""
    with open("/proc/self/status", encoding="ascii") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    return (int(fields.get("CapEff", "0").strip(), 16),
            int(fields.get("CapPrm", "0").strip(), 16))


# seccomp: where Landlock cannot govern connect() to a pathname unix socket (ABI < 9),
# a BPF filter makes socket(AF_UNIX, ...) fail, so no host service (munge, D-Bus,
# container runtimes) can be reached. See ``unix_socket_filter``.
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_AND_K = 0x54
BPF_RET_K = 0x06
SECCOMP_NR, SECCOMP_ARCH, SECCOMP_ARG0, SECCOMP_ARG1 = 0, 4, 16, 24
AF_UNIX = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF
EACCES = 13
EPERM = 1
X32_SYSCALL_BIT = 0x40000000
IO_URING_SYSCALLS = (425, 426, 427)
SECCOMP_ARCHES = {
    # machine: (AUDIT_ARCH_*, socket, socketpair, whether the x32 bit must be refused)
    "x86_64": (0xC000003E, 41, 53, True),
    "aarch64": (0xC00000B7, 198, 199, False),
}


def host_sockets_closed_by(abi: int, machine: str | None = None) -> str | None:
    """What stops a confined child from connecting to a host's pathname unix socket
    (munge, the Slurm spool, D-Bus): ``"landlock"`` from ABI 9
    (``LANDLOCK_ACCESS_FS_RESOLVE_UNIX``), else ``"seccomp"`` on an architecture the
    filter knows, else None: nothing does, and the caller must say so loudly."""
    if abi >= RESOLVE_UNIX_ABI:
        return "landlock"
    if (machine or os.uname().machine) in SECCOMP_ARCHES:
        return "seccomp"
    return None


def unix_socket_filter(machine: str) -> list[tuple[int, int, int, int]]:
    """A seccomp program: ``socket(AF_UNIX, ...)`` and ``socketpair(AF_UNIX,
    SOCK_DGRAM)`` (a datagram end may be re-pointed at a path) fail with EACCES,
    io_uring fails with EPERM (its SOCKET and CONNECT operations bypass the filter),
    a syscall of a foreign ABI (i386 ``int 0x80``, x32) kills the process; everything
    else runs. Stream and seqpacket ``socketpair`` stay allowed: they are connected
    and cannot be re-pointed (asyncio, multiprocessing, libuv use them).

    Returns ``(code, jt, jf, k)`` rows. Raises ``KeyError`` for an unknown machine."""
    audit_arch, nr_socket, nr_socketpair, refuse_x32 = SECCOMP_ARCHES[machine]
    rows: list[tuple[object, object, object, int]] = [
        (BPF_LD_W_ABS, 0, 0, SECCOMP_ARCH),
        (BPF_JEQ_K, 1, 0, audit_arch),
        (BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        (BPF_LD_W_ABS, 0, 0, SECCOMP_NR),
    ]
    if refuse_x32:
        rows += [(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT), (BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS)]
    rows += [(BPF_JEQ_K, "socket", 0, nr_socket), (BPF_JEQ_K, "socketpair", 0, nr_socketpair)]
    rows += [(BPF_JEQ_K, "eperm", 0, nr) for nr in IO_URING_SYSCALLS]
    rows += [
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        ("socket", 0, 0, 0),
        (BPF_LD_W_ABS, 0, 0, SECCOMP_ARG0),
        (BPF_JEQ_K, "eacces", "allow", AF_UNIX),
        ("socketpair", 0, 0, 0),
        (BPF_LD_W_ABS, 0, 0, SECCOMP_ARG0),
        (BPF_JEQ_K, 0, "allow", AF_UNIX),
        (BPF_LD_W_ABS, 0, 0, SECCOMP_ARG1),
        (BPF_AND_K, 0, 0, SOCK_TYPE_MASK),
        (BPF_JEQ_K, "eacces", "allow", SOCK_DGRAM),
        ("eacces", 0, 0, 0),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EACCES),
        ("eperm", 0, 0, 0),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),
        ("allow", 0, 0, 0),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    return _assemble(rows)


def _assemble(rows: list[tuple[object, object, object, int]]) -> list[tuple[int, int, int, int]]:
    """Resolve label rows (``(name, 0, 0, 0)``) and jumps to labels into offsets."""
    labels: dict[object, int] = {}
    program: list[tuple[object, object, object, int]] = []
    for row in rows:
        if isinstance(row[0], str):
            labels[row[0]] = len(program)
        else:
            program.append(row)

    def offset(target: object, at: int) -> int:
        return labels[target] - at - 1 if isinstance(target, str) else int(str(target))

    return [(int(str(code)), offset(jt, i), offset(jf, i), k)
            for i, (code, jt, jf, k) in enumerate(program)]


def _deny_unix_sockets(libc: ctypes.CDLL, machine: str) -> None:
    """Install ``unix_socket_filter`` on this process (no_new_privs must be set);
    inherited by every child and kept across exec."""
    program = unix_socket_filter(machine)
    packed = b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program)
    buffer = ctypes.create_string_buffer(packed, len(packed))
    fprog = struct.pack("HxxxxxxP", len(program), ctypes.addressof(buffer))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0),
           "install the unix socket filter (seccomp)")


def confine(read_only: list[str], read_write: list[str],
            devices: list[str] | None = None, user: tuple[int, int] | None = None) -> int:
    """Restrict this process (and everything it execs) to the given paths, running as
    ``user`` (``(uid, gid)``; None: as it is).

    Missing read-only paths and devices are skipped (``/lib32``, GPUs on a CPU node);
    missing read-write directories are created (given to ``user``). The ruleset is
    built with this process's rights, before the switch. Returns the ABI used. Raises
    ``LandlockError`` on any failure: the caller must then not run the child."""
    abi = abi_version()
    if abi < MIN_ABI:
        raise LandlockError(0, f"Landlock ABI {abi} is below {MIN_ABI} (kernel 6.2+ needed: "
                               f"older ABIs cannot stop truncate)")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    make_read_write(read_write, user)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
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
    _drop_capabilities(libc, user)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "set no_new_privs")
    _check(libc.syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset),
                        ctypes.c_uint32(0)), "restrict self")
    os.close(ruleset)
    if host_sockets_closed_by(abi) == "seccomp":
        _deny_unix_sockets(libc, os.uname().machine)
    return abi


def make_read_write(read_write: list[str], user: tuple[int, int] | None) -> None:
    """Create the missing read-write directories, given to ``user`` (new and empty:
    nothing of anyone else's is inside)."""
    for path in read_write:
        if not os.path.lexists(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
            if user is not None:
                os.chown(path, *user)


def parse_args(args: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """``--ro P --rw P --dev P [--user UID:GID] -- argv`` -> ({"--ro": [...], ...},
    argv)."""
    grants: dict[str, list[str]] = {"--ro": [], "--rw": [], "--dev": [], "--user": []}
    rest = list(args)
    while rest and rest[0] != "--":
        flag = rest.pop(0)
        if flag not in grants or not rest:
            raise ValueError(f"unexpected argument {flag!r} (usage: [--ro P] [--rw P] "
                             f"[--dev P] [--user UID:GID] -- argv)")
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


CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_NOSUID, MS_NODEV, MS_PRIVATE, MS_REC = 2, 4, 1 << 18, 16384
PRIVATE_MOUNTS = ("/dev/shm",)
"""Given a tmpfs of the child's own: nothing in it outlives the child or reaches
another job (a stash a later eval reads). Not ``/tmp``: it is not granted (``TMPDIR``
is the job's scratch), and a home or workspace under ``/tmp`` must stay visible."""


OWN_NAMESPACE = "own"
USER_NAMESPACE = "user"


def private_mounts() -> str:
    """Give this process (before it confines itself) its own empty ``/dev/shm``: a
    new mount namespace (as root: ``"own"``; else inside a new user namespace that
    maps only this uid and gid: ``"user"``), with a fresh tmpfs on each. ``""`` when
    the kernel allows neither namespace: the caller then grants no ``/dev/shm`` at
    all (and, switching user, refuses: ``expose`` needs a namespace of its own)."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    kind = OWN_NAMESPACE
    if libc.unshare(CLONE_NEWNS) != 0:
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
            return ""
        kind = USER_NAMESPACE
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                               ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as handle:
                    handle.write(text)
        except OSError:
            return ""
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return ""
    for path in PRIVATE_MOUNTS:
        if os.path.isdir(path) and libc.mount(b"tmpfs", path.encode(), b"tmpfs",
                                              MS_NOSUID | MS_NODEV, b"mode=1777") != 0:
            return ""
    return kind


MS_BIND = 4096
EXPOSE_ROUNDS = 8


def _traversable(info: os.stat_result, uid: int, gid: int) -> bool:
    """Whether ``uid`` (primary group ``gid``, no other group) may search this
    directory: the owner, group or other bits, whichever class applies (ACLs aside:
    a directory an ACL opens is exposed anyway, which hides nothing the user reads)."""
    if info.st_uid == uid:
        return bool(info.st_mode & 0o100)
    if info.st_gid == gid:
        return bool(info.st_mode & 0o010)
    return bool(info.st_mode & 0o001)


def blocked_ancestor(path: str, uid: int, gid: int) -> str | None:
    """The topmost directory above ``path`` that ``uid`` cannot search (``/root``,
    a 0700 home), or None when every one can be."""
    current = ""
    for name in path.split("/")[1:-1]:
        current += "/" + name
        try:
            info = os.stat(current)
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            return None
        if not _traversable(info, uid, gid):
            return current
    return None


def expose(paths: list[str], uid: int, gid: int) -> list[str]:
    """Make every granted path reachable by ``uid`` inside this process's own mount
    namespace (``private_mounts`` must have returned ``"own"``): each topmost
    directory above a grant that the user cannot search (the kernel's interpreter
    under 0700 ``/root``, a 0700 home) gets a tmpfs over it, holding only 0755
    directories down to the grants, each bound back in place. Nothing changes
    outside the namespace, and what the tmpfs hides the user could not reach anyway.
    Returns the directories covered. Raises ``OSError`` when a mount fails."""
    libc = _libc()
    covered: list[str] = []
    for _ in range(EXPOSE_ROUNDS):
        under: dict[str, list[str]] = {}
        for path in paths:
            top = blocked_ancestor(path, uid, gid) if os.path.lexists(path) else None
            if top is not None and top not in covered:
                under.setdefault(top, []).append(path)
        if not under:
            return covered
        for top, inside in under.items():
            _cover(libc, top, sorted(set(inside), key=len))
            covered.append(top)
    return covered


def _cover(libc: ctypes.CDLL, top: str, inside: list[str]) -> None:
    held: list[tuple[str, int, str | None]] = []
    try:
        for path in inside:
            link = os.readlink(path) if os.path.islink(path) else None
            held.append((path, os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC), link))
        if libc.mount(b"tmpfs", top.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                      b"mode=0755") != 0:
            raise OSError(ctypes.get_errno(), f"mount a tmpfs over {top}")
        for path, fd, link in held:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            if link is not None:
                if not os.path.lexists(path):
                    os.symlink(link, path)
                continue
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.makedirs(path, mode=0o755, exist_ok=True)
            elif not os.path.lexists(path):
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
            if libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None,
                          MS_BIND | MS_REC, None) != 0:
                raise OSError(ctypes.get_errno(), f"bind {path} back under {top}")
    finally:
        for _, fd, _ in held:
            os.close(fd)


def _confine_and_exec(grants: dict[str, list[str]], argv: list[str],
                      reaper: types.ModuleType) -> int:
    """In the forked child: a private ``/dev/shm``, the grants made reachable by the
    child's user (``--user``), confine, then exec through ``reaper.exec_child`` (which
    closes inherited descriptors). Returns an exit code only when that fails (the child
    then never ran, and never as root when a user was asked for)."""
    namespace = private_mounts()
    if not namespace:
        shared = set(PRIVATE_MOUNTS)
        grants = {flag: [p for p in paths if p not in shared] for flag, paths in grants.items()}
    try:
        user = _user(grants["--user"])
        if user is not None:
            if namespace != OWN_NAMESPACE:
                raise LandlockError(0, f"switching to uid {user[0]} needs a mount namespace "
                                       f"of the wrapper's own (it has {namespace or 'none'}: "
                                       f"no CAP_SYS_ADMIN here?), to make the grants "
                                       f"reachable by that user; fix: run the kernel where "
                                       f"root may unshare a mount namespace, or set "
                                       f"[sandbox] kind = \"bwrap\"")
            os.umask(0o022)
            make_read_write(grants["--rw"], user)
            expose([*grants["--ro"], *grants["--rw"], *grants["--dev"]], *user)
            _chdir_again()
        confine(grants["--ro"], grants["--rw"], grants["--dev"], user)
    except (OSError, ValueError) as exc:
        print(f"outerloop sandbox (landlock): refused to start the child: {exc}",
              file=sys.stderr)
        return EXIT_REFUSED
    code: int = reaper.exec_child(argv, "landlock")
    return code


def _user(values: list[str]) -> tuple[int, int] | None:
    if not values:
        return None
    uid, _, gid = values[-1].partition(":")
    return int(uid), int(gid or uid)


def _chdir_again() -> None:
    """Enter the working directory again by its path, so it is the one the new mounts
    show (its ``..`` and ``getcwd`` then agree with the child's view)."""
    try:  # noqa: SIM105 (contextlib costs the wrapper ~3 ms a start)
        os.chdir(os.getcwd())
    except OSError:
        pass


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
    status: int = reaper.supervise(lambda: _confine_and_exec(grants, argv, reaper))
    code: int = reaper.exit_like(status)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
