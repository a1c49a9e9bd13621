"""The sequential test's rules, one by one: the t distribution, the looks, the spending
of the run's error budget over submissions and looks, futility, the zero-spread bound,
and floors as practical significance. bench/gate_trials.py measures the rates they add
up to; these pin each rule so breaking one fails a test named after it."""

from __future__ import annotations

import itertools
import random
from decimal import Decimal

import pytest

from outerloop.attempt import sequential
from outerloop.attempt.gate import (
    Side,
    judge,
    judge_sequentially,
    plan_for,
)
from outerloop.contract import Benchmark
from outerloop.vocabulary import GateVerdict

IMPROVED, MORE_PAIRS = GateVerdict.IMPROVED, GateVerdict.MORE_PAIRS
NO_IMPROVEMENT = GateVerdict.NO_IMPROVEMENT


def bench(**fields: object) -> Benchmark:
    return Benchmark.model_validate({"name": "b", "command": "python e.py", "metric": "m",
                                     "direction": "max", **fields})


def sides(values: list[tuple[float, float]]) -> list[tuple[Side, Side]]:
    return [(Side(Decimal(str(b))), Side(Decimal(str(c)))) for b, c in values]


@pytest.mark.parametrize(("alpha", "df", "expected"), [
    (0.025, 10, 2.228138852), (0.005, 2, 9.924843201), (0.05, 1, 6.313751515),
    (0.001, 30, 3.385184866), (0.0014, 5, 5.461511798), (0.5, 7, 0.0)])
def test_t_quantile_matches_the_tables(alpha: float, df: int, expected: float) -> None:
    got = sequential.t_quantile(alpha, df)
    assert got == pytest.approx(expected, rel=2e-3, abs=1e-9)
    assert sequential.t_sf(got, df) == pytest.approx(alpha, rel=1e-6)


def test_looks_start_at_three_pairs_and_double_up_to_the_cap() -> None:
    assert sequential.look_sizes(1, 12) == [3, 6, 12]
    assert sequential.look_sizes(5, 12) == [5, 10, 12]
    assert sequential.look_sizes(3, 3) == [3]
    assert sequential.look_sizes(3, 48) == [3, 6, 12, 24, 48]
    assert plan_for(bench(), 1).sizes == (3, 6, 12)


def test_the_submissions_of_a_run_never_spend_more_than_its_alpha() -> None:
    alpha = 0.01
    shares = [sequential.submit_alpha(alpha, k) for k in range(1, 10_001)]
    assert sum(shares) <= alpha
    assert shares[0] == pytest.approx(0.007)
    assert all(later < earlier for earlier, later in itertools.pairwise(shares))


def test_the_looks_of_a_submission_never_spend_more_than_its_share() -> None:
    for looks in (1, 2, 3, 5):
        spent = sum(sequential.look_alpha(0.007, j, looks) for j in range(looks))
        assert spent == pytest.approx(0.007)
    plan = plan_for(bench(), 1)
    assert sum(plan.alpha_at(j) for j in range(len(plan.sizes))) == pytest.approx(0.007)


NOISY_GAIN = [(10.0, 10.9), (10.0, 11.2), (10.0, 11.0), (10.0, 10.8), (10.0, 11.1),
              (10.0, 10.95)]


def test_a_later_submission_needs_more_evidence_than_the_first() -> None:
    """Spending: the same six pairs credit a first submission but not a fifth (which
    has 0.3 / 20 of the budget): resubmitting does not buy a fresh 1%."""
    measured = sides(NOISY_GAIN[:3])
    first = judge(bench(), measured, plan_for(bench(), 1), 0)
    fifth = judge(bench(), measured, plan_for(bench(), 5), 0)
    assert first.verdict == IMPROVED, first.detail
    assert fifth.verdict == MORE_PAIRS, fifth.detail


def test_a_lower_confidence_credits_what_a_higher_one_does_not() -> None:
    measured = sides([(10.0, 11.0), (10.0, 11.4), (10.0, 10.8)])
    assert judge(bench(confidence=0.8), measured).verdict == IMPROVED
    assert judge(bench(confidence=0.99), measured).verdict == MORE_PAIRS


