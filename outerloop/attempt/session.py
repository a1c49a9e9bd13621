"""The leg cycle: what a climb or wake job does for its run.

``continue_run`` is the single entry point of both ``attempt start`` and ``attempt
wake``. It reads the run's record and does the one next thing, so a job that died
anywhere can be followed by another that picks up where it stopped:

- a leg whose request was recorded but not acted on -> act on it (scope, budgets,
  seal, submit launches or evals, submit the wake, park);
- a leg started but never ended -> the session died: resume it with a note;
- parked on launches -> gather results, wake the agent;
- parked on evals -> the verdict; credited -> ready to publish (the tick pushes and
  opens the PR); not credited -> wake the agent with the numbers;
- parked in review with reviewer words waiting -> wake the agent with them;
- parked to publish with its base moved -> merge the candidate onto the new base and
  measure it there, or wake the agent to rebase (``verdict_flow.onto_new_base``);
- admitted, no leg yet -> install the channel, render the brief, first leg.

The job is one loop (``drive``) over typed steps (``attempt/steps.py``): each step
function returns the next (a leg, acting on the committed request, or done), and a
refused request is a ``RequestRefused`` exception carrying the agent-facing note.
"""

from __future__ import annotations

import fcntl
import os

from outerloop.attempt import endpoint_gate, prompts
from outerloop.attempt.channel import ChannelError, install_channel
from outerloop.attempt.context import RunContext
from outerloop.attempt.exits import end
from outerloop.attempt.gpu_use import observe_jobs
from outerloop.attempt.launch_flow import wake_from_launches
from outerloop.attempt.leg import MAX_LEGS_PER_JOB, leg_ceiling, run_leg
from outerloop.attempt.leg_gates import deployment_holds
from outerloop.attempt.request import act_on_request
from outerloop.attempt.steps import Act, Leg, Step
from outerloop.attempt.verdict_flow import onto_new_base, untold_verdict, wake_from_evals
from outerloop.config import Settings
from outerloop.ledger.state import Ending, ParkReason, RunState
from outerloop.run.paths import RunPaths

LEASE_FILE = "lease"



def continue_run(settings: Settings, run_id: str, job_id: str | None = None) -> str:
    """Do the run's next step under the run's lease; returns a one-line account.

    The lease (an ``flock`` on ``runs/<id>/lease``) makes the run's jobs take turns:
    a recovery wake and a late wake never write the run's ledger file at once; the
    second re-reads the record and does only what is still left."""
    paths = RunPaths.of(settings.home, run_id)
    paths.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.root / LEASE_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return _continue(settings, run_id, job_id)
    finally:
        os.close(fd)


def _parked_jobs_done(ctx: RunContext) -> bool:
    """Every job the park waits on has ended: as the ledger concluded it (``gone``
    included: the sweep records a forgotten job past its bound), else as observed."""
    recorded = ctx.state.jobs
    waiting = [j for j in ctx.run.park_jobs if j not in recorded or not recorded[j].terminal]
    seen = observe_jobs(ctx, waiting)
    return all(job in seen and seen[job].state.terminal for job in waiting)


def _continue(settings: Settings, run_id: str, job_id: str | None) -> str:
    ctx = RunContext.load(settings, run_id)
    ctx.reconcile()
    return drive(ctx, job_id, first_step(ctx, job_id))


def drive(ctx: RunContext, job_id: str | None, step: Step) -> str:
    """The job's loop: run each step until one says the job is done (a ``str``). A job
    runs at most ``MAX_LEGS_PER_JOB`` agent legs: one more ends the run instead
    (``leg.leg_ceiling``), whatever kept it from parking."""
    legs = 0
    while not isinstance(step, str):
        if isinstance(step, Leg) and legs >= MAX_LEGS_PER_JOB:
            return leg_ceiling(ctx, step)
        if isinstance(step, Leg):
            legs += 1
            step = run_leg(ctx, job_id, step)
        else:
            step = act_on_request(ctx, job_id)
    return step


def first_step(ctx: RunContext, job_id: str | None) -> Step:
    """What the run's record says to do first: the one next thing, wherever the job
    before this one stopped."""
    run = ctx.run
    run_id = run.run_id
    if run.ended:
        return f"{run_id} already ended ({run.ending})"
    if run.leg_refused:
        return Leg(again=_again_prompt(ctx))
    if run.pending_request is not None:
        return Act()
    if run.leg_open:
        return Leg(verdict=untold_verdict(ctx), notes=(
            "Your previous session was interrupted before it ended. Continue from the "
            "state of the workspace; re-stage anything you had staged.",))
    if run.state == RunState.PARKED and run.park_reason in (ParkReason.JOBS, ParkReason.EVAL) \
            and not _parked_jobs_done(ctx):
        return f"{run_id} still waits on its jobs"
    if run.state == RunState.PARKED and run.park_reason == ParkReason.JOBS:
        return wake_from_launches(ctx)
    if run.state == RunState.PARKED and run.park_reason == ParkReason.EVAL:
        return wake_from_evals(ctx, job_id)
    if run.state == RunState.PARKED and run.park_reason == ParkReason.REVIEW:
        if run.undelivered:
            return Leg()  # its prompt carries what is undelivered
        return f"{run_id} is in review with nothing new to deliver"
    if run.rebasing:
        return onto_new_base(ctx)
    if run.state == RunState.PARKED:
        return f"{run_id} is parked ({run.park_reason}); nothing for a job to do"
    if run.legs == 0:
        deployment_holds(ctx.settings, run, ctx.contract)
        try:
            install_channel(ctx.paths.ws, prompts.channel_limits(ctx),
                            git_dir=ctx.paths.kernel_git, rev=ctx.run.base_sha or "HEAD")
        except ChannelError as exc:
            return end(ctx, Ending.ABORTED,
                       f"the agent's channel could not be installed: {exc}")
        return Leg(first=True)
    return f"{run_id}: nothing to do in state {run.state}"


def _again_prompt(ctx: RunContext) -> str:
    """The refused leg's prompt (as saved, secrets redacted) with the note saying why it
    comes again; the brief when it cannot be read (a fresh session needs one)."""
    saved = ctx.paths.legs / f"{ctx.run.legs:03d}-prompt.md"
    try:
        text = saved.read_text(encoding="utf-8")
    except OSError:
        text = prompts.brief(ctx)
    if endpoint_gate.AGAIN_NOTE in text:
        return text  # refused again: the note is there already
    return f"{text}\n\n## Note from outerloop\n\n{endpoint_gate.AGAIN_NOTE}\n"
