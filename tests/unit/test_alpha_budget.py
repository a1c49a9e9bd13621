"""A target's false-credit budget (outerloop/alpha_budget.py, issue 47): the tick fixes
each run's alpha at admission from the target's holders, the real planner and the real
fold together, so that whatever runs are admitted, at once or one by one, look, end or
settle, the alphas of every run that can still be credited and every run that ever
looked never sum past the budget; a run's alpha never moves once on record; a run that
settled without a look gives its share back; the gate plans at the run's alpha."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from outerloop import alpha_budget
from outerloop.attempt.gate import plan_for
from outerloop.config import LimitsSettings, Settings, TargetSettings
from outerloop.contract import load_contract_text
from outerloop.kernel.actions import RecordEvent
from outerloop.kernel.lanes import admission
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.history import History, holds_alpha
from outerloop.ledger.state import RunState, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
STAMP = NOW.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
CONTRACT = load_contract_text("""
benchmarks:
  - {name: tour, command: python e.py, metric: m, direction: min}
  - {name: sure, command: python e.py, metric: s, direction: min, confidence: 0.999}
budgets: {gpu_hours_per_run: 0, runs_per_week: 100000, max_active_attempts: 64}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")
BUDGET = 0.01
"""``tour``'s: 1 - its default confidence."""


def _view(state: State, per_tick: int) -> TickView:
    seen = TargetObservation(repo=TARGET, contract=CONTRACT, default_branch="main",
                             base_sha="a" * 40)
    settings = Settings(home=Path("/nonexistent"), targets=[TargetSettings(repo=TARGET)],
                        limits=LimitsSettings(max_new_runs_per_tick=per_tick,
                                              max_active_attempts=64))
    return TickView(state=state, obs=Observations(now=NOW, jobs={}, targets={TARGET: seen}),
                    settings=settings)


class Target:
    """One target's ledger, folded by the real fold, admitted by the real planner."""

    def __init__(self) -> None:
        self.state = State()
        self.count = 0

    def fold(self, event: ev.BaseEvent, run: str | None) -> None:
        self.count += 1
        stamped = msgspec.structs.replace(event, run=run, seq=self.count, at=STAMP,
                                          lc=self.count)
        apply_event(self.state, f"{TARGET}/tick.jsonl", stamped)  # type: ignore[arg-type]

    def queue(self, run_id: str, benchmark: str = "tour") -> None:
        self.fold(ev.RunQueued(target=TARGET, benchmark=benchmark, agent="agent-01"), run_id)

    def tick(self, per_tick: int = 1) -> list[ev.RunAlpha]:
        """One admission pass: the ``run_alpha`` records it plans are folded (as the
        executor appends them), and the runs it starts are marked admitted."""
        fixed = []
        for action in admission.plan(_view(self.state, per_tick), []):
            if isinstance(action, RecordEvent) and isinstance(action.event, ev.RunAlpha):
                self.fold(action.event, action.run)
                fixed.append(action.event)
            elif action.kind == "submit_job" and action.run:
                self.state.runs[action.run].admitted = True
        return fixed

    def look(self, run_id: str) -> None:
        self.fold(ev.GateLook(submission=1, look=0, pairs=[("1", "1")] * 3, decision="stop"),
                  run_id)

    def settle(self, run_id: str) -> None:
        """The run ended and settled: summarised into its target's tally."""
        run = self.state.runs[run_id]
        run.state, run.ending, run.ended_at, run.settled = RunState.ENDED, "negative-result", \
            STAMP, True
        self.state.runs.summarise(run_id)

    def may_spend(self) -> float:
        """What every run that can still be credited or ever looked holds, from the
        records (not the tally): the false-credit bound's sum."""
        runs = [self.state.runs[r] for r in self.state.runs]
        return sum(r.alpha_fixed.alpha for r in runs
                   if r.alpha_fixed is not None and (r.looked or not r.settled))


