"""The kernel's side of eval pairs: check out, plan and submit a pair job; read its sides.

A pair is one job (``attempt/pairs.py`` says why and how it looks from inside). The
submitting leg checks out the base and the candidate (and, with a trusted scorer, a
base checkout per side for it), writes the plan where no side can read it, and submits
``outerloop attempt measure``. The wake reads each side's measurement from the files the
job's kernel process wrote, and a pair an interruption or a failed baseline spoiled
is run again, once, as a whole (fresh checkouts, same seed, same order).
"""

from __future__ import annotations

from pathlib import Path

from outerloop.attempt import jobs, pairs
from outerloop.attempt.context import RunContext
from outerloop.attempt.exits import RETRY_SUFFIX
from outerloop.attempt.gate import Side, measure
from outerloop.attempt.workspace import checkout
from outerloop.compute.base import JobObservation
from outerloop.contract import Benchmark
from outerloop.ledger import events as ev


def submit_pair(ctx: RunContext, name: str, benchmark: Benchmark, seed: int, minutes: int,
                base_first: bool, base_sha: str, cand_sha: str,
                after: str | None = None) -> ev.EvalPair | None:
    """Check out, plan and submit pair job ``name`` (to start once job ``after`` has
    ended: the pairs of a submission never run at the same time, so no candidate runs
    beside another pair's base); the pair, or None when the job could not be submitted.
    Idempotent: a retried leg writes the same plan and finds the job it submitted by
    its intent."""
    limits = ctx.limits.for_benchmark(benchmark.name)
    first: ev.EvalSide = "base" if base_first else "cand"
    plan = pairs.make_plan(ctx.paths, ctx.run.run_id, name, benchmark, seed, minutes,
                           limits.gpus, first)
    withheld = ctx.contract.eval_only
    for side in plan.sides:
        checkout(ctx.paths, base_sha if side.role == "base" else cand_sha, Path(side.tree),
                 withhold=withheld)
        if side.score_tree is not None:
            checkout(ctx.paths, base_sha, Path(side.score_tree))
    pairs.write_plan(ctx.paths, name, plan)
    spec = jobs.measure_spec(ctx.settings, ctx.run.run_id, name, pairs.job_minutes(plan),
                             gpus=limits.gpus, nodes=limits.nodes,
                             after_any=(after,) if after else ())
    submitted = ctx.submit(spec, "eval")
    if submitted is None:
        return None
    return ev.EvalPair(bench=None, base=submitted, cand=submitted, first=first)


def rerun_pair(ctx: RunContext, pair: ev.EvalPair, benchmark: Benchmark, seed: int,
               minutes: int, base_sha: str, cand_sha: str,
               after: str | None = None) -> ev.EvalPair | None:
    """Pair ``pair`` once more, as a whole, in a job named like it plus ``RETRY_SUFFIX``."""
    old = ctx.state.jobs[pair.base].name if pair.base in ctx.state.jobs else ""
    name = old + RETRY_SUFFIX
    again = submit_pair(ctx, name, benchmark, seed, minutes, pair.first != "cand",
                        base_sha, cand_sha, after)
    if again is None:
        return None
    return ev.EvalPair(bench=pair.bench, base=again.base, cand=again.cand, first=again.first)


def job_name_of(ctx: RunContext, job_id: str) -> str:
    return ctx.state.jobs[job_id].name if job_id in ctx.state.jobs else ""


def read_side(ctx: RunContext, pair: ev.EvalPair, role: ev.EvalSide, state: str,
              metric: str) -> Side:
    """What ``role``'s side of ``pair`` measured; any doubt is an error, never a number."""
    name = job_name_of(ctx, pair.job(role))
    if pair.first is None:  # two jobs, one per side (earlier versions)
        return measure(ctx.paths.job_dir(name), state, metric)
    plan = pairs.read_plan(ctx.paths, name)
    if plan is None:
        return Side(None, f"job {state}, and its plan is gone")
    problem = pairs.problem(ctx.paths, name, plan, role)
    if problem is not None:
        return Side(None, problem)
    return measure(pairs.metric_dir(ctx.paths, name, plan, role), state, metric)


def metric_stdout(ctx: RunContext, pair: ev.EvalPair, role: ev.EvalSide) -> Path | None:
    """The stdout file the gate read for ``role`` (the tamper check counts its lines)."""
    name = job_name_of(ctx, pair.job(role))
    if not name:
        return None
    if pair.first is None:
        return ctx.paths.job_dir(name) / "stdout"
    plan = pairs.read_plan(ctx.paths, name)
    return None if plan is None else pairs.metric_dir(ctx.paths, name, plan, role) / "stdout"


def state_of(seen: dict[str, JobObservation], job_id: str) -> str:
    return seen[job_id].state.value if job_id in seen else "unknown"
