"""The gate's looks: judge a submission's pairs so far, ask for more, or settle.

A submission's own pairs run in looks (``sequential.look_sizes``: ``repeats`` couples,
at least 3, then twice as many, up to ``max_pairs``; a couple is two pair jobs under
one seed, one in each order, ``attempt/pairs.py``). The first look's couples are
submitted with the submission (its sleep); each later look is one more park on fresh
pair jobs from the sealed commit, each couple with its own hidden seed
(``pairs.later_seed``), chained so no two pairs run at once. A wake records its look
(``GateLook``: the new pairs' numbers, each couple's base-first pair first, and the
decision) before acting on it, so a recovery wake judges the same
numbers again instead of measuring anything twice.

Sibling benchmarks of the suite gate are measured at the first look only, under its
seeds: a sibling that got worse beyond what it may settles the submission there; one
worse only within a conditional allowance (``regression: {max, requires_gain}``) is
recorded with the look (``GateLook.needs``) and checked at whichever look credits.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from outerloop.attempt import pairs
from outerloop.attempt.context import RunContext
from outerloop.attempt.exits import end, park_on
from outerloop.attempt.gate import (
    GatePlan,
    Judgement,
    Side,
    judge,
    plan_for,
)
from outerloop.attempt.pair_flow import job_name_of, submission_salt, submit_pair
from outerloop.attempt.suite import aggregate_line, check_suite, settle_needs
from outerloop.attempt.verdict_view import first_look
from outerloop.contract import Benchmark
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending, RunRecord
from outerloop.vocabulary import GateVerdict


def earlier_pairs(run: RunRecord, submission: int, before: int) -> list[tuple[Side, Side]]:
    """The own pairs of ``submission``'s looks before look ``before``, as measured."""
    return [(Side(Decimal(base)), Side(Decimal(cand)))
            for seen in run.looks.get(submission, []) if seen.look < before
            for base, cand in seen.pairs]


def take_look(ctx: RunContext, own: list[tuple[Side, Side]],
              suite: dict[str, list[tuple[Side, Side]]]) -> Judgement | str:
    """The verdict over the submission's pairs so far, or (a string) what was done to
    measure more: the next look's pairs submitted and the run parked on them."""
    run = ctx.run
    submission, index = run.submissions, run.park_look
    plan = submission_plan(ctx)
    judged = judge(ctx.benchmark, earlier_pairs(run, submission, index) + own, plan, index)
    first = first_look(run, submission)
    note, needs = (first.suite, list(first.needs)) if first is not None else ("", [])
    if index == 0 and suite:
        note, needs, judged = _judge_siblings(ctx, judged, suite)
    settled = settle_needs(judged, needs, ctx.benchmark.name)
    _record(ctx, submission, index, own, settled, note, needs)
    if settled.verdict == GateVerdict.MORE_PAIRS:
        return _more_pairs(ctx, plan, index + 1)
    if settled is judged and note and judged.verdict != GateVerdict.EVAL_ERROR \
            and note != judged.detail:
        return replace(judged, detail=f"{judged.detail}; {note}")
    return settled


def _judge_siblings(ctx: RunContext, judged: Judgement,
                    suite: dict[str, list[tuple[Side, Side]]]
                    ) -> tuple[str, list[ev.SuiteNeed], Judgement]:
    """The first look's suite gate: its note (with the suite's aggregate under ``suite:
    {metric, direction}``), the conditions a credit must meet, and ``judged`` turned
    into the siblings' verdict when one got worse than it may."""
    by_name = {b.name: b for b in ctx.contract.benchmarks}
    held = check_suite(by_name, suite, ctx.benchmark.name)
    note = held.detail
    aggregate = ctx.contract.suite_aggregate
    if (aggregate is not None and held.verdict != GateVerdict.EVAL_ERROR
            and judged.baseline is not None and judged.candidate is not None):
        measured = [(ctx.benchmark, judged.baseline, judged.candidate),
                    *[(by_name[name], base, cand) for name, base, cand in held.means]]
        note = "; ".join(part for part in (note, aggregate_line(aggregate, measured)) if part)
    if held.verdict is not None and judged.verdict != GateVerdict.EVAL_ERROR:
        judged = replace(judged, verdict=held.verdict, detail=note)
    return note, list(held.needs), judged


