"""A submission: the candidate sealed and measured against the base, pair by pair.

Scope is checked before anything is measured. The seeds are drawn here, hidden from
the agent (``secrets``), recorded before the first pair is submitted so a job that
dies here draws no second set. Each seed is a couple's: two pair jobs, the base first in
one and the candidate first in the other, which of them runs first drawn from the
submission's salt (``pairs.couple_order``). Sibling benchmarks the change touches are
measured too (``suite.siblings_to_measure``). The verdict is ``verdict_flow``'s. A
change the gate already settled on the target is told, not measured (``change_key``)."""

from __future__ import annotations

import secrets

from outerloop.attempt import pairs, prompts
from outerloop.attempt.change_key import known_change
from outerloop.attempt.channel import CommittedRequest
from outerloop.attempt.context import RunContext
from outerloop.attempt.credit import give_up
from outerloop.attempt.exits import end, park_on
from outerloop.attempt.launch_flow import seal_for
from outerloop.attempt.looks import first_look_size
from outerloop.attempt.pair_flow import replace_bench, submission_salt, submit_pair
from outerloop.attempt.scope_check import scope_problem
from outerloop.attempt.steps import RequestRefused, Step
from outerloop.attempt.suite import siblings_to_measure
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending
from outerloop.run.workspace import changed_paths


def submit_candidate(ctx: RunContext, request: CommittedRequest) -> Step:
    """Seal the submitted tree, draw its hidden seeds (once per submission, recorded
    before any pair is submitted) and park on its first look of eval pairs; refused
    (``RequestRefused``) out of scope, with no change, or for a tree the gate already judged."""
    run = ctx.run
    assert request.submit is not None and run.base_sha is not None
    if ctx.sleeps_left() <= 0:
        return give_up(ctx, Ending.BUDGET_EXHAUSTED, "the run used all its sleeps")
    problem, shot = scope_problem(ctx, request.submit.report)
    if problem:
        raise RequestRefused(problem)
    submission = run.submissions + 1
    told, change = known_change(ctx, shot.tree, submission)
    if told is not None:
        raise RequestRefused(told)
    sealed = seal_for(ctx, shot.tree)
    prompts.save_report(ctx, request.submit.report)
    draw_seeds(ctx, submission, shot.tree, change)
    # `submit --minutes M` shortens the eval jobs' limit; it never lengthens it.
    minutes = min(ctx.bench_limits.eval_minutes,
                  request.submit.minutes or ctx.bench_limits.eval_minutes)
    return measure(ctx, submission, sealed, shot.tree, minutes, shot.left_out)


def draw_seeds(ctx: RunContext, submission: int, tree: str, change: str,
               same_as: list[int] | None = None) -> list[int]:
    """The submission's hidden seeds: drawn once (or ``same_as`` an earlier submission's
    first look) and recorded (``seeds_drawn``) before any pair is submitted, so a job that
    dies here draws no second set."""
    seeds = ctx.run.seeds.get(submission)
    if seeds is None:
        size = first_look_size(ctx.benchmark)
        seeds = list(same_as[:size]) if same_as and len(same_as) >= size else [
            secrets.randbelow(pairs.MAX_SEED) + 1 for _ in range(size)]
        ctx.append(ev.SeedsDrawn(submission=submission, seeds=seeds,
                                 salt=secrets.token_hex(16), tree=tree, change=change))
        ctx.refresh()
    return seeds


def measure(ctx: RunContext, submission: int, sealed: str, tree: str, minutes: int,
            left_out: list[str]) -> Step:
    """Submit the first look's couples of ``sealed`` against the run's base (and of every
    sibling benchmark the change touches) and park on them."""
    run = ctx.run
    assert run.base_sha is not None
    seeds = run.seeds[submission]
    salt = submission_salt(run, submission)
    measured = [("", ctx.benchmark, minutes)]
    for number, sibling in siblings_to_measure(
            ctx.contract, ctx.benchmark, changed_paths(ctx.paths, run.base_sha, tree)):
        measured.append((f"x{number}", sibling,
                         ctx.limits.for_benchmark(sibling.name).eval_minutes))
    evals: list[ev.EvalPair] = []
    for label, benchmark, bench_minutes in measured:
        for couple, seed in enumerate(seeds):
            for half in range(pairs.COUPLE):
                index = couple * pairs.COUPLE + half
                pair = submit_pair(ctx, pairs.pair_name(run.run_id, salt, label, index),
                                   benchmark, seed, bench_minutes,
                                   pairs.couple_order(salt, label, couple, half),
                                   run.base_sha, sealed,
                                   after=evals[-1].base if evals else None, couple=couple)
                if pair is None:
                    return end(ctx, Ending.ABORTED, "an eval job could not be submitted")
                evals.append(replace_bench(pair, benchmark.name if label else None))
    longest = sum(m for _, _, m in measured) * 2 * len(seeds) * pairs.COUPLE
    return park_on(ctx, "eval", [p.base for p in evals], run.sleeps + 1, seal_sha=sealed,
                   minutes=longest, evals=evals, left_out=left_out)
