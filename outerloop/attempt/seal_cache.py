"""The seal's stat cache: a file unchanged since the last seal is not read again.

``git add -A`` skips a file whose ``lstat`` matches its index entry; the walk does the
same with its own record, ``runs/<run>/seal.stat`` (kernel-owned, never granted):
``path -> (inode, size, mtime, ctime, mode, blob)``. A hit needs all four stamps equal.
The ctime is the kernel's own (no ``utime`` sets it), so a file written since has
another; one changed within ``RACY_NS`` of its hash is not recorded at all (the racy
window git guards the same way), so it is read again at the next seal. A record that
cannot be read is no record: every file is read.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

CACHE_FILE = "seal.stat"
RACY_NS = 2_000_000_000

Stamp = tuple[int, int, int, int]
"""``(st_ino, st_size, st_mtime_ns, st_ctime_ns)`` from ``lstat``."""
Record = dict[str, tuple[Stamp, str, str]]
"""``path -> (stamp, mode, blob name)``."""


def stamp_of(info: os.stat_result) -> Stamp:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def load(root: Path) -> Record:
    """The record the previous seal left in ``root`` ({} if none or unreadable)."""
    try:
        raw = (root / CACHE_FILE).read_bytes()
    except OSError:
        return {}
    out: Record = {}
    try:
        for line in raw.split(b"\0"):
            meta, tab, path = line.partition(b"\t")
            if tab:
                ino, size, mtime, ctime, mode, name = meta.decode().split()
                out[os.fsdecode(path)] = ((int(ino), int(size), int(mtime), int(ctime)),
                                          mode, name)
    except ValueError:
        return {}
    return out


def save(root: Path, record: Record) -> None:
    """Write ``record`` (atomically), without the entries changed within ``RACY_NS``."""
    fresh = time.time_ns() - RACY_NS
    data = b"".join(
        f"{s[0]} {s[1]} {s[2]} {s[3]} {mode} {name}\t".encode() + os.fsencode(path) + b"\0"
        for path, (s, mode, name) in record.items() if s[3] < fresh and s[2] < fresh)
    tmp = root / f".{CACHE_FILE}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, root / CACHE_FILE)
