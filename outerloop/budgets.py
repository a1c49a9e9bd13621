"""GPU budgets: what a run and a target's week have left, and how launches share the
target's GPUs. Pure functions of the folded ``State`` and the effective limits.

- A job's GPU time (allocated GPUs x elapsed, over every attempt) is charged to its
  run and to its target's day when the tick records its end (``job_ended``).
- **Per run**: ``gpu_hours_per_run`` (plus the review top-up once a PR is open).
- **Per week**: each target may use ``gpu_hours_per_run x runs_per_week`` GPU-hours in
  the last 7 days (UTC days, today included), lowered by the operator's
  ``[limits] gpu_hours_per_week``. Admission starts no run and ``launch`` is refused
  while it is spent.
- **At once**: ``max_concurrent_gpus`` caps the GPUs a target's launches hold at the
  same time: an array's concurrency K is lowered to ``cap // gpus`` (the public
  reference's rule), and a launch that would push the target past the cap waits
  (``afterany``) for the launches already holding GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from outerloop.clock import week_first_day
from outerloop.config import Settings
from outerloop.ledger.state import JobRecord, RunRecord, State
from outerloop.limits import EffectiveLimits
from outerloop.vocabulary import GPU_PURPOSES


def week_budget(limits: EffectiveLimits, settings: Settings) -> float:
    """A target's GPU-hours per 7 days."""
    budget = limits.gpu_hours_per_run * limits.runs_per_week
    ceiling = settings.limits.gpu_hours_per_week
    return budget if ceiling is None else min(budget, ceiling)


@dataclass(frozen=True)
class GpuHoursLeft:
    """GPU-hours used and left, for one run and its target's week."""

    run_used: float
    run_budget: float
    week_used: float
    week_budget: float

    @property
    def run_left(self) -> float:
        return max(0.0, self.run_budget - self.run_used)

    @property
    def week_left(self) -> float:
        return max(0.0, self.week_budget - self.week_used)

    @property
    def left(self) -> float:
        """What the run may still use: the smaller of its own and its week's."""
        return round(min(self.run_left, self.week_left), 4)

    def describe(self) -> str:
        return (f"{self.run_used:.2f} of the run's {self.run_budget:g} GPU-hours used, "
                f"{self.week_used:.2f} of the target's {self.week_budget:g} GPU-hours this "
                f"week; {self.left:.2f} left")


def target_week(state: State, target: str, limits: EffectiveLimits, settings: Settings,
                now: datetime, unrecorded_s: int = 0) -> tuple[float, float]:
    """(GPU-hours used by ``target`` in the last 7 days, its weekly budget)."""
    used = state.gpu_hours_since(target, week_first_day(now)) + unrecorded_s / 3600
    return used, week_budget(limits, settings)


def run_budget(state: State, run: RunRecord, limits: EffectiveLimits, settings: Settings,
               now: datetime, unrecorded_s: int = 0) -> GpuHoursLeft:
    """The run's GPU budget; ``unrecorded_s`` is GPU time its jobs used that the
    ledger does not hold yet (jobs ended since the last tick, observed by the caller)."""
    topup = limits.review_topup_gpu_hours if run.pr_number is not None else 0.0
    week_used, week = target_week(state, run.target, limits, settings, now, unrecorded_s)
    return GpuHoursLeft(run_used=(run.gpu_seconds + unrecorded_s) / 3600,
                     run_budget=limits.gpu_hours_per_run + topup,
                     week_used=week_used, week_budget=week)


def launch_gpu_hours(gpus: int, nodes: int, minutes: int, tasks: int) -> float:
    """The most a launch can use: every task for its whole time limit."""
    return gpus * nodes * tasks * minutes / 60


def array_concurrency(concurrency: int, gpus: int, cap: int | None) -> int:
    """An array's K under the cap: ``min(K, cap // gpus)``, at least 1."""
    if not gpus or cap is None:
        return concurrency
    return max(1, min(concurrency, cap // gpus))


def gpus_in_use(jobs: Iterable[JobRecord], target: str) -> list[JobRecord]:
    """The target's live launch and eval jobs that hold (or wait for) GPUs."""
    return [j for j in jobs if j.target == target and not j.terminal and j.gpus
            and j.purpose in GPU_PURPOSES]


@dataclass
class GpuWaves:
    """Plans, launch by launch, which earlier jobs a new launch waits for so the
    target's GPUs held at once stay within ``cap``."""

    cap: int | None
    holding: list[tuple[str, int]]
    """(job id, GPUs) of the jobs holding GPUs now, oldest first."""

    def wait_for(self, gpus: int) -> tuple[str, ...]:
        """The job ids a new launch holding ``gpus`` at once must wait for."""
        if self.cap is None or not gpus:
            return ()
        if sum(g for _, g in self.holding) + gpus <= self.cap:
            return ()
        return tuple(job for job, _ in self.holding)

    def add(self, job_id: str, gpus: int, waited: tuple[str, ...]) -> None:
        """Record a submitted launch; a launch that waited starts a new wave."""
        if not gpus:
            return
        if waited:
            self.holding = []
        self.holding.append((job_id, gpus))
