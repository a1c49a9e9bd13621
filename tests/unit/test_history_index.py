"""The history index (issue 52, point 2): settled runs are rows of a SQLite database
under ``cache/``, saved with the fold cache in one transaction, derived from the ledger
and checked against it by ``verify``."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.kernel.actions import PublishRecord
from outerloop.ledger import events as ev
from outerloop.ledger import rebuild as ledger_state
from outerloop.ledger.book import LedgerWriter, rebuild, verify_home
from outerloop.ledger.events import EffectResult
from outerloop.ledger.history_index import INDEX_FILE, IndexDamaged, decode, encode, row_of
from outerloop.ledger.state import RunRecord
from tests.settled_history import settled_runs

TARGET = "o/n"
VERSION = ledger_state.FOLD_VERSION


def _history(home: Path, runs: int, first: int = 0) -> LedgerWriter:
    """``runs`` runs that ended and were recorded: settled."""
    return settled_runs(home, TARGET, runs, first)


def _rows(home: Path) -> dict[str, RunRecord]:
    with sqlite3.connect(home / INDEX_FILE) as db:
        return {run_id: decode(blob) for run_id, blob in db.execute(
            "SELECT run_id, record FROM runs")}


def test_a_saving_fold_writes_each_settled_run_as_a_row_holding_its_whole_record(
        tmp_path: Path) -> None:
    _history(tmp_path, 3)
    state = rebuild(tmp_path)
    assert state.runs.live() == []
    rows = _rows(tmp_path)
    assert sorted(rows) == [f"tour-{n}-agent-01" for n in range(3)]
    assert all(rows[run_id] == state.runs[run_id] for run_id in rows)
    with sqlite3.connect(tmp_path / INDEX_FILE) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA user_version").fetchone()[0] == VERSION


def test_a_fold_that_does_not_save_writes_no_row(tmp_path: Path) -> None:
    _history(tmp_path, 2)
    rebuild(tmp_path)
    _history(tmp_path, 2, first=2)
    viewed = rebuild(tmp_path, save_cache=False)
    assert len(viewed.runs) == 4
    assert sorted(_rows(tmp_path)) == ["tour-0-agent-01", "tour-1-agent-01"]


def test_a_save_after_another_process_saved_writes_nothing(tmp_path: Path) -> None:
    """Rows and the cache naming how far each file was read go together: a process
    whose cache is older than the one saved since keeps out of it."""
    _history(tmp_path, 2)
    rebuild(tmp_path)
    mine = ledger_state._load_cache(tmp_path / INDEX_FILE)
    assert mine is not None and mine.generation is not None
    _history(tmp_path, 1, first=2)
    rebuild(tmp_path)  # another process saves first
    index = mine.state.runs.index
    run = RunRecord(run_id="stray", target=TARGET, benchmark="tour", agent="a", issue=None,
                    issue_title="", hypothesis="", queued_at="2026-01-01T00:00:00Z")
    index.put([row_of(run, 99, encode(run))])
    assert index.save(b"stale", mine.generation, anew=False) is None
    assert "stray" not in _rows(tmp_path)
    assert ledger_state._load_cache(tmp_path / INDEX_FILE) is not None


def test_a_removed_database_is_made_again_while_a_job_still_reads_the_old_one(
        tmp_path: Path) -> None:
    """What ``docs/operate.md`` tells an operator: remove ``cache/history.sqlite3``. Its
    ``-wal`` and ``-shm`` stay beside it while a run's job still reads it (and after a
    tick, which leaves without closing it); a new database read with them failed every
    save ("disk I/O error")."""
    _history(tmp_path, 2)
    rebuild(tmp_path)
    path = tmp_path / INDEX_FILE
    job = subprocess.Popen([sys.executable, "-c", (  # a run's job, reading on
        "import sqlite3, sys, time; db = sqlite3.connect(sys.argv[1]); "
        "db.execute('SELECT count(*) FROM runs').fetchone(); print('read', flush=True); "
        "time.sleep(120)"), str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert job.stdout is not None and job.stdout.readline() == "read\n"
        _history(tmp_path, 2, first=2)
        rebuild(tmp_path)
        path.unlink()
        again = rebuild(tmp_path)
        assert len(again.runs) == 4 and sorted(_rows(tmp_path)) == sorted(again.runs)
    finally:
        job.kill()
        job.wait()


def test_verify_finds_the_index_whole_and_names_a_row_that_disagrees_with_the_ledger(
        tmp_path: Path) -> None:
    tick = _history(tmp_path, 3)
    rebuild(tmp_path)
    tick.append(ev.Archived(run="tour-1-agent-01", where="remote:x", files=[]))
    rebuild(tmp_path)  # a settled run read back, archived and settled again
    report = verify_home(tmp_path)
    assert report.index_rows == 3 and report.index == []
    assert "match the ledger" in report.summary()
    with sqlite3.connect(tmp_path / INDEX_FILE) as db:
        db.execute("UPDATE runs SET archived = 0 WHERE run_id = 'tour-1-agent-01'")
        db.execute("DELETE FROM runs WHERE run_id = 'tour-2-agent-01'")
    report = verify_home(tmp_path)
    assert report.index == [
        "tour-2-agent-01: settled by the ledger, not in the index",
        "tour-1-agent-01: archived 0 (index) vs 1 (ledger)"]
    assert "disagrees with the ledger on 2 runs" in report.summary()
    assert report.as_json()["index"] == report.index


def test_a_cold_rebuild_makes_every_row_again(tmp_path: Path) -> None:
    _history(tmp_path, 3)
    warm = rebuild(tmp_path)
    with sqlite3.connect(tmp_path / INDEX_FILE) as db:
        db.execute("DELETE FROM runs")
    cold = rebuild(tmp_path, use_cache=False)
    assert cold.runs == warm.runs and len(_rows(tmp_path)) == 3


def test_a_state_lists_a_run_once_when_another_process_settled_it_since(
        tmp_path: Path) -> None:
    """A view's state holds a run live; a tick settles it and saves its row: the view,
    reading the rows on, lists the run once (its live record), not twice."""
    tick = _history(tmp_path, 1)
    run = "tour-9-agent-01"
    tick.append(ev.RunQueued(run=run, target=TARGET, benchmark="tour", agent="agent-01",
                             issue=None, hypothesis="h"))
    tick.append(ev.RunEnded(run=run, ending="negative-result", report="r"))
    rebuild(tmp_path)
    older = rebuild(tmp_path, save_cache=False)
    assert [r.run_id for r in older.runs.live()] == [run]
    action = PublishRecord(target=TARGET, branch="research-log", files={}, reports=[run],
                           summary="s9", digest="d9")
    tick.append(ev.Intent(key=action.key, action=action))
    tick.append(ev.Done(key=action.key, result=EffectResult(reports=[run])))
    assert rebuild(tmp_path).runs.summarised(run)  # another process saved its row
    assert run in _rows(tmp_path)
    assert list(older.runs) == ["tour-0-agent-01", run] and len(older.runs) == 2
    assert [r.run_id for r in older.runs.select("unarchived")] == ["tour-0-agent-01", run]


def test_a_database_that_is_not_one_is_made_again_by_the_next_saving_fold(
        tmp_path: Path) -> None:
    """A copy taken while it was written, a disk's damage: derived, it is made again."""
    _history(tmp_path, 2)
    rebuild(tmp_path)
    for suffix in ("-wal", "-shm"):
        Path(f"{tmp_path / INDEX_FILE}{suffix}").unlink(missing_ok=True)
    (tmp_path / INDEX_FILE).write_bytes(b"not a database " * 512)
    again = rebuild(tmp_path)
    assert again.fresh > 0 and sorted(_rows(tmp_path)) == sorted(again.runs)


