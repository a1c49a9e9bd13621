"""Housekeeping's selections cut at an ending (``Runs.select(among, ended_by=...)``,
``ledger/runs.py``, an SQL query of the history index): over a long history the lane
gets a record only for the live runs and the settled runs old enough to be due, and the
lane's answer is the one it gave over every run's full record."""

from __future__ import annotations

import copy
import functools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from outerloop.config import ArchiveSettings, Settings, TargetSettings
from outerloop.kernel.lanes import housekeeping
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations
from outerloop.ledger import events as ev
from outerloop.ledger.history import BY_ENDING, Runs
from outerloop.ledger.state import Ending, RunRecord, RunState, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
US = timedelta(microseconds=1)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _run(run_id: str, ended: datetime | None, **fields: Any) -> RunRecord:
    """A settled run (ended, reported, recorded) that ended at ``ended``."""
    run = RunRecord(run_id=run_id, target=TARGET, benchmark="tour", agent="agent-01",
                    issue=None, issue_title="", hypothesis="", queued_at=_stamp(NOW - 90 * DAY),
                    state=RunState.ENDED, ending=Ending.NEGATIVE_RESULT,
                    ended_at=_stamp(ended) if ended is not None else None,
                    report_posted=True, recorded=True, settled=True)
    for key, value in fields.items():
        setattr(run, key, value)
    return run


def _live(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, target=TARGET, benchmark="tour", agent="agent-02",
                     issue=None, issue_title="", hypothesis="", queued_at=_stamp(NOW))


def _summarised(runs: list[RunRecord] | tuple[RunRecord, ...]) -> State:
    state = State(runs=Runs({r.run_id: r for r in copy.deepcopy(runs)}))
    for run in runs:
        if run.settled:
            state.runs.summarise(run.run_id)
    return state


def _ids(runs: list[RunRecord]) -> list[str]:
    return [r.run_id for r in runs]


def test_a_cut_selection_holds_every_live_run_and_the_settled_runs_ended_by_the_cut() -> None:
    cut = NOW - DAY
    runs = [_run("old", NOW - 3 * DAY), _live("live-1"), _run("at-cut", cut),
            _run("after-cut", cut + US), _run("no-ending", None), _run("recent", NOW),
            _live("live-2")]
    state = _summarised(runs)
    for among in sorted(BY_ENDING):
        chosen = state.runs.select(among, ended_by=_stamp(cut))
        assert _ids(chosen) == ["old", "live-1", "at-cut", "no-ending", "live-2"], among
        assert _ids(state.runs.select(among)) == _ids(runs), among  # uncut: every one
    assert state.runs.select("uncleaned", ended_by=_stamp(cut))[0] == runs[0]


def test_a_cut_selection_leaves_out_a_run_the_selection_does_not_hold() -> None:
    cut = _stamp(NOW - DAY)
    state = _summarised([_run("cleaned", NOW - 3 * DAY, cleaned=True),
                         _run("pruned", NOW - 3 * DAY, pruned=True),
                         _run("archived", NOW - 3 * DAY, archive=ev.Archived(
                             seq=1, at="t", where="w", files=[]))])
    assert _ids(state.runs.select("uncleaned", ended_by=cut)) == ["pruned"]
    assert _ids(state.runs.select("unpruned", ended_by=cut)) == ["cleaned"]
    assert _ids(state.runs.select("unarchived", ended_by=cut)) == ["cleaned", "pruned"]


@pytest.mark.parametrize(("among", "option"), [("outage", "ended_by"),
                                                ("admitted", "ended_by"),
                                                ("uncleaned", "since")])
def test_a_selection_refuses_a_cut_it_has_no_index_for(among: str, option: str) -> None:
    with pytest.raises(ValueError, match=f"takes no {option}"):
        State().runs.select(among, **{option: _stamp(NOW)})


@functools.cache
def _long_history() -> tuple[RunRecord, ...]:
    """Forty days of a home that ticks, one run an hour: cleaned 30 h after its ending
    and pruned after 33 days (housekeeping six hours and three days behind, a few runs a
    tick), so some are due; two live runs among them."""
    runs: list[RunRecord] = []
    for hours in range(40 * 24, 0, -1):
        ended = NOW - timedelta(hours=hours)
        runs.append(_run(f"tour-{hours:04d}", ended, cleaned=hours >= 30,
                         pruned=hours >= 33 * 24))
        if hours in (500, 20):
            runs.append(_live(f"live-{hours}"))
    return tuple(runs)


