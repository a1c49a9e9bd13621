"""Whole-file writes that never leave half a file, and directory entries that survive a
machine crash.

``write_atomic``: a temporary beside the file, then rename. On any failure (a full disk
most often) the temporary is removed and the error raised: the old file stays as it
was, and no ``.tmp`` litter is left behind.

A file's own ``fsync`` makes its bytes durable, not its name: until the directory that
holds it is fsynced too, a power loss can leave the directory without the new entry
(a new ledger file vanishes with every line fsynced into it) or with the old one (a
rename undone). ``fsync_dir`` and ``make_dirs`` do that for what must survive.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make the entries of directory ``path`` durable (a new file's name, a rename).

    Raises ``OSError`` as ``open``/``fsync`` do; a file system that cannot fsync a
    directory (``EINVAL``) is taken as one that needs no such fsync."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)


def make_dirs(path: Path, mode: int = 0o777) -> None:
    """``mkdir -p path``, each directory it creates fsynced into its parent, so a
    machine crash cannot take away a directory that files were then made durable in."""
    if path.is_dir():
        return
    missing: list[Path] = []
    step = path
    while not step.exists():
        missing.append(step)
        step = step.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=mode)
        fsync_dir(directory.parent)


def write_atomic(path: Path, data: bytes | str, *, fsync: bool = False) -> None:
    """Replace ``path`` with ``data`` (text is UTF-8); readers see old or new only.

    ``fsync``: the new bytes and the rename are durable when this returns (the file,
    then its directory, fsynced); without it a machine crash may leave the old file,
    an empty one or the new one, which suits derived files (caches, views)."""
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
    if fsync:
        fsync_dir(path.parent)
