"""Nothing repeats forever (``kernel/lanes/bounds.py``): a run's leg tried again dies the
same way each time, so the lanes give it up after ``MAX_RECOVERIES`` tries again in a
row, whatever it is parked on. Pure planners: typed state in, actions out. Through real
ticks: ``tests/security/test_bounded_retries.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from outerloop.config import Settings, TargetSettings
from outerloop.forge.base import PullRequest
from outerloop.infra import NO_SPACE_EXIT, Space, crash_name
from outerloop.kernel.actions import Action, PostComment, RecordEvent, SubmitJob
from outerloop.kernel.lanes import followup, sweep
from outerloop.kernel.lanes.bounds import MAX_RECOVERIES
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, PullObservation, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.state import FeedbackEntry, JobRecord, RunRecord, State

TARGET = "o/n"
NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
RUN = "tour-1-agent-01"


def _stamp(delta: timedelta = timedelta()) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _view(state: State, crashed: dict[str, str] | None = None) -> TickView:
    obs = Observations(now=NOW, targets={TARGET: TargetObservation(repo=TARGET)},
                       crashed=crashed or {})
    settings = Settings(home=Path("/nonexistent"), targets=[TargetSettings(repo=TARGET)])
    return TickView(state=state, obs=obs, settings=settings)


def _job(n: int, purpose: str, state: str = "failed", name: str = "") -> JobRecord:
    return JobRecord(str(n), name or f"ol-{RUN}-{purpose}-{n}", purpose, RUN, TARGET, None,
                     _stamp(-timedelta(hours=2)), submitted_lc=n, order=(n, "", "", 0),
                     state=state, exit_code=1 if state == "failed" else 0,
                     ended_at=_stamp(-timedelta(hours=1)))


def _state(run: RunRecord, jobs: list[JobRecord]) -> State:
    run.job_ids = [j.job_id for j in jobs]
    return State(runs={run.run_id: run}, jobs={j.job_id: j for j in jobs})


def _parked_on(reason: str, jobs: list[JobRecord]) -> State:
    """A run parked on ``reason`` whose eval pair (job 2) ended, then ``jobs``."""
    run = RunRecord(run_id=RUN, target=TARGET, benchmark="tour", agent="agent-01", issue=1,
                    issue_title="idea", hypothesis="h", queued_at=_stamp(), admitted=True,
                    state="parked", park_reason=reason, park_jobs=["2"])
    return _state(run, [_job(1, "climb", "completed"), _job(2, "eval", "completed"), *jobs])


def _ending(actions: list[Action]) -> ev.RunEnded | None:
    ends = [a.event for a in actions if isinstance(a, RecordEvent)
            and isinstance(a.event, ev.RunEnded)]
    return ends[0] if ends else None


@pytest.mark.parametrize("reason", ["eval", "jobs"])
def test_a_parked_run_is_given_up_with_the_crash_named_when_its_recoveries_died_in_a_row(
        reason: str) -> None:
    wake, first, second = _job(3, "wake"), _job(4, "recover"), _job(5, "recover")
    (again,) = sweep.plan(_view(_parked_on(reason, [wake, first])), [])
    assert isinstance(again, SubmitJob) and again.purpose == "recover"
    actions = sweep.plan(_view(_parked_on(reason, [wake, first, second]),
                               crashed={"5": "IsADirectoryError"}), [])
    ended = _ending(actions)
    assert ended is not None and ended.ending == "aborted", actions
    assert f"died {MAX_RECOVERIES + 1} times in a row" in ended.reason
    assert "crashed on IsADirectoryError" in ended.reason
    assert f"runs/{RUN}/jobs/{second.name}/stderr" in ended.reason
    assert not [a for a in actions if isinstance(a, SubmitJob)]


def test_a_recovery_that_ended_well_without_moving_the_run_counts_too() -> None:
    row = [_job(3, "wake"), _job(4, "recover", "completed"), _job(5, "recover", "completed")]
    ended = _ending(sweep.plan(_view(_parked_on("eval", row)), []))
    assert ended is not None and "ended completed, exit 0" in ended.reason


def test_a_run_that_moved_on_since_its_recoveries_gets_recovered_again() -> None:
    """Two recoveries long ago, then the run parked anew (a wake job registered after
    them): the wake of this park died once, so it is recovered, not given up."""
    row = [_job(3, "wake"), _job(4, "recover"), _job(5, "recover", "completed"),
           _job(6, "wake")]
    (again,) = sweep.plan(_view(_parked_on("jobs", row)), [])
    assert isinstance(again, SubmitJob) and again.purpose == "recover"


def test_a_machine_retry_between_recoveries_neither_counts_nor_breaks_the_row() -> None:
    row = [_job(3, "wake"), _job(4, "recover"), _job(5, "retry"), _job(6, "recover")]
    assert _ending(sweep.plan(_view(_parked_on("eval", row)), [])) is not None
    row = [_job(3, "wake"), _job(4, "retry"), _job(5, "recover")]
    (again,) = sweep.plan(_view(_parked_on("eval", row)), [])
    assert isinstance(again, SubmitJob) and again.purpose == "recover"


def test_a_running_run_is_given_up_after_its_recoveries_in_a_row() -> None:
    state = _parked_on("eval", [_job(3, "wake"), _job(4, "recover"), _job(5, "recover")])
    run = state.runs[RUN]
    run.state, run.park_reason, run.leg_open = "running", None, True
    ended = _ending(sweep.plan(_view(state), []))
    assert ended is not None and "running a leg" in ended.reason


def _in_review(wakes: list[JobRecord]) -> TickView:
    state = _parked_on("review", [_job(3, "wake", "completed"), *wakes])
    run = state.runs[RUN]
    run.pr_number = 7
    run.feedback = {"c1": FeedbackEntry(author="m", text="why?", at=_stamp())}
    view = _view(state, crashed={w.job_id: "decimal.Overflow" for w in wakes})
    pr = PullRequest(number=7, title="t", body="b", head="h", base="main", head_sha="a" * 40,
                     state="open", author="outerloop", created_at=NOW, updated_at=NOW)
    view.obs.targets[TARGET].pulls[7] = PullObservation(pr=pr)
    return view


def test_a_run_in_review_is_given_up_when_its_review_wakes_died_in_a_row() -> None:
    """A review wake that dies before its leg leaves the feedback undelivered: the
    followup lane woke the run again at every tick, for ever."""
    wakes = [_job(n, "wake", name=f"ol-{RUN}-review-{n - 3}") for n in range(4, 4 + MAX_RECOVERIES)]
    (again,) = [a for a in followup.plan(_in_review(wakes), []) if isinstance(a, SubmitJob)]
    assert again.spec.name == f"ol-{RUN}-review-{MAX_RECOVERIES + 1}"
    wakes.append(_job(4 + MAX_RECOVERIES, "wake", name=f"ol-{RUN}-review-{MAX_RECOVERIES + 1}"))
    actions = followup.plan(_in_review(wakes), [])
    ended = _ending(actions)
    assert ended is not None and ended.ending == "aborted"
    assert "delivering its reviewers' feedback" in ended.reason
    assert "crashed on decimal.Overflow" in ended.reason
    assert not [a for a in actions if isinstance(a, SubmitJob)]
    assert [a.marker_kind for a in actions if isinstance(a, PostComment)] == ["report"]


def test_a_run_in_review_is_not_given_up_when_its_review_wakes_died_of_a_full_disk() -> None:
    """A review wake that exits ``NO_SPACE_EXIT`` died of the machine, not of the run
    (chaos: a full disk while comments kept coming ended a run in review): passed over,
    the run is woken again, never aborted."""
    wakes = [_job(n, "wake", name=f"ol-{RUN}-review-{n - 3}")
             for n in range(4, 5 + MAX_RECOVERIES)]
    for wake in wakes:  # ended an hour ago: space is back, the backoff has passed
        wake.exit_code = NO_SPACE_EXIT
    actions = followup.plan(_in_review(wakes), [])
    assert _ending(actions) is None
    (again,) = [a for a in actions if isinstance(a, SubmitJob)]
    assert again.spec.name == f"ol-{RUN}-review-{MAX_RECOVERIES + 2}"


def test_a_run_in_review_is_not_woken_while_its_last_wake_died_of_a_full_disk_and_it_is_full(
        ) -> None:
    wake = _job(4, "wake", name=f"ol-{RUN}-review-1")
    wake.exit_code = NO_SPACE_EXIT
    view = _in_review([wake])
    view.obs.space = [Space(path="/home/runs", free_bytes=0, total_bytes=10**9,
                            free_inodes=0, total_inodes=10**6)]
    actions = followup.plan(view, [])
    assert _ending(actions) is None and not [a for a in actions if isinstance(a, SubmitJob)]


@pytest.mark.parametrize(("tail", "name"), [
    ("x\nTraceback (most recent call last):\n  File \"a.py\", line 1, in f\n"
     "    g()\nIsADirectoryError: [Errno 21] Is a directory: '/home/op/runs/x'\n",
     "IsADirectoryError"),
    ("Traceback (most recent call last):\n  File \"g.py\"\ndecimal.Overflow: [<class "
     "'decimal.Overflow'>]\n", "decimal.Overflow"),
    ("Traceback (most recent call last):\n  File \"g.py\"\nKeyboardInterrupt\n",
     "KeyboardInterrupt"),
    ("no traceback here\nValueError: looks like one\n", None),
    ("Traceback (most recent call last):\n  File \"g.py\"\nnot a name: /etc/passwd\n", None),
])
def test_only_the_exception_name_of_a_traceback_is_kept(tail: str, name: str | None) -> None:
    assert crash_name(tail) == name
