"""A quiet rebuild costs what changed, not history: the settled runs are rows of the
history index read only when a reader needs them, a ledger folder unchanged since its
listing is not listed again, and the research-log's old record keys are not kept."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from outerloop.errors import OuterloopError
from outerloop.kernel.actions import PublishRecord
from outerloop.ledger import events as ev
from outerloop.ledger.book import RUNS_DIR, LedgerWriter, rebuild, run_file
from outerloop.ledger.events import EffectResult
from outerloop.ledger.fold import apply_event, compact
from outerloop.ledger.history import Runs
from outerloop.ledger.state import RunRecord, RunState, State
from tests.settled_history import record, settled_runs

TARGET = "demo/tinytsp"
RUNS = f"ledger/demo__tinytsp/{RUNS_DIR}"


def _history(home: Path, runs: int, first: int = 0) -> LedgerWriter:
    """``runs`` runs that ended, were recorded, cleaned and pruned: settled, in no
    selection a tick reads every time."""
    return settled_runs(home, TARGET, runs, first, housekeeping=True)


def _record(tick: LedgerWriter, n: int, reports: list[str], board: str = "") -> str:
    return record(tick, TARGET, n, reports, board)


def _age_folders(home: Path) -> None:
    """The ledger folders last changed a minute ago (past the racy window)."""
    past = time.time() - 60
    for folder in (home / RUNS,):
        os.utime(folder, (past, past))


def _cold(home: Path) -> State:
    """A cold fold of the whole ledger, compacted as a tick's cache is."""
    state = rebuild(home, use_cache=False, save_cache=False)
    compact(state)
    return state


def _damage_rows(home: Path, keep: str = "") -> None:
    """Every settled run's record in the home's history index (but ``keep``'s) made
    unreadable: a reader that decodes one fails."""
    with sqlite3.connect(home / "cache" / "history.sqlite3") as db:
        db.execute("UPDATE runs SET record = x'c1' WHERE run_id != ?", (keep,))


def test_a_quiet_rebuild_reads_no_settled_run_when_no_reader_needs_one(
        tmp_path: Path) -> None:
    _history(tmp_path, 5)
    rebuild(tmp_path)
    _damage_rows(tmp_path)
    quiet = rebuild(tmp_path)
    assert quiet.fresh == 0 and len(quiet.runs) == 5 and quiet.runs.live() == []
    assert quiet.runs.select("uncleaned") == [] and quiet.runs.select("outage") == []
    with pytest.raises(OuterloopError, match=r"history index.*cannot be read.*index was removed"):
        list(quiet.runs.values())  # a reader of every run reads them: here, damaged
    healed = rebuild(tmp_path)  # the next one folds the ledger from the start
    assert healed.fresh > 0 and healed.runs == _cold(tmp_path).runs
    assert len(list(healed.runs.values())) == 5


def test_settled_runs_are_read_back_whole_when_a_reader_needs_them(
        tmp_path: Path) -> None:
    _history(tmp_path, 5)
    rebuild(tmp_path)
    warm, cold = rebuild(tmp_path), _cold(tmp_path)
    assert list(warm.runs) == list(cold.runs) and warm.runs == cold.runs
    assert warm.runs["tour-3-agent-01"].cleaned and warm.runs.summarised("tour-1-agent-01")


def test_runs_settled_over_several_rebuilds_fold_like_a_cold_rebuild(
        tmp_path: Path) -> None:
    tick = _history(tmp_path, 4)
    rebuild(tmp_path)
    for first in (4, 6, 9):
        tick = _history(tmp_path, 2 if first < 9 else 3, first)
        rebuild(tmp_path)
    tick.append(ev.Archived(run="tour-2-agent-01", where="remote:x", files=[]))
    rebuild(tmp_path)  # a settled run is read back, changed and settled again
    warm, cold = rebuild(tmp_path), _cold(tmp_path)
    assert len(warm.runs) == 11 and warm.runs == cold.runs
    assert warm.runs["tour-2-agent-01"].archive is not None


def test_a_runs_folder_unchanged_since_its_listing_is_not_listed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _history(tmp_path, 3)
    _age_folders(tmp_path)
    rebuild(tmp_path)  # lists the folder, past the racy window: its mtime is kept
    rebuild(tmp_path)
    listed: list[str] = []
    real = os.listdir

    def listdir(path: str) -> list[str]:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    assert rebuild(tmp_path).fresh == 0
    assert not any(p.rstrip("/").endswith(RUNS) for p in listed)


def test_a_file_created_in_a_changed_folder_is_found(tmp_path: Path) -> None:
    _history(tmp_path, 2)
    _age_folders(tmp_path)
    rebuild(tmp_path)
    rebuild(tmp_path)
    stray = run_file(tmp_path, TARGET, "stray-run")
    LedgerWriter(stray).append(ev.Note(level="info", text="by hand"))
    state = rebuild(tmp_path)
    assert state.fresh == 1 and state.notes[-1][2] == "by hand"


