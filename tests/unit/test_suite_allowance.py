"""The suite gate with a ``regression`` allowance (issue 49 point 1): a sibling may get
worse by up to ``free`` without condition, by up to ``max`` only when the climbed
benchmark gains at least ``requires_gain``, never beyond ``max``; and under ``suite:
{metric, direction}`` every benchmark is measured and their aggregate reported."""

from __future__ import annotations

from decimal import Decimal

import pytest

from outerloop.attempt.gate import Judgement, Side
from outerloop.attempt.suite import (
    aggregate_line,
    check_suite,
    guards_of,
    settle_needs,
    siblings_to_measure,
)
from outerloop.contract import Benchmark, Contract, load_contract_text
from outerloop.contract_reference import SuiteAggregate
from outerloop.vocabulary import GateVerdict

CONTRACT = """
benchmarks:
  - {{name: alpha, command: a, metric: alpha_cost, direction: min}}
  - {{name: beta, command: b, metric: beta_cost, direction: min, min_delta: {floor},
     regression: {regression}}}
  - {{name: gamma, command: c, metric: gamma_score, direction: max}}
budgets: {{gpu_hours_per_run: 0, runs_per_week: 5}}
scope: {{allowed: [local/], shared: [shared/]}}
roadmap: docs/roadmap.md
{suite}
"""

ABSOLUTE = "{free: 1, max: 5, requires_gain: 40}"
RELATIVE = "{free_rel: 0.01, max_rel: 0.05, requires_gain_rel: 0.4}"


def contract(regression: str = ABSOLUTE, floor: str = "0", suite: str = "") -> Contract:
    return load_contract_text(CONTRACT.format(regression=regression, floor=floor,
                                              suite=suite))


def beta_pairs(base: str, cand: str, n: int = 6) -> dict[str, list[tuple[Side, Side]]]:
    return {"beta": [(Side(Decimal(base)), Side(Decimal(cand)))] * n}


def credited(gain: str, baseline: str = "100") -> Judgement:
    """The climbed benchmark's (alpha, lower is better) judgement: credited, ``gain``."""
    base, delta = Decimal(baseline), Decimal(gain)
    return Judgement(GateVerdict.IMPROVED, base, base - delta, delta, f"gain {gain}")


def verdict(c: Contract, beta_base: str, beta_cand: str, gain: str) -> GateVerdict:
    """The verdict of a submission that gains ``gain`` on alpha (baseline 100) and
    moves beta from ``beta_base`` to ``beta_cand``: the suite gate, then the credit."""
    siblings = {b.name: b for b in c.benchmarks}
    held = check_suite(siblings, beta_pairs(beta_base, beta_cand), "alpha")
    if held.verdict is not None:
        return held.verdict
    return settle_needs(credited(gain), held.needs, "alpha").verdict


def test_a_sibling_worse_within_free_is_credited_whatever_the_gain() -> None:
    c = contract()
    assert verdict(c, "100", "101", gain="1") == GateVerdict.IMPROVED
    held = check_suite({b.name: b for b in c.benchmarks}, beta_pairs("100", "101"), "alpha")
    assert held.needs == () and "within its free allowance 1" in held.detail


def test_a_sibling_worse_within_max_is_credited_when_the_climbed_gain_is_enough() -> None:
    assert verdict(contract(), "100", "104", gain="40") == GateVerdict.IMPROVED
    assert verdict(contract(), "100", "105", gain="50") == GateVerdict.IMPROVED


def test_a_sibling_worse_within_max_is_not_credited_without_enough_climbed_gain() -> None:
    c = contract()
    held = check_suite({b.name: b for b in c.benchmarks}, beta_pairs("100", "104"), "alpha")
    assert held.verdict is None
    assert "beta (beta_cost): 100 -> 104, worse by 4, above its free allowance 1 and " \
           "within its max 5, if alpha gains at least 40" in held.detail
    settled = settle_needs(credited("39"), held.needs, "alpha")
    assert settled.verdict == GateVerdict.SUITE_REGRESSION
    assert "allowed only if alpha gains at least 40; it gained 39" in settled.detail


def test_a_sibling_worse_beyond_max_is_not_credited_whatever_the_gain() -> None:
    c = contract()
    assert verdict(c, "100", "106", gain="99") == GateVerdict.SUITE_REGRESSION
    held = check_suite({b.name: b for b in c.benchmarks}, beta_pairs("100", "106"), "alpha")
    assert "worse by 6 > allowance 5" in held.detail


