"""A run's GPUs as its launches ask for them: what one launch holds, whether the
launches fit the GPU-hours left, and which of the target's GPU jobs still hold theirs."""

from __future__ import annotations

from typing import Any

from outerloop import budgets
from outerloop.attempt.channel import CommittedRequest, LaunchRequest
from outerloop.attempt.context import RunContext
from outerloop.errors import OuterloopError


def observe_jobs(ctx: RunContext, job_ids: list[str]) -> dict[str, Any]:
    return ctx.executor.effects.compute().observe(job_ids) if job_ids else {}


def launch_gpus(ctx: RunContext, launch: LaunchRequest) -> tuple[int, int]:
    """(GPUs per node, nodes) of one launch: its ``--gpus``, else the benchmark's."""
    gpus = ctx.bench_limits.gpus if launch.gpus is None else launch.gpus
    gpus = min(gpus, ctx.max_launch_gpus())
    return gpus, (ctx.bench_limits.nodes if gpus else 1)


def gpu_problem(ctx: RunContext, request: CommittedRequest) -> str | None:
    """A refusal for the agent when the launches could use more GPU-hours than the
    run (or its target's week) has left; None when they fit or use no GPU."""
    wanted = 0.0
    for launch in request.launches:
        gpus, nodes = launch_gpus(ctx, launch)
        wanted += budgets.launch_gpu_hours(gpus, nodes, launch.minutes, launch.array)
    if wanted <= 0:
        return None
    budget = ctx.gpu_budget()
    if wanted <= budget.left:
        return None
    return (f"Refused: these launches could use up to {wanted:.2f} GPU-hours (GPUs x "
            f"tasks x minutes) but {budget.describe()}. Nothing was launched, sealed or "
            f"charged. Fix: fewer or shorter tasks, `--gpus 0` for work that needs no GPU, "
            f"or `submit` what you have.")


def holding_gpus(ctx: RunContext) -> list[tuple[str, int]]:
    """(job, GPUs) of the target's launch and eval jobs the scheduler still lists."""
    known = budgets.gpus_in_use(ctx.state.jobs.values(), ctx.run.target)
    if not known:
        return []
    try:
        seen = observe_jobs(ctx, [j.job_id for j in known])
    except OuterloopError:
        return [(j.job_id, j.gpus) for j in known]
    return [(j.job_id, j.gpus) for j in known
            if j.job_id in seen and seen[j.job_id].state.active]