def test_a_live_runs_file_is_read_when_created_within_the_racy_window(
        tmp_path: Path) -> None:
    tick = _history(tmp_path, 2)
    tick.append(ev.RunQueued(run="new-run", target=TARGET, benchmark="tour",
                             agent="agent-02", issue=None, hypothesis="h"))
    _age_folders(tmp_path)
    rebuild(tmp_path)
    folder = tmp_path / RUNS
    before = folder.stat().st_mtime_ns
    LedgerWriter(run_file(tmp_path, TARGET, "new-run")).append(
        ev.LegStarted(run="new-run", leg=1, role="climb"))
    os.utime(folder, ns=(before, before))  # its mtime did not move (same clock tick)
    assert rebuild(tmp_path).runs["new-run"].legs == 1


def test_old_research_log_records_leave_no_done_key_and_the_latest_is_kept() -> None:
    state = State()
    tick = "demo__tinytsp/tick.jsonl"
    keys = []
    for n in range(3):
        action = PublishRecord(target=TARGET, branch="research-log", files={},
                               summary=f"s{n}", board=f"b{n}" if n < 2 else "",
                               digest=f"d{n}")
        keys.append(action.key)
        apply_event(state, tick, ev.Intent(seq=2 * n + 1, at="2026-01-01", key=action.key,
                                           action=action))
        apply_event(state, tick, ev.Done(seq=2 * n + 2, at="2026-01-01", key=action.key,
                                         result=EffectResult(summary=f"s{n}",
                                                             board=action.board or None)))
    compact(state)
    assert [k for k in state.done_keys if k.startswith("record:")] == [keys[-1]]
    published = state.published[TARGET]
    assert (published.summary, published.board, published.key) == ("s2", "b1", keys[-1])


def test_a_settled_run_a_lane_selects_is_found_without_reading_the_others(
        tmp_path: Path) -> None:
    tick = _history(tmp_path, 4)
    tick.append(ev.RunQueued(run="late", target=TARGET, benchmark="tour", agent="agent-02",
                             issue=None, hypothesis="h"))
    tick.append(ev.RunEnded(run="late", ending="negative-result", report="r"))
    _record(tick, 99, ["late"])  # settled, not yet cleaned: housekeeping selects it
    rebuild(tmp_path)
    _damage_rows(tmp_path, keep="late")
    quiet = rebuild(tmp_path)
    assert [r.run_id for r in quiet.runs.select("uncleaned")] == ["late"]
    assert quiet.runs.summarised("late")


def test_a_folder_listed_right_after_it_changed_is_listed_again(tmp_path: Path) -> None:
    """Its next change may fall within the same tick of its clock, leaving its mtime
    where it was: such a listing is not trusted (``RACY_NS``)."""
    _history(tmp_path, 2)
    rebuild(tmp_path)  # the folder changed just now
    folder = tmp_path / RUNS
    before = folder.stat().st_mtime_ns
    LedgerWriter(run_file(tmp_path, TARGET, "stray-run")).append(
        ev.Note(level="info", text="by hand"))
    os.utime(folder, ns=(before, before))
    assert rebuild(tmp_path).notes[-1][2] == "by hand"


def test_a_rebuild_folding_only_live_runs_events_reads_no_settled_run(
        tmp_path: Path) -> None:
    tick = _history(tmp_path, 4)
    tick.append(ev.RunQueued(run="live", target=TARGET, benchmark="tour", agent="agent-02",
                             issue=None, hypothesis="h"))
    rebuild(tmp_path)
    _damage_rows(tmp_path)
    LedgerWriter(run_file(tmp_path, TARGET, "live"), tick.clock).append(
        ev.LegStarted(run="live", leg=1, role="climb"))
    state = rebuild(tmp_path)  # folds, compacts and saves: the cold part stays unread
    assert state.fresh == 1 and state.runs["live"].legs == 1


def test_the_runs_of_an_issue_are_looked_up_without_reading_the_others() -> None:
    runs = Runs()
    for n in (1, 2):
        runs[f"r{n}"] = RunRecord(
            run_id=f"r{n}", target=TARGET, benchmark="tour", agent="agent-01", issue=n,
            issue_title="t", hypothesis="", queued_at="2026-01-01T00:00:00Z", state=RunState.ENDED,
            report_posted=True, recorded=True, settled=True, cleaned=True, pruned=True)
        runs.summarise(f"r{n}")
    runs.index.db.execute("UPDATE pending SET record = x'c1' WHERE run_id = 'r1'")
    assert runs.of_issue(TARGET, 3) == [] and len(runs) == 2
    assert [r.run_id for r in runs.of_issue(TARGET, 2)] == ["r2"]
    with pytest.raises(OuterloopError, match=r"row of run r1 .* cannot be read"):
        runs.of_issue(TARGET, 1)
