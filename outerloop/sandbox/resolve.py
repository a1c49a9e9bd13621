"""Pick the sandbox the settings ask for, after checking it works on this machine.

No backend may leave the host's services reachable: a child that reaches munge
(``/run/munge``) can ``sbatch`` a job that slurmd starts outside every sandbox.
Landlock closes pathname unix sockets itself from ABI 9
(``LANDLOCK_ACCESS_FS_RESOLVE_UNIX``); below that the wrapper refuses every
``socket(AF_UNIX)`` with a seccomp filter, which also breaks the child's *own* unix
sockets (multiprocessing's forkserver and Manager, passing descriptors between
processes). bubblewrap mounts only the grants, so no host socket exists inside and the
child's own sockets work.

So ``auto`` picks, in order: Landlock with ABI 9 or later; bubblewrap when it starts
here (a real start of ``true`` under the children's flags); Landlock (ABI 3 or later)
with the filter. When none works, a model harness (Claude Code, Codex) is refused
with the fix, and the scripted harness — which plays the operator's own script — runs
unconfined, loudly. A Landlock that can close host sockets neither way (ABI below 9 on
an architecture the filter does not know) is used, and ``off_warning`` says so on
every tick, ``status``, ``doctor`` and the board. ``off`` is the operator's explicit
choice; a model harness then also needs ``allow_model_harness_off = true``.
"""

from __future__ import annotations

import functools

from outerloop.config import SandboxSettings
from outerloop.kinds import ModelHarnessKind, SandboxKind, names, unknown
from outerloop.sandbox.base import Grants, Sandbox, SandboxError
from outerloop.sandbox.bwrap import BwrapSandbox, find_bwrap
from outerloop.sandbox.landlock import LandlockSandbox, abi_version
from outerloop.sandbox.landlock_exec import MIN_ABI, RESOLVE_UNIX_ABI, host_sockets_closed_by
from outerloop.sandbox.off import OffSandbox
from outerloop.sandbox.uid import child_ids

MODEL_HARNESSES = frozenset(names(ModelHarnessKind))
PROBE_TIMEOUT_S = 10
FIX = ("fix: run on Linux 6.2+ with Landlock enabled (lsm=landlock), or install "
       "bubblewrap (apt-get install bubblewrap) where user namespaces are allowed")


@functools.cache
def landlock_problem() -> str | None:
    """Why Landlock cannot confine children here, or None when it can."""
    abi = abi_version()
    if abi == 0:
        return "Landlock is not available in this kernel (or disabled at boot)"
    if abi < MIN_ABI:
        return f"Landlock ABI {abi} is below {MIN_ABI} (it cannot stop truncate)"
    return None


@functools.cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot confine children here, or None when it can."""
    import subprocess  # lazily: lanes import job specs, and must load no effector

    binary = find_bwrap()
    if binary is None:
        return "bubblewrap (bwrap) is not installed"
    try:  # as root, with the switch to the default child user that children get
        argv = BwrapSandbox(binary).wrap(["/bin/true"], Grants(
            ("/usr", "/bin", "/lib", "/lib64"), (), user=child_ids(None)))
    except SandboxError as exc:
        return str(exc)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if done.returncode != 0:
        return f"bwrap could not start a sandbox: {done.stderr.strip()[:300]}"
    return None


def _landlock() -> Sandbox:
    return LandlockSandbox()


def _bwrap() -> Sandbox:
    return BwrapSandbox(find_bwrap() or "bwrap")


def available(settings: SandboxSettings) -> Sandbox | None:
    """The sandbox ``settings.kind`` names, or None when ``auto`` finds none.

    Raises ``SandboxError`` when a named backend (``landlock``/``bwrap``) does not
    work here. mypy checks every name of ``kinds.SandboxKind`` has a branch."""
    kind = settings.kind
    match kind:
        case "off":
            return OffSandbox()
        case "landlock":
            problem = landlock_problem()
            if problem:
                raise SandboxError(f"[sandbox] kind = \"landlock\": {problem}; fix: set kind "
                                   f"= \"auto\" or \"bwrap\", or run on Linux 6.2+")
            return _landlock()
        case "bwrap":
            problem = bwrap_problem()
            if problem:
                raise SandboxError(f"[sandbox] kind = \"bwrap\": {problem}; fix: install "
                                   f"bubblewrap and allow user namespaces, or set kind = "
                                   f"\"auto\"")
            return _bwrap()
        case "auto":
            landlock_works = landlock_problem() is None
            if landlock_works and abi_version() >= RESOLVE_UNIX_ABI:
                return _landlock()
            if bwrap_problem() is None:
                return _bwrap()
            return _landlock() if landlock_works else None
        case _:
            unknown("[sandbox] kind", kind, SandboxKind)


def for_children(settings: SandboxSettings, harness_kind: str) -> Sandbox:
    """The sandbox every child of a run gets (sessions, launches, evals).

    Raises ``SandboxError`` when a model harness would run unconfined without the
    operator's explicit leave."""
    sandbox = available(settings)
    model = harness_kind in MODEL_HARNESSES
    if sandbox is None:
        if model:
            raise SandboxError(
                f"no sandbox works on this machine (landlock: {landlock_problem()}; bwrap: "
                f"{bwrap_problem()}), and a {harness_kind} session runs agent-written code; "
                f"{FIX}; or, to run it unconfined, set [sandbox] kind = \"off\" and "
                f"allow_model_harness_off = true")
        return OffSandbox()
    if sandbox.kind == "off" and model and not settings.allow_model_harness_off:
        raise SandboxError(
            f"[sandbox] kind = \"off\" would run {harness_kind} sessions unconfined (they "
            f"could read keys/ and write the ledger); fix: set kind = \"auto\", or set "
            f"allow_model_harness_off = true to accept that")
    return sandbox


