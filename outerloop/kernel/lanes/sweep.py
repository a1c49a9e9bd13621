"""Sweep: the safety net that makes every run end in exactly one ending.

- a climb job that ended before the run's first leg -> a failed start: the run ends
  ``aborted`` and the issue gets a release marker (it may be claimed again); unless it
  ended by a node failure (``node_fail``, ``interrupted``) or a full disk or quota
  (``lanes/machine.py``'s ``machine_cause``): the machine's fault, never
  the agent's, so it is started again (a recovery job) as often as it takes, the second
  and later times after a backoff, the issue told once (``lanes/starting.py``); it
  never costs the issue a claim;
- a climb job the deployment stopped before the first leg (a failing setup line, a
  command that could not start, a placement the scheduler refuses: ``machine.py``'s
  ``deployment_wait``) -> the run waits for the operator's fix, its issue told once,
  and is tried again (a ``retry``) once the settings change or after a backoff;
- the job running a leg ended but the run neither parked nor ended -> after the
  grace, a recovery wake picks up where it stopped (``attempt wake`` re-reads the
  run's record and reconciles its intents);
- parked on its jobs or its eval pairs with every job ended and its wake job gone or
  dead -> after the grace, deliver the wake again (a recovery job too);
- either of those two once ``MAX_RECOVERIES`` recoveries in a row died or ended without
  the run moving on (``lanes/bounds.py``) -> ``aborted``, the reason naming the job,
  the exception it crashed on and its stderr: it would die the same way for ever;
- either of those two, when the leg job died of a full disk or quota, or of the
  deployment (``machine.py``) -> no recovery: the run waits for space or the fix
  (``infra_wait``), then its leg is delivered again as a ``retry``, which never counts
  against ``MAX_RECOVERIES``;
- parked past its deadline with jobs still live -> cancel them (the wake then fires
  with that fact), unless every one of them waits in the queue for a healthy reason
  (Priority, Resources, a QOS or association limit, BeginTime, ...): then the
  deadline moves ``EXTEND_H`` hours on (``deadline_extended``);
- a job pending with ``DependencyNeverSatisfied`` can never start -> cancelled;
- a job the scheduler no longer knows (gone) whose run ended, or whose cancel was
  already done, or past its own bound (``gone_after_s``: its run time plus queueing),
  is recorded ``gone`` once, so it is not observed every tick and its run goes on;
- three legs in a row without progress -> ``stuck``;
- either ending (``stuck``, or ``aborted`` after the recoveries) of a run revising a
  candidate the review blocked (``RunRecord.revising``) -> that candidate's recorded
  draft is published instead (``common.end_or_publish_blocked``);
- an ended run's live jobs are cancelled.

When the scheduler could not be asked this tick (``obs.compute_error``) the sweep
plans nothing: a job's state is unknown, not ended.
"""

from __future__ import annotations

from outerloop.clock import stamp
from outerloop.infra import INFRASTRUCTURE_STATES, NODE_FAILED
from outerloop.kernel.actions import Action, CancelJob, PostComment, RecordEvent, SubmitJob
from outerloop.kernel.lanes import bounds, starting
from outerloop.kernel.lanes.bounds import MAX_RECOVERIES
from outerloop.kernel.lanes.common import (
    end_or_publish_blocked,
    end_run,
    seconds_since,
    step_due,
)
from outerloop.kernel.lanes.machine import deployment_wait, machine_cause, plan_wait
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending, JobRecord, ParkReason, RunRecord, RunState, State
from outerloop.limits import ATTEMPT_JOB_MINUTES
from outerloop.run.jobs import attempt_spec, job_name
from outerloop.vocabulary import LEG_PURPOSES, JobPurpose, JobState

STUCK_AFTER_EMPTY_LEGS = 3
INFRASTRUCTURE_ENDS = INFRASTRUCTURE_STATES
"""A climb job ending so before the first leg is the machine's failure, not the run's:
it is started again (a recovery job, with backoff, ``_start_again``) instead of
released."""
NO_SPACE = "a disk or quota it writes was full before the agent started"
DEPLOYMENT_FAILED = starting.DEPLOYMENT_WORDS
EXTEND_H = 12
HEALTHY_WAITS = frozenset({"Priority", "Resources", "BeginTime", "JobArrayTaskLimit",
                           "Dependency", "Reservation", "Licenses"})
NEVER_STARTS = "DependencyNeverSatisfied"
QUEUEING_ALLOWANCE_MINUTES = 120
LEG_GONE_AFTER_S = (ATTEMPT_JOB_MINUTES + QUEUEING_ALLOWANCE_MINUTES) * 60
"""A leg job (climb, wake, recovery) the scheduler has forgotten, this long after its
submission, is over: longer than any attempt job may run plus queueing (4 h)."""


