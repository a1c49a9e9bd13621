"""The settled runs' index: one SQLite row per settled run (issue 52, point 2).

A settled run (``compaction.settled``) has nothing left to say; the fold keeps only the
live runs in memory and moves each settled one here, as a row holding the columns the
lanes and views select on and the whole compacted ``RunRecord`` encoded as one msgpack
blob (``encode``/``decode``), so a run read by id comes back whole.

Two places hold rows, seen as one (the temporary view ``settled``):

- ``disk.runs``: the home's database, ``cache/history.sqlite3`` (WAL), rows committed
  with the fold cache that names how far each ledger file was read (``save``: one
  transaction, so the index and the fold's position never disagree after a crash);
- ``main.pending``: rows settled since, in this process's private temporary database
  (a fold that does not save, a view's or a run job's, never writes the home's
  database). Private, not ``:memory:``: SQLite keeps it in its page cache and spills it
  to a temporary file past that, so a cold fold, which settles every run of history
  before its one save, holds no history in memory (~250 MB of records at 100,000 runs).

A run read back after it settled (an archive, a clean, a late job end) is live again;
its row stays, hidden by the caller (``Runs``) until the run settles again and its row
is written over. The database is derived and disposable: missing, unreadable or of
another layout (``user_version``), it is made again by a cold fold of the ledger.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from outerloop.errors import OuterloopError
from outerloop.ledger.records import Ending, RunRecord

if TYPE_CHECKING:
    import sqlite3

INDEX_FILE = "cache/history.sqlite3"

COLUMNS = ("run_id", "pos", "target", "issue", "queued_at", "ended_at", "admitted",
           "outage", "report_posted", "cleaned", "pruned", "archived", "record")
"""A row: the run's id and place in queue order, what the selections test, its record."""

_TABLE = """(run_id TEXT PRIMARY KEY, pos INTEGER NOT NULL, target TEXT NOT NULL,
    issue INTEGER, queued_at TEXT NOT NULL, ended_at TEXT NOT NULL, admitted INTEGER NOT NULL,
    outage INTEGER NOT NULL, report_posted INTEGER NOT NULL, cleaned INTEGER NOT NULL,
    pruned INTEGER NOT NULL, archived INTEGER NOT NULL, record BLOB NOT NULL)"""

_INDEXES = (
    "CREATE INDEX IF NOT EXISTS {db}runs_issue ON runs (target, issue)",
    "CREATE INDEX IF NOT EXISTS {db}runs_pos ON runs (pos)",
    "CREATE INDEX IF NOT EXISTS {db}runs_unarchived ON runs (ended_at) WHERE NOT archived",
    "CREATE INDEX IF NOT EXISTS {db}runs_uncleaned ON runs (ended_at) "
    "WHERE NOT archived AND NOT cleaned",
    "CREATE INDEX IF NOT EXISTS {db}runs_unpruned ON runs (ended_at) "
    "WHERE NOT archived AND NOT pruned",
    "CREATE INDEX IF NOT EXISTS {db}runs_outage ON runs (outage) WHERE outage",
    "CREATE INDEX IF NOT EXISTS {db}runs_unreported ON runs (report_posted) "
    "WHERE issue IS NOT NULL AND NOT report_posted",
    "CREATE INDEX IF NOT EXISTS {db}runs_admitted ON runs (queued_at) WHERE admitted",
    "CREATE INDEX IF NOT EXISTS {db}runs_admitted_to ON runs (target, queued_at) "
    "WHERE admitted",
)

SELECTIONS = ("outage", "unarchived", "uncleaned", "unpruned", "unreported", "admitted")
"""What ``Runs.select`` can pick among settled runs: ended on an outage (the cooldown);
not archived (archives), and not cleaned or not pruned either (housekeeping); of an issue
with no report posted (follow-up); admitted (the week's budgets, with ``since``)."""
BY_ENDING = frozenset({"unarchived", "uncleaned", "unpruned"})
"""The selections ``Runs.select`` can cut at an ending (``ended_by``): housekeeping acts
on a settled run only some time after it ended."""
_WHERE = {
    "outage": "outage",
    "unarchived": "NOT archived",
    "uncleaned": "NOT archived AND NOT cleaned",
    "unpruned": "NOT archived AND NOT pruned",
    "unreported": "issue IS NOT NULL AND NOT report_posted",
    "admitted": "admitted",
}

