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
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

from outerloop.atomic import write_atomic
from outerloop.ledger import damage
from outerloop.ledger.fold import apply_event, compact
from outerloop.ledger.records import (
    TERMINAL_JOB_STATES,
    JobRecord,
    PendingIntent,
    RunRecord,
    State,
)
from outerloop.ledger.store import ARCHIVE_DIR, LEDGER_DIR, RUNS_DIR, TICK_FILE
from outerloop.ledger.stream import Source, Unordered, fold_merged

__all__ = ["TERMINAL_JOB_STATES", "JobRecord", "PendingIntent", "RunRecord", "State",
           "ledger_files", "rebuild", "run_files"]

CACHE_FILE = "cache/fold.pickle"
FOLD_VERSION = 22  # 22: publish rows, findings, eval pairs, archived files as structs


def _file_key(path: Path, ledger: Path) -> str:
    return str(path.relative_to(ledger))


# reading ------------------------------------------------------------------------


def _entries(home: Path, final: set[str] | frozenset[str] = frozenset()
             ) -> list[tuple[str, str]]:
    """(key relative to ``ledger/``, absolute path) of every ledger file, as plain
    strings: at 100,000 runs a quiet tick walks 100,000 names, so no ``Path`` objects,
    and the run files of ``final`` runs (``_Cache.final``) are left out by name."""
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
            prefix, where = f"{target.name}/{folder}/", f"{target.path}/{folder}/"
            skip = final if folder == RUNS_DIR else frozenset()
            try:
                names = os.listdir(where)
            except FileNotFoundError:
                continue
            found.extend((prefix + name, where + name) for name in names
                         if name.endswith(".jsonl") and name[:-6] not in skip)
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
    final: set[str] = field(default_factory=set)
    """Runs summarised after their run file was read to its end (``_forget_final``):
    that file is neither stat'ed nor read again, and keeps no mark."""


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
             files: Iterable[Path] | None = None, merge: bool = True) -> State:
    """Fold the ledger into ``State``, reading only what changed since the cache.

    ``files`` limits the fold to some files (a run job folding its own target's
    tick file and its own run file on top of the tick's cache); a partial fold reads
    the cache but never writes it. New lines are merged file by file
    (``ledger/stream.py``; ``merge=False``: all read, then sorted, for a file out of
    order), and a long fold compacts as it goes, so memory follows the live runs, not
    history.
    """
    ledger = home / LEDGER_DIR
    partial = files is not None
    cache_path = home / CACHE_FILE
    cache = _load_cache(cache_path) if use_cache else None
    if cache is None:
        cache = _Cache(FOLD_VERSION, {}, State())
    marks, final = cache.marks, cache.final
    entries = sorted([(_file_key(Path(f), ledger), str(f)) for f in files]
                     if files is not None else _entries(home, final))
    sources: list[Source] = []
    stats: dict[str, os.stat_result] = {}
    seen: set[str] = set()
    settled = {run.run_id for run in cache.state.runs.live() if run.settled}
    for key, path in entries:
        run_id = _run_of(key)
        if run_id and run_id in final:
            continue  # read to its end before its run was summarised: final
        if key in marks and run_id in settled:
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
        if mark is None:
            sources.append(Source(key, path, 0, 0, 0))
        else:
            sources.append(Source(key, path, mark.offset, mark.lines, mark.last_seq))
        stats[key] = info
    if not partial and set(marks) - seen:
        return _rebuild(home, use_cache=False, save_cache=save_cache)
    state = cache.state

    def compact_now() -> None:
        compact(state)

    if merge:
        try:
            fresh = fold_merged(sources, state, apply_event, COMPACT_EVERY, compact_now)
        except Unordered:
            return _rebuild(home, use_cache=use_cache, save_cache=save_cache, files=files,
                            merge=False)
    else:
        pending = [item for source in sources for item in source.read_all()]
        pending.sort(key=itemgetter(0))  # logical clock, then time, file, seq
        for order, event in pending:
            apply_event(state, order[2], event)
        fresh = len(pending)
    new_damage: list[tuple[str, int, str]] = []
    for source in sources:  # in file order, as read
        state.malformed += source.malformed
        if source.damaged:
            state.damaged.extend(source.damaged)
            del state.damaged[:-damage.MAX_DAMAGED]
            new_damage.extend(source.damaged)
        info = stats[source.key]
        marks[source.key] = _FileMark(info.st_size, info.st_mtime_ns, info.st_ino,
                                      source.offset, source.lines, source.last_seq)
    state.fresh = fresh
    state.damaged_new = new_damage
    if sources and save_cache and not partial:
        compact(state)
        _forget_final(cache)
        _save_cache(cache_path, cache)
    return state


COMPACT_EVERY = 100_000
"""A fold this long compacts every so many events (settled runs summarised)."""


def _forget_final(cache: _Cache) -> None:
    """A summarised run's file, read to its end, keeps no mark: its id in ``final``."""
    runs = cache.state.runs
    for key in [k for k in cache.marks if runs.summarised(_run_of(k))]:
        cache.final.add(runs.same_id(_run_of(key)))
        del cache.marks[key]


def _run_of(key: str) -> str:
    """``owner__name/runs/<run_id>.jsonl`` -> ``<run_id>`` (else "")."""
    head, _, name = key.rpartition("/")
    return name[:-6] if head.endswith("/" + RUNS_DIR) and name.endswith(".jsonl") else ""


def run_files(home: Path, target: str, run_id: str) -> list[Path]:
    """The files a run's own job folds: its target's tick file and its run file."""
    from outerloop.ledger.store import run_file, tick_file

    return [tick_file(home, target), run_file(home, target, run_id)]
