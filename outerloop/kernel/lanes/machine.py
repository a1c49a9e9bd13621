"""The machine's failures, planned apart from the run's (issue 22): a leg job that died
of a full disk or quota; and the deployment's (issue 23): a leg job a failing
``[compute] setup`` line, a command that could not start, or a placement the scheduler
refuses stopped (``infra.says_deployment``, read by ``observe``), or a leg job that
timed out under a session cap below the floor of such jobs (``time_caps``, issue 51).

Such a death says nothing about the agent's work, so the sweep must not count it
against the run's recoveries (``sweep.MAX_RECOVERIES``) nor end the run: it records an
``infra_wait`` once (what showed it, which filesystem is short, the fix: the operator's
line in ``status``, on the board and in the tick's notes), waits while a filesystem the
run's jobs write is short of space (``infra.shortage``), and then delivers the leg
again as a ``retry`` job, which is no recovery. Each further death in a row waits
longer (``infra.retry_after_s``), since a quota is invisible to ``statvfs``.

How a death is attributed to the machine, most typed first:

1. the job exited ``infra.NO_SPACE_EXIT`` (the attempt job's own top level: an exit
   code needs no space, where a line of log may not fit);
2. its stderr's tail says ``No space left on device`` / ``Disk quota exceeded``
   (``Observations.no_space``: a process we do not control, or a job that died before
   its top level could act);
3. it failed while a filesystem the run's jobs write is short of space now.

A deployment death waits the same way (an ``infra_wait`` with ``origin =
"deployment"``, its message quoting the job's own line and naming its stderr file),
but nothing can be measured to say it is fixed: its ``retry`` comes when the job
settings' digest differs from the one the wait recorded (the operator edited them), or
after ``infra.deploy_retry_after_s`` (60 s doubling to an hour). The sweep uses it for a
climb job before the first leg too, where the issue is told once (``starting``).

Pure: reads the ``TickView`` only.
"""

from __future__ import annotations

import hashlib

from outerloop import infra
from outerloop.config import Settings
from outerloop.kernel.actions import Action, RecordEvent, SubmitJob
from outerloop.kernel.lanes.common import seconds_since
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger import events as ev
from outerloop.ledger.state import JobRecord, RunRecord
from outerloop.limits import ATTEMPT_JOB_MINUTES
from outerloop.run.jobs import attempt_spec, job_name
from outerloop.time_caps import session_shortfall
from outerloop.vocabulary import LEG_PURPOSES, JobPurpose, JobState

RETRY = JobPurpose.RETRY
DEPLOYMENT = "deployment"


def short_now(view: TickView) -> list[str]:
    """Each filesystem the run's jobs write that is short of space this tick."""
    return [line for line in (infra.shortage(s) for s in view.obs.space) if line]


def machine_cause(view: TickView, job: JobRecord) -> str | None:
    """Why the ended leg ``job`` is the machine's failure, or None when nothing says so."""
    if job.exit_code == infra.NO_SPACE_EXIT:
        return (f"leg job {job.job_id} exited {infra.NO_SPACE_EXIT}: no space left on "
                f"device or disk quota exceeded")
    words = view.obs.no_space.get(job.job_id)
    if words:
        return f"leg job {job.job_id} ended {job.state}; its stderr says: {words}"
    if job.state != JobState.COMPLETED and short_now(view):
        return f"leg job {job.job_id} ended {job.state} while a filesystem it writes is full"
    return None


def deployment_cause(view: TickView, job: JobRecord) -> str | None:
    """Why the ended leg ``job`` is the deployment's failure (its own line), or None.
    A leg job that ran out of time under a session cap below the floor of such jobs
    (``time_caps.session_shortfall``) is the settings' too: it never had the time."""
    words = view.obs.deployment.get(job.job_id)
    if words is None and job.state == JobState.TIMEOUT:
        words = session_shortfall(view.settings)
    if words is None:
        return None
    code = f", exit {job.exit_code}" if job.exit_code is not None else ""
    return f"leg job {job.job_id} ended {job.state}{code}: {words}"


def deployment_digest(settings: Settings) -> str:
    """What a job's start depends on among the settings (compute, harness, sandbox,
    review, endpoints, the targets' agent slots), as a short digest: a change is taken
    as the operator's fix."""
    parts = [settings.compute.model_dump_json(), settings.harness.model_dump_json(),
             settings.sandbox.model_dump_json(), settings.review.model_dump_json(),
             *[e.model_dump_json() for e in settings.endpoints.values()],
             *[t.model_dump_json() for t in settings.targets if t.agents]]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def deployment_message(run: RunRecord, job: JobRecord, cause: str) -> str:
    """The operator's line: the run, the job's own words, its stderr file, the fix."""
    return (f"run {run.run_id} waits for the deployment: {cause} (the job's stderr: "
            f"runs/{run.run_id}/jobs/{job.name}/stderr). {infra.DEPLOY_FIX}")