def test_relative_allowances_scale_with_each_benchmarks_own_baseline() -> None:
    c = contract(RELATIVE)
    # beta's baseline 200: free 2, max 10; alpha's baseline 100: it must gain 40
    assert verdict(c, "200", "202", gain="1") == GateVerdict.IMPROVED
    assert verdict(c, "200", "208", gain="40") == GateVerdict.IMPROVED
    assert verdict(c, "200", "208", gain="39.9") == GateVerdict.SUITE_REGRESSION
    assert verdict(c, "200", "210.5", gain="99") == GateVerdict.SUITE_REGRESSION


def test_a_max_without_requires_gain_allows_up_to_max_on_the_credit_alone() -> None:
    c = contract("{free: 1, max: 5}")
    assert verdict(c, "100", "105", gain="0.5") == GateVerdict.IMPROVED
    assert verdict(c, "100", "105.5", gain="99") == GateVerdict.SUITE_REGRESSION


def test_the_floor_stays_the_least_allowance_when_free_is_below_it() -> None:
    assert verdict(contract("{free: 0.5}", floor="2"), "100", "102", gain="1") == \
        GateVerdict.IMPROVED
    assert verdict(contract("{free: 0.5}", floor="2"), "100", "102.5", gain="1") == \
        GateVerdict.SUITE_REGRESSION


def test_a_guard_without_allowance_keeps_its_floor_when_regression_is_true() -> None:
    c = contract("true", floor="1")
    assert verdict(c, "100", "101", gain="50") == GateVerdict.IMPROVED
    held = check_suite({b.name: b for b in c.benchmarks}, beta_pairs("100", "102"), "alpha")
    assert held.verdict == GateVerdict.SUITE_REGRESSION
    assert "beta (beta_cost): 100 -> 102, worse by 2 > floor 1" in held.detail


@pytest.mark.parametrize("kind", [GateVerdict.NO_IMPROVEMENT, GateVerdict.MORE_PAIRS,
                                  GateVerdict.EVAL_ERROR])
def test_a_condition_leaves_a_verdict_that_credits_nothing_as_it_is(kind: GateVerdict) -> None:
    c = contract()
    held = check_suite({b.name: b for b in c.benchmarks}, beta_pairs("100", "104"), "alpha")
    judged = Judgement(kind, Decimal(100), Decimal(99), Decimal(1), "d")
    assert settle_needs(judged, held.needs, "alpha") is judged


def test_every_benchmark_is_measured_beside_every_candidate_under_a_suite_mapping() -> None:
    plain = contract("false")
    alpha = plain.benchmarks[0]
    assert [b.name for _, b in siblings_to_measure(plain, alpha, ["local/x.py"])] == []
    mapped = contract("false", suite="suite: {metric: total, direction: max}")
    assert [b.name for _, b in siblings_to_measure(mapped, alpha, ["local/x.py"])] == [
        "beta", "gamma"]
    assert [b.name for _, b in guards_of(mapped, alpha)] == ["beta", "gamma"]


def test_a_regression_mapping_makes_a_guard_measured_beside_every_candidate() -> None:
    c = contract(RELATIVE)
    assert [b.name for _, b in siblings_to_measure(c, c.benchmarks[0], ["local/x.py"])] == [
        "beta"]


def _bench(name: str, direction: str) -> Benchmark:
    return Benchmark(name=name, command="x", metric=name, direction=direction)  # type: ignore[arg-type]


def test_the_aggregate_is_the_mean_relative_gain_in_each_benchmarks_direction() -> None:
    measured = [(_bench("alpha", "min"), Decimal(100), Decimal(50)),   # +50%
                (_bench("gamma", "max"), Decimal(10), Decimal(9))]     # -10%
    line = aggregate_line(SuiteAggregate(metric="total", direction="max"), measured)
    assert line.startswith("suite total: +20% (max; the mean relative gain over 2 benchmarks")
    lower = aggregate_line(SuiteAggregate(metric="loss", direction="min"), measured)
    assert lower.startswith("suite loss: -20% (min; the mean relative loss over 2 benchmarks")


def test_the_aggregate_leaves_out_a_benchmark_whose_baseline_is_zero() -> None:
    measured = [(_bench("alpha", "min"), Decimal(100), Decimal(90)),
                (_bench("gamma", "max"), Decimal(0), Decimal(1))]
    line = aggregate_line(SuiteAggregate(metric="total", direction="max"), measured)
    assert line == ("suite total: +10% (max; the mean relative gain over 1 benchmark; "
                    "left out (baseline 0): gamma)")
