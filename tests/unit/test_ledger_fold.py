"""Folding events into State, and the incremental cache agreeing with a cold fold."""

from __future__ import annotations

import json
from pathlib import Path

from outerloop.ledger import events as ev
from outerloop.ledger.fold import compact
from outerloop.ledger.records import Ending, ParkReason, RunRecord, RunState, State
from outerloop.ledger.state import rebuild
from outerloop.ledger.store import LedgerWriter, run_file, tick_file

TARGET = "owner/name"


def _queue(writer: LedgerWriter, run: str, issue: int = 1) -> None:
    writer.append("run_queued", run=run, target=TARGET, benchmark="tour", agent="agent-01",
                  issue=issue, hypothesis="h")


def test_run_ends_once_when_two_endings_are_recorded(tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    runw = LedgerWriter(run_file(tmp_path, TARGET, "r1"))
    runw.append("run_ended", run="r1", ending="negative-result")
    tick.append("run_ended", run="r1", ending="aborted")
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert run.state == "ended" and run.ending == "negative-result"


def test_an_unknown_ending_is_kept_as_written_when_a_newer_version_recorded_it(
        tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    tick.append("run_ended", run="r1", ending="withdrawn")
    cold = rebuild(tmp_path).runs["r1"]
    warm = rebuild(tmp_path).runs["r1"]  # from the pickled cache
    for run in (cold, warm):
        assert run.ended and run.ending == "withdrawn" and f"{run.ending}" == "withdrawn"
        assert isinstance(run.ending, Ending) and json.dumps(run.ending) == '"withdrawn"'


def test_run_state_park_reason_and_ending_print_as_plain_strings_when_serialised(
        tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    runw = LedgerWriter(run_file(tmp_path, TARGET, "r1"))
    runw.append("parked", run="r1", reason="jobs", job_ids=["5"], wake_job="6")
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert (run.state, run.park_reason) == (RunState.PARKED, ParkReason.JOBS)
    assert json.dumps([run.state, run.park_reason]) == '["parked", "jobs"]'
    assert f"{run.state}: {run.park_reason}" == "parked: jobs" and str(run.state) == "parked"
    runw.append("run_ended", run="r1", ending="aborted")
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert run.ending is Ending.ABORTED and json.dumps(run.ending) == '"aborted"'


def test_a_settled_run_keeps_only_its_credited_verdicts_when_compacted() -> None:
    run = RunRecord(run_id="r1", target=TARGET, benchmark="tour", agent="agent-01",
                    issue=None, issue_title="", hypothesis="h", queued_at="2026-01-01",
                    state=RunState.ENDED, ending=Ending.MERGED)
    measured = [ev.Verdict(seq=n, at="2026-01-02", verdict=verdict, benchmark="tour")
                for n, verdict in enumerate(["no-improvement", "improved", "eval-error"])]
    run.verdicts = list(measured)
    run.launches = [ev.Launched(seq=9, at="2026-01-02", sleep=1, name="a", job_id="5",
                                minutes=5, command="true", seal="s")]
    state = State(runs={"r1": run})
    assert compact(state, record_lane=False) == 1
    assert run.settled and run.verdicts == [measured[1]] and run.launches == []


def test_intent_without_done_is_pending_when_folded(tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    tick.append("intent", key="job:a", action={"kind": "cancel_job", "target": TARGET,
                                                "job_id": "1"})
    tick.append("intent", key="job:b", action={"kind": "cancel_job", "target": TARGET,
                                                "job_id": "2"})
    tick.append("done", key="job:b", result={"accepted": True})
    state = rebuild(tmp_path, use_cache=False)
    assert [p.key for p in state.intents.values()] == ["job:a"]


def test_submitted_job_is_registered_when_done_follows_intent(tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    action = {"kind": "submit_job", "target": TARGET, "run": "r1", "purpose": "climb",
              "spec": {"name": "ol-r1-climb"}}
    tick.append("intent", run="r1", key="job:ol-r1-climb", action=action)
    tick.append("done", run="r1", key="job:ol-r1-climb", result={"job_id": "10000001"})
    state = rebuild(tmp_path, use_cache=False)
    assert state.jobs["10000001"].purpose == "climb"
    assert state.runs["r1"].admitted and state.runs["r1"].climb_job == "10000001"


def test_incremental_fold_matches_cold_fold_when_files_grow(tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    rebuild(tmp_path)
    runw = LedgerWriter(run_file(tmp_path, TARGET, "r1"))
    runw.append("leg_started", run="r1", leg=1, role="climb")
    runw.append("parked", run="r1", reason="jobs", job_ids=["5"], wake_job="6")
    _queue(tick, "r2", issue=2)
    warm = rebuild(tmp_path)
    cold = rebuild(tmp_path, use_cache=False, save_cache=False)
    assert warm.fresh == 3
    assert warm.runs == cold.runs and warm.events == cold.events


def test_quiet_rebuild_folds_nothing_when_no_file_changed(tmp_path: Path) -> None:
    _queue(LedgerWriter(tick_file(tmp_path, TARGET)), "r1")
    rebuild(tmp_path)
    again = rebuild(tmp_path)
    assert again.fresh == 0 and "r1" in again.runs


def test_cache_is_dropped_when_a_file_shrinks(tmp_path: Path) -> None:
    path = tick_file(tmp_path, TARGET)
    writer = LedgerWriter(path)
    _queue(writer, "r1")
    _queue(writer, "r2", issue=2)
    rebuild(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0])
    state = rebuild(tmp_path)
    assert set(state.runs) == {"r1"}
