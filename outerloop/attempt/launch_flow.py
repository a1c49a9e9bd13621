"""Experiments: the agent's staged launches sealed, submitted and parked on, and the
wake that brings their results back.

Launches run from a sealed commit of the agent's tree (scope checked first), each in
its own checkout, within the run's launch budget and GPU cap (in waves when the cap is
smaller than what is staged at once)."""

from __future__ import annotations

from outerloop import budgets
from outerloop.attempt.candidate import left_out_note
from outerloop.attempt.channel import CommittedRequest
from outerloop.attempt.context import RunContext
from outerloop.attempt.credit import give_up
from outerloop.attempt.exits import park_on
from outerloop.attempt.gpu_use import gpu_problem, holding_gpus, launch_gpus, observe_jobs
from outerloop.attempt.results import launch_results
from outerloop.attempt.scope_check import scope_problem
from outerloop.attempt.steps import Leg, RequestRefused, Step
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending, RunRecord
from outerloop.run import jobs
from outerloop.run.workspace import checkout, seal
from outerloop.vocabulary import JobPurpose


def seal_for(ctx: RunContext, tree: str) -> str:
    """The seal commit of ``tree`` for the run's next sleep (launches or a submission)."""
    assert ctx.run.base_sha is not None and ctx.run.branch is not None
    return seal(ctx.paths, ctx.run.branch, ctx.run.base_sha, tree,
                f"outerloop seal: {ctx.run.run_id} sleep {ctx.run.sleeps + 1}\n")


def launch_experiments(ctx: RunContext, request: CommittedRequest) -> Step:
    """Seal the tree, submit the staged launches (in waves under the GPU cap) and park
    on them; refused (``RequestRefused``) over the launch budget, scope or GPUs."""
    run = ctx.run
    if ctx.sleeps_left() <= 0:
        return give_up(ctx, Ending.BUDGET_EXHAUSTED, "the run used all its sleeps")
    if len(request.launches) > ctx.launches_left():
        raise RequestRefused(f"Refused: {len(request.launches)} launches staged but only "
                             f"{ctx.launches_left()} left in this run's budget. Nothing was "
                             "charged.")
    problem, shot = scope_problem(ctx)
    if problem:
        raise RequestRefused(problem)
    problem = gpu_problem(ctx, request)
    if problem:
        raise RequestRefused(problem)
    sealed = seal_for(ctx, shot.tree)
    site = ctx.deps_site()
    sleep = run.sleeps + 1
    job_ids: list[str] = []
    recorded = {(x.sleep, x.name) for x in run.launches}
    cap = ctx.limits.max_concurrent_gpus
    waves = budgets.GpuWaves(cap, holding_gpus(ctx))
    for launch in request.launches:
        name = jobs.job_name(run.run_id, f"s{sleep}", launch.name)
        array = launch.array if launch.array > 1 else None
        tasks: list[int | None] = list(range(array)) if array else [None]
        for task in tasks:
            checkout(ctx.paths, sealed, ctx.paths.tree(name, task), ctx.contract.eval_only)
        gpus, nodes = launch_gpus(ctx, launch)
        concurrency = budgets.array_concurrency(launch.concurrency, gpus * nodes, cap)
        held = gpus * nodes * (concurrency if array else 1)
        waits = waves.wait_for(held)
        spec = jobs.launch_spec(ctx.settings, run.run_id, name, launch.command,
                                launch.minutes, array, concurrency, gpus=gpus, nodes=nodes,
                                after_any=waits, deps=site)
        submitted = ctx.submit(spec, JobPurpose.LAUNCH, launch=launch.name)
        if submitted is None:
            continue
        waves.add(submitted, held, waits)
        job_ids.append(submitted)
        if (sleep, launch.name) not in recorded:
            ctx.append(ev.Launched(
                sleep=sleep, name=launch.name, job_id=submitted, minutes=launch.minutes,
                why=launch.why, command=launch.command, array=array,
                concurrency=launch.concurrency if array else None,
                artifacts=launch.artifacts, seal=sealed, job_name=name, gpus=gpus))
    if not job_ids:
        return Leg(notes=("No launch could be submitted (see the queue); try again or stop.",))
    longest = max(x.minutes for x in request.launches)
    return park_on(ctx, "jobs", job_ids, sleep, seal_sha=sealed, minutes=longest,
                   left_out=shot.left_out)


def wake_from_launches(ctx: RunContext) -> Step:
    """The launches the run parked on ended: a leg with their results."""
    run = ctx.run
    current = [x for x in run.launches if x.sleep == run.sleeps]
    seen = observe_jobs(ctx, run.park_jobs)
    results = launch_results(ctx, current, seen)
    return Leg(results=tuple(results), notes=left_out_notes(run))


def left_out_notes(run: RunRecord) -> tuple[str, ...]:
    """The note on what the last park's seal left out of the tree, if anything."""
    note = left_out_note(list(run.park_left_out))
    return (note,) if note else ()
