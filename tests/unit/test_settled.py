"""Settled runs held as summaries (``ledger/settled.py``) and the merged fold
(``ledger/stream.py``): the tick's answers do not change, history stops costing."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from outerloop.config import Settings, TargetSettings
from outerloop.contract import load_contract_text
from outerloop.forge.base import Association, Issue
from outerloop.kernel.actions import PublishRecord
from outerloop.kernel.lanes import admission, endpoints, followup, housekeeping, intake
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger import rebuild as ledger_state
from outerloop.ledger.book import LedgerWriter, rebuild, run_file, tick_file
from outerloop.ledger.events import EffectResult
from outerloop.ledger.fold import compact
from outerloop.ledger.history import Runs
from outerloop.ledger.history_index import HistoryIndex, IndexUnreadable, decode, encode
from outerloop.ledger.state import RunRecord, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONTRACT = load_contract_text("""
benchmarks:
  - {name: tour, command: python e.py, metric: m, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")


def _stamp(delta: timedelta = timedelta()) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _settled(run_id: str, issue: int | None = 1, **fields: Any) -> RunRecord:
    run = RunRecord(run_id=run_id, target=TARGET, benchmark="tour", agent="agent-01",
                    issue=issue, issue_title="idea", hypothesis="", queued_at=_stamp(),
                    state="ended", ending="negative-result", ended_at=_stamp(),
                    report_posted=True, recorded=True, settled=True, legs=2)
    for key, value in fields.items():
        setattr(run, key, value)
    return run


def _view(state: State) -> TickView:
    issue = Issue(number=1, title="idea", body="tour", author="maintainer",
                  author_association=Association.OWNER, state="open", created_at=NOW,
                  updated_at=NOW)
    seen = TargetObservation(repo=TARGET, contract=CONTRACT, default_branch="main",
                             base_sha="a" * 40, issues=[issue])
    obs = Observations(now=NOW, jobs={}, targets={TARGET: seen})
    settings = Settings(home=Path("/nonexistent"), targets=[TargetSettings(repo=TARGET)])
    settings.archive.to = "remote:bucket"
    return TickView(state=state, obs=obs, settings=settings)


def _unarchived(view: TickView) -> TickView:
    view.settings.archive.to = ""
    return view


def test_a_row_gives_back_an_equal_record_when_details_are_not_at_default() -> None:
    run = _settled("r1", verdicts=[ev.Verdict(seq=3, at="t", verdict="improved",
                                              benchmark="tour")],
                   archive=ev.Archived(seq=1, at="t", where="w", files=[]),
                   archive_jobs=["7"], job_ids=["7"], seeds={1: [2, 3]},
                   posted={"m"}, park_left_out=["x"], cost_usd=1.5)
    assert decode(encode(run)) == run


def test_a_row_keeps_an_ending_this_version_does_not_know() -> None:
    """A newer version wrote an ending this one lacks: the row is read with the ending
    kept as written (``Ending._missing_``), as the fold keeps it."""
    run = _settled("r1", ending=ev.RunEnded(run="r1", ending="vanished").ending)
    back = decode(encode(run))
    assert back == run and back.ending == "vanished"


def test_reading_a_summarised_run_by_id_brings_back_its_record() -> None:
    run = _settled("r1")
    runs = Runs({"r1": run, "r2": _settled("r2")})
    runs.summarise("r1")
    assert runs.summarised("r1") and runs.live() == [runs["r2"]]
    assert runs.get("r1") == run and not runs.summarised("r1")
    assert list(runs) == ["r1", "r2"]  # queue order kept


def test_a_pickled_state_holds_its_live_runs_and_leaves_the_rows_to_the_index() -> None:
    runs = Runs({"r1": _settled("r1"), "r2": _settled("r2", settled=False)})
    runs.summarise("r1")
    restored = pickle.loads(pickle.dumps(runs))
    assert restored.live() == runs.live() and "r1" not in restored
    restored.index = runs.index.copy()  # what the fold cache does: its rows beside it
    assert restored == runs and restored.summarised("r1")


def test_an_index_of_another_layout_is_refused_and_made_again(tmp_path: Path) -> None:
    path = tmp_path / ledger_state.CACHE_FILE
    index = HistoryIndex()
    index.attach(path, 1, create=True)
    index.close()
    with pytest.raises(IndexUnreadable, match="layout 1"):
        HistoryIndex().attach(path, ledger_state.FOLD_VERSION)
    _settling_history(tmp_path, 2)
    assert ledger_state._load_cache(path) is None
    rebuild(tmp_path)  # a cold fold makes it again, of this layout
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == ledger_state.FOLD_VERSION
        assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
    assert ledger_state._load_cache(path) is not None


def _outage(state: State) -> None:
    state.runs["o"] = _settled("o", outage=True, refusal="auth", ended_at=_stamp(-timedelta(
        minutes=10)))


def _week(state: State) -> None:
    for n in range(2):
        state.runs[f"w{n}"] = _settled(f"w{n}", issue=None, admitted=True)
    state.runs["q"] = RunRecord(run_id="q", target=TARGET, benchmark="tour", agent="agent-02",
                                issue=None, issue_title="", hypothesis="", queued_at=_stamp())


def _week_claims(state: State) -> None:
    for n in range(2):
        state.runs[f"w{n}"] = _settled(f"w{n}", issue=None, admitted=True)


def _claims(state: State) -> None:
    for n in range(3):
        state.runs[f"c{n}"] = _settled(f"c{n}", claim_no=n + 1)


def _housekeeping(state: State) -> None:
    old = _stamp(-timedelta(days=40))
    state.runs["h1"] = _settled("h1", issue=None, ended_at=old)
    state.runs["h2"] = _settled("h2", issue=None, ended_at=old, cleaned=True)
    state.runs["h3"] = _settled("h3", issue=None, ended_at=old, cleaned=True, pruned=True,
                                archive=ev.Archived(seq=1, at="t", where="w", files=[]))


def _report(state: State) -> None:
    state.runs["p"] = _settled("p", report_posted=False)


LANES: dict[str, Callable[[TickView], object]] = {
    "endpoints": lambda v: (endpoints.plan(v, []), endpoints.report(v.state, v.settings, NOW)),
    "admission": lambda v: (admission.plan(v, []), admission.why_waiting(v, [])),
    "intake": lambda v: (intake.plan(v, []), v.state.runs_of_issue(TARGET, 1)),
    "housekeeping": lambda v: housekeeping.plan(v, []),
    "housekeeping without archive": lambda v: housekeeping.plan(_unarchived(v), []),
    "followup": lambda v: followup.plan(v, []),
}


@pytest.mark.parametrize("history", [_outage, _week, _week_claims, _claims, _housekeeping, _report])
def test_every_lane_answers_the_same_when_settled_runs_are_summarised(
        history: Callable[[State], None]) -> None:
    full = State()
    history(full)
    summarised = copy.deepcopy(full)
    for run in summarised.runs.live():
        if run.settled:
            summarised.runs.summarise(run.run_id)
    assert len(summarised.runs.live()) < len(full.runs)
    for name, lane in LANES.items():
        assert lane(_view(summarised)) == lane(_view(full)), name


# -- the merged fold ---------------------------------------------------------------


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _comparable(state: State) -> dict[str, Any]:
    data = dataclasses.asdict(state)
    data.pop("fresh")
    return data


def test_a_file_out_of_time_order_is_folded_in_order_when_its_lines_have_no_clock(
        tmp_path: Path) -> None:
    """Lines from before the logical clock, with a wall clock that stepped back: the
    merge meets an event older than one it folded and folds everything sorted."""
    run = "tour-1-agent-01"

    def feedback(seq: int, seconds: int, text: str) -> dict[str, Any]:
        return {"v": 1, "seq": seq, "at": _stamp(timedelta(seconds=seconds)),
                "kind": "feedback", "run": run, "source_id": "c1", "author": "a",
                "text": text, "source_kind": "comment", "where": ""}

    _write(tick_file(tmp_path, TARGET), [
        {"v": 1, "seq": 1, "at": _stamp(), "kind": "run_queued", "run": run,
         "target": TARGET, "benchmark": "tour", "agent": "agent-01", "issue": 1,
         "hypothesis": "h"},
        feedback(2, 30, "later")])
    _write(run_file(tmp_path, TARGET, run), [
        {"v": 1, "seq": 1, "at": _stamp(timedelta(seconds=40)), "kind": "leg_started",
         "run": run, "leg": 1, "role": "climb"},
        feedback(2, 10, "earlier")])
    merged = rebuild(tmp_path, use_cache=False, save_cache=False)
    sorted_ = ledger_state._rebuild(tmp_path, use_cache=False, save_cache=False, merge=False)
    assert merged.runs[run].feedback["c1"].text == "later"  # folded last, by time
    assert _comparable(merged) == _comparable(sorted_)


def test_lines_alike_in_the_folds_order_are_folded_in_file_order(tmp_path: Path) -> None:
    """Two lines with the same clock, time and seq (a line written twice, a tool that
    left both out): the fold keeps their file order; comparing the events themselves
    raised ``TypeError`` and every tick failed."""
    run = "tour-1-agent-01"
    at = _stamp()
    _write(tick_file(tmp_path, TARGET), [
        {"at": at, "kind": "run_queued", "run": run, "target": TARGET,
         "benchmark": "tour", "agent": "agent-01", "issue": 1, "hypothesis": "h"},
        {"at": at, "kind": "intent",
         "action": {"kind": "clean_workspace", "target": TARGET, "run": run}},
        {"at": at, "kind": "done", "key": f"clean:{run}", "result": {"freed_bytes": 0}}])
    state = rebuild(tmp_path, use_cache=False, save_cache=False)
    assert state.runs[run].cleaned and f"clean:{run}" in state.done_keys


def _settling_history(home: Path, runs: int) -> None:
    tick = LedgerWriter(tick_file(home, TARGET))
    for n in range(runs):
        run = f"tour-{n}-agent-01"
        tick.append(ev.RunQueued(run=run, target=TARGET, benchmark="tour", agent="agent-01",
                                 issue=None, hypothesis="h"))
        LedgerWriter(run_file(home, TARGET, run), tick.clock).append(
            ev.LegStarted(run=run, leg=1, role="climb"))
        tick.append(ev.RunEnded(run=run, ending="negative-result", report="r" * 100))
        tick.append(ev.Intent(key=f"record:{n}", action=PublishRecord(
            target=TARGET, branch="research-log", files={}, summary="s", digest=str(n))))
        tick.append(ev.Done(key=f"record:{n}", result=EffectResult(reports=[run])))


def test_a_long_fold_summarises_settled_runs_as_it_goes_and_equals_the_sorted_fold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _settling_history(tmp_path, 30)
    monkeypatch.setattr(ledger_state, "COMPACT_EVERY", 20)
    streaming = rebuild(tmp_path, use_cache=False, save_cache=False)
    assert len(streaming.runs.live()) < 10  # compacted while folding, not only at the end
    merged = rebuild(tmp_path, use_cache=False)
    sorted_ = ledger_state._rebuild(tmp_path, use_cache=False, merge=False)
    assert merged.runs.live() == [] and len(merged.runs) == 30
    assert _comparable(merged) == _comparable(sorted_)


def test_a_summarised_runs_file_keeps_no_mark_and_is_not_read_again(tmp_path: Path) -> None:
    _settling_history(tmp_path, 3)
    rebuild(tmp_path)
    cache = ledger_state._load_cache(tmp_path / ledger_state.CACHE_FILE)
    assert cache is not None
    final = ledger_state._FinalRuns(cache.state.runs)
    assert all(f"tour-{n}-agent-01" in final for n in range(3)) and "tour-3-agent-01" not in final
    assert not any("/runs/" in key for key in cache.marks)
    warm = rebuild(tmp_path)
    assert warm.fresh == 0 and warm.runs == rebuild(tmp_path, use_cache=False).runs


def test_an_event_about_a_summarised_run_is_folded_into_its_record() -> None:
    from outerloop.ledger.book import apply_event

    state = State()
    state.runs["a"] = _settled("a")
    state.runs.summarise("a")
    apply_event(state, "o__n/archive/a.jsonl", ev.Archived(
        v=1, seq=1, at=_stamp(), run="a", where="remote:a", files=[]))
    assert state.runs["a"].archive is not None and state.runs["a"].archive.where == "remote:a"


def test_a_settled_run_cleaned_and_pruned_keeps_no_done_key_once_summarised_again() -> None:
    """Housekeeping reads a settled run back (a clean a day after its ending, a prune
    after retention): the done keys it gets then go when it is summarised again, as its
    earlier ones went when it settled; its record keeps what was done, so nothing is
    planned again. Kept, they grew with history (two per run ever recorded)."""
    from outerloop.kernel.actions import CleanWorkspace, PruneJobs
    from outerloop.ledger.book import apply_event

    state = State()
    state.runs["a"] = _settled("a", ended_at=_stamp(-timedelta(days=40)))
    state.runs.summarise("a")
    file = "o__n/tick.jsonl"
    for seq, action in enumerate((CleanWorkspace(target=TARGET, run="a"),
                                  PruneJobs(target=TARGET, run="a"))):
        apply_event(state, file, ev.Intent(seq=2 * seq, at=_stamp(), run="a", key=action.key,
                                           action=action))
        apply_event(state, file, ev.Done(seq=2 * seq + 1, at=_stamp(), run="a",
                                         key=action.key, result=EffectResult()))
    assert set(state.done_keys) == {"clean:a", "prune:a"}
    compact(state)
    assert state.runs.summarised("a") and state.done_keys == {} and state.done_by_run == {}
    assert state.runs["a"].cleaned and state.runs["a"].pruned
    view = _unarchived(_view(state))
    view.obs.now = NOW + timedelta(days=1)
    assert housekeeping.plan(view, []) == []


def test_compact_summarises_a_settled_run_only_when_none_of_its_jobs_is_live() -> None:
    from outerloop.ledger.state import JobRecord

    state = State()
    state.runs["a"] = _settled("a", settled=False, archive_jobs=["9"])
    state.jobs["9"] = JobRecord(job_id="9", name="arch", purpose="archive", run="a",
                                target=TARGET, launch=None, submitted_at=_stamp())
    compact(state)
    assert not state.runs.summarised("a") and state.runs["a"].settled
    state.jobs["9"].state = "completed"
    compact(state)
    assert state.runs.summarised("a")


def test_a_fold_cache_naming_a_module_this_version_lacks_is_dropped_when_loaded(
        tmp_path: Path) -> None:
    """A cache another version wrote may name a module this one does not have (an
    older job reading a newer kernel's cache): it is dropped and history folded again,
    never a crash of the leg."""
    path = tmp_path / ledger_state.CACHE_FILE
    index = HistoryIndex()
    index.attach(path, ledger_state.FOLD_VERSION, create=True)
    index.save(b"couterloop.nowhere\nX\n.", None, anew=True)  # pickle's GLOBAL: outerloop.nowhere.X
    index.close()
    assert ledger_state._load_cache(path) is None


def test_the_final_runs_asked_one_by_one_or_all_at_once_answer_alike(tmp_path: Path) -> None:
    _settling_history(tmp_path, 3)
    runs = rebuild(tmp_path).runs
    final = ledger_state._FinalRuns(runs)
    asked = [f"tour-{n % 5}-agent-01" for n in range(3 * final.ONE_BY_ONE)]
    assert [run_id in final for run_id in asked] == [
        int(run_id.split("-")[1]) < 3 for run_id in asked]
    assert final._ids is not None  # past ONE_BY_ONE: every id read once
