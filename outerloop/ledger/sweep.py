"""The ledger files no fold reads again, looked at a slice per commit.

A settled run's file is final: the fold stops reading it, and keeps no mark of it, once
its run settles (``rebuild._forget_final``). A change to it (a hand edit, a bad
restore) is then seen by no tick, and checking every such file against git before each
commit cost 0.8-1.5 s at 100,000 runs. So each file is noted here, with what it was
when the fold let it go (size, mtime, inode), in ``FILE``: one line each, appended as
runs are summarised, rewritten whole only by a cold fold (which summarises them all
again). Each tick that commits stats the next ``SLICE`` of them (a cursor in
``CURSOR_FILE``, going round): a file whose stat moved is a suspect, which the commit
checks against ``HEAD`` and takes (``integrity.unread_changes``): restored when
damaged, committed when lines were only appended (a run job's late line). What a tick
costs is the slice; a file changed by hand is found within ``files / SLICE`` commits.

Derived, like all of ``cache/``: lost, it is made again by the next cold fold, and
until then the files are looked at by a commit that takes everything, a cold fold and
``outerloop verify`` (``docs/operate.md``, "A damaged ledger").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from outerloop.atomic import write_atomic

FILE = "cache/final-files.txt"
CURSOR_FILE = "cache/final-sweep"
SLICE = 2000
"""Files stat'ed per commit: about 3 ms; 50 commits go round 100,000 settled runs."""


def _stat(size: int, mtime_ns: int, inode: int) -> str:
    """Fixed width, so a line's stat is written over in place (``seen``)."""
    return f"{size:015d} {mtime_ns:020d} {inode:020d}"


def _line(key: str, size: int, mtime_ns: int, inode: int) -> str:
    return f"{_stat(size, mtime_ns, inode)} {key}\n"


def note(home: Path, files: Iterable[tuple[str, int, int, int]], *, anew: bool = False
         ) -> None:
    """Note ``(key, size, mtime_ns, inode)`` of files no fold reads again; ``anew``: they
    are all of them (a cold fold), replacing what was noted."""
    lines = "".join(_line(*entry) for entry in files
                    if "\n" not in entry[0] and " " not in entry[0])
    path = home / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if anew:
        write_atomic(path, lines)
        with contextlib.suppress(FileNotFoundError):
            (home / CURSOR_FILE).unlink()
        return
    if not lines:
        return
    with path.open("a", encoding="utf-8") as handle:
        handle.write(lines)


def suspects(home: Path, count: int = SLICE) -> dict[str, int]:
    """The next ``count`` noted files (going round), those whose stat moved since they
    were noted: ``key under ledger/ -> where its line is`` (for ``seen``). Moves the
    cursor on."""
    path = home / FILE
    try:
        start = int((home / CURSOR_FILE).read_text() or 0)
    except (OSError, ValueError):
        start = 0
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return {}
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if start >= size:
            start = 0
        handle.seek(start)
        lines = []
        for _ in range(count):
            lines.append((handle.tell(), handle.readline()))
        at = handle.tell()
    found = {}
    ledger = str(home / "ledger")
    for offset, raw in lines:
        parts = raw.decode("utf-8", "surrogateescape").rstrip("\n").split(" ", 3)
        if len(parts) != 4 or not raw.endswith(b"\n"):
            continue  # a torn last line (a crash while noting): noted again next time
        key = parts[3]
        try:
            info = os.lstat(f"{ledger}/{key}")
        except FileNotFoundError:
            found[key] = offset
            continue
        if (info.st_size, info.st_mtime_ns, info.st_ino) != (
                int(parts[0]), int(parts[1]), int(parts[2])):
            found[key] = offset
    write_atomic(home / CURSOR_FILE, str(at if at < size else 0))
    return found


def seen(home: Path, checked: dict[str, int]) -> None:
    """The suspects ``checked`` (``suspects``' answer) were found whole (or restored):
    their lines take their stat now, so the next round passes them by."""
    try:
        fd = os.open(home / FILE, os.O_WRONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        for key, offset in checked.items():
            try:
                info = os.lstat(home / "ledger" / key)
            except FileNotFoundError:
                continue
            os.pwrite(fd, _stat(info.st_size, info.st_mtime_ns, info.st_ino).encode(),
                      offset)
    finally:
        os.close(fd)