_ENCODE = msgspec.msgpack.Encoder().encode
_DECODER: list[msgspec.msgpack.Decoder[RunRecord]] = []
"""Made on first use: building it walks every type a record holds (~15 ms), which a
quiet tick, decoding no row, need not pay."""

Row = tuple[object, ...]
Found = tuple[int, str, bytes]
"""(place in queue order, run id, encoded record)."""


def encode(run: RunRecord) -> bytes:
    return _ENCODE(run)


def decode(blob: bytes) -> RunRecord:
    """The record a row holds; one with an ending this version does not know (a newer
    version wrote it) is read with its ending kept as written (``Ending._missing_``)."""
    if not _DECODER:
        _DECODER.append(msgspec.msgpack.Decoder(RunRecord))
    try:
        return _DECODER[0].decode(blob)
    except msgspec.ValidationError:
        raw = msgspec.msgpack.decode(blob)
        ending = raw.pop("ending", None)
        run = msgspec.convert(raw, RunRecord)
        run.ending = None if ending is None else Ending(ending)
        return run


def row_of(run: RunRecord, pos: int, blob: bytes) -> Row:
    return (run.run_id, pos, run.target, run.issue, run.queued_at, run.ended_at or "",
            run.admitted, run.outage, run.report_posted, run.cleaned, run.pruned,
            run.archive is not None, blob)


class IndexUnreadable(Exception):
    """The home's database cannot be read as this version's index."""


class IndexDamaged(OuterloopError):
    """A query of the home's database failed (a file copied while it was written, a
    disk error): the database was removed, the next tick folds the ledger again."""


