"""Fold the ledger into a typed ``State``, reading only what changed.

``rebuild(home)`` reads every ledger file and folds its events, in ``(lc, at, file,
seq)`` order (``lc``: the writers' logical clock, see ``store.LogicalClock``), into
``State`` (``fold.py``). A cache (``cache/fold.pickle``) keeps each file's
(size, mtime, inode, byte offset) and the folded, compacted ``State``: a rebuild reads
only bytes appended since, so a quiet tick costs a directory walk and one small pickle
load, not history. A file that shrank or was replaced drops the cache (a cold fold).

Run jobs fold only their own run's files on top of the tick's cache, read-only.
"""

from __future__ import annotations

import gc
import os
import pickle
from collections.abc import Iterable
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from outerloop.atomic import write_atomic
from outerloop.ledger import damage
from outerloop.ledger import events as ev
from outerloop.ledger.fold import apply_event, compact
from outerloop.ledger.records import (
    TERMINAL_JOB_STATES,
    JobRecord,
    PendingIntent,
    RunRecord,
    State,
)
from outerloop.ledger.store import ARCHIVE_DIR, LEDGER_DIR, RUNS_DIR, TICK_FILE, read_lines

__all__ = ["TERMINAL_JOB_STATES", "JobRecord", "PendingIntent", "RunRecord", "State",
           "ledger_files", "rebuild", "run_files"]

CACHE_FILE = "cache/fold.pickle"
FOLD_VERSION = 19


def _file_key(path: Path, ledger: Path) -> str:
    return str(path.relative_to(ledger))


# reading ------------------------------------------------------------------------


def _parse(lines: list[bytes]) -> tuple[list[Any], int]:
    return ev.decode_lines(lines)


def _entries(home: Path) -> list[tuple[str, str]]:
    """(key relative to ``ledger/``, absolute path) of every ledger file, as plain
    strings: at 10,000 runs a quiet tick walks 10,000 names, so no ``Path`` objects."""
    root = str(home / LEDGER_DIR)
    found: list[tuple[str, str]] = []
    try:
        targets = list(os.scandir(root))
    except FileNotFoundError:
        return found
    for target in targets:
        if not target.is_dir() or target.name.startswith("."):
            continue
        tick = f"{target.path}/{TICK_FILE}"
        if os.path.exists(tick):
            found.append((f"{target.name}/{TICK_FILE}", tick))
        for folder in (RUNS_DIR, ARCHIVE_DIR):
            prefix = f"{target.name}/{folder}/"
            try:
                found.extend((prefix + e.name, e.path)
                             for e in os.scandir(f"{target.path}/{folder}")
                             if e.name.endswith(".jsonl"))
            except FileNotFoundError:
                continue
    return found


def ledger_files(home: Path) -> list[Path]:
    """Every ledger file: ``<target>/tick.jsonl``, ``<target>/runs/*.jsonl`` and
    ``<target>/archive/*.jsonl``."""
    return [Path(path) for _, path in _entries(home)]


@dataclass(slots=True)
class _FileMark:
    size: int
    mtime_ns: int
    inode: int
    offset: int
    lines: int = 0
    """Lines before ``offset`` (so a damaged line is named by its number)."""
    last_seq: int = 0
    """The ``seq`` of the last event read (a gap after it is a missing line)."""


@dataclass(slots=True)
class _Cache:
    version: int
    marks: dict[str, _FileMark]
    state: State


def _load_cache(path: Path) -> _Cache | None:
    try:
        with path.open("rb") as handle:
            cache = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError):
        return None
    if not isinstance(cache, _Cache) or cache.version != FOLD_VERSION:
        return None
    return cache


def _save_cache(path: Path, cache: _Cache) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, pickle.dumps(cache, protocol=pickle.HIGHEST_PROTOCOL))