def gone_after_s(job: JobRecord) -> int:
    """When a job of any purpose the scheduler has forgotten (absent from its queue and
    its accounting) is over: this long after its submission, its own run time (time
    limit x array waves; an attempt job's when unknown) plus ``QUEUEING_ALLOWANCE_MINUTES``.
    Before that a missing job may be one the scheduler has not listed yet."""
    minutes = job.run_minutes or ATTEMPT_JOB_MINUTES
    return (minutes + QUEUEING_ALLOWANCE_MINUTES) * 60


def _jobs_of(state: State, run: RunRecord) -> list[JobRecord]:
    return [state.jobs[j] for j in run.job_ids if j in state.jobs]


def _recover(view: TickView, run: RunRecord, jobs: list[JobRecord]) -> SubmitJob:
    n = 1 + sum(1 for j in jobs if j.purpose == JobPurpose.RECOVER)
    spec = attempt_spec(view.settings, run.run_id, "wake", job_name(run.run_id, "recover", n),
                        view.settings.limits.grace_minutes + ATTEMPT_JOB_MINUTES)
    return SubmitJob(target=run.target, run=run.run_id, purpose=JobPurpose.RECOVER, spec=spec)


def _start_again(view: TickView, run: RunRecord, jobs: list[JobRecord],
                 last: JobRecord) -> list[Action]:
    """The run's leg jobs all died of the machine before its first leg: start it again,
    at once the first time, then after ``starting.retry_delay_s`` of the deaths before
    the latest (10 s doubling up to an hour); from the second death on it waits, and
    its issue is told once."""
    deaths = sum(1 for j in jobs if j.purpose in LEG_PURPOSES and j.terminal
                 and _machine_killed(view, j))
    actions: list[Action] = []
    if deaths >= 2:
        why = NODE_FAILED if last.state in INFRASTRUCTURE_ENDS else NO_SPACE
        post = starting.delay_comment(run, why)
        if post is not None and step_due(view, post):
            actions.append(post)
    due = starting.retry_at(deaths - 1, last.ended_at or "")
    if due is None or view.obs.now >= due:
        actions.append(_recover(view, run, jobs))
    return actions


def _machine_killed(view: TickView, job: JobRecord) -> bool:
    """The ended leg ``job`` died of the machine: its node, or a full disk or quota."""
    return job.state in INFRASTRUCTURE_ENDS or machine_cause(view, job) is not None


def _observed_gone(view: TickView, job: JobRecord) -> bool:
    seen = view.obs.jobs.get(job.job_id)
    return seen is not None and seen.state == JobState.GONE


def _gone(run: RunRecord | None, job: JobRecord) -> RecordEvent:
    """The scheduler has no record of the job and its time is up: it is over, as
    ``gone`` (never read as finished: its results are whatever it left, if anything)."""
    return RecordEvent(target=run.target if run else str(job.target),
                       run=run.run_id if run else job.run,
                       event=ev.JobEnded(job_id=job.job_id, state=JobState.GONE))


def pending_word(view: TickView, job: JobRecord) -> str | None:
    """The scheduler's pending reason of a job observed pending (first word)."""
    seen = view.obs.jobs.get(job.job_id)
    if seen is None or seen.state != JobState.PENDING:
        return None
    return (seen.reason or "None").split(";", 1)[0].split(",", 1)[0].strip() or "None"


def healthy_wait(word: str | None) -> bool:
    """Pending for a reason that resolves by itself: the queue, a limit, a start time."""
    if word is None:
        return False
    if word in HEALTHY_WAITS:
        return True
    return word.startswith(("QOS", "Assoc")) and any(
        part in word for part in ("Limit", "Max", "Grp"))


def _extend(view: TickView, run: RunRecord, reasons: list[str]) -> RecordEvent:
    from datetime import timedelta


    deadline = stamp(view.obs.now + timedelta(hours=EXTEND_H))
    return RecordEvent(target=run.target, run=run.run_id, event=ev.DeadlineExtended(
        deadline=deadline, reason=", ".join(sorted(set(reasons)))))


