"""Sweep: the safety net that makes every run end in exactly one ending.

- a climb job that ended before the run's first leg -> a failed start: the run ends
  ``aborted`` and the issue gets a release marker (it may be claimed again);
- the job running a leg ended but the run neither parked nor ended -> after the
  grace, a recovery wake picks up where it stopped (``attempt wake`` re-reads the
  run's record and reconciles its intents); a second death ends it ``aborted``;
- parked with every job ended and its wake job gone or dead -> after the grace,
  deliver the wake again;
- parked past its deadline with jobs still live -> cancel them (the wake then fires
  with that fact);
- three legs in a row without progress -> ``stuck``;
- an ended run's live jobs are cancelled.

When the scheduler could not be asked this tick (``obs.compute_error``) the sweep
plans nothing: a job's state is unknown, not ended.
"""

from __future__ import annotations

from typing import Any

from outerloop.actions import CancelJob, PostComment, RecordEvent, SubmitJob
from outerloop.attempt.jobs import attempt_spec, job_name
from outerloop.lanes.common import end_run, kernel_report, seconds_since
from outerloop.lanes.view import TickView
from outerloop.ledger.state import JobRecord, RunRecord, State

LEG_PURPOSES = frozenset({"climb", "wake", "recover"})
MAX_RECOVERIES = 2
STUCK_AFTER_EMPTY_LEGS = 3
LEG_GONE_AFTER_S = 4 * 3600
"""A leg job (climb, wake, recovery) the scheduler has forgotten, this long after its
submission, is over: longer than any attempt job may run (120 min) plus queueing."""


def _jobs_of(state: State, run: RunRecord) -> list[JobRecord]:
    return [state.jobs[j] for j in run.job_ids if j in state.jobs]


def _recover(view: TickView, run: RunRecord, jobs: list[JobRecord]) -> SubmitJob:
    n = 1 + sum(1 for j in jobs if j.purpose == "recover")
    spec = attempt_spec(view.settings, run.run_id, "wake", job_name(run.run_id, "recover", n),
                        view.settings.limits.grace_minutes + 120)
    return SubmitJob(target=run.target, run=run.run_id, purpose="recover", spec=spec)


def _observed_gone(view: TickView, job: JobRecord) -> bool:
    seen = view.obs.jobs.get(job.job_id)
    return seen is not None and seen.state.value == "gone"


def _gone(run: RunRecord, job: JobRecord) -> RecordEvent:
    """The scheduler has no record of the job and its time is up: it is over, as
    ``gone`` (never read as finished: its results are whatever it left, if anything)."""
    return RecordEvent(target=run.target, run=run.run_id, event_kind="job_ended",
                       fields={"job_id": job.job_id, "state": "gone"})


def _sweep_run(view: TickView, run: RunRecord) -> list[Any]:
    grace_s = view.settings.limits.grace_minutes * 60
    now = view.obs.now
    jobs = _jobs_of(view.state, run)
    if run.state == "parked" and run.park_reason in ("jobs", "eval"):
        park = [view.state.jobs[j] for j in run.park_jobs if j in view.state.jobs]
        live = [j for j in park if not j.terminal]
        if live and run.deadline and seconds_since(run.deadline, now) > 0:
            overdue: list[Any] = []
            for job in live:
                if _observed_gone(view, job):
                    overdue.append(_gone(run, job))
                elif f"cancel:{job.job_id}" not in view.state.done_keys:
                    overdue.append(CancelJob(target=run.target, run=run.run_id,
                                             job_id=job.job_id, why="past the park's deadline"))
            return overdue
        if live:
            return []
    lost = [j for j in jobs if j.purpose in LEG_PURPOSES and not j.terminal
            and _observed_gone(view, j)
            and seconds_since(j.submitted_at, now) > LEG_GONE_AFTER_S]
    if lost:
        return [_gone(run, j) for j in lost]
    if any(not j.terminal for j in jobs if j.purpose in LEG_PURPOSES):
        return []
    legs = [j for j in jobs if j.purpose in LEG_PURPOSES]
    last_leg_job = max(legs, key=lambda j: j.submitted_at) if legs else None
    if run.wakes_without_progress >= STUCK_AFTER_EMPTY_LEGS:
        return [end_run(run, "stuck", kernel_report(
            run, "stuck", "Three legs in a row made no progress."), "sweep")]
    if run.state == "queued":
        if run.admitted and last_leg_job is not None and last_leg_job.terminal:
            why = (f"The climb job {last_leg_job.job_id} ended ({last_leg_job.state}) "
                   f"before the first leg started.")
            actions: list[Any] = [end_run(run, "aborted", kernel_report(run, "aborted", why),
                                          "sweep")]
            if run.issue is not None:
                actions.append(PostComment(
                    target=run.target, run=run.run_id, number=run.issue,
                    body=f"outerloop releases this issue: run `{run.run_id}` failed to "
                         f"start. {why}", marker_kind="release", marker_key=run.run_id))
            return actions
        return []
    if last_leg_job is None or not last_leg_job.terminal:
        return []
    if seconds_since(last_leg_job.ended_at, now) < grace_s:
        return []
    if run.state == "running" or run.pending_request is not None:
        recoveries = sum(1 for j in jobs if j.purpose == "recover")
        if recoveries >= MAX_RECOVERIES:
            why = f"The run's leg jobs died {recoveries + 1} times without ending the run."
            return [end_run(run, "aborted", kernel_report(run, "aborted", why), "sweep")]
        return [_recover(view, run, jobs)]
    if run.state == "parked" and run.park_reason in ("jobs", "eval"):
        return [_recover(view, run, jobs)]
    return []


def plan(view: TickView, planned: list[Any]) -> list[Any]:
    if view.obs.compute_error:
        return []  # the scheduler could not be asked: conclude nothing this tick
    actions: list[Any] = []
    for run in view.state.active_runs():
        actions.extend(_sweep_run(view, run))
    for job in view.state.live_jobs():
        owner = view.state.runs.get(job.run or "")
        if owner is not None and owner.ended and job.purpose != "archive" and \
                f"cancel:{job.job_id}" not in view.state.done_keys:
            actions.append(CancelJob(target=owner.target, run=owner.run_id, job_id=job.job_id,
                                     why=f"run ended {owner.ending}"))
    return actions
