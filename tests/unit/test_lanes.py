"""Lanes as pure planners: typed state and observations in, actions out, no I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest

from outerloop.compute.base import JobObservation, JobSpec, JobState
from outerloop.config import Settings, TargetSettings
from outerloop.contract import load_contract_text
from outerloop.forge.base import Association, Issue
from outerloop.kernel.actions import (
    Action,
    CancelJob,
    PostComment,
    PrepareWorkspace,
    RecordEvent,
    SubmitJob,
)
from outerloop.kernel.lanes import admission, followup, intake, sweep
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import FeedbackEntry, JobRecord, RunRecord, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONTRACT = load_contract_text("""
benchmarks:
  - {name: tour, command: python e.py, metric: m, direction: min}
  - {name: spread, command: python e.py, metric: s, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")


def _stamp(delta: timedelta = timedelta()) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _view(state: State, issues: list[Issue] | None = None, *,
          jobs: dict[str, JobObservation] | None = None, compute_error: str | None = None,
          hold: bool = False) -> TickView:
    seen = TargetObservation(repo=TARGET, contract=CONTRACT, default_branch="main",
                             base_sha="a" * 40, issues=issues or [])
    obs = Observations(now=NOW, jobs=jobs or {}, compute_error=compute_error,
                       targets={TARGET: seen})
    settings = Settings(home=Path("/nonexistent"), targets=[TargetSettings(repo=TARGET)])
    return TickView(state=state, obs=obs, settings=settings, hold=hold)


def _issue(number: int, body: str, association: Association = Association.OWNER) -> Issue:
    return Issue(number=number, title="idea", body=body, author="maintainer",
                 author_association=association, state="open", created_at=NOW,
                 updated_at=NOW)


def _run(run_id: str = "tour-1-agent-01", **fields: object) -> RunRecord:
    run = RunRecord(run_id=run_id, target=TARGET, benchmark="tour", agent="agent-01",
                    issue=1, issue_title="idea", hypothesis="h", queued_at=_stamp())
    for key, value in fields.items():
        setattr(run, key, value)
    return run


def test_intake_claims_and_queues_when_issue_names_one_benchmark() -> None:
    actions = intake.plan(_view(State(), [_issue(1, "make tour shorter")]), [])
    kinds = [type(a) for a in actions]
    assert kinds == [RecordEvent, PostComment]
    assert isinstance(actions[0], RecordEvent) and isinstance(actions[0].event, ev.RunQueued)
    assert actions[0].event.benchmark == "tour"
    assert actions[1].marker_kind == "claim"


def test_intake_caps_the_issue_text_when_the_body_is_huge() -> None:
    huge = "tour " + "x" * 1_000_000
    actions = intake.plan(_view(State(), [_issue(1, huge)]), [])
    assert isinstance(actions[0], RecordEvent) and isinstance(actions[0].event, ev.RunQueued)
    queued = actions[0].event
    assert len(queued.hypothesis) <= intake.MAX_HYPOTHESIS_CHARS
    assert queued.hypothesis.startswith("idea\n\ntour xxx")
    assert "truncated" in queued.hypothesis
    assert len(queued.issue_title) <= intake.MAX_TITLE_CHARS


def test_followup_posts_a_message_once_when_the_pr_opens_after_it_was_posted() -> None:
    run = _run(state="parked", park_reason="review", pr_number=7,
               outbox={"m0": "hello reviewers"})
    state = State(runs={run.run_id: run})
    (post,) = followup.plan(_view(state), [])
    assert isinstance(post, PostComment) and post.number == 7
    run.posted.add("m0")  # the tick posted it on the issue before the PR existed
    assert followup.plan(_view(state), []) == []


def test_followup_wakes_under_a_new_name_when_a_review_wake_died_before_delivering() -> None:
    from outerloop.forge.base import PullRequest
    from outerloop.kernel.observations import PullObservation

    run = _run(state="parked", park_reason="review", pr_number=7, job_ids=["11"],
               feedback={"c1": FeedbackEntry(author="m", text="why?", at=_stamp())})
    died = JobRecord(job_id="11", name=f"ol-{run.run_id}-review-1", purpose="wake",
                     run=run.run_id, target=TARGET, launch=None, submitted_at=_stamp(),
                     state="node_fail")
    state = State(runs={run.run_id: run}, jobs={"11": died},
                  done_keys={f"job:{died.name}": {"job_id": "11"}})
    view = _view(state)
    pr = PullRequest(number=7, title="t", body="b", head="h", base="main", head_sha="a" * 40,
                     state="open", author="outerloop", created_at=NOW, updated_at=NOW)
    view.obs.targets[TARGET].pulls[7] = PullObservation(pr=pr)
    (wake,) = [a for a in followup.plan(view, []) if isinstance(a, SubmitJob)]
    assert wake.spec.name == f"ol-{run.run_id}-review-2"


def test_intake_posts_the_claim_when_the_tick_that_queued_the_run_died_before_posting(
        ) -> None:
    run = _run()  # queued from issue 1; no claim comment recorded
    (post,) = intake.plan(_view(State(runs={run.run_id: run}), [_issue(1, "tour")]), [])
    assert isinstance(post, PostComment) and post.marker_kind == "claim"
    assert post.marker_key == run.run_id and post.number == 1
    done = State(runs={run.run_id: run}, done_keys={post.key: {"comment_id": 5}})
    assert intake.plan(_view(done, [_issue(1, "tour")]), []) == []


def test_intake_explains_instead_of_claiming_when_issue_names_two_benchmarks() -> None:
    (action,) = intake.plan(_view(State(), [_issue(1, "tour and spread")]), [])
    assert isinstance(action, PostComment) and action.marker_kind == "status"
    assert "2 benchmarks" in action.body


def test_intake_ignores_issue_when_author_has_no_standing() -> None:
    issue = _issue(1, "make tour shorter", Association.NONE)
    assert intake.plan(_view(State(), [issue]), []) == []


def test_intake_claims_nothing_when_hold_is_set() -> None:
    assert intake.plan(_view(State(), [_issue(1, "tour")], hold=True), []) == []


def test_admission_starts_nothing_when_weekly_budget_is_spent() -> None:
    state = State()
    for n in range(2):
        state.runs[f"r{n}"] = _run(f"r{n}", admitted=True, state="ended", ending="merged")
    state.runs["q"] = _run("q")
    assert _starts(admission.plan(_view(state), [])) == []


def _starts(actions: list[object]) -> list[object]:
    """Admission's actions without the ``gpu_budget`` record it keeps up to date and the
    runs' ``run_alpha`` records (tests/unit/test_alpha_budget.py)."""
    return [a for a in actions if not _is_budget(a) and not (
        isinstance(a, RecordEvent) and isinstance(a.event, ev.RunAlpha))]


def _is_budget(action: object) -> bool:
    return isinstance(action, RecordEvent) and isinstance(action.event, ev.GpuBudget)


def test_admission_prepares_workspace_then_climb_when_budget_allows() -> None:
    state = State()
    state.runs["q"] = _run("q")
    actions = _starts(admission.plan(_view(state), []))
    assert [a.kind for a in actions] == ["prepare_workspace", "submit_job"]
    assert isinstance(actions[1], SubmitJob) and actions[1].purpose == "climb"


GPU_CONTRACT = load_contract_text("""
benchmarks:
  - {name: tour, command: python e.py, metric: m, direction: min, gpus: 1}
budgets: {gpu_hours_per_run: 2, runs_per_week: 3, max_concurrent_gpus: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")


def _gpu_view(state: State) -> TickView:
    view = _view(state)
    view.obs.targets[TARGET].contract = GPU_CONTRACT
    return view


def test_admission_starts_nothing_when_the_weeks_gpu_hours_are_spent() -> None:
    state = State()
    state.gpu_days[TARGET] = {(NOW - timedelta(days=6)).strftime("%Y-%m-%d"): 3 * 2 * 3600}
    state.runs["q"] = _run("q")
    assert _starts(admission.plan(_gpu_view(state), [])) == []


def test_admission_starts_a_run_when_the_spent_gpu_hours_are_older_than_a_week() -> None:
    state = State()
    state.gpu_days[TARGET] = {(NOW - timedelta(days=7)).strftime("%Y-%m-%d"): 3 * 2 * 3600,
                              NOW.strftime("%Y-%m-%d"): 5 * 3600}
    state.runs["q"] = _run("q")
    assert [a.kind for a in _starts(admission.plan(_gpu_view(state), []))] == [
        "prepare_workspace", "submit_job"]


def test_admission_records_the_targets_gpu_budgets_once_when_they_change() -> None:
    state = State()
    (action,) = [a for a in admission.plan(_gpu_view(state), []) if _is_budget(a)]
    assert isinstance(action, RecordEvent)
    assert action.event == ev.GpuBudget(target=TARGET, run_hours=2, week_hours=6,
                                        max_concurrent_gpus=2, max_active_attempts=1)
    state.gpu_budgets[TARGET] = msgspec.structs.replace(action.event, seq=0, at=_stamp())
    assert [a for a in admission.plan(_gpu_view(state), []) if _is_budget(a)] == []
    state.gpu_budgets[TARGET] = msgspec.structs.replace(action.event, seq=1, at=_stamp(),
                                                        max_concurrent_gpus=1)
    assert [a for a in admission.plan(_gpu_view(state), []) if _is_budget(a)] == [action]
    # the contract's cap on active runs is recorded too (the board shows it, not the home's)
    state.gpu_budgets[TARGET] = msgspec.structs.replace(action.event, seq=2, at=_stamp(),
                                                        max_active_attempts=None)
    assert [a for a in admission.plan(_gpu_view(state), []) if _is_budget(a)] == [action]


def test_admission_starts_the_oldest_queued_run_first_and_this_ticks_runs_last() -> None:
    state = State()
    state.runs["new"] = _run("new", queued_at=_stamp(-timedelta(minutes=5)))
    state.runs["old"] = _run("old", queued_at=_stamp(-timedelta(hours=1)))
    planned: list[Action] = [RecordEvent(target=TARGET, run="fresh", event=ev.RunQueued(
        target=TARGET, benchmark="tour", agent="agent-02"))]
    order = []
    for _ in range(3):  # one start per tick (max_new_runs_per_tick = 1)
        (start, _submit) = _starts(admission.plan(_view(state), planned))
        assert isinstance(start, PrepareWorkspace)
        order.append(start.run)
        state.runs.pop(start.run, None)  # out of the way of the next tick
        planned = [a for a in planned if a.run != start.run]
    assert order == ["old", "new", "fresh"]


def _parked(deadline: timedelta) -> State:
    state = State()
    state.runs["r"] = _run("r", state="parked", park_reason="jobs", park_jobs=["5"],
                           job_ids=["4", "5", "6"], deadline=_stamp(deadline), admitted=True)
    state.jobs["4"] = JobRecord("4", "climb", "climb", "r", TARGET, None, _stamp(),
                                state="completed")
    state.jobs["5"] = JobRecord("5", "launch", "launch", "r", TARGET, "x", _stamp())
    state.jobs["6"] = JobRecord("6", "wake", "wake", "r", TARGET, None, _stamp())
    return state


def test_sweep_starts_again_instead_of_releasing_when_the_climb_node_failed() -> None:
    run = _run(admitted=True, job_ids=["9"])
    climb = JobRecord(job_id="9", name=f"ol-{run.run_id}-climb", purpose="climb",
                      run=run.run_id, target=TARGET, launch=None, submitted_at=_stamp(),
                      state="node_fail", ended_at=_stamp(-timedelta(hours=1)))
    state = State(runs={run.run_id: run}, jobs={"9": climb})
    (action,) = sweep.plan(_view(state), [])
    assert isinstance(action, SubmitJob) and action.purpose == "recover"
    climb.state = "failed"  # the start itself failed: aborted and released
    kinds = [type(a) for a in sweep.plan(_view(state), [])]
    assert kinds == [RecordEvent, PostComment]


def test_sweep_records_gone_when_park_is_past_deadline_and_job_vanished() -> None:
    jobs = {"5": JobObservation(job_id="5", state=JobState.GONE),
            "6": JobObservation(job_id="6", state=JobState.PENDING)}
    (action,) = sweep.plan(_view(_parked(-timedelta(hours=1)), jobs=jobs), [])
    assert isinstance(action, RecordEvent) and action.event == ev.JobEnded(job_id="5",
                                                                            state="gone")


def test_sweep_cancels_live_jobs_when_park_is_past_deadline() -> None:
    jobs = {"5": JobObservation(job_id="5", state=JobState.PENDING)}
    (action,) = sweep.plan(_view(_parked(-timedelta(hours=1)), jobs=jobs), [])
    assert isinstance(action, CancelJob) and action.job_id == "5"


@pytest.mark.parametrize("reason", ["Priority", "Resources", "BeginTime",
                                    "QOSMaxGRESPerUser", "AssocGrpGRES",
                                    "Priority; attempt 2 (requeued 1x)"])
def test_sweep_extends_the_deadline_when_past_it_the_jobs_wait_for_a_healthy_reason(
        reason: str) -> None:
    jobs = {"5": JobObservation(job_id="5", state=JobState.PENDING, reason=reason)}
    (action,) = sweep.plan(_view(_parked(-timedelta(hours=1)), jobs=jobs), [])
    assert isinstance(action, RecordEvent) and isinstance(action.event, ev.DeadlineExtended)
    assert action.event.deadline > _stamp(timedelta(hours=11))


@pytest.mark.parametrize("reason", ["ReqNodeNotAvail", "PartitionDown", "InvalidQOS",
                                    "DependencyNeverSatisfied", None])
def test_sweep_cancels_past_the_deadline_when_a_job_waits_for_an_unhealthy_reason(
        reason: str | None) -> None:
    jobs = {"5": JobObservation(job_id="5", state=JobState.PENDING, reason=reason)}
    (action,) = sweep.plan(_view(_parked(-timedelta(hours=1)), jobs=jobs), [])
    assert isinstance(action, CancelJob) and action.job_id == "5"


def test_sweep_cancels_a_job_whose_dependency_can_never_be_satisfied_within_deadline() -> None:
    jobs = {"5": JobObservation(job_id="5", state=JobState.PENDING,
                                reason="DependencyNeverSatisfied")}
    (action,) = sweep.plan(_view(_parked(timedelta(hours=1)), jobs=jobs), [])
    assert isinstance(action, CancelJob) and "DependencyNeverSatisfied" in action.why


def test_sweep_records_a_gone_job_of_an_ended_run_once_when_its_cancel_was_done() -> None:
    state = _parked(timedelta(hours=1))
    state.runs["r"].state, state.runs["r"].ending = "ended", "aborted"
    state.done_keys["cancel:5"] = EffectResult(accepted=True)
    state.done_keys["cancel:6"] = EffectResult(accepted=True)
    jobs = {"5": JobObservation(job_id="5", state=JobState.GONE)}
    (action,) = sweep.plan(_view(state, jobs=jobs), [])
    assert isinstance(action, RecordEvent)
    assert action.event == ev.JobEnded(job_id="5", state="gone")
    state.jobs["5"].state = "gone"
    assert sweep.plan(_view(state, jobs={}), []) == []


def test_a_job_may_run_its_limit_times_its_waves_when_an_array_runs_k_at_once() -> None:
    spec = JobSpec(name="x", command="true", workdir="/w", log_dir="/l", time_minutes=10,
                   array_size=5, array_concurrency=2)
    assert spec.run_minutes == 30
    assert msgspec.structs.replace(spec, array_concurrency=None).run_minutes == 10
    assert msgspec.structs.replace(spec, array_size=None, array_concurrency=None) \
        .run_minutes == 10


@pytest.mark.parametrize("purpose", ["eval", "launch", "archive"])
def test_sweep_records_a_forgotten_job_gone_once_when_past_its_run_time_and_queueing(
        purpose: str) -> None:
    run = _run("r", state="running", job_ids=["7"], admitted=True)
    job = JobRecord("7", "ol-r-x", purpose, "r", TARGET, None,
                    _stamp(-timedelta(minutes=30 + sweep.QUEUEING_ALLOWANCE_MINUTES + 1)),
                    run_minutes=30)
    state = State(runs={"r": run}, jobs={"7": job})
    jobs = {"7": JobObservation(job_id="7", state=JobState.GONE)}
    (action,) = sweep.plan(_view(state, jobs=jobs), [])
    assert isinstance(action, RecordEvent)
    assert action.event == ev.JobEnded(job_id="7", state="gone")
    job.submitted_at = _stamp(-timedelta(minutes=30 + sweep.QUEUEING_ALLOWANCE_MINUTES - 1))
    assert sweep.plan(_view(state, jobs=jobs), []) == []  # within its bound: not yet
    job.state = "gone"
    assert sweep.plan(_view(state, jobs={}), []) == []  # recorded once


def test_sweep_waits_when_park_is_within_deadline() -> None:
    jobs = {"5": JobObservation(job_id="5", state=JobState.GONE)}
    assert sweep.plan(_view(_parked(timedelta(hours=1)), jobs=jobs), []) == []


def test_sweep_concludes_nothing_when_scheduler_could_not_be_asked() -> None:
    state = _parked(-timedelta(hours=1))
    assert sweep.plan(_view(state, compute_error="squeue timed out"), []) == []
