"""Pick the sandbox the settings ask for, after checking it works on this machine.

``auto`` tries Landlock (ABI 3 or later), then bubblewrap (a real start of ``true``
under the same flags the children get). When neither works, a model harness (Claude
Code, Codex) is refused with the fix, and the scripted harness — which plays the
operator's own script — runs unconfined, loudly. ``off`` is the operator's explicit
choice; a model harness then also needs ``allow_model_harness_off = true``.
"""

from __future__ import annotations

import functools

from outerloop.config import SandboxSettings
from outerloop.kinds import ModelHarnessKind, SandboxKind, names, unknown
from outerloop.sandbox.base import Grants, Sandbox, SandboxError
from outerloop.sandbox.bwrap import BwrapSandbox, find_bwrap
from outerloop.sandbox.landlock import LandlockSandbox, abi_version
from outerloop.sandbox.landlock_exec import MIN_ABI
from outerloop.sandbox.off import OffSandbox

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
    argv = BwrapSandbox(binary).wrap(["/bin/true"], Grants(("/usr", "/bin", "/lib", "/lib64"),
                                                           ()))
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
            if landlock_problem() is None:
                return _landlock()
            if bwrap_problem() is None:
                return _bwrap()
            return None
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


def off_warning(settings: SandboxSettings) -> str | None:
    """The warning every tick, ``status``, ``doctor`` and the board show when agent
    code runs unconfined; None when a sandbox is in force."""
    try:
        sandbox = available(settings)
    except SandboxError as exc:
        return f"sandbox unavailable: {exc}"
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
        return f"landlock (ABI {abi_version()})"
    return sandbox.kind
