"""Money budgets: charging from ``leg_ended``, the caps from contract and operator, and
the rule that a leg starts only when what is spent plus its estimate fits every cap."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from outerloop import money
from outerloop.config import LimitsSettings, Settings
from outerloop.contract import load_contract_text
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.state import State
from outerloop.limits import OperatorCeilings, effective_limits

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
CONTRACT = """\
benchmarks:
  - {name: tour, command: "python evaluate.py", metric: m, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 4%s}
scope: {allowed: [solver/]}
roadmap: ROADMAP.md
"""


def _settings(**limits: float) -> Settings:
    return Settings(home=Path("/h"), limits=LimitsSettings(**limits))  # type: ignore[arg-type]


def _caps(contract_usd: float | None = None, **limits: float) -> money.MoneyCaps:
    extra = "" if contract_usd is None else f", usd_per_run: {contract_usd}"
    contract = load_contract_text(CONTRACT % extra)
    settings = _settings(**limits)
    ceilings = OperatorCeilings(usd_per_run=settings.limits.usd_per_run)
    return money.money_caps(effective_limits(contract, ceilings), settings)


def _state(*legs: tuple[str, str, float]) -> State:
    """Runs (id, target) with one leg each ending at NOW-ish with its cost."""
    state = State()
    for seq, (run, target, cost) in enumerate(legs, 1):
        if run not in state.runs:
            apply_event(state, "t.jsonl", ev.RunQueued(
                seq=seq, at="2026-11-30T10:00:00.000000Z", run=run, target=target,
                benchmark="tour", agent="agent-01"))
        apply_event(state, f"{run}.jsonl", ev.LegEnded(
            seq=seq, at="2026-11-30T11:00:00.000000Z", run=run, leg=seq,
            stop_reason="end_turn", cost_usd=cost))
    return state


def test_the_week_is_the_runs_cap_times_runs_per_week_lowered_by_the_operator() -> None:
    assert _caps(2.0) == money.MoneyCaps(run=2.0, week=8.0, home_week=None, leg_estimate=0.0)
    assert _caps(2.0, usd_per_run=1.0, usd_per_week=3.0).run == 1.0
    assert _caps(2.0, usd_per_run=1.0, usd_per_week=3.0).week == 3.0
    assert _caps(None, usd_per_week=3.0) == money.MoneyCaps(None, 3.0, None, 0.0)
    assert _caps(None) == money.MoneyCaps(None, None, None, 0.0)


def test_a_leg_is_estimated_at_the_runs_costliest_leg_or_the_operators_floor() -> None:
    state = _state(("r", "o/n", 0.2), ("r", "o/n", 0.5), ("r", "o/n", 0.1))
    run = state.runs["r"]
    assert run.cost_usd == pytest.approx(0.8) and run.max_leg_cost_usd == 0.5
    assert money.leg_estimate(run, _caps(1.0)) == (0.5, "the run's costliest leg so far")
    assert money.leg_estimate(run, _caps(1.0, usd_leg_estimate=0.7))[0] == 0.7


def test_the_next_leg_is_refused_with_the_arithmetic_when_it_could_pass_the_runs_cap() -> None:
    state = _state(("r", "o/n", 0.4), ("r", "o/n", 0.3))
    run = state.runs["r"]
    assert money.refusal(state, run, _caps(1.2), NOW) is None  # 0.7 + 0.4 fits 1.2
    told = money.refusal(state, run, _caps(1.0), NOW)
    assert told == ("the next leg could pass the run's model budget: $0.70 spent + $0.40 "
                    "estimated for the leg (the run's costliest leg so far) = $1.10 > $1.00 "
                    "(usd_per_run)")


def test_a_cap_reached_exactly_starts_nothing_even_when_legs_are_free() -> None:
    state = _state(("r", "o/n", 0.5), ("r", "o/n", 0.5))
    told = money.refusal(state, state.runs["r"], _caps(None, usd_per_week=1.0), NOW)
    assert told is not None and "the target's 7-day model budget is spent: $1.00 of $1.00" \
        in told
    free = _state(("q", "o/n", 0.0))
    assert money.refusal(free, free.runs["q"], _caps(0.0), NOW) is not None  # cap 0: none


def test_the_homes_week_counts_every_target_and_the_targets_only_its_own() -> None:
    state = _state(("a", "o/one", 0.6), ("b", "o/two", 0.6))
    caps = _caps(None, usd_per_week=1.0, usd_per_week_home=1.0)
    assert money.week_refusal(state, "o/one", _caps(None, usd_per_week=1.0), NOW) is None
    told = money.week_refusal(state, "o/one", caps, NOW)
    assert told == "the home's 7-day model budget is spent: $1.20 of $1.00 ([limits] " \
                   "usd_per_week_home)"


def test_spend_older_than_seven_days_no_longer_counts() -> None:
    state = _state(("a", "o/one", 0.9))
    later = datetime(2026, 12, 7, 12, tzinfo=UTC)
    caps = _caps(None, usd_per_week=1.0, usd_leg_estimate=0.5)
    assert money.week_refusal(state, "o/one", caps, NOW) is not None
    assert money.week_refusal(state, "o/one", caps, later) is None