def host_sockets_open() -> bool:
    """Whether a Landlock child here could connect to a host's unix socket (munge,
    D-Bus): ABI below 9 on an architecture the seccomp filter does not know."""
    return host_sockets_closed_by(abi_version()) is None


def off_warning(settings: SandboxSettings) -> str | None:
    """The warning every tick, ``status``, ``doctor`` and the board show when agent
    code runs unconfined or can reach the host's services (the scheduler); None when
    a sandbox in force closes both."""
    try:
        sandbox = available(settings)
    except SandboxError as exc:
        return f"sandbox unavailable: {exc}"
    if sandbox is not None and sandbox.kind == "landlock" and host_sockets_open():
        return (f"SCHEDULER REACHABLE: sandboxed agent code can connect to the host's "
                f"unix sockets (munge, D-Bus) and so submit or cancel Slurm jobs that run "
                f"unconfined (Landlock ABI {abi_version()} cannot refuse them and the "
                f"seccomp filter does not know this architecture); fix: install "
                f"bubblewrap and set [sandbox] kind = \"bwrap\", or run Linux 7.1+ "
                f"(Landlock ABI {RESOLVE_UNIX_ABI})")
    if sandbox is not None and sandbox.kind != "off":
        return None
    why = ("[sandbox] kind = \"off\"" if settings.kind == "off"
           else f"no sandbox works here (landlock: {landlock_problem()}; bwrap: "
                f"{bwrap_problem()})")
    return (f"SANDBOX OFF: agent sessions, launches and evals run unconfined and can read "
            f"keys/ and write the ledger ({why}); fix: set [sandbox] kind = \"auto\" on a "
            f"machine with Landlock or bubblewrap")


def in_force(settings: SandboxSettings) -> str:
    """The sandbox children get, for people: ``landlock (ABI 7)``, ``bwrap``, ``off``,
    or why none can be used."""
    try:
        sandbox = available(settings)
    except SandboxError as exc:
        return f"unavailable: {exc}"
    if sandbox is None:
        return "none available (scripted sessions run unconfined; model harnesses refused)"
    if sandbox.kind == "landlock":
        abi = abi_version()
        closed = host_sockets_closed_by(abi)
        if closed == "landlock":
            return f"landlock (ABI {abi}; host unix sockets refused by Landlock)"
        if closed == "seccomp":
            return (f"landlock (ABI {abi}) + seccomp (every unix socket refused, the "
                    f"child's own too)")
        return f"landlock (ABI {abi}; HOST UNIX SOCKETS REACHABLE)"
    if sandbox.kind == "bwrap":
        return "bwrap (only the grants mounted: no host unix socket inside)"
    return sandbox.kind
