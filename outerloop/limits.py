"""Clamps: a contract's wishes -> the limits a run actually gets.

A contract is untrusted, so every knob that costs compute or wall time is clamped into
``[floor, ceiling]`` where the ceiling is the code default: a contract can only
**lower** spend, never raise it. The floor keeps a run viable (a 5-minute climb job
could never finish a session). The operator may tighten further with ceilings of
their own (``OperatorCeilings``), down to the same floors. Finally
``session_minutes <= attempt_job_minutes - SESSION_MARGIN_MINUTES`` so the kernel
always has time after a session to seal, launch and record before the job ends.

Everything here is pure: ``effective_limits(contract, operator)`` -> ``EffectiveLimits``.
``target_limits(contract, settings)`` is the one way the kernel and a run's job get a
target's limits: the contract clamped under every operator ceiling of ``[limits]``
(``operator_ceilings``). Only ``outerloop contract check``, which has no home, clamps
a contract without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType

from outerloop.config import Settings
from outerloop.contract import Benchmark, Contract
from outerloop.errors import ConfigError

SESSION_MAX_TURNS = 120
SESSION_MAX_TURNS_FLOOR = 10
SESSION_MINUTES = 90
SESSION_MINUTES_FLOOR = 10
ATTEMPT_JOB_MINUTES = 120
ATTEMPT_JOB_MINUTES_FLOOR = 40
FOLLOWUP_JOB_MINUTES = 90
FOLLOWUP_JOB_MINUTES_FLOOR = 20
SESSION_MARGIN_MINUTES = 20
EVAL_MINUTES_CEILING = 1440
EVAL_MINUTES_FLOOR = 1
# A cooldown is the other way round: longer means less spend, so the default is the floor.
ATTEMPT_COOLDOWN_MINUTES = 360
ATTEMPT_COOLDOWN_MINUTES_CEILING = 7 * 24 * 60
REVIEW_TOPUP_LAUNCHES = 2
REVIEW_TOPUP_SLEEPS = 4
REVIEW_TOPUP_GPU_HOURS = 0.5


def clamp(value: int, low: int, high: int) -> int:
    """``value`` forced into ``[low, high]``."""
    return max(low, min(high, value))


@dataclass(frozen=True)
class OperatorCeilings:
    """Operator-side caps (from ``outerloop.toml``); None leaves the code ceiling.

    These can only tighten: a value above the code ceiling changes nothing, and the
    result never goes below the code floor.
    """

    session_max_turns: int | None = None
    session_minutes: int | None = None
    attempt_job_minutes: int | None = None
    followup_job_minutes: int | None = None
    eval_minutes: int | None = None
    max_active_attempts: int | None = None
    max_concurrent_gpus: int | None = None
    gpu_hours_per_run: float | None = None
    runs_per_week: int | None = None
    usd_per_run: float | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None and (isinstance(value, bool) or value < 0):
                raise ConfigError(f"operator limit {item.name}={value!r} must be a "
                                  f"non-negative number; fix the setting")

    @classmethod
    def from_mapping(cls, values: Mapping[str, int | float | None]) -> OperatorCeilings:
        """Build from a plain mapping, refusing names that are not operator ceilings."""
        known = {item.name for item in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown operator limit(s) {', '.join(unknown)}; "
                              f"valid: {', '.join(sorted(known))}")
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class BenchmarkLimits:
    """What one benchmark's runs and eval jobs may use."""

    name: str
    eval_minutes: int
    gpus: int
    nodes: int
    repeats: int
    depth_k: int
    sleep_k: int


@dataclass(frozen=True)
class EffectiveLimits:
    """The limits a target's runs get after contract wishes and operator caps."""

    session_max_turns: int
    session_minutes: int
    attempt_job_minutes: int
    followup_job_minutes: int
    attempt_cooldown_minutes: int
    max_active_attempts: int
    max_concurrent_gpus: int | None
    gpu_hours_per_run: float
    runs_per_week: int
    usd_per_run: float | None
    """Model cost (USD) a run may spend: the contract's, lowered by the operator's
    (None: neither caps it)."""
    review_topup_launches: int
    review_topup_sleeps: int
    review_topup_gpu_hours: float
    benchmarks: Mapping[str, BenchmarkLimits]

    def for_benchmark(self, name: str) -> BenchmarkLimits:
        """Limits of benchmark ``name``; KeyError when the contract has no such benchmark."""
        return self.benchmarks[name]


def _knob(wish: int | None, default: int, low: int, operator: int | None) -> int:
    ceiling = default if operator is None else min(default, operator)
    return clamp(default if wish is None else wish, low, max(low, ceiling))


def _cap(value: float, operator: float | None) -> float:
    return value if operator is None else min(value, operator)


def smaller(value: float | None, other: float | None) -> float | None:
    """The smaller of two caps where None means no cap."""
    if value is None:
        return other
    return value if other is None else min(value, other)


