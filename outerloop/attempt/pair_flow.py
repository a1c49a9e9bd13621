"""The kernel's side of eval pairs: check out, plan and submit a pair job; read its sides.

A pair is one job (``attempt/pairs.py`` says why and how it looks from inside). The
submitting leg checks out the base and the candidate (and, with a trusted scorer, a
base checkout per side for it), writes the plan where no side can read it, and submits
``outerloop attempt measure``. The wake reads each side's measurement from the files the
job's kernel process wrote, and a pair an interruption or a failed baseline spoiled
is run again, once, as a whole (fresh checkouts, same seed, same order, same couple:
its other half, already measured, is not run again).
"""

from __future__ import annotations

import errno
from pathlib import Path

import msgspec

from outerloop import infra
from outerloop.attempt import pairs
from outerloop.attempt.context import RunContext
from outerloop.attempt.exits import RETRY_SUFFIX, end, park_on
from outerloop.attempt.gate import Side, measure
from outerloop.attempt.gpu_use import observe_jobs
from outerloop.compute.base import JobObservation
from outerloop.contract import Benchmark
from outerloop.errors import DeploymentError
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending, RunRecord
from outerloop.run import jobs
from outerloop.run.workspace import checkout
from outerloop.time_caps import eval_shortfall
from outerloop.vocabulary import JobPurpose, JobState


def submit_pair(ctx: RunContext, name: str, benchmark: Benchmark, seed: int, minutes: int,
                base_first: bool, base_sha: str, cand_sha: str,
                after: str | None = None, couple: int | None = None) -> ev.EvalPair | None:
    """Check out, plan and submit pair job ``name`` (to start once job ``after`` has
    ended: the pairs of a submission never run at the same time, so no candidate runs
    beside another pair's base); the pair, or None when the job could not be submitted.
    Idempotent: a retried leg finds the job it submitted by its intent, and leaves
    that job's trees and plan as they are (the job may be running in them: a recovery
    leg that checked them out again removed a scorer's tree under it). A clear refusal
    by the scheduler (no node can hold the benchmark's
    placement, a partition or QOS the settings name) raises ``DeploymentError``: the
    eval is the kernel's, built from the contract and the settings, so the run waits
    for the operator (``infra.DEPLOY_EXIT``) instead of ending; so does a time cap of
    the settings below what the pair job needs (``time_caps.eval_shortfall``), found
    before anything is submitted. ``couple``: the index
    of the couple the pair is a half of (``pairs.couple_order``), recorded on it."""
    limits = ctx.limits.for_benchmark(benchmark.name)
    first: ev.EvalSide = "base" if base_first else "cand"
    plan = pairs.make_plan(ctx.paths, ctx.run.run_id, name, benchmark, seed, minutes,
                           limits.gpus, first, ctx.deps_site())
    need = pairs.job_minutes(plan)
    index = next((i for i, b in enumerate(ctx.contract.benchmarks)
                  if b.name == benchmark.name), 0)
    short = eval_shortfall(ctx.settings, ctx.run.target, index, benchmark.name,
                           plan.minutes, need)
    if short is not None:  # every pair would time out: the settings', not the benchmark's
        raise DeploymentError(short)
    if not ctx.knows_job(name):  # a retried leg never rewrites a job's trees under it
        withheld = ctx.contract.eval_only
        for side in plan.sides:
            checkout(ctx.paths, base_sha if side.role == "base" else cand_sha,
                     Path(side.tree), withhold=withheld)
            if side.score_tree is not None:
                checkout(ctx.paths, base_sha, Path(side.score_tree))
        pairs.write_plan(ctx.paths, name, plan)
    spec = jobs.measure_spec(ctx.settings, ctx.run.run_id, name, need,
                             gpus=limits.gpus, nodes=limits.nodes,
                             after_any=(after,) if after else ())
    submitted = ctx.submit(spec, JobPurpose.EVAL)
    if submitted is None and ctx.refused is not None:
        raise DeploymentError(
            f"the scheduler refuses eval job {name} of run {ctx.run.run_id} "
            f"({limits.gpus} GPU(s) x {limits.nodes} node(s) for benchmark "
            f"{benchmark.name}): {ctx.refused}")
    if submitted is None:
        return None
    return ev.EvalPair(bench=None, base=submitted, cand=submitted, first=first,
                       couple=couple)


