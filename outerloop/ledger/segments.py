"""Segmented ledger files: a file the tick appends to for ever is a series of segments.

The tick appends to two files per target without end: ``tick.jsonl`` (its events) and
``heads.jsonl`` (its attestations, ``ledger/attest.py``). Git stores a file whole, so a
commit after an append hashes and compresses the whole file again: at 100,000 ended runs
the tick file is 51 MB and each commit took 2.9 s and wrote a new 51 MB object. So each
is kept as segments: ``tick.jsonl`` (segment 1: an old single-file ledger is simply its
first segment, never rewritten), then ``tick.000002.jsonl``, ``tick.000003.jsonl``...
A writer rolls to the next segment when the live one reaches ``SEGMENT_BYTES`` (and
ends with a whole line); a full segment is never written again, so git hashes only the
live one, and its index entry keeps every later ``git add`` from reading the old ones.

Why by size, not by month: what a commit costs is the live file's size, and a busy
month can be as long as a year of quiet ones; a size bound holds the cost whatever the
rate. ``SEGMENT_BYTES`` trades a commit's cost (the live segment is compressed again
whole, about 0.1 s per MB) and ``.git`` growth per commit (one new object of the live
segment) against the number of files (one per 256 KiB: 200 for 100,000 runs).

The chain runs on across segments: the first line of segment ``n + 1`` names the hash
of the last line of segment ``n`` (``start_link``), so a segment deleted, swapped or cut
short breaks the next one's first line. Each segment is otherwise its own ledger file:
its own key (``owner__name/tick.000002.jsonl``), fold mark, attested head, line numbers
and ``seq`` (starting at 1 again), and restored from git on its own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from outerloop.ledger import chain

SEGMENT_BYTES = 262_144
"""A live segment this long (or longer) is full: the next append starts a new one."""
SERIES = ("tick.jsonl", "heads.jsonl")
"""The target-level files kept as segments (the base name is segment 1)."""
_NAME = re.compile(r"^(tick|heads)(?:\.(\d{6}))?\.jsonl$")


def parse(name: str) -> tuple[str, int] | None:
    """``tick.000002.jsonl`` -> ``("tick.jsonl", 2)``; ``tick.jsonl`` -> 1; else None."""
    found = _NAME.match(name)
    if found is None:
        return None
    number = int(found.group(2)) if found.group(2) else 1
    if found.group(2) and number < 2:
        return None  # ``tick.000001.jsonl`` is not a name a writer gives
    return f"{found.group(1)}.jsonl", number


def name(base: str, number: int) -> str:
    """The file name of segment ``number`` of the series ``base``."""
    return base if number == 1 else f"{base[:-len('.jsonl')]}.{number:06d}.jsonl"


def of_series(key: str, base: str) -> bool:
    """``owner__name/<a segment of base>``: a target-level segment of the series."""
    head, _, tail = key.partition("/")
    parsed = parse(tail)
    return bool(head) and "/" not in tail and parsed is not None and parsed[0] == base


def listed(names: list[str], base: str) -> list[str]:
    """The segments of ``base`` among a folder's ``names``, in order."""
    found = [(p[1], n) for n in names if (p := parse(n)) is not None and p[0] == base]
    return [n for _, n in sorted(found)]


def series(folder: Path | str, base: str) -> list[str]:
    """The segments of ``base`` in ``folder`` (file names), in order."""
    try:
        return listed(os.listdir(folder), base)
    except (FileNotFoundError, NotADirectoryError):
        return []


def live(base_path: Path) -> Path:
    """The series' last segment (``base_path`` itself when there is none yet)."""
    names = series(base_path.parent, base_path.name)
    return base_path.parent / names[-1] if names else base_path


def next_path(path: Path) -> Path:
    parsed = parse(path.name)
    assert parsed is not None, path
    return path.with_name(name(parsed[0], parsed[1] + 1))


def previous(path: Path | str) -> Path | None:
    """The segment before ``path`` (None for segment 1 or a file of no series)."""
    path = Path(path)
    parsed = parse(path.name)
    if parsed is None or parsed[1] == 1:
        return None
    return path.with_name(name(parsed[0], parsed[1] - 1))


def append_path(current: Path, limit: int | None = None) -> Path:
    """Where the next line goes: ``current``, or the next segment when ``current`` is
    full and ends with a whole line (a torn tail is first terminated by the append
    into ``current``, so no line spans two segments)."""
    limit = SEGMENT_BYTES if limit is None else limit
    try:
        fd = os.open(current, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return current
    try:
        size = os.fstat(fd).st_size
        if size < limit or os.pread(fd, 1, size - 1) != b"\n":
            return current
    finally:
        os.close(fd)
    return next_path(current)


def start_link(path: Path | str) -> chain.Link:
    """Where the chain of ``path`` starts: after the last line of the segment before it,
    or at ``GENESIS`` (segment 1, any other file, or a previous segment that is gone:
    the first line then fails to chain and is reported)."""
    before = previous(path)
    if before is None:
        return chain.Link()
    try:
        fd = os.open(before, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return chain.Link()
    try:
        last = chain.last_line(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return chain.Link() if last is None else chain.Link(chain.line_hash(last), True)
