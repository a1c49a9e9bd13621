"""The PR read cursor: the forge's own newest stamps, recorded after the feedback they
cover, read back less an overlap; never the kernel's clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from outerloop import clock
from outerloop.clock import stamp
from outerloop.config import CLOCK_OFFSET_VAR, Settings, TargetSettings, clock_offset_s
from outerloop.errors import ConfigError
from outerloop.forge.base import Association, Comment, PullRequest, ReviewComment
from outerloop.kernel.actions import Action, RecordEvent
from outerloop.kernel.lanes import followup
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, PullObservation, TargetObservation
from outerloop.kernel.observe import FEEDBACK_OVERLAP_S, read_since
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, rebuild, tick_file
from outerloop.ledger.state import FeedbackEntry, RunRecord, State

TARGET = "o/n"
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
"""The forge's clock."""
KERNEL_NOW = T0 + timedelta(days=1)
"""The tick host's clock, a day ahead: it must not matter."""


def _comment(n: int, at: datetime, author: str = "maintainer",
             association: Association = Association.OWNER) -> Comment:
    return Comment(id=n, issue_number=7, author=author, author_association=association,
                   body=f"comment {n}", created_at=at, updated_at=at)


def _review_comment(n: int, at: datetime) -> ReviewComment:
    return ReviewComment(id=n, pr_number=7, author="maintainer",
                         author_association=Association.OWNER, path="solver/tour.py", line=3,
                         body=f"line comment {n}", created_at=at)


def _plan(run: RunRecord, comments: list[Comment],
          review_comments: list[ReviewComment] | None = None) -> list[Action]:
    pr = PullRequest(number=7, title="t", body="b", head="h", base="main", head_sha="a" * 40,
                     state="open", author="outerloop", created_at=T0, updated_at=T0)
    seen = TargetObservation(repo=TARGET, default_branch="main", base_sha="a" * 40)
    seen.pulls[7] = PullObservation(pr=pr, comments=comments,
                                    review_comments=review_comments or [])
    view = TickView(state=State(runs={run.run_id: run}),
                    obs=Observations(now=KERNEL_NOW, targets={TARGET: seen}),
                    settings=Settings(home=Path("/nonexistent"),
                                      targets=[TargetSettings(repo=TARGET)]))
    return followup.plan(view, [])


def _run(**fields: object) -> RunRecord:
    run = RunRecord(run_id="r1", target=TARGET, benchmark="tour", agent="agent-01", issue=1,
                    issue_title="idea", hypothesis="h", queued_at=stamp(T0), state="parked",
                    park_reason="review", pr_number=7, job_ids=["11"])
    for key, value in fields.items():
        setattr(run, key, value)
    return run


def _events(actions: list[Action]) -> list[ev.Event]:
    return [a.event for a in actions if isinstance(a, RecordEvent)]


def test_cursor_moves_to_the_newest_stamp_read_after_the_feedback_it_covers() -> None:
    stranger = _comment(3, T0 + timedelta(seconds=3), "stranger", Association.NONE)
    events = _events(_plan(_run(), [_comment(1, T0 + timedelta(seconds=1)), stranger],
                           [_review_comment(2, T0 + timedelta(seconds=2))]))
    assert [type(e) for e in events] == [ev.Feedback, ev.Feedback, ev.FeedbackCursor]
    cursor = events[-1]
    assert isinstance(cursor, ev.FeedbackCursor)
    assert cursor.comments_at == stamp(stranger.updated_at)  # every item, standing or not
    assert cursor.review_comments_at == stamp(T0 + timedelta(seconds=2))


def test_cursor_is_not_recorded_again_when_the_overlap_reads_nothing_newer() -> None:
    first = _comment(1, T0 + timedelta(seconds=1))
    run = _run(comments_cursor=stamp(first.updated_at))
    events = _events(_plan(run, [first]))
    assert [type(e) for e in events] == [ev.Feedback]  # not in run.feedback: recorded
    run.feedback = {"c1": FeedbackEntry(author="maintainer", text="comment 1", at=stamp(T0))}
    assert _events(_plan(run, [first])) == []  # read twice (the overlap): dropped by id


def test_read_since_is_the_cursor_less_the_overlap_and_everything_without_one() -> None:
    assert read_since("") is None  # a new PR, or a ledger from before cursors
    at = T0 + timedelta(seconds=5)
    assert read_since(stamp(at)) == at - timedelta(seconds=FEEDBACK_OVERLAP_S)


def test_cursor_folds_to_the_newest_stamp_when_events_come_in_any_order(
        tmp_path: Path) -> None:
    writer = LedgerWriter(tick_file(tmp_path, TARGET))
    writer.append(ev.RunQueued(run="r1", target=TARGET, benchmark="tour", agent="a",
                               issue=1, hypothesis="h"))
    late, early = stamp(T0 + timedelta(seconds=9)), stamp(T0 + timedelta(seconds=4))
    writer.append(ev.FeedbackCursor(run="r1", comments_at=late))
    writer.append(ev.FeedbackCursor(run="r1", comments_at=early, review_comments_at=early))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert (run.comments_cursor, run.review_comments_cursor) == (late, early)


def test_a_run_from_before_cursors_folds_with_no_cursor(tmp_path: Path) -> None:
    writer = LedgerWriter(tick_file(tmp_path, TARGET))
    writer.append(ev.RunQueued(run="r1", target=TARGET, benchmark="tour", agent="a",
                               issue=1, hypothesis="h"))
    writer.append(ev.Feedback(run="r1", source_id="c1", author="m", text="why?"))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert run.comments_cursor == "" and read_since(run.comments_cursor) is None
    assert "c1" in run.feedback


def test_the_clock_hook_shifts_now_but_never_the_local_forges_clock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLOCK_OFFSET_VAR, str(24 * 3600))
    try:
        clock.shift(clock_offset_s())
        shift = clock.now() - clock.unshifted_now()
        assert timedelta(hours=23, minutes=59) < shift <= timedelta(days=1)
        clock.shift(-60)
        assert clock.now() < clock.unshifted_now()
    finally:
        clock.shift(0)
    monkeypatch.setenv(CLOCK_OFFSET_VAR, "a day")
    with pytest.raises(ConfigError, match="CLOCK_OFFSET_S='a day' is not a number"):
        clock_offset_s()
