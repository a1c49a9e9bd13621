"""What a command's failure prints: an ``OuterloopError`` or a full disk becomes one line
on stderr and an exit code, not a traceback (``--debug`` keeps the traceback). Shared by
the click group (``group.py``) and the tick's way in without click (``tick_run.py``)."""

from __future__ import annotations

import errno

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
    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
        where = f" writing {exc.filename}" if exc.filename else ""
        return (f"{PREFIX}{exc.strerror or 'no space left on device'}{where}; "
                f"nothing was half-written. fix: free space on that filesystem "
                f"(df -h), then run the command again", 1)
    return None
