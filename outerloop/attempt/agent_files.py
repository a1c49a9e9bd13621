"""Reading a file an agent (or its code) wrote: never through a symlink, never blocked
on a FIFO, never more than a limit. One reader for the committed request, the judges'
verdicts and the launches' artifacts."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegularFile(Exception):
    """What an agent left where a file was expected is a FIFO, a device or a directory."""


def read_regular(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``path`` (one more than allowed, so the caller sees
    it is too big), opened with ``O_NOFOLLOW | O_NONBLOCK``. ``NotRegularFile`` when it
    is not a regular file; ``os.open``'s ``OSError`` passes (``FileNotFoundError``, and
    ``ELOOP`` for a symlink)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    with os.fdopen(os.open(path, flags), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotRegularFile(str(path))
        return handle.read(limit + 1)
