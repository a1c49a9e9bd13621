"""The verdict as the agent and the PR read it (pure)."""

from __future__ import annotations

from decimal import Decimal

from outerloop.attempt.findings import CONFIRMATION_SOURCE, Finding
from outerloop.attempt.gate import Judgement, Side, credit_threshold
from outerloop.attempt.render import VerdictView, decimal_or_none, format_metric
from outerloop.contract import Benchmark
from outerloop.ledger import events as ev

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


def judgement_of(told: ev.Verdict) -> Judgement:
    """A recorded verdict as the gate's judgement (exact decimals again)."""
    return Judgement(told.verdict, decimal_or_none(told.baseline),
                     decimal_or_none(told.candidate), decimal_or_none(told.delta), told.detail)


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


def _measured(judged: Judgement) -> str:
    if judged.baseline is None or judged.candidate is None:
        return f"it could not be measured ({judged.detail})"
    return (f"baseline {judged.baseline}, candidate {judged.candidate}: {judged.verdict} "
            f"({judged.detail})")


def not_reproduced(judged: Judgement) -> Finding:
    """The blocking finding of a credited result its confirmation pair did not repeat."""
    return Finding(
        severity="blocking", source=CONFIRMATION_SOURCE,
        summary="The credited result did not reproduce: measured again from the sealed "
                "commit in a fresh eval job with a fresh hidden seed, "
                + _measured(judged) + ".",
        detail="A result that holds only once is noise, luck, or state carried in from "
               "outside the commit (a stash, a cache); a human decides.")


def not_reproduced_note(judged: Judgement) -> str:
    """What the agent is told when its credited submission did not reproduce."""
    return ("Your credited submission did not reproduce. The gate measured the sealed "
            "commit again in a fresh eval job, with a fresh hidden seed and nothing "
            "carried over from earlier jobs: " + _measured(judged) + ". Its pull request "
            "opened as a draft saying so. Only what is committed counts, measured in "
            "fresh checkouts: make the improvement hold on every seed.")