def _view(state: State, now: datetime, archive: ArchiveSettings) -> TickView:
    settings = Settings(home=Path("/home/h"), targets=[TargetSettings(repo=TARGET)],
                        archive=archive)
    return TickView(state=state, obs=Observations(now=now, jobs={}, targets={}),
                    settings=settings)


ARCHIVES = {"none": ArchiveSettings(),
            "after 7 days": ArchiveSettings(to="s3://bucket/x", after_days=7),
            "after 39.5 days": ArchiveSettings(to="s3://bucket/x", after_days=39.5)}


@pytest.mark.parametrize("archive", sorted(ARCHIVES))
@pytest.mark.parametrize("later", [timedelta(), timedelta(hours=3, microseconds=7),
                                   timedelta(days=2)])
def test_housekeeping_plans_over_a_long_history_what_it_planned_over_full_records(
        archive: str, later: timedelta) -> None:
    history = _long_history()
    full = State(runs=Runs({r.run_id: r for r in copy.deepcopy(history)}))  # every run live
    now = NOW + later
    planned = housekeeping.plan(_view(_summarised(history), now, ARCHIVES[archive]), [])
    assert planned == housekeeping.plan(_view(full, now, ARCHIVES[archive]), [])
    assert planned  # something is due in each


def test_housekeeping_reads_a_record_only_of_a_live_run_or_a_settled_run_it_may_act_on() -> None:
    """What the lane's selections return (the records a tick builds): the 29 settled
    runs not cleaned and the 791 not pruned are not all read, only those due."""
    state = _summarised(_long_history())
    live = ["live-500", "live-20"]
    chosen = state.runs.select("uncleaned", ended_by=_stamp(NOW - DAY))
    assert _ids(chosen) == ["live-500", *(f"tour-{h:04d}" for h in range(29, 23, -1)),
                            "live-20"]
    chosen = state.runs.select("unpruned", ended_by=_stamp(NOW - 30 * DAY))
    assert _ids(chosen) == [*(f"tour-{h:04d}" for h in range(33 * 24 - 1, 30 * 24 - 1, -1)),
                            *live]
    assert len(state.runs.select("unpruned")) == 33 * 24 - 1 + len(live)


EDGES = {"clean": (DAY, ArchiveSettings(), {"pruned": True}),
         "prune": (30 * DAY, ArchiveSettings(), {"cleaned": True}),
         "archive": (7 * DAY, ArchiveSettings(to="s3://bucket/x", after_days=7),
                     {"cleaned": True})}


@pytest.mark.parametrize("what", sorted(EDGES))
def test_a_run_is_due_when_it_ended_its_delay_ago_to_the_microsecond_and_not_after(
        what: str) -> None:
    after, archive, done = EDGES[what]
    state = _summarised([_run("a", NOW - after, **done), _run("b", NOW - after + US, **done)])
    (action,) = housekeeping.plan(_view(state, NOW, archive), [])
    assert action.run == "a" and what in action.key


def test_the_weeks_admitted_runs_are_counted_from_the_index() -> None:
    """The week's budgets count admitted runs every tick (``waiting.target_wait``): an
    SQL count of the settled rows, less those read back (counted as live runs)."""
    runs = [_run(f"w{n}", NOW - n * DAY, cleaned=True, pruned=True, admitted=True,
                 queued_at=_stamp(NOW - n * DAY), target="o/n" if n % 2 else "o/m")
            for n in range(12)]
    mapping = _summarised(runs).runs
    week = _stamp(NOW - 7 * DAY)
    assert mapping.admitted_since(week) == 8  # w0..w7
    assert mapping.admitted_since(week, "o/n") == 4 and mapping.admitted_since(
        week, "o/m") == 4
    assert mapping.admitted_since(_stamp(NOW + DAY)) == 0
    assert mapping.admitted_since(_stamp(NOW - 9 * DAY)) == 10
    assert mapping["w1"].admitted  # read back: live now, no longer counted as settled
    assert mapping.admitted_since(week) == 7 and mapping.admitted_since(week, "o/n") == 3
