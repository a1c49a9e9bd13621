"""Append-only JSONL files: one writer per file, torn lines survived, git-committed.

Layout under ``<home>/ledger``: ``<owner>__<name>/tick.jsonl`` (the tick's events for
that target) and ``<owner>__<name>/runs/<run_id>.jsonl`` (written by that run's jobs).
No two processes ever append to the same file.

Order: every line carries a logical clock ``lc`` (``LogicalClock``); the fold sorts
by ``(lc, at, file, seq)``, so what a writer had read sorts before what it wrote.

Torn lines: a crash mid-append leaves a last line without ``\\n``. Readers skip it;
the next writer first terminates it with ``\\n``, so only the torn line is lost. A
malformed line in the middle is skipped and counted.

Segments: a target's ``tick.jsonl`` is the first segment of a series
(``ledger/segments.py``); its writer rolls to ``tick.000002.jsonl`` and on as each fills,
so a commit hashes only the live one. ``tick_file`` names the series (segment 1).

Hash chain: each line ends with ``"prev"``, the hash of the line before it in its file
(``ledger/chain.py``); the writer reads its file's last line when the file is not as
it left it (its first append, or another hand touched it), else uses its own last line.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import msgspec

from outerloop.atomic import fsync_dir, make_dirs
from outerloop.clock import now_stamp
from outerloop.ledger import chain, segments
from outerloop.ledger.events import BaseEvent

LEDGER_DIR = "ledger"
TICK_FILE = "tick.jsonl"
RUNS_DIR = "runs"
ARCHIVE_DIR = "archive"
TAIL_SCAN_BYTES = 65536

E = TypeVar("E", bound=BaseEvent)

_ENCODER = msgspec.json.Encoder(enc_hook=str)
"""Values JSON has no form for (a ``Path`` in a field typed ``str``) are written as text."""


def target_dir_name(repo: str) -> str:
    """``owner/name`` -> ``owner__name`` (a directory name)."""
    return repo.replace("/", "__")


def tick_file(home: Path, repo: str) -> Path:
    """The target's tick series (its segment 1: ``ledger/segments.py``)."""
    return home / LEDGER_DIR / target_dir_name(repo) / TICK_FILE


def tick_files(home: Path, repo: str) -> list[Path]:
    """Every segment of the target's tick series, in order."""
    folder = home / LEDGER_DIR / target_dir_name(repo)
    return [folder / name for name in segments.series(folder, TICK_FILE)]


def run_file(home: Path, repo: str, run_id: str) -> Path:
    return home / LEDGER_DIR / target_dir_name(repo) / RUNS_DIR / f"{run_id}.jsonl"


def archive_file(home: Path, repo: str, run_id: str) -> Path:
    """A run's archive events (``archived``, ``archive_failed``, ``archive_restored``),
    apart from its run file: those come after the run settled, when its run file is
    final and no longer read."""
    return home / LEDGER_DIR / target_dir_name(repo) / ARCHIVE_DIR / f"{run_id}.jsonl"


@dataclass
class ReadResult:
    lines: list[bytes]
    """Complete, non-blank lines (still JSON text)."""
    end_offset: int
    """Byte offset just past the last complete line: where the next read starts."""
    torn: bool
    newlines: int = 0
    """How many ``\n``-terminated lines were read (blank ones too): line numbering."""


def read_lines(path: Path, offset: int = 0) -> ReadResult:
    """Complete lines of ``path`` from byte ``offset``; a torn last line is left out."""
    with path.open("rb") as handle:
        handle.seek(offset)
        data = handle.read()
    cut = data.rfind(b"\n")
    complete = data[: cut + 1] if cut >= 0 else b""
    torn = len(complete) < len(data)
    lines = [line for line in complete.split(b"\n") if line.strip()]
    return ReadResult(lines=lines, end_offset=offset + len(complete), torn=torn,
                      newlines=complete.count(b"\n"))