def test_an_unsure_look_asks_for_more_pairs_and_the_last_look_decides() -> None:
    measured = sides([(10.0, 10.5), (10.0, 11.5), (10.0, 10.2)])
    plan = plan_for(bench(), 1)
    assert judge(bench(), measured, plan, 0).verdict == MORE_PAIRS
    assert judge(bench(), measured, plan, len(plan.sizes) - 1).verdict == NO_IMPROVEMENT


def test_a_look_whose_gain_is_clearly_not_there_stops_early() -> None:
    """Futility: t below 0.5 at the first look stops; more pairs would not credit it."""
    measured = sides([(10.0, 10.3), (10.0, 9.6), (10.0, 10.2)])
    judged = judge(bench(), measured, plan_for(bench(), 1), 0)
    assert judged.verdict == NO_IMPROVEMENT, judged.detail
    assert "not there" in judged.detail


def test_the_floor_must_be_cleared_with_confidence_not_on_average() -> None:
    """Mean gain 1.1 over a floor of 1.0 is not enough when the noise is 0.1-ish; the
    same gain with a floor of 0 is credited."""
    measured = sides([(10.0, 11.0), (10.0, 11.2), (10.0, 11.1)])
    assert judge(bench(min_delta=1.0), measured, plan_for(bench(), 1), 2).verdict == (
        NO_IMPROVEMENT)
    assert judge(bench(), measured, plan_for(bench(), 1), 0).verdict == IMPROVED


def test_equal_differences_need_the_exact_bound_not_an_infinite_t() -> None:
    """Every pair +0.02 (bases varying) is what a discrete noisy metric gives by luck with
    chance up to 2**-n: 3 or 6 such pairs do not credit; 12 do."""
    def equal(n: int) -> list[tuple[Side, Side]]:
        return sides([(0.80 + i / 100, 0.82 + i / 100) for i in range(n)])
    plan = plan_for(bench(), 1)
    assert judge(bench(), equal(3), plan, 0).verdict == MORE_PAIRS
    assert judge(bench(), equal(6), plan, 1).verdict == MORE_PAIRS
    assert judge(bench(), equal(12), plan, 2).verdict == IMPROVED


def test_a_benchmark_the_seed_does_not_move_is_credited_on_the_stricter_bound() -> None:
    """Both sides repeat exactly (4**-n): 6 pairs are enough, 3 are not."""
    def fixed(n: int) -> list[tuple[Side, Side]]:
        return sides([(0.80, 0.82)] * n)
    plan = plan_for(bench(), 1)
    assert judge(bench(), fixed(3), plan, 0).verdict == MORE_PAIRS
    assert judge(bench(), fixed(6), plan, 1).verdict == IMPROVED


def test_float_noise_in_the_last_digits_is_not_read_as_certainty() -> None:
    """0.84 - 0.82 printed by repr differs in the 17th digit between pairs: that spread
    is no measurement of noise, so the zero-spread bound applies."""
    measured = sides([(0.82, 0.8400000000000001), (0.81, 0.83), (0.83, 0.85)])
    judged = judge(bench(), measured, plan_for(bench(), 1), 0)
    assert judged.verdict == MORE_PAIRS, judged.detail


def test_the_sequential_verdict_of_a_null_is_rarely_credit_and_of_a_gain_usually() -> None:
    rng = random.Random(5)

    def null(_unit: int, _base_first: bool) -> tuple[Side, Side]:
        base = 0.8 + rng.gauss(0, 0.01)
        return Side(Decimal(f"{base:.6f}")), Side(Decimal(f"{base + rng.gauss(0, 0.02):.6f}"))

    def strong(_unit: int, _base_first: bool) -> tuple[Side, Side]:
        base = 0.8 + rng.gauss(0, 0.01)
        cand = base + 0.05 + rng.gauss(0, 0.02)
        return Side(Decimal(f"{base:.6f}")), Side(Decimal(f"{cand:.6f}"))

    nulls = [judge_sequentially(bench(), 1, null).verdict for _ in range(200)]
    gains = [judge_sequentially(bench(), 1, strong) for _ in range(50)]
    assert nulls.count(IMPROVED) <= 5  # bound 0.7%: 1.4 expected of 200
    assert sum(g.verdict == IMPROVED for g in gains) >= 48
    assert all(g.look is not None and g.look.pairs <= 12 for g in gains)