def benchmark_limits(contract: Contract, benchmark: Benchmark,
                     operator: OperatorCeilings | None = None) -> BenchmarkLimits:
    """One benchmark's limits: eval minutes clamped, depth/sleep from budgets if unset."""
    op = operator or OperatorCeilings()
    budgets = contract.budgets
    return BenchmarkLimits(
        name=benchmark.name,
        eval_minutes=_knob(benchmark.eval_minutes, EVAL_MINUTES_CEILING, EVAL_MINUTES_FLOOR,
                           op.eval_minutes),
        gpus=benchmark.gpus,
        nodes=benchmark.nodes,
        repeats=benchmark.repeats,
        depth_k=budgets.depth_k if benchmark.depth_k is None else benchmark.depth_k,
        sleep_k=budgets.sleep_k if benchmark.sleep_k is None else benchmark.sleep_k,
    )


def effective_limits(contract: Contract,
                     operator_overrides: OperatorCeilings | Mapping[str, int | float | None]
                     | None = None) -> EffectiveLimits:
    """The clamped limits for ``contract`` under optional operator ceilings."""
    if operator_overrides is None:
        op = OperatorCeilings()
    elif isinstance(operator_overrides, OperatorCeilings):
        op = operator_overrides
    else:
        op = OperatorCeilings.from_mapping(operator_overrides)
    b = contract.budgets
    attempt_minutes = _knob(b.attempt_job_minutes, ATTEMPT_JOB_MINUTES,
                            ATTEMPT_JOB_MINUTES_FLOOR, op.attempt_job_minutes)
    session_minutes = min(
        _knob(b.session_minutes, SESSION_MINUTES, SESSION_MINUTES_FLOOR, op.session_minutes),
        attempt_minutes - SESSION_MARGIN_MINUTES,
    )
    cooldown = clamp(ATTEMPT_COOLDOWN_MINUTES if b.attempt_cooldown_minutes is None
                     else b.attempt_cooldown_minutes,
                     ATTEMPT_COOLDOWN_MINUTES, ATTEMPT_COOLDOWN_MINUTES_CEILING)
    max_gpus = b.max_concurrent_gpus
    if op.max_concurrent_gpus is not None:
        max_gpus = op.max_concurrent_gpus if max_gpus is None else min(
            max_gpus, op.max_concurrent_gpus)
    topup = b.review_topup
    return EffectiveLimits(
        session_max_turns=_knob(b.session_max_turns, SESSION_MAX_TURNS,
                                SESSION_MAX_TURNS_FLOOR, op.session_max_turns),
        session_minutes=session_minutes,
        attempt_job_minutes=attempt_minutes,
        followup_job_minutes=_knob(b.followup_job_minutes, FOLLOWUP_JOB_MINUTES,
                                   FOLLOWUP_JOB_MINUTES_FLOOR, op.followup_job_minutes),
        attempt_cooldown_minutes=cooldown,
        max_active_attempts=max(1, int(_cap(b.max_active_attempts, op.max_active_attempts))),
        max_concurrent_gpus=max_gpus,
        gpu_hours_per_run=_cap(b.gpu_hours_per_run, op.gpu_hours_per_run),
        runs_per_week=int(_cap(b.runs_per_week, op.runs_per_week)),
        usd_per_run=smaller(b.usd_per_run, op.usd_per_run),
        review_topup_launches=min(topup.launches, REVIEW_TOPUP_LAUNCHES),
        review_topup_sleeps=min(topup.sleeps, REVIEW_TOPUP_SLEEPS),
        review_topup_gpu_hours=min(topup.gpu_hours, REVIEW_TOPUP_GPU_HOURS),
        benchmarks=MappingProxyType({
            bench.name: benchmark_limits(contract, bench, op) for bench in contract.benchmarks
        }),
    )


def operator_ceilings(settings: Settings) -> OperatorCeilings:
    """The operator's ``[limits]`` caps that tighten every contract, and the session
    placement's ``time_minutes`` (a partition's MaxTime), which caps climb and wake
    jobs and so shortens the session to fit (``SESSION_MARGIN_MINUTES`` before the
    job's end); a cap below ``ATTEMPT_JOB_MINUTES_FLOOR`` cannot be honoured and is a
    deployment problem (``time_caps.session_shortfall``)."""
    op = settings.limits
    return OperatorCeilings(attempt_job_minutes=settings.compute.time_cap("session"),
                            max_active_attempts=op.max_active_attempts,
                            gpu_hours_per_run=op.gpu_hours_per_run,
                            max_concurrent_gpus=op.max_concurrent_gpus,
                            usd_per_run=op.usd_per_run)


def target_limits(contract: Contract, settings: Settings) -> EffectiveLimits:
    """A target's effective limits: its contract clamped under the code ceilings and
    every operator ceiling. Every lane, the observation and a run's job ask this, so
    two of them never disagree about a target's caps."""
    return effective_limits(contract, operator_ceilings(settings))