def _last_envelope(path: Path) -> tuple[int, int]:
    """``(seq, lc)`` of the last complete, parseable line ((0, 0) for a new file)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0, 0
    start = max(0, size - TAIL_SCAN_BYTES)
    result = read_lines(path, start)
    lines = result.lines[1:] if start > 0 else result.lines
    for line in reversed(lines):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("seq"), int):
            lc = value.get("lc")
            return int(value["seq"]), lc if isinstance(lc, int) else 0
    return 0, 0


class LogicalClock:
    """A Lamport clock shared by one process's writers.

    ``observe`` the highest ``lc`` folded (``State.clock``); each append then stamps
    one more than everything seen, so the fold's order ``(lc, at, file, seq)`` puts an
    event after all it could have known, however far the hosts' wall clocks drift."""

    def __init__(self, seen: int = 0) -> None:
        self.value = seen

    def observe(self, seen: int) -> None:
        self.value = max(self.value, seen)

    def tick(self, floor: int = 0) -> int:
        self.value = max(self.value, floor) + 1
        return self.value


class LedgerWriter:
    """The single writer of one ledger file.

    Each append is one ``write()`` of the whole line then ``fsync``, so a crash leaves
    at most one torn line, which the next writer terminates before appending. The
    append that creates the file (and any directory above it) also fsyncs the
    directory holding it: a line is durable only once its file's name is, and an
    intent must survive a power loss before its effect is made.
    """

    def __init__(self, path: Path, clock: LogicalClock | None = None,
                 now: Callable[[], str] = now_stamp) -> None:
        self.path = path
        self.segmented = (segments.parse(path.name) is not None
                          and path.parent.name not in (RUNS_DIR, ARCHIVE_DIR))
        """``path`` names a series: appends go to its live segment (``self.path``)."""
        self.started: list[Path] = []
        """Segments this writer created (no fold has marked them yet)."""
        self.clock = clock if clock is not None else LogicalClock()
        self.now = now
        self._seq: int | None = None
        self._lc = 0
        self._end = -1
        """The file's size after this writer's last append (-1: none yet)."""
        self._link = chain.GENESIS
        """The hash of this writer's last line (valid while the size is ``_end``)."""
        self.appended = 0

    def append(self, event: E) -> E:
        """Append one event, built without its envelope; returns it as written (its
        ``seq``, ``at`` and ``lc`` stamped here).

        The event is a typed struct, so a misspelled field fails where it is built
        (``TypeError``, and a mypy error), never silently in the fold."""
        make_dirs(self.path.parent)
        if self._seq is None and self.segmented:
            self.path = segments.live(self.path)
        if self.segmented:
            self._roll()
        if self._seq is None:
            self._seq, self._lc = _last_envelope(self.path)
            before = segments.previous(self.path) if self._seq == 0 else None
            if before is not None:  # a segment begun but empty: its clock runs on
                self._lc = _last_envelope(before)[1]
        self._seq += 1
        self._lc = self.clock.tick(self._lc)
        event = msgspec.structs.replace(event, seq=self._seq, at=self.now(), lc=self._lc)
        encoded = _ENCODER.encode(event)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size != self._end:
                last = chain.last_line(fd, size)
                self._link = (segments.start_link(self.path).value if last is None
                              else chain.line_hash(last))
            line = chain.with_prev(encoded, self._link)
            data = line + b"\n"
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            write_whole(fd, data, size)
            self._end, self._link = size + len(data), chain.line_hash(line)
        finally:
            os.close(fd)
        if size == 0:  # a new file (or an empty one): its name must survive too
            fsync_dir(self.path.parent)
            if self.segmented:
                self.started.append(self.path)
        self.appended += 1
        return event

    def _roll(self) -> None:
        """Move on to the next segment when the live one is full: ``seq`` starts again
        (it is per file), the clock and the chain run on (``segments.start_link``)."""
        nxt = segments.append_path(self.path)
        if nxt != self.path:
            self.path, self._seq, self._end = nxt, 0, -1


def write_whole(fd: int, data: bytes, size: int) -> None:
    """Append all of ``data`` and fsync, or nothing: a short write (a disk filling up
    writes what fits) is continued, and on an error the file is cut back to ``size``
    so no half line is left, then the error is raised."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise
