"""What a credited candidate cost, for its pull request (issue 51): the run's wall time
from its queueing to the publication, its GPU-hours and the model cost its legs
recorded; and the gate's own share: the eval jobs of the credited submission (those
submitted after the run's previous verdict), their GPU-hours and the wall time from the
first of them to the verdict. Facts of the ledger only (pure but for the clock and one
scheduler query for GPU jobs still open, ``RunContext.gpu_budget``)."""

from __future__ import annotations

from outerloop import clock
from outerloop.attempt.context import RunContext
from outerloop.clock import parse_stamp
from outerloop.run.render import CostView
from outerloop.vocabulary import JobPurpose

SECONDS_PER_HOUR = 3600


def _seconds_between(start: str, end: str) -> int:
    try:
        return max(0, int((parse_stamp(end) - parse_stamp(start)).total_seconds()))
    except ValueError:
        return 0


def cost_view(ctx: RunContext) -> CostView:
    """The cost of the run's latest (credited) verdict's candidate, as of now."""
    run = ctx.run
    told = run.verdicts[-1]
    since = run.verdicts[-2].at if len(run.verdicts) > 1 else ""
    jobs = [ctx.state.jobs[j] for j in run.job_ids if j in ctx.state.jobs]
    gate = [j for j in jobs if j.purpose == JobPurpose.EVAL and since < j.submitted_at <= told.at]
    first = min((j.submitted_at for j in gate), default=told.at)
    gpu = ctx.gpu_budget()
    return CostView(
        run_wall_s=_seconds_between(run.queued_at, clock.now_stamp()),
        run_gpu_hours=gpu.run_used, model_usd=run.cost_usd,
        gate_wall_s=_seconds_between(first, told.at), gate_jobs=len(gate),
        gate_gpu_hours=sum(j.gpu_seconds for j in gate) / SECONDS_PER_HOUR,
        gpus=gpu.run_used > 0 or any(j.gpus for j in jobs))
