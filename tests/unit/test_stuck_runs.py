"""A run whose wakes make no progress (``wakes_without_progress``) ends ``stuck`` after
``STUCK_AFTER_EMPTY_LEGS`` of them, unless it is in review with its pull request: it is
woken there only by new feedback, and its credited PR stands (``lanes/sweep.py``;
through real ticks: tests/e2e/test_review_quiet_agent.py). Pure planner: typed state in,
actions out."""

from __future__ import annotations

from datetime import timedelta

from outerloop.kernel.lanes import sweep
from outerloop.kernel.lanes.sweep import STUCK_AFTER_EMPTY_LEGS
from outerloop.ledger.state import RunRecord
from tests.unit.test_recovery_bounds import RUN, TARGET, _ending, _job, _stamp, _state, _view


def _quiet(wakes: int, pr_number: int | None) -> RunRecord:
    state, reason = ("parked", "review") if pr_number is not None else ("running", None)
    return RunRecord(run_id=RUN, target=TARGET, benchmark="tour", agent="agent-01", issue=1,
                     issue_title="idea", hypothesis="h", queued_at=_stamp(-timedelta(hours=3)),
                     admitted=True, state=state, park_reason=reason, pr_number=pr_number,
                     wakes_without_progress=wakes)


def test_a_run_whose_wakes_make_no_progress_ends_stuck_after_the_bound() -> None:
    legs = [_job(1, "climb", "completed")]
    ended = _ending(sweep.plan(_view(_state(_quiet(STUCK_AFTER_EMPTY_LEGS, None), legs)), []))
    assert ended is not None and ended.ending == "stuck", ended
    assert _ending(sweep.plan(_view(_state(_quiet(STUCK_AFTER_EMPTY_LEGS - 1, None),
                                           [_job(1, "climb", "completed")])), [])) is None


def test_a_run_in_review_is_never_ended_stuck_by_quiet_answers() -> None:
    legs = [_job(1, "climb", "completed"), _job(2, "wake", "completed")]
    assert _ending(sweep.plan(_view(_state(_quiet(STUCK_AFTER_EMPTY_LEGS + 3, 7), legs)),
                              [])) is None
