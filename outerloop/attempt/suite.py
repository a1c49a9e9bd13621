"""The suite gate: a candidate must not make a sibling benchmark worse.

Code under ``scope.shared`` is used by more than one benchmark, so a change there that
improves the run's benchmark may quietly cost another one. When a submission touches
it, every sibling benchmark of the suite (the contract's ``suite`` list, or every other
benchmark; never a self-reported one) is measured too; a guard benchmark
(``regression: true``, or a mapping of allowances) is measured beside every submission,
touching ``shared`` or not, and so is every benchmark under ``suite: {metric,
direction}``. Each is measured with its own command from the base tree, on base and
candidate, under the submission's hidden seeds (the same seed on both sides).

A sibling whose mean got worse, in its direction, by more than it may turns the verdict
into ``suite-regression``: no PR, and the agent is woken with the numbers. What it may:
its floor (``contract.floor``; a zero floor means any worsening), or, with a
``regression`` mapping, its ``free`` allowance when larger; between that and ``max``
only when the climbed benchmark gains at least ``requires_gain`` (a ``SuiteNeed``,
checked at whichever look credits the submission, ``settle_needs``); beyond ``max``,
never. A sibling that cannot be measured is an ``eval-error``: an unmeasured suite
vouches for nothing.

Under ``suite: {metric, direction}`` the note also states the aggregate named
``metric`` (``aggregate_line``): the mean over the measured benchmarks of each one's
relative gain, so the PR shows every benchmark and their aggregate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from outerloop.attempt.gate import Judgement, Side, gain
from outerloop.contract import Benchmark, Contract, floor
from outerloop.contract_reference import SuiteAggregate
from outerloop.contract_scope import touches_shared
from outerloop.ledger.events import SuiteNeed
from outerloop.numfmt import format_number, format_pair, verdict_digits
from outerloop.vocabulary import GateVerdict

AGGREGATE_DIGITS = 3


def guards_of(contract: Contract, benchmark: Benchmark) -> list[tuple[int, Benchmark]]:
    """(index, sibling) for each benchmark re-measured beside every candidate that
    climbs ``benchmark``: the guards, or every one under ``suite: {metric,
    direction}``; never ``benchmark`` itself, never a self-reported one."""
    every = contract.suite_aggregate is not None
    return [(index, other) for index, other in enumerate(contract.benchmarks)
            if other.name != benchmark.name and not other.self_reported
            and (every or other.guard)]


def siblings_to_measure(contract: Contract, benchmark: Benchmark,
                        changed: Iterable[str]) -> list[tuple[int, Benchmark]]:
    """(index in the contract, sibling) for each sibling the suite gate must measure:
    the guards (``guards_of``) always; the suite's other benchmarks (the contract's
    ``suite`` list, or all) when ``changed`` touches ``scope.shared``."""
    shared = touches_shared(contract, changed)
    suite = contract.suite_names
    always = {other.name for _, other in guards_of(contract, benchmark)}
    return [(index, other) for index, other in enumerate(contract.benchmarks)
            if other.name != benchmark.name and not other.self_reported
            and (other.name in always
                 or (shared and (suite is None or other.name.casefold() in suite)))]


@dataclass(frozen=True)
class SuiteResult:
    """What the suite gate found: ``verdict`` is None when every sibling held (some,
    perhaps, on a condition in ``needs``)."""

    verdict: GateVerdict | None
    detail: str
    needs: tuple[SuiteNeed, ...] = ()
    means: tuple[tuple[str, Decimal, Decimal], ...] = ()
    """(sibling, baseline mean, candidate mean) of each sibling measured."""


def check_suite(siblings: Mapping[str, Benchmark],
                pairs: Mapping[str, Sequence[tuple[Side, Side]]],
                climbed: str = "the climbed benchmark") -> SuiteResult:
    """Judge each sibling's pairs (measured on base and candidate with shared seeds)
    against its floor and its ``regression`` allowance; ``climbed`` names the run's
    benchmark in the conditions."""
    errors: list[str] = []
    worse: list[str] = []
    held: list[str] = []
    needs: list[SuiteNeed] = []
    means: list[tuple[str, Decimal, Decimal]] = []
    for name, measured in pairs.items():
        sibling = siblings[name]
        failed = [f"{name} {side}: {s.error}" for b, c in measured
                  for side, s in (("baseline", b), ("candidate", c)) if s.error]
        if failed or not measured:
            errors.extend(failed or [f"{name}: not measured"])
            continue
        n = Decimal(len(measured))
        base = sum((b.value for b, _ in measured if b.value is not None), Decimal(0)) / n
        cand = sum((c.value for _, c in measured if c.value is not None), Decimal(0)) / n
        means.append((name, base, cand))
        lost = -gain(sibling.direction, base, cand)
        digits = verdict_digits(base, cand, sibling.display_digits)
        shown_base, shown_cand = format_pair(base, cand, sibling.display_digits)
        line = f"{name} ({sibling.metric}): {shown_base} -> {shown_cand}"
        by = format_number(lost, digits)
        free, top = _allowed(sibling, base)
        if lost <= free:
            held.append(line if lost <= floor(sibling, base) else
                        f"{line}, worse by {by} within its free allowance "
                        f"{format_number(free, digits)}")
        elif lost > top:
            word = "floor" if top == floor(sibling, base) else "allowance"
            worse.append(f"{line}, worse by {by} > {word} {format_number(top, digits)}")
        else:
            within = (f"{line}, worse by {by}, above its free allowance "
                      f"{format_number(free, digits)} and within its max "
                      f"{format_number(top, digits)}")
            need = _need(sibling, name, within)
            if need is None:
                held.append(within)
            else:
                needs.append(need)
                held.append(f"{within}, if {climbed} gains at least {_need_words(need)}")
    if errors:
        return SuiteResult(GateVerdict.EVAL_ERROR, "suite: " + "; ".join(errors))
    if worse:
        return SuiteResult(GateVerdict.SUITE_REGRESSION, "a sibling benchmark got worse: "
                           + "; ".join(worse), means=tuple(means))
    return SuiteResult(None, "siblings held: " + "; ".join(held) if held else "",
                       tuple(needs), tuple(means))


def _allowed(sibling: Benchmark, base: Decimal) -> tuple[Decimal, Decimal]:
    """(free, max): how much worse ``sibling`` may get at ``base`` without condition,
    and at most. The floor is the least of both (noise is never a regression)."""
    least = floor(sibling, base)
    allowance = sibling.allowance
    if allowance is None:
        return least, least
    free = max(least, allowance.free_at(base))
    return free, max(free, allowance.max_at(base))


def _need(sibling: Benchmark, name: str, worse: str) -> SuiteNeed | None:
    allowance = sibling.allowance
    gain_needed = allowance.requires_gain_value if allowance is not None else None
    if allowance is None or gain_needed is None:
        return None
    return SuiteNeed(sibling=name, gain=str(gain_needed), relative=allowance.relative,
                     worse=worse)


def _need_words(need: SuiteNeed) -> str:
    if need.relative:
        return f"{format_number(Decimal(need.gain) * 100, AGGREGATE_DIGITS)}% of its baseline"
    return format_number(Decimal(need.gain), AGGREGATE_DIGITS)


def settle_needs(judged: Judgement, needs: Sequence[SuiteNeed], climbed: str) -> Judgement:
    """``judged`` unless it credits a submission whose siblings' conditions its gain
    does not meet: then ``suite-regression``, saying which sibling and by how much."""
    if judged.verdict != GateVerdict.IMPROVED or judged.delta is None:
        return judged
    base = judged.baseline if judged.baseline is not None else Decimal(0)
    for need in needs:
        required = Decimal(need.gain) * (abs(base) if need.relative else Decimal(1))
        if judged.delta < required:
            digits = verdict_digits(base, judged.candidate, None)
            return replace(judged, verdict=GateVerdict.SUITE_REGRESSION, detail=(
                f"a sibling benchmark got worse: {need.worse}, allowed only if {climbed} "
                f"gains at least {format_number(required, digits)}; it gained "
                f"{format_number(judged.delta, digits)}"))
    return judged


def aggregate_line(aggregate: SuiteAggregate,
                   measured: Sequence[tuple[Benchmark, Decimal, Decimal]]) -> str:
    """The suite's aggregate, named ``aggregate.metric``: the mean over ``measured``
    (benchmark, baseline mean, candidate mean) of each one's relative gain (its gain in
    its own direction over its |baseline|), stated so that ``aggregate.direction`` is
    better: as is for ``max``, negated (a mean relative loss) for ``min``. A benchmark
    whose baseline is 0 has no relative gain and is left out, and said so."""
    gains = [gain(bench.direction, base, cand) / abs(base)
             for bench, base, cand in measured if base != 0]
    skipped = [bench.name for bench, base, _ in measured if base == 0]
    left = f"; left out (baseline 0): {', '.join(skipped)}" if skipped else ""
    if not gains:
        return f"suite {aggregate.metric}: not computed (no benchmark with a non-zero " \
               f"baseline){left}"
    mean = sum(gains, Decimal(0)) / len(gains)
    value = mean if aggregate.direction == "max" else -mean
    shown = format_number(value * 100, AGGREGATE_DIGITS)
    sign = "+" if value > 0 else ""
    what = "gain" if aggregate.direction == "max" else "loss"
    return (f"suite {aggregate.metric}: {sign}{shown}% ({aggregate.direction}; the mean "
            f"relative {what} over {len(gains)} benchmark{'s' if len(gains) != 1 else ''}"
            f"{left})")
