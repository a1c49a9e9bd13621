"""Which paths a confined child may reach, checked against the home.

Landlock rules only *grant*: a subtree can never be carved out of a granted
directory, so granting the home, an ancestor of it, or a path that resolves into it
would expose the ledger and the keys. Every path here is resolved (``realpath``) and
refused when it overlaps the home; the kernel's own grants inside the home (the
workspace, the run's scratch) are added separately and are never ancestors of it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from outerloop.sandbox.base import CWD, Grants, SandboxError

SYSTEM_READ_ONLY = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc",
                    "/opt", "/proc", "/sys", "/dev/urandom", "/dev/random", "/dev/zero")
SYSTEM_READ_WRITE = ("/dev/null", "/dev/shm", "/dev/full")
GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
               "/dev/nvidia-modeset", "/dev/nvidia-caps", "/dev/dri", "/dev/kfd")


def overlaps(a: Path, b: Path) -> bool:
    """One of the two is the other or inside it."""
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def _resolved(path: str | Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def declared(paths: Iterable[str], home: Path, setting: str) -> tuple[str, ...]:
    """The operator's ``[sandbox] read_only``/``read_write`` paths, resolved.

    Raises ``SandboxError`` naming the setting for a relative path, a missing one,
    or one that overlaps the home (after following symlinks)."""
    root = _resolved(home)
    out = []
    for raw in paths:
        if not Path(raw).expanduser().is_absolute():
            raise SandboxError(f"[sandbox] {setting}: {raw!r} is not an absolute path; "
                               f"fix: give the full path")
        real = _resolved(raw)
        if not real.exists():
            raise SandboxError(f"[sandbox] {setting}: {raw!r} does not exist; fix: create "
                               f"it or remove it from the list")
        if overlaps(real, root):
            raise SandboxError(f"[sandbox] {setting}: {raw!r} (resolves to {real}) overlaps "
                               f"the outerloop home {root}: granting it would expose the "
                               f"ledger and keys; fix: keep datasets and caches outside "
                               f"the home")
        out.append(str(real))
    return tuple(out)


def eval_only_apart(eval_only: Sequence[str], read_only: Sequence[str],
                    read_write: Sequence[str], home: Path) -> None:
    """Refuse an ``[sandbox] eval_only`` path every child would reach anyway.

    Grants only add, so an eval-only path inside (or holding) a ``read_only`` or
    ``read_write`` path, or a system path every child reads (``/opt``, ``/etc``, the
    interpreter's prefix), would be readable by sessions and launches too. All paths
    are already resolved (``declared``). Raises ``SandboxError`` naming both."""
    others = [*(("read_only", p) for p in read_only), *(("read_write", p) for p in read_write)]
    for held in eval_only:
        for setting, path in others:
            if overlaps(Path(held), Path(path)):
                raise SandboxError(
                    f"[sandbox] eval_only: {held} overlaps [sandbox] {setting} {path}: "
                    f"sessions and launches would read it too; fix: keep held-out data in "
                    f"a directory of its own, listed only under eval_only")
        for path in system_read_only(home):
            if overlaps(Path(held), _resolved(path)):
                raise SandboxError(
                    f"[sandbox] eval_only: {held} overlaps {path}, which every sandboxed "
                    f"process reads; fix: move the held-out data out of it")


MAX_GPUS = 16


def _gpu_devices() -> list[str]:
    """Every GPU device a node may have, present here or not (granted where present)."""
    return [f"/dev/nvidia{i}" for i in range(MAX_GPUS)] + list(GPU_DEVICES)


def system_read_only(home: Path, extra: Sequence[str | Path] = ()) -> tuple[str, ...]:
    """The system, the kernel's interpreter and ``extra`` (an agent CLI's install
    dir), plus the PATH directories that do not overlap the home.

    Raises ``SandboxError`` when a system path overlaps the home (a home under
    ``/opt`` or inside the interpreter's prefix): the child could then read it."""
    root = _resolved(home)
    interpreter = _resolved(sys.executable).parent.parent
    wanted = [*SYSTEM_READ_ONLY, sys.prefix, sys.base_prefix, str(interpreter),
              *(str(p) for p in extra)]
    out: list[str] = []
    for raw in wanted:
        real = _resolved(raw) if not os.path.islink(raw) else Path(raw)
        if overlaps(_resolved(raw), root):
            raise SandboxError(f"the outerloop home {root} overlaps {raw}, which sandboxed "
                               f"processes must read; fix: move the home (OUTERLOOP_HOME) "
                               f"out of it")
        if str(real) not in out:
            out.append(str(real))
    return tuple(out)


def path_dirs(path_var: str, home: Path) -> tuple[str, ...]:
    """The ``PATH`` entries a child may read: absolute, existing, not overlapping the
    home (those are dropped, never granted)."""
    root = _resolved(home)
    out = []
    for entry in path_var.split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = _resolved(entry)
        if not overlaps(real, root) and str(real) not in out:
            out.append(str(real))
    return tuple(out)


def install_dir(binary: str) -> Path:
    """What a CLI needs to read to run: the outermost ``node_modules`` holding its
    real path (npm packages resolve their platform package from there), else the
    directory of its real path."""
    real = _resolved(binary)
    parts = real.parts
    if "node_modules" in parts:
        return Path(*parts[: parts.index("node_modules") + 1])
    return real.parent


def grants(read_only: Sequence[str], read_write: Sequence[str], own: Sequence[str | Path],
           home: Path, cwd: str | None = None, gpus: bool = True,
           own_read_only: Sequence[str | Path] = ()) -> Grants:
    """Grants of one child: ``read_only`` (system + declared), ``read_write``
    (declared), ``own``: the child's own directories inside the home (its workspace,
    its scratch), and ``own_read_only``: kernel-built directories inside the home it
    may only read (the target's dependency cache); neither may be the home or an
    ancestor of it."""
    mine = _inside(own, home)
    readable = _inside(own_read_only, home)
    devices = (*SYSTEM_READ_WRITE, *(_gpu_devices() if gpus else []))
    return Grants(read_only=tuple(dict.fromkeys([*read_only, *readable])),
                  read_write=tuple(dict.fromkeys([*read_write, *mine])), cwd=cwd,
                  devices=devices)


def _inside(paths: Sequence[str | Path], home: Path) -> list[str]:
    """``paths`` resolved (``CWD`` kept as is), refusing the home and its ancestors."""
    root = _resolved(home)
    out = []
    for path in paths:
        if path == CWD:
            out.append(CWD)
            continue
        real = _resolved(path)
        if real == root or root.is_relative_to(real):
            raise SandboxError(f"refusing to grant {real}: it is the home {root} or an "
                               f"ancestor of it")
        out.append(str(real))
    return out