def test_the_shares_of_any_number_of_runs_sum_below_the_whole_budget() -> None:
    shares = [alpha_budget.share(k) for k in range(1, 100_001)]
    assert all(a > b > 0 for a, b in itertools.pairwise(shares))  # decreasing
    assert sum(shares) < 1.0
    assert sum(shares[:300]) == pytest.approx(alpha_budget.spent_bound(1.0, 300))


@pytest.mark.parametrize("seed", range(6))
def test_no_sequence_of_admissions_looks_and_settlings_passes_the_targets_budget(
        seed: int) -> None:
    rng = random.Random(seed)
    target = Target()
    queued = 0
    for _ in range(400):
        step = rng.random()
        live = [r for r in target.state.runs.live() if r.alpha_fixed is not None
                and not r.settled]
        if step < 0.35:
            queued += 1
            target.queue(f"r{queued}", "sure" if rng.random() < 0.1 else "tour")
        elif step < 0.6:
            target.tick(per_tick=rng.choice([1, 2, 5]))  # several runs at once, too
        elif step < 0.8 and live:
            target.look(rng.choice(live).run_id)
        elif live:
            target.settle(rng.choice(live).run_id)
        assert target.may_spend() < BUDGET
        _, held = History.of(target.state.runs, TARGET).alpha_holders()
        assert held == pytest.approx(target.may_spend(), rel=1e-9, abs=1e-15)
    assert queued > 100


def test_runs_admitted_in_one_tick_take_the_next_shares_one_after_another() -> None:
    target = Target()
    for n in range(1, 4):
        target.queue(f"r{n}")
    fixed = target.tick(per_tick=3)
    assert [f.index for f in fixed] == [1, 2, 3]
    assert [f.alpha for f in fixed] == pytest.approx(
        [BUDGET * alpha_budget.share(k) for k in (1, 2, 3)])
    assert fixed[2].held == pytest.approx(fixed[0].alpha + fixed[1].alpha)
    assert sum(f.alpha for f in fixed) < BUDGET


def test_a_runs_alpha_is_fixed_once_whatever_its_start_is_planned_again() -> None:
    target = Target()
    target.queue("r1")
    (first,) = target.tick()
    run = target.state.runs["r1"]
    run.admitted = False  # its start failed: it is planned again
    target.queue("r2")
    assert [f.index for f in target.tick(per_tick=2)] == [2]  # r2's only
    target.fold(msgspec.structs.replace(first, alpha=0.5, index=9), "r1")  # a stray line
    kept = target.state.runs["r1"].alpha_fixed
    assert kept is not None and (kept.alpha, kept.index) == (first.alpha, 1)  # the first stays


def test_a_run_settled_without_a_look_gives_its_share_back_and_one_that_looked_keeps_it(
        ) -> None:
    target = Target()
    target.queue("r1")
    target.queue("r2")
    target.tick(per_tick=2)
    target.look("r2")
    target.settle("r1")  # measured nothing
    target.settle("r2")
    assert not holds_alpha(target.state.runs["r1"])
    assert History.of(target.state.runs, TARGET).alpha_holders()[0] == 1
    target.queue("r3")
    (third,) = target.tick()
    assert third.index == 2  # r1's place is free again; r2 holds the first


def test_the_gate_plans_at_the_runs_alpha_with_more_pairs_for_a_smaller_one() -> None:
    (bench,) = [b for b in CONTRACT.benchmarks if b.name == "tour"]
    old = plan_for(bench, 1)
    assert old.alpha == pytest.approx(BUDGET) and old.sizes == (3, 6, 12)  # before shares
    first = plan_for(bench, 1, BUDGET * alpha_budget.share(1))
    late = plan_for(bench, 1, BUDGET * alpha_budget.share(300))
    assert first.alpha == pytest.approx(BUDGET * alpha_budget.share(1))
    assert first.sizes[-1] > 12 and late.sizes[-1] > first.sizes[-1]
    assert late.sizes[-1] <= 12 * alpha_budget.MAX_PAIRS_SCALE
    assert first.alpha_at(0) < old.alpha_at(0)
