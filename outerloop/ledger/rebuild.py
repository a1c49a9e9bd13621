"""Fold the ledger into a typed ``State``, reading only what changed.

``rebuild(home)`` reads every ledger file and folds its events, in ``(lc, at, file,
seq)`` order (``lc``: the writers' logical clock, see ``store.LogicalClock``), into
``State`` (``fold.py``), merging the files' new lines as it goes (``stream.py``) and
compacting a long fold every ``COMPACT_EVERY`` events. The cache lives in the history
index (``cache/history.sqlite3``, ``ledger/history_index.py``): each file's (size,
mtime, inode, byte offset), each folder's mtime at its last listing and the folded,
compacted live ``State`` as one pickled blob, saved in the same transaction as the rows
of the runs settled since. A rebuild reads only bytes appended since, so a quiet tick
costs a few stats and one small blob's load, not history. A file that shrank or was
replaced drops the cache (a cold fold, which makes every row again).

Run jobs fold only their own run's files on top of the tick's cache, read-only.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import stat
import time
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

from outerloop.errors import OuterloopError
from outerloop.ledger import chain, damage, integrity, pending, segments, sweep
from outerloop.ledger.fold import apply_event, compact
from outerloop.ledger.history_index import INDEX_FILE, HistoryIndex, IndexUnreadable
from outerloop.ledger.history_index import remove as remove_index
from outerloop.ledger.records import Head, JobRecord, PendingIntent, RunRecord
from outerloop.ledger.runs import Runs
from outerloop.ledger.state import State
from outerloop.ledger.store import (
    ARCHIVE_DIR,
    LEDGER_DIR,
    RUNS_DIR,
    TICK_FILE,
    target_dir_name,
)
from outerloop.ledger.stream import ChainBroken, Source, Unordered, fold_merged
from outerloop.vocabulary import JobPurpose

__all__ = ["Head", "JobRecord", "PendingIntent", "RunRecord", "State",
           "ledger_files", "rebuild", "run_files"]

CACHE_FILE = INDEX_FILE
FOLD_VERSION = 61  # 22: typed publish rows, findings...; 23-26: published, cold part, folders;
# 27: RunRecord.verdict_untold; 28: marks' tail digests, State.ledger_damage/frozen;
# 29: RunRecord.salts, park_confirm, confirmations; 30: looks, trees, park_look;
# 31: RunRecord.comments_cursor, review_comments_cursor (feedback_cursor events);
# 32: RunRecord.start_failures, start_failed_since/_at, start_error;
# 33: RunRecord.infra_wait (infra_wait events); 34: JobRecord.run_minutes;
# 35: JobRecord.task_elapsed_s; 36: InfraWait.origin/settings_digest, RunRecord.end_reason;
# 37: State.endpoints (endpoint_down/up), RunRecord.endpoint_wait/leg_endpoint/leg_refused;
# 38: RunRecord.withdrawn, max_leg_cost_usd; State.cost_days, money budgets on GpuBudget;
# 39: RunRecord.revision/revisions (revision_asked events)
# 40: marks' chain link (ledger/chain.py), State.heads
# 41: ColdPart.unarchived_from (42: ending_from), Runs.due_after
# 42: RunRecord.tallied, Runs.tally (ledger/tally.py: the settled runs' part of the views)
# 43: RunRecord.texts (cites); 44: a summary's verdicts as one msgpack text
# 45: RunRecord.empty_sleeps
# 46: RunRecord.alpha_fixed, looked, changes, judged_changes; TargetTally alpha and changes
# 47: State.failures as StepFailures (failed.cause, retry_rule), RunRecord.moved_heads
# 48: RunRecord.blocked; chart windows' points carry their standing (ledger/standing.py)
# 49: RunRecord.takeaway (the agent report's title line from the final report, kept settled)
# 50: RunRecord.rebase_to, rebased (fetch_base done, base_moved events)
# 51: RunRecord.line (research lines: prepare_workspace's line, line_saved, push_line)
# 52: LineRecord.refused (line_saved's unfit memory files), LineRecord.moved
# 53: RunRecord.issue_comments_cursor (feedback_cursor's issue_comments_at: steering)
# 54: State.line_resets (line_reset events: outerloop line reset), RunRecord.issue_thread_settled
# 55: TargetTally.agents (the leaderboard's counts), a run's gpu_seconds in its tally facts
# 56: State.widened (issue_widened events: /outerloop widen N)
# 57: RunRecord.seat (run_queued's seat), the tally's agents keyed agent@seat
# 58: RunRecord.combines, State.combined and superseded (the integrator)
# 59: folded.py became state.py (the pickled State's module path; issue 52's one door)
# 60: settled runs are rows of the history index (cache/history.sqlite3), the cache with
# them; no FinalRuns (a run's row makes its file final); 61: Runs.admitted (the week's)


def _file_key(path: Path, ledger: Path) -> str:
    return str(path.relative_to(ledger))


# reading ------------------------------------------------------------------------


def _entries(home: Path, final: Container[str] = frozenset(),
             known: _Known | None = None) -> list[tuple[str, str]]:
    """(key relative to ``ledger/``, absolute path) of every ledger file, as plain
    strings: at 100,000 runs a quiet tick would walk 100,000 names, so no ``Path``
    objects, the run files of ``final`` runs (``_Cache.final``) are left out by name,
    and with ``known`` (the cache's) a folder unchanged since its last listing is not
    listed again (``_Known``)."""
    root = str(home / LEDGER_DIR)
    found: list[tuple[str, str]] = []
    try:
        targets = list(os.scandir(root))
    except FileNotFoundError:
        return found
    for target in targets:
        if not target.is_dir() or target.name.startswith("."):
            continue
        found.extend((f"{target.name}/{name}", f"{target.path}/{name}")
                     for name in segments.series(target.path, TICK_FILE))
        for folder in (RUNS_DIR, ARCHIVE_DIR):
            prefix, where = f"{target.name}/{folder}/", f"{target.path}/{folder}/"
            if known is not None:
                names = known.names(prefix, where)
                if names is not None:
                    found.extend((prefix + name, where + name) for name in names)
                    continue
            skip = final if folder == RUNS_DIR else frozenset()
            try:
                names = os.listdir(where)
            except FileNotFoundError:
                continue
            found.extend((prefix + name, where + name) for name in names
                         if name.endswith(".jsonl") and name[:-6] not in skip)
    return found


RACY_NS = 2_000_000_000
"""A folder changed this recently when listed may change again within its clock's
granularity without its mtime moving: its listing is not trusted next time."""


class _Known:
    """Which files a folder holds, without listing it: the folder's mtime moves when
    a file is created or removed in it (not when one is appended to), so a folder whose
    mtime is the one recorded at its last listing holds the files read then (the
    cache's marks) and the files of runs summarised since (final, not read). Also
    listed each time: the files the state expects to appear (a live run's run file,
    a live archive job's archive file), so a file created within the racy window is
    not missed either. A folder seen for the first time, changed, or changed too
    recently (``RACY_NS``) is listed."""

    def __init__(self, cache: _Cache) -> None:
        self.cache = cache
        self.listed: dict[str, int] = {}
        """What this walk recorded: folder -> its mtime (to keep in the cache)."""
        self._marked: dict[str, list[str]] | None = None
        self._expected: dict[str, set[str]] | None = None

    def names(self, prefix: str, where: str) -> list[str] | None:
        try:
            mtime = os.stat(where).st_mtime_ns
        except FileNotFoundError:
            return []
        if time.time_ns() - mtime > RACY_NS:
            self.listed[prefix] = mtime
        if self.cache.folders.get(prefix) != mtime:
            return None
        if self._marked is None:
            self._marked, self._expected = {}, _expected(self.cache.state)
            for key in self.cache.marks:
                head, _, name = key.rpartition("/")
                self._marked.setdefault(head + "/", []).append(name)
        assert self._expected is not None
        names = self._marked.get(prefix, [])
        more = self._expected.get(prefix, set()).difference(names)
        return [*names, *(name for name in more if os.path.exists(where + name))]


def _expected(state: State) -> dict[str, set[str]]:
    """Per folder (``owner__name/runs/``): the files the state expects there."""
    out: dict[str, set[str]] = {}
    for run in state.runs.live():
        out.setdefault(f"{target_dir_name(run.target)}/{RUNS_DIR}/", set()).add(
            f"{run.run_id}.jsonl")
    for job in state.jobs.values():
        if job.purpose == JobPurpose.ARCHIVE and job.run and job.target and not job.terminal:
            out.setdefault(f"{target_dir_name(job.target)}/{ARCHIVE_DIR}/", set()).add(
                f"{job.run}.jsonl")
    return out


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
    tail: bytes = b""
    """Digest of the bytes just before ``offset`` (``integrity.tail_digest``): a file
    that changed is checked against it, so rewritten bytes are noticed."""
    link: str = chain.GENESIS
    """The hash of the line before ``offset`` (``ledger/chain.py``): new lines must
    chain from it."""
    chained: bool = False
    """The file's hash chain started before ``offset`` (a line without ``prev`` after
    it is a break)."""


UNKNOWN_MARK = _FileMark(-1, -1, -1, 0)
"""The mark of a damaged file a cold fold found and could not restore: no offset is
known, so it is compared with what git committed again next time."""


@dataclass(slots=True)
class _Cache:
    version: int
    marks: dict[str, _FileMark]
    state: State
    folders: dict[str, int] = field(default_factory=dict)
    """``owner__name/runs/`` (or ``archive/``) -> its mtime when last listed (``_Known``)."""
    generation: int | None = None
    """The history index's save this cache was loaded from (None: none; not pickled)."""


OLD_CACHE_FILES = ("fold.pickle", "settled-*.pickle")
"""The caches of earlier versions (a pickled state, its settled runs kept apart): removed
by the first save of this one."""


def _load_cache(path: Path) -> _Cache | None:
    """The fold cache saved in the history index with its rows (None: missing, of
    another layout, unreadable: the fold starts cold and makes it again)."""
    import sqlite3

    index = HistoryIndex()
    try:
        index.attach(path, FOLD_VERSION)
        found = index.load_blob()
    except (IndexUnreadable, sqlite3.Error):
        index.close()
        return None
    if found is None:
        index.close()
        return None
    generation, blob = found
    try:
        cache = pickle.loads(blob)
    except (pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError,
            ImportError):  # another version's cache may name a module this one lacks
        cache = None
    if not isinstance(cache, _Cache) or cache.version != FOLD_VERSION:
        index.close()
        return None
    cache.state.runs.index = index
    cache.generation = generation
    return cache


def _save_cache(path: Path, cache: _Cache) -> None:
    """The runs settled since and the fold cache (the live state and each file's mark)
    in one transaction of the history index (``HistoryIndex.save``); a fold that started
    cold replaces every row. Another process that saved since this one loaded wins: this
    one's save is dropped (both are the ledger folded; the next fold reads on from it)."""
    index = cache.state.runs.index
    anew = index.path is None
    if anew:
        try:
            index.attach(path, FOLD_VERSION, create=True)
        except IndexUnreadable:  # a copy taken while it was written, a disk error:
            remove_index(path)  # derived, made again
            index.attach(path, FOLD_VERSION, create=True)
    saved = cache.generation
    cache.generation = None
    blob = pickle.dumps(cache, protocol=pickle.HIGHEST_PROTOCOL)
    generation = index.save(blob, saved, anew=anew)
    cache.generation = generation if generation is not None else saved
    for pattern in OLD_CACHE_FILES:
        for old in path.parent.glob(pattern):
            with contextlib.suppress(FileNotFoundError):
                old.unlink()


def rebuild(home: Path, *, use_cache: bool = True, save_cache: bool = True,
            files: Iterable[Path] | None = None, heal: bool = False) -> State:
    """Fold the ledger (see ``_rebuild``) with the cyclic garbage collector paused.

    A cold fold creates hundreds of thousands of small objects and none of them form
    cycles; left on, the collector re-scans the growing heap again and again and
    costs a third of the fold's time. Paused, then restored, whatever happens.

    A damaged ledger file (``ledger/integrity.py``) is restored from git with ``heal``
    (the tick), else only reported; one that is not restored is left out of the fold
    and its target listed in ``State.frozen``. A partial fold (a run's job) that meets
    one raises ``LedgerDamaged``: the job stops and is recovered once the tick healed it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _rebuild(home, use_cache=use_cache, save_cache=save_cache, files=files,
                        heal=heal)
    finally:
        if was_enabled:
            gc.enable()


class LedgerDamaged(OuterloopError):
    """A ledger file a partial fold (a run's job) reads is damaged: the job stops; the
    next tick restores the file (or freezes its target) and the sweep recovers the run."""


FULL_CHECK_BYTES = 262_144
"""A changed file whose read part is at most this long has its whole chain walked
again (a run's file: a few kilobytes); a longer one (a target's tick file) only its
tail digest, and its chain when its size did not move (written over in place)."""


def _suspect(mark: _FileMark, info: os.stat_result, path: str) -> str | None:
    """What is wrong with a file whose stat changed since its mark, or None (grown).

    A file is the one the fold read by its content and chain, not its inode: a home
    restored from a backup or copied (``cp -a``) holds every file under a new inode,
    and is whole when the bytes read hold the same chain up to the same last line. So
    a file under another inode has its whole chain walked up to the offset read (an
    earlier line edited, dropped or re-chained shows there); one under the same inode
    only its tail, and its chain when short or written over in place."""
    if info.st_size < mark.offset:
        return f"the file shrank to {info.st_size} bytes (the fold had read {mark.offset})"
    if mark.tail and integrity.tail_digest(path, mark.offset) != mark.tail:
        return f"bytes the fold had read (before offset {mark.offset}) changed"
    if info.st_ino != mark.inode or mark.offset <= FULL_CHECK_BYTES \
            or info.st_size == mark.size:
        return integrity.chain_problem(path, mark.offset, mark.link)
    return None


def _cold_suspects(ledger: Path, stats: dict[str, os.stat_result],
                   exclude: frozenset[str]) -> dict[str, tuple[str, integrity.Expected | None]]:
    """A cold fold: every file shorter than (or missing from) what ``HEAD`` committed."""
    committed = integrity.committed_sizes(ledger)
    out: dict[str, tuple[str, integrity.Expected | None]] = {}
    for key, size in (committed or {}).items():
        if key in exclude or not is_ledger_key(key):
            continue  # not a file the fold reads (``heads.jsonl``: ledger/attest.py)
        info = stats.get(key)
        if info is None and not os.path.lexists(ledger / key):
            out[key] = (f"the file is gone ({size} bytes committed)", None)
        elif info is None or info.st_size < size:
            now = "not a regular file" if info is None else f"{info.st_size} bytes"
            out[key] = (f"the file is shorter than committed ({now}, {size} committed)", None)
    return out


def _rebuild(home: Path, *, use_cache: bool = True, save_cache: bool = True,
             files: Iterable[Path] | None = None, merge: bool = True, heal: bool = False,
             found: list[integrity.Damage] | None = None,
             frozen_marks: dict[str, _FileMark] | None = None,
             breaks: dict[str, str] | None = None) -> State:
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
    marks, final = cache.marks, _FinalRuns(cache.state.runs)
    cold = not marks
    found = [] if found is None else found
    frozen_marks = {} if frozen_marks is None else frozen_marks
    breaks = {} if breaks is None else breaks
    exclude = frozenset(frozen_marks)
    suspects: dict[str, tuple[str, integrity.Expected | None]] = {}
    known = _Known(cache) if files is None else None
    entries = sorted([(_file_key(Path(f), ledger), str(f)) for f in files]
                     if files is not None else _entries(home, final, known))
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
        if key in exclude:
            seen.add(key)
            continue
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        seen.add(key)
        mark = marks.get(key)
        if key in breaks:
            suspects[key] = (breaks[key], _expected_of(mark))
            stats[key] = info
            continue
        if mark is not None and (mark.size, mark.mtime_ns) == (info.st_size, info.st_mtime_ns):
            continue
        if mark is not None and mark.inode == UNKNOWN_MARK.inode:
            suspects[key] = ("still damaged (found so before and not restored)", None)
            continue
        if mark is not None:
            what = _suspect(mark, info, path)
            if what is not None:
                suspects[key] = (what, _expected_of(mark))
                continue
        if not stat.S_ISREG(info.st_mode):
            continue  # a symlink or worse where a ledger file belongs: never followed
        if mark is None:
            start = segments.start_link(path) if is_tick_file(key) else chain.Link()
            sources.append(Source(key, path, 0, 0, 0, start))
        else:
            sources.append(Source(key, path, mark.offset, mark.lines, mark.last_seq,
                                  chain.Link(mark.link, mark.chained)))
        stats[key] = info
    if not partial:
        for key in set(marks) - seen:
            mark = marks[key]
            suspects[key] = ("the file is gone", None if mark.inode == UNKNOWN_MARK.inode
                             else _expected_of(mark))
        if cold:
            suspects.update(_cold_suspects(ledger, stats,
                                           exclude | {d.file for d in found}))
    if suspects and partial:
        raise LedgerDamaged("damaged ledger file(s) " + "; ".join(
            f"ledger/{key}: {what}" for key, (what, _) in sorted(suspects.items()))
            + "; this job stops, the next tick restores them from the ledger's git")
    if suspects:
        restored = False
        mended = {d.file for d in found if d.restored}
        for key, (what, expected) in sorted(suspects.items()):
            if heal and key in mended:
                result = integrity.Damage(key, what, False, "still damaged after its "
                                          "restore in this fold")
            elif heal:
                result = integrity.restore(home, ledger, key, what, expected)
            else:
                result = integrity.Damage(key, what, False, "not restored by this reader; "
                                          "the next tick restores it")
            found.append(result)
            restored |= result.restored
            if not result.restored:
                frozen_marks[key] = marks.get(key) or UNKNOWN_MARK
        if restored or cold or not use_cache:
            return _rebuild(home, use_cache=False, save_cache=save_cache, heal=heal,
                            found=found, frozen_marks=frozen_marks)
        for key in frozen_marks:
            seen.add(key)
    state = cache.state
    heads: dict[str, Head] = {}
    try:
        fresh = _fold(sources, state, merge)
    except Unordered:
        return _rebuild(home, use_cache=use_cache, save_cache=save_cache, files=files,
                        merge=False, heal=heal, found=found, frozen_marks=frozen_marks,
                        breaks=breaks)
    except ChainBroken as broken:
        if partial:
            raise LedgerDamaged(f"damaged ledger file ledger/{broken}; this job stops, the "
                                f"next tick restores it from the ledger's git") from None
        return _rebuild(home, use_cache=use_cache, save_cache=save_cache, merge=merge,
                        heal=heal, found=found, frozen_marks=frozen_marks,
                        breaks={**breaks, broken.key: broken.broken.what})
    new_damage: list[tuple[str, int, str]] = []
    # the files this fold read new lines of: not one whose stat alone moved (a touched
    # or copied file: hashing segment 1 again for the commit cost 17 s, 3.6 GB at 100k)
    grown = [source.key for source in sources if source.key not in marks
             or marks[source.key].offset != source.offset]
    for source in sources:  # in file order, as read
        state.malformed += source.malformed
        if source.damaged:
            state.damaged.extend(source.damaged)
            del state.damaged[:-damage.MAX_DAMAGED]
            new_damage.extend(source.damaged)
        info = stats[source.key]
        marks[source.key] = _FileMark(info.st_size, info.st_mtime_ns, info.st_ino,
                                      source.offset, source.lines, source.last_seq,
                                      integrity.tail_digest(source.path, source.offset),
                                      source.link.value, source.link.chained)
        heads[source.key] = Head(source.offset, source.lines, source.link.value,
                                 source.link.chained, True)
    marks.update(frozen_marks)  # kept as the fold knew them: checked again next time
    state.ledger_damage = [d.line() for d in found]
    state.frozen = {d.target_dir: d.line() for d in found if not d.restored}
    state.fresh = fresh
    state.damaged_new = new_damage
    listed = known is not None and known.listed != cache.folders
    if known is not None:
        cache.folders = known.listed
    if (sources or listed or found) and save_cache and not partial:
        # named for the next commit before the cache takes them as read (ledger/pending.py)
        pending.note(ledger, grown)
        compact(state)
        _forget_final(cache, home)
        _save_cache(cache_path, cache)
    for key, mark in marks.items():
        if is_tick_file(key) and key not in frozen_marks:
            heads.setdefault(key, Head(mark.offset, mark.lines, mark.link, mark.chained,
                                       False))
    state.heads = heads
    return state


def is_tick_file(key: str) -> bool:
    """``owner__name/tick.jsonl`` or a later segment of it (``ledger/segments.py``)."""
    return segments.of_series(key, TICK_FILE)


def is_ledger_key(key: str) -> bool:
    """``owner__name/tick.jsonl``, ``.../runs/<id>.jsonl``, ``.../archive/<id>.jsonl``."""
    parts = key.split("/")
    return is_tick_file(key) or (len(parts) == 3 and parts[1] in (RUNS_DIR, ARCHIVE_DIR)
                                  and parts[2].endswith(".jsonl"))


COMPACT_EVERY = 100_000
"""A fold this long compacts every so many events (settled runs summarised)."""


def _fold(sources: list[Source], state: State, merge: bool) -> int:
    """Fold the sources' new events into ``state`` (merged, or all read and sorted);
    returns how many."""

    def compact_now() -> None:
        compact(state)

    if merge:
        return fold_merged(sources, state, apply_event, COMPACT_EVERY, compact_now)
    pending = [item for source in sources for item in source.read_all()]
    pending.sort(key=itemgetter(0))  # logical clock, then time, file, seq
    for order, event in pending:
        apply_event(state, order[2], event)
    return len(pending)


def _expected_of(mark: _FileMark | None) -> integrity.Expected | None:
    """What a restored version of a marked file must hold (None: nothing known)."""
    if mark is None or mark.inode == UNKNOWN_MARK.inode:
        return None
    return integrity.Expected(mark.offset, mark.tail, mark.link)


class _FinalRuns(Container[str]):
    """The runs whose file is final: every run with a row in the history index (its file
    was read to its end before it settled, ``_forget_final``), read back since or not.
    Asked of a few files (a quiet tick's), it asks the index run by run; asked of more
    (a ``runs/`` folder listed), it reads every id once."""

    ONE_BY_ONE = 64

    def __init__(self, runs: Runs) -> None:
        self._runs = runs
        self._asked = 0
        self._ids: set[str] | None = None

    def __contains__(self, run_id: object) -> bool:
        if not isinstance(run_id, str) or not run_id:
            return False
        if self._ids is None:
            self._asked += 1
            if self._asked <= self.ONE_BY_ONE:
                return self._runs.index.get(run_id) is not None
            self._ids = self._runs.index.ids()
        return run_id in self._ids


def _forget_final(cache: _Cache, home: Path) -> None:
    """A settled run's file, read to its end, keeps no mark (its row makes it final,
    ``_FinalRuns``): what it was is noted for the commits' sweep (``ledger/sweep.py``;
    a cold fold's final files replace what was noted)."""
    runs = cache.state.runs
    anew = runs.index.path is None
    noted = []
    for key in [k for k in cache.marks if runs.summarised(_run_of(k))]:
        mark = cache.marks.pop(key)
        noted.append((key, mark.size, mark.mtime_ns, mark.inode))
    sweep.note(home, noted, anew=anew and bool(noted))


def _run_of(key: str) -> str:
    """``owner__name/runs/<run_id>.jsonl`` -> ``<run_id>`` (else "")."""
    head, _, name = key.rpartition("/")
    return name[:-6] if head.endswith("/" + RUNS_DIR) and name.endswith(".jsonl") else ""


def run_files(home: Path, target: str, run_id: str) -> list[Path]:
    """The files a run's own job folds: its target's tick file and its run file."""
    from outerloop.ledger.store import run_file, tick_files

    return [*tick_files(home, target), run_file(home, target, run_id)]