def test_a_query_the_database_fails_removes_it_and_says_the_next_tick_folds_again(
        tmp_path: Path) -> None:
    _history(tmp_path, 2)
    rebuild(tmp_path)
    state = rebuild(tmp_path, save_cache=False)
    with sqlite3.connect(tmp_path / INDEX_FILE) as db:
        db.execute("DROP TABLE runs")
    with pytest.raises(IndexDamaged, match="next tick folds the ledger from the start"):
        state.runs.select("unarchived")
    assert not (tmp_path / INDEX_FILE).exists()
    again = rebuild(tmp_path)
    assert again.fresh > 0 and len(again.runs) == 2 and len(_rows(tmp_path)) == 2


def _resident_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / 2**20


def test_rows_a_cold_fold_settles_before_its_save_do_not_stay_in_memory() -> None:
    """A cold fold settles every run of history before its one save: the pending rows
    wait in a private temporary database that spills to a file, not in memory (an
    in-memory table held ~250 MB of records at 100,000 runs)."""
    from outerloop.ledger.history_index import COLUMNS, HistoryIndex

    index = HistoryIndex()
    record = bytes(range(256)) * 64  # 16 KB a row, as a real settled run's record
    before = _resident_mb()
    for batch in range(40):
        index.put((f"run-{batch}-{n}", batch * 100 + n, TARGET, None, "2026-01-01",
                   "2026-01-02", 1, 0, 1, 0, 0, 0, record) for n in range(100))
    grew = _resident_mb() - before
    (held,) = index.db.execute("SELECT count(*) FROM main.pending").fetchone()
    assert held == 4000 and len(COLUMNS) == 13
    assert grew < 25, f"64 MB of pending rows grew this process by {grew:.0f} MB"
    index.close()
