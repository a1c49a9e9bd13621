"""Views of a long history read the settled runs' window, never every past run (issue
27): ``status`` lists the active runs and the newest ended ones (a 100,000-run home took
44 s and 1 GB to say its status; ``--all-runs`` lists them all), and each leg's brief
and the agent's history question read the target's newest endings."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from outerloop.cli.status_cmd import STATUS_RUNS, listed_runs
from outerloop.clock import parse_stamp, stamp
from outerloop.errors import OuterloopError
from outerloop.ledger import events as ev
from outerloop.ledger.history import History
from tests.unit.test_tally import TARGETS, _histories, unreadable_rows


def test_status_lists_every_active_run_and_the_newest_ended_ones_in_queue_order() -> None:
    summarised, walked = _histories(settled=1400, live=12)
    listed, total, _ = listed_runs(summarised)
    assert total == 1412
    every = list(walked.runs.values())
    active = {r.run_id for r in every if not r.ended}
    newest_ended = sorted((r for r in every if r.ended),
                          key=lambda r: (r.updated_at, r.run_id), reverse=True)[:STATUS_RUNS]
    assert {r.run_id for r in listed} == active | {r.run_id for r in newest_ended}
    assert len(listed) == 12 + STATUS_RUNS
    assert [r.run_id for r in listed] == [r.run_id for r in sorted(
        listed, key=lambda r: (r.queued_at, r.run_id))]
    assert {r.run_id: r for r in listed} == {r.run_id: r for r in every
                                             if r.run_id in {x.run_id for x in listed}}


def test_status_reads_no_settled_run_beyond_its_window() -> None:
    """Settled runs (rows of the history index) are never read to list the status: here
    a read would raise."""
    summarised, _ = _histories(settled=600, live=3)
    for run in [r for r in summarised.runs.values() if r.settled]:  # archived: not hot
        back = summarised.runs[run.run_id]
        back.archive = ev.Archived(run=run.run_id, where="s3://b/x/", files=[])
        summarised.runs.summarise(run.run_id)
    cached = unreadable_rows(summarised)
    with pytest.raises(OuterloopError, match="cannot be read"):
        list(cached.runs.values())
    cached = unreadable_rows(summarised)
    listed, total, _ = listed_runs(cached)
    assert total == 603
    assert [r.run_id for r in listed] == [r.run_id for r in listed_runs(summarised)[0]]


def test_status_lists_every_run_when_asked() -> None:
    summarised, walked = _histories(settled=300, live=3)
    listed, total, _ = listed_runs(summarised, every=True)
    assert total == 303 == len(listed)
    assert sorted(r.run_id for r in listed) == sorted(walked.runs)


def test_status_cost_counts_every_run_not_only_those_listed() -> None:
    summarised, walked = _histories(settled=1400, live=12)
    spent = sum(round(r.cost_usd * 1_000_000) for r in walked.runs.values()) / 1_000_000
    assert listed_runs(summarised)[2] == round(spent, 4)


def test_the_newest_endings_of_a_target_are_those_of_its_whole_history() -> None:
    """Each leg's brief (its recent reports) and the agent's history question read the
    target's newest endings from the window: the same runs as from every run."""
    summarised, walked = _histories(settled=1400, live=12)
    for state in (summarised, walked):  # endings out of their last events' order
        rng = random.Random(5)  # the same endings in both
        for run in sorted((r for r in state.runs.values() if r.ended),
                          key=lambda r: r.run_id):
            last = parse_stamp(run.updated_at)  # a report posted, a record published
            state.runs[run.run_id].ended_at = stamp(last - timedelta(
                minutes=rng.uniform(0, 900)))
        for run in state.runs.live():
            if run.settled:
                state.runs.summarise(run.run_id)
    for target in TARGETS:
        mine = [r for r in walked.runs.values() if r.target == target]
        ended = sorted((r for r in mine if r.ended),
                       key=lambda r: (r.ended_at or "", r.run_id), reverse=True)
        history = History.of(summarised.runs, target)
        assert [r.run_id for r in history.newest_ended(20)] == [r.run_id for r in ended[:20]]
        assert [r.report for r in history.newest_ended(5)] == [r.report for r in ended[:5]]
        assert history.ended_total() == len(ended)


def test_the_newest_endings_read_no_settled_run() -> None:
    summarised, _ = _histories(settled=600, live=3)
    for run in [r for r in summarised.runs.values() if r.settled]:
        back = summarised.runs[run.run_id]
        back.archive = ev.Archived(run=run.run_id, where="s3://b/x/", files=[])
        summarised.runs.summarise(run.run_id)
    cached = unreadable_rows(summarised)
    for target in TARGETS:
        history = History.of(cached.runs, target)
        assert len(history.newest_ended(20)) == 20
        assert history.ended_total() == 300