def rerun_pair(ctx: RunContext, pair: ev.EvalPair, benchmark: Benchmark, seed: int,
               minutes: int, base_sha: str, cand_sha: str,
               after: str | None = None) -> ev.EvalPair | None:
    """Pair ``pair`` once more, as a whole, in a job named like it plus ``RETRY_SUFFIX``."""
    old = ctx.state.jobs[pair.base].name if pair.base in ctx.state.jobs else ""
    name = old + RETRY_SUFFIX
    again = submit_pair(ctx, name, benchmark, seed, minutes, pair.first != "cand",
                        base_sha, cand_sha, after, pair.couple)
    return None if again is None else replace_bench(again, pair.bench)


def job_name_of(ctx: RunContext, job_id: str) -> str:
    return ctx.state.jobs[job_id].name if job_id in ctx.state.jobs else ""


def read_side(ctx: RunContext, pair: ev.EvalPair, role: ev.EvalSide, state: JobState,
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


def state_of(seen: dict[str, JobObservation], job_id: str) -> JobState:
    return seen[job_id].state if job_id in seen else JobState.UNKNOWN


def replace_bench(pair: ev.EvalPair, bench: str | None) -> ev.EvalPair:
    return msgspec.structs.replace(pair, bench=bench)


def pair_benchmark(ctx: RunContext, pair: ev.EvalPair) -> Benchmark:
    """The benchmark an eval pair measures: the run's own, or a sibling of the suite."""
    name = pair.bench
    if name is None:
        return ctx.benchmark
    return next(b for b in ctx.contract.benchmarks if b.name == name)


def submission_salt(run: RunRecord, submission: int) -> str:
    """The secret submission ``submission``'s pair jobs derive from (names, order, the
    later looks' seeds)."""
    return pairs.salt_of(run.salts.get(submission, ""), run.seeds.get(submission) or [],
                         run.run_id)


def pair_seed(ctx: RunContext, index: int) -> int:
    """The hidden seed pair ``index`` of the park ran under: its couple's (both halves
    share it), else (earlier versions) its own."""
    run = ctx.run
    couple = run.park_evals[index].couple
    if couple is not None:
        if run.park_look:
            return pairs.later_seed(submission_salt(run, run.submissions), couple)
        drawn = run.seeds.get(run.submissions) or []
        return drawn[couple] if couple < len(drawn) else 1
    if run.park_look:
        return pairs.later_seed(submission_salt(run, run.submissions),
                                run.park_first_pair + index)
    seeds = run.seeds.get(run.submissions) or []
    # pairs run benchmark by benchmark, seed by seed: pair i used seed i mod n
    return seeds[index % len(seeds)] if seeds else 1


def rerun_evals(ctx: RunContext, wanted: list[int]) -> str:
    """Run again, once, the eval pairs an interruption (or a failed baseline) spoiled:
    same commits, same hidden seed and order, fresh checkouts; then park on them."""
    run = ctx.run
    assert run.base_sha is not None and run.park_seal is not None
    evals = list(run.park_evals)
    minutes = max(ctx.limits.for_benchmark(pair_benchmark(ctx, p).name).eval_minutes
                  for p in evals)
    after: str | None = None
    for index in wanted:
        benchmark = pair_benchmark(ctx, evals[index])
        again = rerun_pair(ctx, evals[index], benchmark, pair_seed(ctx, index),
                           ctx.limits.for_benchmark(benchmark.name).eval_minutes,
                           run.base_sha, run.park_seal, after)
        if again is None:
            return end(ctx, Ending.ABORTED, "an eval job could not be submitted again")
        evals[index] = again
        after = again.base
    job_ids = list(dict.fromkeys(job for pair in evals for job in (pair.base, pair.cand)))
    return park_on(ctx, "eval", job_ids, run.sleeps, seal_sha=run.park_seal,
                   minutes=minutes * 2 * len(wanted), evals=evals, retry=True,
                   look=run.park_look, first_pair=run.park_first_pair)


def starved(ctx: RunContext, pair: ev.EvalPair) -> str | None:
    """What says the pair job died of a full disk or quota (issue 22), else None: its
    kernel process exited ``infra.NO_SPACE_EXIT``, or the job's own stderr (the kernel
    process's, read beneath the run's root) says so. Such a pair measured nothing of
    either commit; it is run again once space is back, however often, never judged as
    an eval error. A side's own stderr is never read for this: candidate code writes
    it, and a candidate that could claim a full disk could re-roll a bad measurement."""
    from outerloop.sandbox import beneath

    job = ctx.state.jobs.get(pair.base)
    if job is not None and job.exit_code == infra.NO_SPACE_EXIT:
        return f"eval job {pair.base} exited {infra.NO_SPACE_EXIT} (no space left)"
    name = job_name_of(ctx, pair.base)
    if not name:
        return None
    try:
        tail = beneath.read_tail(ctx.paths.root, f"jobs/{name}/stderr", infra.STDERR_TAIL_BYTES)
    except (OSError, ValueError):
        return None
    words = infra.says_no_space(tail.decode("utf-8", "replace"))
    return f"eval job {pair.base}: its stderr says: {words}" if words else None


def wait_for_space(ctx: RunContext, job_id: str | None, rerun: list[int]) -> None:
    """Raise ``ENOSPC`` when a pair to run again died of a full disk or quota and this
    leg is not the machine lane's retry: the job exits ``infra.NO_SPACE_EXIT``, so the
    sweep waits for space (and backs off, a quota being invisible) before it delivers
    this wake again as a retry, which runs the pair again. Never an eval error: a full
    disk says nothing of either commit (issue 22)."""
    job = ctx.state.jobs.get(job_id or "")
    if job is not None and job.purpose == JobPurpose.RETRY:
        return
    for index in rerun:
        cause = starved(ctx, ctx.run.park_evals[index])
        if cause:
            raise OSError(errno.ENOSPC, f"{cause}; the pair runs again once space is back")


def measured_pairs(ctx: RunContext) -> tuple[list[tuple[Side, Side]],
                                                dict[str, list[tuple[Side, Side]]], list[int]]:
    """(own pairs, sibling pairs by benchmark, indexes of pairs to run again)."""
    run = ctx.run
    seen = observe_jobs(ctx, run.park_jobs)
    own: list[tuple[ev.EvalPair, tuple[Side, Side]]] = []
    suite: dict[str, list[tuple[Side, Side]]] = {}
    rerun: list[int] = []
    for index, pair in enumerate(run.park_evals):
        benchmark = pair_benchmark(ctx, pair)
        both: tuple[ev.EvalSide, ev.EvalSide] = ("base", "cand")
        sides = []
        spoiled = False
        for role in both:
            state = state_of(seen, pair.job(role))
            measured = read_side(ctx, pair, role, state, benchmark.metric)
            sides.append(measured)
            spoiled = spoiled or state in infra.INFRASTRUCTURE_STATES or (
                role == "base" and measured.error is not None)
        name = job_name_of(ctx, pair.base)
        if (spoiled and name and not name.endswith(RETRY_SUFFIX)) or (
                any(side.error is not None for side in sides) and starved(ctx, pair)):
            rerun.append(index)
        if pair.bench is not None:
            suite.setdefault(benchmark.name, []).append((sides[0], sides[1]))
        else:
            own.append((pair, (sides[0], sides[1])))
    return base_first_within_couples(own), suite, rerun


def base_first_within_couples(
        own: list[tuple[ev.EvalPair, tuple[Side, Side]]]) -> list[tuple[Side, Side]]:
    """The own pairs as ``gate.judge`` reads couples: couple by couple, the pair that
    ran the base first before the one that ran the candidate first (the order they
    ran in is the salt's); pairs alone (earlier versions) as they were parked."""
    if any(pair.couple is None for pair, _ in own):
        return [sides for _, sides in own]
    ranked = sorted(own, key=lambda item: (item[0].couple or 0, item[0].first != "base"))
    return [sides for _, sides in ranked]