def remove(path: Path) -> None:
    """Remove a database and the files SQLite keeps beside it."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


class HistoryIndex:
    """One process's view of the settled runs: its pending rows over the home's
    database (``disk``), or over nothing (a fold that started cold, or a state built in
    memory)."""

    def __init__(self) -> None:
        import sqlite3  # here, not at the top: a lane loaded alone imports no database

        # "": a private temporary database, spilled to a file past the page cache
        self.db: sqlite3.Connection = sqlite3.connect(
            "", isolation_level=None, check_same_thread=False)
        self.db.execute(f"CREATE TABLE pending {_TABLE}")
        self.path: Path | None = None
        """The home's database attached as ``disk`` (None: none)."""
        self._view(disk=False)

    def _view(self, *, disk: bool) -> None:
        self.db.execute("DROP VIEW IF EXISTS settled")
        if disk:
            self.db.execute(
                "CREATE TEMP VIEW settled AS SELECT * FROM main.pending UNION ALL "
                "SELECT * FROM disk.runs WHERE run_id NOT IN (SELECT run_id FROM main.pending)")
        else:
            self.db.execute("CREATE TEMP VIEW settled AS SELECT * FROM main.pending")

    # the home's database --------------------------------------------------------------

    def attach(self, path: Path, version: int, *, create: bool = False) -> None:
        """Read (and write, ``save``) the home's database at ``path``; ``create``: make it
        when missing. Raises ``IndexUnreadable`` for one of another layout or damaged."""
        import sqlite3

        if not path.exists():
            if not create:
                raise IndexUnreadable(f"{path} is missing")
            remove(path)  # a removed database's -wal and -shm (a job still reading it,
            # a tick that left without closing it): never read with a new one
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db.execute("ATTACH DATABASE ? AS disk", (str(path),))
            self.db.execute("PRAGMA disk.busy_timeout = 30000")
            self.db.execute("PRAGMA busy_timeout = 30000")
            found = self.db.execute("PRAGMA disk.user_version").fetchone()[0]
            if found != version:
                if not create:
                    raise IndexUnreadable(f"{path} holds layout {found}, not {version}")
                self._make(version)
            self.db.execute("PRAGMA disk.journal_mode = WAL")
            self.db.execute("PRAGMA disk.synchronous = NORMAL")  # derived: never fsynced
            self.db.execute("SELECT count(*) FROM disk.fold").fetchone()
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("DETACH DATABASE disk")
            raise IndexUnreadable(f"{path}: {exc}") from exc
        except IndexUnreadable:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("DETACH DATABASE disk")
            raise
        self.path = path
        self._view(disk=True)

    def _make(self, version: int) -> None:
        """Another layout's (or no) tables: drop them, make this version's, empty."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DROP TABLE IF EXISTS disk.runs")
            self.db.execute("DROP TABLE IF EXISTS disk.fold")
            self.db.execute(f"CREATE TABLE disk.runs {_TABLE}")
            for index in _INDEXES:
                self.db.execute(index.format(db="disk."))
            self.db.execute("CREATE TABLE disk.fold (id INTEGER PRIMARY KEY CHECK (id = 1), "
                            "generation INTEGER NOT NULL, blob BLOB NOT NULL)")
            self.db.execute(f"PRAGMA disk.user_version = {int(version)}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def load_blob(self) -> tuple[int, bytes] | None:
        """The fold cache saved with the rows: (generation, blob), or None."""
        if self.path is None:
            return None
        found = self._one("SELECT generation, blob FROM disk.fold WHERE id = 1")
        return None if found is None else (int(found[0]), bytes(found[1]))

    def save(self, blob: bytes, generation: int | None, *, anew: bool) -> int | None:
        """Commit the pending rows and ``blob`` (the fold cache, naming how far each file
        was read) in one transaction; ``anew``: the rows replace every row (a cold fold).
        ``generation``: the one this process loaded; when another process saved since,
        nothing is written (its pair stands) and None is returned, else the new one."""
        import sqlite3

        assert self.path is not None
        try:
            return self._save(blob, generation, anew=anew)
        except sqlite3.DatabaseError:
            self.discard()  # derived: the next saving fold makes it again
            return None

    def _save(self, blob: bytes, generation: int | None, *, anew: bool) -> int | None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            found = self.db.execute("SELECT generation FROM disk.fold WHERE id = 1").fetchone()
            now = None if found is None else int(found[0])
            if not anew and now != generation:
                self.db.execute("ROLLBACK")
                return None
            if anew:
                self.db.execute("DELETE FROM disk.runs")
            self.db.execute("INSERT OR REPLACE INTO disk.runs SELECT * FROM main.pending")
            following = (now or 0) + 1
            self.db.execute("INSERT OR REPLACE INTO disk.fold VALUES (1, ?, ?)",
                            (following, blob))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("DELETE FROM main.pending")
        return following

    # rows -----------------------------------------------------------------------------

    def put(self, rows: Iterable[Row]) -> None:
        self.db.executemany(f"INSERT OR REPLACE INTO main.pending VALUES "
                            f"({', '.join('?' * len(COLUMNS))})", rows)

    def drop(self, run_id: str) -> None:
        """Forget a pending row (one on disk is hidden by the caller)."""
        self.db.execute("DELETE FROM main.pending WHERE run_id = ?", (run_id,))

    def _query(self, sql: str, args: Iterable[object] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of a query; a database that fails it is removed (``IndexDamaged``)."""
        import sqlite3

        try:
            yield from self.db.execute(sql, tuple(args))
        except sqlite3.DatabaseError as exc:
            where = self.path
            self.discard()
            raise IndexDamaged(
                f"the history index ({where}) cannot be read ({exc}); it was removed, so "
                f"the next tick folds the ledger from the start (nothing is lost: the "
                f"ledger is whole)") from exc

    def _one(self, sql: str, args: Iterable[object] = ()) -> tuple[Any, ...] | None:
        return next(self._query(sql, args), None)

    def _count(self, where: str, args: list[object]) -> int:
        """How many rows ``where`` holds of: counted in each table apart (through the
        ``settled`` view SQLite read every row whole, its record too: 12 ms for a
        week's 10,000 runs, not 0.5)."""
        query = f"SELECT (SELECT count(*) FROM main.pending WHERE {where})"
        if self.path is not None:
            # less the rows a pending one stands for: looked up by id, few (a "NOT IN"
            # read every row for its id, 7 ms a week's 10,000 runs)
            query += (f" + (SELECT count(*) FROM disk.runs WHERE {where})"
                      f" - (SELECT count(*) FROM disk.runs WHERE {where} AND run_id IN "
                      f"(SELECT run_id FROM main.pending))")
            args = [*args, *args, *args]
        found = self._one(query, args)
        return int(found[0]) if found is not None else 0

    def get(self, run_id: str) -> Found | None:
        found = self._one("SELECT pos, run_id, record FROM settled WHERE run_id = ?",
                          (run_id,))
        return None if found is None else (found[0], found[1], bytes(found[2]))

    def count(self) -> int:
        return self._count("1", [])

    def ids(self) -> set[str]:
        """Every row's run id."""
        return {run_id for (run_id,) in self._query("SELECT run_id FROM settled")}

    def holding(self, run_ids: Iterable[str]) -> int:
        """How many of ``run_ids`` have a row."""
        ids, count = list(run_ids), 0
        for at in range(0, len(ids), 500):
            chunk = ids[at:at + 500]
            count += self._count(f"run_id IN ({', '.join('?' * len(chunk))})", list(chunk))
        return count

    def every(self) -> Iterator[Found]:
        """Every row, in queue order."""
        for pos, run_id, blob in self._query(
                "SELECT pos, run_id, record FROM settled ORDER BY pos"):
            yield pos, run_id, bytes(blob)

    def rows(self) -> Iterator[Row]:
        """Every row whole (a copy's, ``verify``'s)."""
        yield from self._query(f"SELECT {', '.join(COLUMNS)} FROM settled ORDER BY pos")

    def select(self, among: str, since: str | None = None,
               ended_by: str | None = None) -> list[Found]:
        """The rows of the selection ``among`` (``SELECTIONS``), in no order (sorted by the
        caller: an ``ORDER BY`` made SQLite scan every row in queue order instead of
        the selection's index)."""
        where, args = _WHERE[among], []
        if since is not None:
            where += " AND queued_at >= ?"
            args.append(since)
        if ended_by is not None:
            where += " AND ended_at <= ?"  # "" for none: a run with no ending is cut in
            args.append(ended_by)
        return [(pos, run_id, bytes(blob)) for pos, run_id, blob in self._query(
            f"SELECT pos, run_id, record FROM settled WHERE {where}", args)]

    def of_issue(self, target: str, issue: int) -> list[Found]:
        return [(pos, run_id, bytes(blob)) for pos, run_id, blob in self._query(
            "SELECT pos, run_id, record FROM settled WHERE target = ? AND issue = ?",
            (target, issue))]

    def admitted_count(self, since: str, target: str | None, besides: Iterable[str]) -> int:
        """How many rows (of ``target``; None: any), ``besides`` aside, were admitted and
        queued at ``since`` or later: counted by SQLite, no row read out (a week's runs
        are every run of a busy home)."""
        where = "admitted AND queued_at >= ?"
        args: list[object] = [since]
        if target is not None:
            where += " AND target = ?"
            args.append(target)
        count = self._count(where, args)
        left_out = list(besides)
        for at in range(0, len(left_out), 500):  # within SQLite's count of parameters
            chunk = left_out[at:at + 500]
            count -= self._count(f"{where} AND run_id IN ({', '.join('?' * len(chunk))})",
                                 [*args, *chunk])
        return count

    def copy(self) -> HistoryIndex:
        """Another index holding this one's rows as pending (no database attached)."""
        other = HistoryIndex()
        other.put(self.rows())
        return other

    def discard(self) -> None:
        """Remove the home's database (derived: the next saving fold makes it again from
        the ledger); this connection reads on what it had."""
        if self.path is not None:
            remove(self.path)

    def close(self) -> None:
        self.db.close()