def _sweep_run(view: TickView, run: RunRecord) -> list[Action]:
    grace_s = view.settings.limits.grace_minutes * 60
    now = view.obs.now
    jobs = _jobs_of(view.state, run)
    if run.state == RunState.PARKED and run.park_reason in (ParkReason.JOBS, ParkReason.EVAL):
        park = [view.state.jobs[j] for j in run.park_jobs if j in view.state.jobs]
        live = [j for j in park if not j.terminal]
        if live and run.deadline and seconds_since(run.deadline, now) > 0:
            overdue: list[Action] = []
            waiting = [j for j in live if not _observed_gone(view, j)]
            words = [pending_word(view, j) for j in waiting]
            if waiting and all(healthy_wait(w) for w in words):
                return [*[_gone(run, j) for j in live if _observed_gone(view, j)],
                        _extend(view, run, [str(w) for w in words])]
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
    if view.state.endpoint_wait(run) is not None:
        return []  # its model endpoint is down: the endpoints lane delivers it again
    legs = [j for j in jobs if j.purpose in LEG_PURPOSES]
    last_leg_job = max(legs, key=lambda j: (j.submitted_lc, j.submitted_at)) if legs else None
    if run.wakes_without_progress >= STUCK_AFTER_EMPTY_LEGS and run.pr_number is None:
        # (a run in review is woken only by new feedback, so quiet answers cost what
        # the reviewers ask for; its credited PR stands: test_review_quiet_agent)
        return [end_or_publish_blocked(run, Ending.STUCK,
                                       "Three legs in a row made no progress.", "sweep")]
    if run.state == RunState.QUEUED:
        if run.admitted and last_leg_job is not None and last_leg_job.terminal:
            waits = deployment_wait(view, run, last_leg_job)
            if waits is not None:  # the deployment's, not the run's: wait for the fix
                post = starting.delay_comment(run, DEPLOYMENT_FAILED)
                if post is not None and step_due(view, post):
                    waits.append(post)
                return waits
        if run.admitted and last_leg_job is not None and last_leg_job.terminal and \
                _machine_killed(view, last_leg_job):
            return _start_again(view, run, jobs, last_leg_job)  # the machine's, not the run's
        if run.admitted and last_leg_job is not None and last_leg_job.terminal:
            why = (f"The climb job {last_leg_job.job_id} ended ({last_leg_job.state}) "
                   f"before the first leg started.")
            actions: list[Action] = [end_run(run, Ending.ABORTED, why, "sweep")]
            if run.issue is not None:
                actions.append(PostComment(
                    target=run.target, run=run.run_id, number=run.issue,
                    body=f"outerloop releases this issue: run `{run.run_id}` failed to "
                         f"start. {why}", marker_kind="release", marker_key=run.run_id))
            return actions
        return []
    if last_leg_job is None or not last_leg_job.terminal:
        return []
    leg_due = run.state == RunState.RUNNING or run.pending_request is not None or (
        run.state == RunState.PARKED and run.park_reason in (ParkReason.JOBS, ParkReason.EVAL))
    waits = deployment_wait(view, run, last_leg_job) if leg_due else None
    if waits is not None:  # the job's own finding (or a cap below need): no grace to wait
        return waits
    if seconds_since(last_leg_job.ended_at, now) < grace_s:
        return []
    if leg_due:
        for_space = plan_wait(view, run, last_leg_job)
        if for_space is not None:
            return for_space  # the machine's failure, not the run's: wait for space
        row = bounds.recoveries_in_a_row(view.state, run)
        if len(row) >= MAX_RECOVERIES:  # whatever the leg was doing: it dies so again
            why = bounds.given_up(view, run, len(row) + 1, last_leg_job)
            return [end_or_publish_blocked(run, Ending.ABORTED, why, "sweep")]
        return [_recover(view, run, jobs)]
    return []


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    if view.obs.compute_error:
        return []  # the scheduler could not be asked: conclude nothing this tick
    actions: list[Action] = []
    for run in view.state.active_runs():
        actions.extend(_sweep_run(view, run))
    swept = {a.event.job_id for a in actions
             if isinstance(a, RecordEvent) and isinstance(a.event, ev.JobEnded)}
    swept |= {a.job_id for a in actions if isinstance(a, CancelJob)}
    for job in view.state.live_jobs():
        if job.job_id in swept:
            continue
        owner = view.state.runs.get(job.run or "")
        cancelled = f"cancel:{job.job_id}" in view.state.done_keys
        if _observed_gone(view, job) and (owner is None or owner.ended or cancelled or
                                          seconds_since(job.submitted_at, view.obs.now)
                                          > gone_after_s(job)):
            actions.append(_gone(owner, job))
        elif owner is not None and owner.ended and not cancelled \
                and job.purpose != JobPurpose.ARCHIVE:
            actions.append(CancelJob(target=owner.target, run=owner.run_id, job_id=job.job_id,
                                     why=f"run ended {owner.ending}"))
        elif pending_word(view, job) == NEVER_STARTS and not cancelled and job.target:
            actions.append(CancelJob(target=job.target, run=job.run, job_id=job.job_id,
                                     why=f"{NEVER_STARTS}: a job it depends on ended in a way "
                                         f"that can never satisfy it"))
    return actions
