"""What a command's failure prints: an ``OuterloopError``, a full disk (its bytes or its
inodes) or a read-only home becomes one line on stderr and an exit code, not a
traceback (``--debug`` keeps the traceback). Shared by the click group (``group.py``)
and the tick's way in without click (``tick_run.py``)."""

from __future__ import annotations

import errno
import os

from outerloop.errors import OuterloopError

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
"""A full disk or quota: one line, not a traceback (every write is whole or nothing)."""


PREFIX = "outerloop: "
"""What a failure's line starts with."""


def failure_line(exc: BaseException) -> tuple[str, int] | None:
    """The line to print for ``exc`` and the exit code, or None: not a failure we word
    (it propagates as a traceback)."""
    if isinstance(exc, OuterloopError):
        return f"{PREFIX}{exc}", exc.exit_code
    if not isinstance(exc, OSError):
        return None
    where = f" writing {exc.filename}" if exc.filename else ""
    if exc.errno in DISK_FULL:
        if _inodes_spent(exc.filename):
            return (f"{PREFIX}{exc.strerror or 'no space left on device'}{where}: the "
                    f"filesystem has no free inodes (files), whatever its free bytes; "
                    f"nothing was half-written. fix: remove files there or move the home "
                    f"to a filesystem with free inodes (df -i), then run the command "
                    f"again", 1)
        return (f"{PREFIX}{exc.strerror or 'no space left on device'}{where}; "
                f"nothing was half-written. fix: free space on that filesystem "
                f"(df -h), then run the command again", 1)
    if exc.errno == errno.EROFS:
        return (f"{PREFIX}{exc.strerror or 'read-only file system'}{where}: the home must "
                f"be writable (its lock, ledger and runs are written by every command "
                f"that changes anything); nothing was written. fix: remount that "
                f"filesystem read-write, or give a writable home (--home or "
                f"OUTERLOOP_HOME), then run the command again", 1)
    return None


def _inodes_spent(filename: object) -> bool:
    """Whether the filesystem under ``filename`` (or its nearest existing folder) has no
    free inodes: ``ENOSPC`` then, however many bytes ``df -h`` shows free."""
    if not isinstance(filename, str | bytes) or not filename:
        return False
    probe = os.fsdecode(filename)
    while probe and not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return False
        probe = parent
    try:
        info = os.statvfs(probe or ".")
    except OSError:
        return False
    return info.f_files > 0 and info.f_favail == 0