def submission_plan(ctx: RunContext) -> GatePlan:
    """The current submission's plan: in couples, unless an earlier version parked it
    on pairs alone (its eval pairs carry no couple)."""
    own = [pair for pair in ctx.run.park_evals if pair.bench is None]
    coupled = not own or all(pair.couple is not None for pair in own)
    fixed = ctx.run.alpha_fixed  # the run's share, fixed at its admission (RunAlpha)
    return plan_for(ctx.benchmark, ctx.run.submissions,
                    fixed.alpha if fixed is not None else None, coupled=coupled)


def _record(ctx: RunContext, submission: int, index: int, own: list[tuple[Side, Side]],
            judged: Judgement, suite_note: str, needs: list[ev.SuiteNeed]) -> None:
    if any(seen.look == index for seen in ctx.run.looks.get(submission, [])):
        return  # a recovery wake: this look is on record
    measured = [(str(b.value), str(c.value)) for b, c in own
                if b.value is not None and c.value is not None]
    seen = judged.look
    ctx.append(ev.GateLook(
        submission=submission, look=index, pairs=measured,
        decision=seen.decision if seen is not None else "stop",
        t=_finite(seen.t) if seen else 0.0, critical=_finite(seen.critical) if seen else 0.0,
        alpha=seen.alpha if seen else 0.0, detail=judged.detail, suite=suite_note,
        needs=needs if index == 0 else []))
    ctx.refresh()


def _finite(value: float) -> float:
    """JSON has no infinity: an exact (zero-spread) look's t is written as a large number."""
    return max(-1e308, min(1e308, value))


def submission_minutes(ctx: RunContext) -> int:
    """The submission's own eval limit (``submit --minutes`` may have shortened it), as
    its first pair's plan says."""
    own = [p for p in ctx.run.park_evals if p.bench is None]
    plan = pairs.read_plan(ctx.paths, job_name_of(ctx, own[0].base)) if own else None
    return plan.minutes if plan is not None else ctx.bench_limits.eval_minutes


def _more_pairs(ctx: RunContext, plan: GatePlan, look: int) -> str:
    """Submit look ``look``'s new pairs (fresh jobs, fresh hidden seeds) and park on them:
    no new sleep, the same submission."""
    run = ctx.run
    assert run.base_sha is not None and run.park_seal is not None
    salt = submission_salt(run, run.submissions)
    start, stop = plan.sizes[look - 1], plan.sizes[look]
    minutes = submission_minutes(ctx)
    label = pairs.look_label(look)
    evals: list[ev.EvalPair] = []
    halves = pairs.COUPLE if plan.coupled else 1
    for unit in range(start, stop):
        for half in range(halves):
            index = unit * halves + half
            first = (pairs.couple_order(salt, label, unit, half) if plan.coupled
                     else pairs.base_first(salt, label, unit))
            pair = submit_pair(ctx, pairs.pair_name(run.run_id, salt, label, index),
                               ctx.benchmark, pairs.later_seed(salt, unit), minutes, first,
                               run.base_sha, run.park_seal,
                               after=evals[-1].base if evals else None,
                               couple=unit if plan.coupled else None)
            if pair is None:
                return end(ctx, Ending.ABORTED, "an eval job could not be submitted")
            evals.append(pair)
    return park_on(ctx, "eval", [p.base for p in evals], run.sleeps, seal_sha=run.park_seal,
                   minutes=minutes * 2 * len(evals), evals=evals, retry=True, look=look,
                   first_pair=start * halves)


def first_look_size(benchmark: Benchmark) -> int:
    """How many own couples (seeds) a submission starts with."""
    return plan_for(benchmark, 1).sizes[0]
