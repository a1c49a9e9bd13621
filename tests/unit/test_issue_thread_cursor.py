"""The issue thread's read cursor (``lanes/steering``): a read that moves it to a
whole-second stamp (GitHub's) leaves the thread unsettled, so the next tick reads it once
more at that stamp; a stamp finer than the second settles it in the same record."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from outerloop.clock import stamp
from outerloop.config import Settings, TargetSettings
from outerloop.forge.base import Association, Comment, Issue
from outerloop.kernel.actions import Action, RecordEvent
from outerloop.kernel.lanes import steering
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.state import RunRecord, State

TARGET = "o/n"
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _planned(runs: list[RunRecord], issue_updated: datetime,
             comments: list[Comment] | None = None) -> list[Action]:
    issue = Issue(number=1, title="idea", body="b", author="maintainer",
                  author_association=Association.OWNER, state="open", created_at=T0,
                  updated_at=issue_updated)
    seen = TargetObservation(repo=TARGET, default_branch="main", base_sha="a" * 40,
                             issues=[issue])
    seen.issue_comments[1] = comments or []
    view = TickView(state=State(runs={r.run_id: r for r in runs}),
                    obs=Observations(now=T0 + timedelta(hours=1), targets={TARGET: seen}),
                    settings=Settings(home=Path("/nonexistent"),
                                      targets=[TargetSettings(repo=TARGET)]))
    return steering.plan(view, [])


def _cursor_events(run: RunRecord, issue_updated: datetime) -> list[ev.FeedbackCursor]:
    return [a.event for a in _planned([run], issue_updated)
            if isinstance(a, RecordEvent) and isinstance(a.event, ev.FeedbackCursor)]


def _run(cursor: str = "", settled: bool = False) -> RunRecord:
    return RunRecord(run_id="r1", target=TARGET, benchmark="tour", agent="agent-01", issue=1,
                     issue_title="idea", hypothesis="h", queued_at=stamp(T0), state="running",
                     issue_comments_cursor=cursor or stamp(T0 - timedelta(minutes=5)),
                     issue_thread_settled=settled)


def test_a_whole_second_stamp_is_read_once_more_before_the_thread_settles() -> None:
    whole = T0 + timedelta(seconds=7)
    (moved,) = _cursor_events(_run(), whole)
    assert moved.issue_comments_at == stamp(whole) and not moved.issue_thread_settled
    (settles,) = _cursor_events(_run(stamp(whole)), whole)
    assert settles.issue_thread_settled
    assert _cursor_events(_run(stamp(whole), settled=True), whole) == []


def test_a_stamp_finer_than_the_second_settles_the_thread_in_the_read_that_found_it() -> None:
    exact = T0 + timedelta(seconds=7, microseconds=830_895)
    (moved,) = _cursor_events(_run(), exact)
    assert moved.issue_comments_at == stamp(exact) and moved.issue_thread_settled


def test_a_widen_command_read_by_every_run_of_a_wide_issue_is_recorded_once() -> None:
    claimed = T0 - timedelta(minutes=5)
    runs = [_run(stamp(claimed)), _run(stamp(claimed))]
    runs[1].run_id, runs[1].agent = "r2", "agent-02"
    widen = Comment(id=9, issue_number=1, author="maintainer",
                    author_association=Association.OWNER, body="/outerloop widen 3",
                    created_at=T0, updated_at=T0)
    actions = _planned(runs, T0, [widen])
    widened = [a.event for a in actions if isinstance(a, RecordEvent)
               and isinstance(a.event, ev.IssueWidened)]
    assert widened == [ev.IssueWidened(target=TARGET, issue=1, width=3, by="maintainer",
                                       source_id="i9")]
    read = [a.run for a in actions if isinstance(a, RecordEvent)
            and isinstance(a.event, ev.Feedback)]
    assert sorted(str(r) for r in read) == ["r1", "r2"]  # each run records it read

