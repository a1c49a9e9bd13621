"""GPU budgets: charging from ``job_ended``, what is left, and the GPU cap's rules."""

from __future__ import annotations

from pathlib import Path

import msgspec

from outerloop import budgets
from outerloop.compute.base import JobSpec
from outerloop.kernel.actions import SubmitJob, intent_for
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import State

SPEC = JobSpec(name="ol-r-s1-a", command="true", workdir=str(Path("/w")), log_dir=str(Path("/l")),
               time_minutes=5, gpus=2, array_size=4, array_concurrency=2)


def _events(*items: object) -> State:
    state = State()
    for item in items:
        apply_event(state, "o__n/tick.jsonl", item)
    return state


def _submitted(at: str = "2026-11-29T10:00:00.000000Z") -> list[object]:
    return [
        ev.RunQueued(seq=1, at=at, run="r", target="o/n", benchmark="b", agent="agent-01"),
        msgspec.structs.replace(intent_for(SubmitJob(target="o/n", run="r", purpose="launch",
                                                     spec=SPEC)), seq=2, at=at),
        ev.Done(seq=3, at=at, run="r", key="job:ol-r-s1-a", result=EffectResult(job_id="77")),
    ]


def test_job_end_charges_its_run_and_its_targets_day_once_when_recorded_twice() -> None:
    end = ev.JobEnded(seq=4, at="2026-11-29T11:00:00.000000Z", run="r", job_id="77",
                      state="completed", gpu_seconds=7200)
    state = _events(*_submitted(), end, end)
    assert state.jobs["77"].gpus == 4  # 2 per task x 2 tasks at once
    assert state.runs["r"].gpu_seconds == 7200
    assert state.gpu_days["o/n"] == {"2026-11-29": 7200}


def test_job_end_is_charged_when_it_is_folded_before_its_registration() -> None:
    end = ev.JobEnded(seq=1, at="2026-11-29T09:00:00.000000Z", run="r", job_id="77",
                      state="completed", gpu_seconds=360)
    state = _events(end, *_submitted())
    assert state.runs["r"].gpu_seconds == 360 and state.jobs["77"].gpu_seconds == 360


def test_array_concurrency_is_lowered_to_cap_over_gpus_when_a_cap_is_set() -> None:
    assert budgets.array_concurrency(8, gpus=1, cap=2) == 2
    assert budgets.array_concurrency(8, gpus=2, cap=5) == 2
    assert budgets.array_concurrency(8, gpus=4, cap=2) == 1
    assert budgets.array_concurrency(3, gpus=1, cap=None) == 3
    assert budgets.array_concurrency(3, gpus=0, cap=1) == 3


def test_further_launches_wait_for_the_holders_when_they_would_pass_the_cap() -> None:
    waves = budgets.GpuWaves(cap=4, holding=[("10", 2)])
    assert waves.wait_for(2) == ()
    waves.add("11", 2, ())
    assert waves.wait_for(1) == ("10", "11")
    waves.add("12", 1, ("10", "11"))
    assert waves.wait_for(3) == ()
    assert waves.wait_for(4) == ("12",)
    assert budgets.GpuWaves(cap=None, holding=[("10", 8)]).wait_for(8) == ()


def test_run_budget_is_the_smaller_of_the_runs_and_the_weeks_when_both_are_used() -> None:
    from datetime import UTC, datetime

    from outerloop.config import Settings
    from outerloop.contract import load_contract_text
    from outerloop.limits import effective_limits

    contract = load_contract_text(
        "benchmarks: [{name: b, command: x, metric: m, direction: min, gpus: 1}]\n"
        "budgets: {gpu_hours_per_run: 2, runs_per_week: 2}\n"
        "scope: {allowed: [src/]}\nroadmap: r.md\n")
    state = _events(*_submitted())
    state.runs["r"].gpu_seconds = 1800
    state.gpu_days["o/n"] = {"2026-11-29": 3 * 3600}
    limits = effective_limits(contract)
    settings = Settings(home=Path("/nonexistent"))
    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    got = budgets.run_budget(state, state.runs["r"], limits, settings, now)
    assert (got.run_left, got.week_left, got.left) == (1.5, 1.0, 1.0)
    later = budgets.run_budget(state, state.runs["r"], limits, settings, now, 3600)
    assert later.left == 0.0 and later.run_used == 1.5


def test_review_topup_adds_gpu_hours_when_the_run_has_a_pull_request() -> None:
    from datetime import UTC, datetime

    from outerloop.config import Settings
    from outerloop.contract import load_contract_text
    from outerloop.limits import effective_limits

    contract = load_contract_text(
        "benchmarks: [{name: b, command: x, metric: m, direction: min, gpus: 1}]\n"
        "budgets: {gpu_hours_per_run: 1, runs_per_week: 9, review_topup: {gpu_hours: 0.25}}\n"
        "scope: {allowed: [src/]}\nroadmap: r.md\n")
    state = _events(*_submitted())
    run = state.runs["r"]
    run.gpu_seconds = 3600
    limits, settings = effective_limits(contract), Settings(home=Path("/nonexistent"))
    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    assert budgets.run_budget(state, run, limits, settings, now).left == 0.0
    run.pr_number = 4
    assert budgets.run_budget(state, run, limits, settings, now).left == 0.25
