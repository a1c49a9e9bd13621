"""Order-balanced pairs (issue 47, point 3): a benchmark that favours whichever side runs
second in its pair job buys a null candidate nothing.

Every test runs the gate's own code: the order the kernel draws (``pairs.couple_order``
from a submission's salt), the looks and alphas (``gate.judge_sequentially`` over
``gate.judge``, as the kernel's wakes reach them) and the record and view of a verdict.
The order effect is modelled as the issue found it: the side run second in a job
measures better by ``e`` (a warm page cache, node-local data), on a null (base and
candidate alike) whose paired differences have sd ``SIGMA``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import Decimal

import pytest

from outerloop.attempt import pairs
from outerloop.attempt.gate import Side, judge, judge_sequentially, plan_for
from outerloop.attempt.verdict_view import order_shown, verdict_record, verdict_view
from outerloop.contract import Benchmark
from outerloop.ledger import events as ev
from outerloop.ledger.state import RunRecord
from outerloop.vocabulary import GateVerdict

IMPROVED = GateVerdict.IMPROVED
RUNS = 400
SECONDS = 10.0
SIGMA = 0.1
"""The sd of a null's paired difference (each eval's own noise: SIGMA / sqrt(2))."""


def timed(**fields: object) -> Benchmark:
    """A timed benchmark: seconds, lower is better (the gate's 0.5 % is SIGMA / 2)."""
    return Benchmark.model_validate({"name": "t", "command": "python e.py", "metric": "s",
                                     "direction": "min", "seed_env": "SEED", **fields})


def null_with_order_effect(e_sd: float, rng: random.Random,
                           gain_sd: float = 0.0) -> Callable[[int, bool], tuple[Side, Side]]:
    """``measure(unit, base_first)`` of a candidate ``gain_sd`` SIGMA faster than the
    base, where the side run second is ``e_sd`` SIGMA faster again; each eval printed
    to 6 decimals, as a benchmark's JSON line would be (the same noise drawn whatever
    ``e_sd``, so runs at two effects differ by the effect alone)."""
    noise = SIGMA / 2 ** 0.5
    second = Decimal(f"{e_sd * SIGMA:.6f}")

    def measure(_unit: int, base_first: bool) -> tuple[Side, Side]:
        base = Decimal(f"{SECONDS + rng.gauss(0.0, noise):.6f}")
        cand = Decimal(f"{SECONDS - gain_sd * SIGMA + rng.gauss(0.0, noise):.6f}")
        if base_first:
            return Side(base), Side(cand - second)
        return Side(base - second), Side(cand)

    return measure


def credited(e_sd: float, *, coupled: bool, seed: int, gain_sd: float = 0.0,
             repeats: int = 1) -> int:
    """How many of ``RUNS`` first submissions the gate credits, each under a fresh salt."""
    rng = random.Random(seed)
    bench = timed(repeats=repeats)
    count = 0
    for _ in range(RUNS):
        salt = f"{rng.getrandbits(64):016x}"
        judged = judge_sequentially(bench, 1, null_with_order_effect(e_sd, rng, gain_sd),
                                    salt=salt, coupled=coupled)
        count += judged.verdict == IMPROVED
    return count


@pytest.mark.parametrize("e_sd", [2.0, 5.0, 10.0])
def test_an_order_effect_buys_a_null_no_credit_when_pairs_come_in_couples(e_sd: float) -> None:
    """At most 1 % of runs (the run's bound; a first submission may spend 0.7 %): 4 of
    400 runs (1 is seen at each effect, as with no effect at all)."""
    assert credited(e_sd, coupled=True, seed=47) <= 4


def test_an_order_effect_cancels_exactly_from_every_couples_gain() -> None:
    """Under the same noise, a 10 sd order effect leaves each run's gain and noise
    exactly as they are without it, whatever order the salt drew: the couple's two
    pairs hold ``+e`` once and ``-e`` once. (A couple whose halves drew their orders
    apart, as pairs alone did, differs in 7 runs of 8.)"""
    bench = timed(max_pairs=3)  # one look of 3 couples
    for number in range(200):
        salt = f"{number:04d}"
        seen = [judge_sequentially(bench, 1, null_with_order_effect(e_sd, random.Random(number)),
                                   salt=salt).look for e_sd in (0.0, 10.0)]
        assert seen[0] is not None and seen[1] is not None
        assert (seen[1].mean_gain, seen[1].sd) == (seen[0].mean_gain, seen[0].sd), salt


def test_the_same_order_effect_bought_credit_from_pairs_alone() -> None:
    """Why couples: the gate before them (one pair per seed, its order drawn) credits the
    10 sd order effect on a null in about a tenth of runs, ``repeats: 4`` or not."""
    assert credited(10.0, coupled=False, seed=47) >= 20
    assert credited(10.0, coupled=False, seed=48, repeats=4) >= 20


def test_a_real_gain_is_still_credited_through_the_order_effect() -> None:
    assert credited(10.0, coupled=True, seed=49, gain_sd=2.5) >= RUNS * 0.95


def test_each_couple_runs_each_order_once_and_the_salt_draws_which_first() -> None:
    firsts = []
    for number in range(200):
        salt = f"salt-{number}"
        for label in ("", "l1"):
            for couple in range(12):
                halves = [pairs.couple_order(salt, label, couple, half) for half in (0, 1)]
                assert halves[0] != halves[1]
                firsts.append(halves[0])
    assert 0.45 < sum(firsts) / len(firsts) < 0.55


def _pair(base: str, cand: str) -> tuple[Side, Side]:
    return Side(Decimal(base)), Side(Decimal(cand))


ORDERED = [_pair("10", "6.8"), _pair("10", "9.0"), _pair("10", "7.0"), _pair("10", "9.0"),
           _pair("10", "6.9"), _pair("10", "9.3")]
"""Three couples, each its base-first pair then its candidate-first pair."""


def test_a_couples_gain_is_the_mean_of_its_two_orders_and_the_order_effect_half_their_gap(
        ) -> None:
    """Base-first gains 3.2, 3.0, 3.1 and candidate-first gains 1.0, 1.0, 0.7 (lower is
    better): the unit gains are 2.1, 2.0, 1.9, the order halves 1.1, 1.0, 1.2."""
    measured = ORDERED
    judged = judge(timed(), measured, plan_for(timed(), 1, coupled=True))
    assert judged.look is not None and judged.order is not None
    assert judged.look.pairs == 3 and judged.look.mean_gain == Decimal("2")
    assert judged.order.mean == Decimal("1.1")
    assert judged.order.low < 1.1 < judged.order.high
    assert "over 3 couples (6 pair jobs)" in judged.detail


def test_pairs_that_do_not_make_whole_couples_are_an_eval_error_never_a_number() -> None:
    judged = judge(timed(), [_pair("10", "9")] * 3, plan_for(timed(), 1, coupled=True))
    assert judged.verdict == GateVerdict.EVAL_ERROR and "whole couples" in judged.detail


def _recorded(measured: list[tuple[Side, Side]]) -> ev.Verdict:
    judged = judge(timed(), measured, plan_for(timed(), 1, coupled=True))
    run = RunRecord(run_id="r", target="o/t", benchmark="t", agent="a", issue=1,
                    issue_title="", hypothesis="", queued_at="")
    return verdict_record(timed(), judged, run)


def test_the_order_effect_is_recorded_and_shown_when_larger_than_the_gain_intervals_half_width(
        ) -> None:
    ordered = _recorded(ORDERED)
    assert ordered.order == "1.1" and ordered.order_low and ordered.order_high
    view = verdict_view(timed(), ordered)
    assert view.coupled and view.order_shown and view.order == "1.1"
    plain = _recorded([_pair("10", "8.0"), _pair("10", "8.1"), _pair("10", "7.0"),
                       _pair("10", "7.1"), _pair("10", "9.0"), _pair("10", "8.9")])
    assert plain.order is not None and not order_shown(plain)  # 0.0 within +- 1.x
    assert not verdict_view(timed(), plain).order_shown


def test_the_pr_body_names_couples_and_shows_the_order_effect_only_when_it_is_large() -> None:
    from outerloop.run.render import render_pr_body
    from tests.unit.test_render import pr_inputs

    def measured(told: ev.Verdict) -> str:
        body = render_pr_body(pr_inputs(seeds=3, verdict=verdict_view(timed(), told)))
        return body.split("## Measured")[1].split("## Experiments")[0]

    large = measured(_recorded(ORDERED))
    assert "- pairs: 3 couples, 6 pair jobs (each couple under its own hidden seed" in large
    assert "- order effect: `1.1` (interval `" in large
    small = measured(_recorded([_pair("10", "8.0"), _pair("10", "8.1"), _pair("10", "7.0"),
                                _pair("10", "7.1"), _pair("10", "9.0"), _pair("10", "8.9")]))
    assert "- pairs: 3 couples" in small and "order effect" not in small
