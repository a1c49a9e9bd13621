"""The home: permissions, ``flock`` support, free disk."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok, warn

MIN_FREE_GIB = 1.0
LOW_FREE_GIB = 10.0


def check_home(settings: Settings) -> list[Check]:
    home = settings.home
    mode = stat.S_IMODE(home.stat().st_mode)
    results = []
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        results.append(fail("home permissions", f"{home} is group/world-writable (mode "
                            f"{mode:o}): others could plant ledger lines or keys",
                            f"chmod go-w {home}"))
    else:
        results.append(ok("home permissions", f"{home} mode {mode:o}"))
    keys = home / "keys"
    if keys.is_dir() and stat.S_IMODE(keys.stat().st_mode) & 0o077:
        results.append(fail("keys directory", f"{keys} has mode "
                            f"{stat.S_IMODE(keys.stat().st_mode):o}", f"chmod 700 {keys}"))
    return results


def check_flock(settings: Settings) -> list[Check]:
    """The tick lock and the runs' leases are ``flock``s: the filesystem must honour them."""
    probe = settings.home / ".doctor-flock"
    fd = os.open(probe, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as exc:
        return [fail("flock", f"the home's filesystem refuses flock ({exc.strerror})",
                     "put the home on a filesystem with working locks (local disk, or "
                     "NFS/Lustre mounted with locking)")]
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)
    return [ok("flock", "the home's filesystem supports flock")]


def check_disk(settings: Settings) -> list[Check]:
    free = shutil.disk_usage(settings.home).free / 2**30
    detail = f"{free:.1f} GiB free under {settings.home}"
    if free < MIN_FREE_GIB:
        return [fail("disk", detail, "free space (workspaces are removed 24 h after a run "
                     "ends; `outerloop status` shows the runs), or move the home")]
    if free < LOW_FREE_GIB:
        return [warn("disk", detail, "each run clones the target and its launch trees; "
                     "free some space")]
    return [ok("disk", detail)]
