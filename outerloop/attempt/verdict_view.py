"""The verdict as the agent and the PR read it (pure)."""

from __future__ import annotations

from decimal import Decimal

from outerloop.attempt.gate import Judgement, Side, credit_threshold
from outerloop.attempt.render import VerdictView, format_metric
from outerloop.contract import Benchmark

DEFAULT_DIGITS = 6


def verdict_view(bench: Benchmark, judged: Judgement, seeds: int) -> VerdictView:
    """The verdict as the agent and the PR read it: numbers to the benchmark's
    ``display_digits`` (6 significant digits when unset), the threshold the gain had to
    clear, and whether the measurements were seeded (pure)."""
    digits = bench.display_digits or DEFAULT_DIGITS

    def shown(value: Decimal | None) -> str | None:
        return format_metric(value, digits) if value is not None else None

    needed = credit_threshold(bench, judged.baseline) if judged.baseline is not None else None
    return VerdictView(
        verdict=judged.verdict, benchmark=bench.name, metric=bench.metric,
        direction=bench.direction, baseline=shown(judged.baseline),
        candidate=shown(judged.candidate), delta=shown(judged.delta), seeds=seeds,
        detail=judged.detail, needed=shown(needed), seeded=bench.seed_env is not None)


def baseline_failure(pairs: list[tuple[Side, Side]]) -> str | None:
    """Why the base commit could not be measured (after its one retry), or None.

    A baseline that fails is the benchmark's problem, not the agent's: the run ends
    with the reason for the maintainers instead of telling the agent to revise."""
    errors = [base.error for base, _ in pairs if base.error]
    if not errors:
        return None
    return (f"the benchmark failed on the base commit, so nothing could be compared "
            f"(a problem of the target's benchmark, not of this run's change): "
            f"{errors[0]}. Fix the benchmark on the default branch, then open a new issue.")