def deployment_wait(view: TickView, run: RunRecord, last: JobRecord) -> list[Action] | None:
    """What to do for a run whose latest leg job ``last`` the deployment stopped: record
    the wait once, then a ``retry`` once the settings changed or the backoff passed;
    None when ``last`` is not such a death."""
    wait = run.infra_wait if run.infra_wait and run.infra_wait.job_id == last.job_id \
        else None
    if wait is not None and wait.origin != DEPLOYMENT:
        return None
    digest = deployment_digest(view.settings)
    if wait is None:
        cause = deployment_cause(view, last)
        if cause is None:
            return None
        return [RecordEvent(target=run.target, run=run.run_id, event=ev.InfraWait(
            job_id=last.job_id, cause=cause, origin=DEPLOYMENT, settings_digest=digest,
            message=deployment_message(run, last, cause)))]
    waited = seconds_since(last.ended_at, view.obs.now)
    if wait.settings_digest != digest or \
            waited >= infra.deploy_retry_after_s(_deaths_in_a_row(view, run)):
        return [retry_job(view, run)]
    return []


def _deaths_in_a_row(view: TickView, run: RunRecord) -> int:
    """The latest leg job's death and each retry before it that died too."""
    legs = sorted((view.state.jobs[j] for j in run.job_ids if j in view.state.jobs
                   and view.state.jobs[j].purpose in LEG_PURPOSES),
                  key=lambda j: (j.submitted_lc, j.submitted_at))
    deaths = 1
    for job in reversed(legs):
        if job.purpose != RETRY:
            break
        deaths += 1
    return deaths


def retry_job(view: TickView, run: RunRecord) -> SubmitJob:
    """The run's leg delivered again: a ``retry`` job (no recovery)."""
    n = 1 + sum(1 for j in run.job_ids if j in view.state.jobs
                and view.state.jobs[j].purpose == RETRY)
    spec = attempt_spec(view.settings, run.run_id, "wake", job_name(run.run_id, RETRY, n),
                        view.settings.limits.grace_minutes + ATTEMPT_JOB_MINUTES)
    return SubmitJob(target=run.target, run=run.run_id, purpose=RETRY, spec=spec)


def wait_message(run: RunRecord, cause: str, short: list[str]) -> str:
    """The operator's line: the run, what showed it, what is full, the fix."""
    full = "; ".join(short) if short else "no filesystem looks full now (a quota?)"
    return f"run {run.run_id} waits for space: {cause}. Full: {full}. {infra.FIX}"


def plan_wait(view: TickView, run: RunRecord, last: JobRecord) -> list[Action] | None:
    """What to do for a run whose latest leg job ``last`` ended without ending the run,
    when that is the machine's failure (a full disk or quota, or the deployment); None
    when it is not (the sweep recovers it)."""
    wait = run.infra_wait if run.infra_wait and run.infra_wait.job_id == last.job_id \
        else None
    if (wait is not None and wait.origin == DEPLOYMENT) or (
            wait is None and machine_cause(view, last) is None):
        return deployment_wait(view, run, last)
    cause = wait.cause if wait else machine_cause(view, last)
    if cause is None:
        return None
    short = short_now(view)
    actions: list[Action] = []
    if wait is None:
        actions.append(RecordEvent(target=run.target, run=run.run_id, event=ev.InfraWait(
            job_id=last.job_id, cause=cause, paths=short,
            message=wait_message(run, cause, short))))
    if short:
        return actions
    if seconds_since(last.ended_at, view.obs.now) < \
            infra.retry_after_s(_deaths_in_a_row(view, run)):
        return actions
    return [*actions, retry_job(view, run)]


def tick_notes(view: TickView, planned: list[Action]) -> list[str]:
    """One line per run waiting on the machine this tick (what the tick prints)."""
    notes = []
    started = {a.run: a.event for a in planned if isinstance(a, RecordEvent)
               and isinstance(a.event, ev.InfraWait)}
    retried = {a.run for a in planned if isinstance(a, SubmitJob) and a.purpose == RETRY}
    for run in view.state.active_runs():
        wait = started.get(run.run_id) or view.state.machine_wait(run)
        if not isinstance(wait, ev.InfraWait):
            continue
        if run.run_id in retried:
            notes.append(f"run {run.run_id}: space is back; its leg is delivered again "
                         f"(a retry, not a recovery)" if wait.origin != DEPLOYMENT else
                         f"run {run.run_id}: its leg is tried again on the deployment "
                         f"(a retry, not a recovery)")
        elif wait.origin == DEPLOYMENT:
            notes.append(wait.message)
        else:
            notes.append(wait_message(run, wait.cause, short_now(view)))
    return notes


def requeued_lines(view: TickView) -> dict[str, str]:
    """For each active run whose leg job waits in the queue to run again after its node
    failed or it was preempted (Slurm requeued it): its line (``status``'s ``waits:``).
    The job runs again by itself; the line says so, and the fix if the node stays down."""
    lines: dict[str, str] = {}
    for run in view.state.active_runs():
        for job_id in run.job_ids:
            job = view.state.jobs.get(job_id)
            seen = view.obs.jobs.get(job_id)
            if job is None or job.terminal or job.purpose not in LEG_PURPOSES or \
                    seen is None or seen.state != JobState.PENDING or \
                    infra.REQUEUED_WORDS not in (seen.reason or ""):
                continue
            lines[run.run_id] = infra.requeued_line(job_id, seen.reason or "")
    return lines
