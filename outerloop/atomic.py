"""Whole-file writes that never leave half a file: a temporary beside it, then rename.

On any failure (a full disk most often) the temporary is removed and the error
raised: the old file stays as it was, and no ``.tmp`` litter is left behind.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes | str, *, fsync: bool = False) -> None:
    """Replace ``path`` with ``data`` (text is UTF-8); readers see old or new only."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            handle.write(raw)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