def rebuild(home: Path, *, use_cache: bool = True, save_cache: bool = True,
            files: Iterable[Path] | None = None) -> State:
    """Fold the ledger (see ``_rebuild``) with the cyclic garbage collector paused.

    A cold fold creates hundreds of thousands of small objects and none of them form
    cycles; left on, the collector re-scans the growing heap again and again and
    costs a third of the fold's time. Paused, then restored, whatever happens."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _rebuild(home, use_cache=use_cache, save_cache=save_cache, files=files)
    finally:
        if was_enabled:
            gc.enable()


def _rebuild(home: Path, *, use_cache: bool = True, save_cache: bool = True,
             files: Iterable[Path] | None = None) -> State:
    """Fold the ledger into ``State``, reading only what changed since the cache.

    ``files`` limits the fold to some files (a run job folding its own target's
    tick file and its own run file on top of the tick's cache); a partial fold reads
    the cache but never writes it.
    """
    ledger = home / LEDGER_DIR
    partial = files is not None
    entries = sorted([(_file_key(Path(f), ledger), str(f)) for f in files]
                     if files is not None else _entries(home))
    cache_path = home / CACHE_FILE
    cache = _load_cache(cache_path) if use_cache else None
    if cache is None:
        cache = _Cache(FOLD_VERSION, {}, State())
    marks = cache.marks
    pending: list[tuple[tuple[int, str, str, int], Any]] = []
    changed = False
    new_damage: list[tuple[str, int, str]] = []
    seen: set[str] = set()
    settled = {run_id for run_id, run in cache.state.runs.items() if run.settled}
    for key, path in entries:
        if key in marks and _run_of(key) in settled:
            seen.add(key)  # a settled run's file is final: its events change nothing
            continue
        try:
            info = os.stat(path)
        except FileNotFoundError:
            continue
        seen.add(key)
        mark = marks.get(key)
        if mark is not None and (mark.size, mark.mtime_ns) == (info.st_size, info.st_mtime_ns):
            continue
        if mark is not None and (info.st_size < mark.offset or info.st_ino != mark.inode):
            return _rebuild(home, use_cache=False, save_cache=save_cache and not partial,
                           files=[Path(p) for _, p in entries] if partial else None)
        start = mark.offset if mark is not None else 0
        lines_before = mark.lines if mark is not None else 0
        last_seq = mark.last_seq if mark is not None else 0
        result = read_lines(Path(path), start)
        parsed, bad = _parse(result.lines)
        cache.state.malformed += bad
        if bad or not damage.seq_follows(parsed, last_seq):
            found = damage.locate(Path(path), key, start, lines_before + 1, last_seq)
            cache.state.damaged.extend(found)
            del cache.state.damaged[:-damage.MAX_DAMAGED]
            new_damage.extend(found)
        pending.extend(((e.lc, e.at, key, e.seq), e) for e in parsed)
        marks[key] = _FileMark(info.st_size, info.st_mtime_ns, info.st_ino, result.end_offset,
                               lines_before + result.newlines,
                               max([last_seq, *(e.seq for e in parsed)]))
        changed = True
    if not partial and set(marks) - seen:
        return _rebuild(home, use_cache=False, save_cache=save_cache)
    pending.sort(key=itemgetter(0))  # logical clock, then time, file, seq
    cache.state.fresh = len(pending)
    cache.state.damaged_new = new_damage
    for order, event in pending:
        apply_event(cache.state, order[2], event)
    if changed and save_cache and not partial:
        compact(cache.state)
        _save_cache(cache_path, cache)
    return cache.state


def _run_of(key: str) -> str:
    """``owner__name/runs/<run_id>.jsonl`` -> ``<run_id>`` (else "")."""
    head, _, name = key.rpartition("/")
    return name[:-6] if head.endswith("/" + RUNS_DIR) and name.endswith(".jsonl") else ""


def run_files(home: Path, target: str, run_id: str) -> list[Path]:
    """The files a run's own job folds: its target's tick file and its run file."""
    from outerloop.ledger.store import run_file, tick_file

    return [tick_file(home, target), run_file(home, target, run_id)]
