"""The gate's arithmetic: read a metric from job output, decide credit.

Credit needs, in the benchmark's direction, a mean gain over the pairs of at least 0.5%
of the baseline (an absolute 0.005 when the baseline is 0) and at least the contract's
floor (``contract.floor``), compared in exact decimals, inclusive; **and** the
sequential test (``attempt/sequential.py``) must find the gain above the floor with the
contract's confidence, counting every submission of the run.

The pairs come in order-balanced couples (``attempt/pairs.py``): the test's unit is a
couple, the mean of its two pairs' gains, so a benchmark that favours whichever side
runs second gains nothing from it; the verdict carries that order effect's estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from outerloop import alpha_budget
from outerloop.attempt import sequential
from outerloop.attempt.metric_lines import (
    braced_lines,
    braced_lines_in,
    carried,
    json_object,
    metric_value,
)
from outerloop.attempt.pairs import COUPLE, base_first, couple_order, look_label
from outerloop.contract import Benchmark, floor
from outerloop.numfmt import format_number, verdict_digits
from outerloop.vocabulary import GateVerdict, JobState

MIN_RELATIVE_GAIN = Decimal("0.005")
_DECIDED = {"credit": GateVerdict.IMPROVED, "stop": GateVerdict.NO_IMPROVEMENT,
            "more": GateVerdict.MORE_PAIRS}
"""The verdict of each decision of the sequential test (``sequential.Look.decision``)."""
STDOUT_TAIL_BYTES = 1024 * 1024


MAX_SHOWN_LINE_CHARS = 200


@dataclass(frozen=True)
class MetricReading:
    """What an eval's stdout says about the metric: a finite value, or why there is none."""

    value: Decimal | None
    problem: str | None = None


def _shown(line: str) -> str:
    line = line.strip()
    if len(line) > MAX_SHOWN_LINE_CHARS:
        line = line[:MAX_SHOWN_LINE_CHARS] + "…"
    return line


def reading_of(lines: Iterable[str], key: str) -> MetricReading:
    """The metric from the last of ``lines`` that is a JSON object carrying ``key``.

    Exact decimals (no float round trip). NaN, infinity, booleans and strings are not
    a value, nor is a number outside what the gate computes on (``metric_value``: the
    problem names it). When no line carries the metric, the problem says what the last JSON line
    held, so a maintainer sees at once a misnamed key or another shape. One pass,
    keeping two lines: ``lines`` may be a file of any size, streamed."""
    last_json: str | None = None
    last_carrying: tuple[str, object] | None = None
    for line in lines:
        obj = json_object(line)
        if obj is None:
            continue
        last_json = line
        has, raw = carried(obj, key)
        if has:
            last_carrying = (line, raw)
    if last_carrying is not None:
        line, raw = last_carrying
        value = metric_value(raw)
        if isinstance(value, str):
            return MetricReading(None, f"the last JSON line carrying '{key}' held {value}: "
                                       f"{_shown(line)}")
        return MetricReading(value)
    if last_json is None:
        return MetricReading(None, f"no JSON object line on stdout; the eval must print "
                                   f'{{"{key}": <number>}} or '
                                   f'{{"metric": "{key}", "value": <number>}}')
    return MetricReading(None, f"no JSON line carried '{key}'; the last JSON line held: "
                               f"{_shown(last_json)}")


def read_metric(stdout: str, key: str) -> MetricReading:
    """``reading_of`` the lines of ``stdout`` (text already in memory)."""
    return reading_of(braced_lines_in(stdout), key)


def read_metric_file(path: Path, key: str) -> MetricReading:
    """``reading_of`` the whole stdout file at ``path``, streamed (bounded memory, no
    window: a line printed after a mebibyte of filler is read like any other). An
    unreadable file reads as an empty one."""
    try:
        return reading_of(braced_lines(path), key)
    except OSError:
        return reading_of((), key)


def read_stdout(log_dir: Path) -> str:
    """The last ``STDOUT_TAIL_BYTES`` of ``log_dir/stdout``, for showing only: the gate
    and the tamper check read the whole file (``read_metric_file``,
    ``metric_lines.count_metric_lines``)."""
    path = log_dir / "stdout"
    try:
        with path.open("rb") as handle:
            size = path.stat().st_size
            handle.seek(max(0, size - STDOUT_TAIL_BYTES))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def read_exit_code(log_dir: Path) -> int | None:
    try:
        return int((log_dir / "exit_code").read_text().strip())
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Side:
    """One eval job's outcome: the metric, or why there is none."""

    value: Decimal | None
    error: str | None = None


def measure(log_dir: Path, state: JobState, metric: str) -> Side:
    """What one eval job measured; any doubt is an error, never a number."""
    code = read_exit_code(log_dir)
    if state != JobState.COMPLETED or code not in (0, None):
        return Side(None, f"job {state}, exit code {code}")
    reading = read_metric_file(log_dir / "stdout", metric)
    if reading.value is None:
        return Side(None, reading.problem)
    return Side(reading.value)


def gain(direction: str, baseline: Decimal, candidate: Decimal) -> Decimal:
    """How much better the candidate is, in the benchmark's direction."""
    return baseline - candidate if direction == "min" else candidate - baseline


def credit_threshold(benchmark: Benchmark, baseline: Decimal) -> Decimal:
    """The gain a candidate needs at ``baseline`` to be credited: 0.5% of |baseline|
    (an absolute 0.005 at 0) or the contract's floor, whichever is larger."""
    relative = MIN_RELATIVE_GAIN * abs(baseline) if baseline != 0 else MIN_RELATIVE_GAIN
    return max(relative, floor(benchmark, baseline))


@dataclass(frozen=True)
class Judgement:
    """What the gate decided, exactly (decimals, the sequential test's look). Recorded
    once as the ledger's ``ev.Verdict`` (``verdict_view.verdict_record``): every reader
    after (the views, the PR, the report, the board) reads that record, never a
    judgement rebuilt from it."""

    verdict: GateVerdict
    baseline: Decimal | None
    candidate: Decimal | None
    delta: Decimal | None
    detail: str
    look: sequential.Look | None = None
    """The sequential test's numbers (None: an eval error, or an earlier version's)."""
    order: sequential.OrderEffect | None = None
    """How much better the side that ran second measured (None: pairs not in couples)."""


@dataclass(frozen=True)
class GatePlan:
    """How one submission's sequential test spends the run's false-credit budget."""

    alpha: float
    """The run's: its share of the target's budget (``alpha_budget.py``), or
    ``1 - confidence`` for a run admitted before shares existed."""
    submission: int
    sizes: tuple[int, ...]
    """Units at each look: couples (``coupled``), else pairs."""
    coupled: bool = False
    """The pairs come in couples (``judge`` reads them two by two: the one with the base
    first, then the one with the candidate first); False: each pair alone (submissions
    measured by earlier versions)."""

    @property
    def unit(self) -> str:
        return "couples" if self.coupled else "pairs"

    def alpha_at(self, look: int) -> float:
        spend = sequential.submit_alpha(self.alpha, self.submission)
        return sequential.look_alpha(spend, look, len(self.sizes))

    def last(self, look: int) -> bool:
        return look >= len(self.sizes) - 1


def plan_for(benchmark: Benchmark, submission: int, run_alpha: float | None = None, *,
             coupled: bool = False) -> GatePlan:
    """Submission ``submission`` (1-based) of a run on ``benchmark`` whose alpha is
    ``run_alpha`` (None: ``1 - confidence``): its looks and alphas (``coupled``: its
    pairs come in couples, as every submission's do now). A smaller alpha gets more
    units (``alpha_budget.max_pairs_at``)."""
    contract_alpha = 1.0 - benchmark.confidence
    alpha = contract_alpha if run_alpha is None else run_alpha
    cap = alpha_budget.max_pairs_at(benchmark.max_pairs, alpha, contract_alpha)
    return GatePlan(alpha=alpha, submission=submission,
                    sizes=tuple(sequential.look_sizes(benchmark.repeats, cap)),
                    coupled=coupled)


Values = tuple[Decimal, Decimal]


def _couples(direction: str, values: list[Values]) -> tuple[list[Values], list[Decimal],
                                                             list[Decimal]]:
    """``values`` read two by two (the pair with the base first, then the one with the
    candidate first): each couple's mean (base, candidate), its unit gain (the mean of
    its two gains: an order effect ``e`` adds ``+e`` to one and ``-e`` to the other) and
    its order half (half of base-first gain - candidate-first gain: ``e``)."""
    means: list[Values] = []
    gains: list[Decimal] = []
    halves: list[Decimal] = []
    two = Decimal(2)
    for (base_ab, cand_ab), (base_ba, cand_ba) in zip(values[::2], values[1::2], strict=True):
        means.append(((base_ab + base_ba) / two, (cand_ab + cand_ba) / two))
        ab, ba = gain(direction, base_ab, cand_ab), gain(direction, base_ba, cand_ba)
        gains.append((ab + ba) / two)
        halves.append((ab - ba) / two)
    return means, gains, halves


def judge(benchmark: Benchmark, pairs: list[tuple[Side, Side]],
          plan: GatePlan | None = None, look: int = 0) -> Judgement:
    """The verdict at look ``look`` of ``plan`` over ``pairs`` of (baseline, candidate),
    each pair measured under one hidden seed (with ``plan.coupled``: two by two, each
    couple under one seed, the pair with the base first before the other):
    ``improved`` (credited), ``no-improvement`` (stopped), ``eval-error``, or
    ``more-pairs`` (the test is not sure yet)."""
    errors = [f"baseline: {b.error}" for b, _ in pairs if b.error] + [
        f"candidate: {c.error}" for _, c in pairs if c.error]
    plan = plan or plan_for(benchmark, 1)
    if not errors and plan.coupled and len(pairs) % pairs_per_unit(plan):
        errors = [f"{len(pairs)} pairs do not make whole couples"]
    if errors or not pairs:
        return Judgement(GateVerdict.EVAL_ERROR, None, None, None,
                         "; ".join(errors) or "no measurement")
    values = [(b.value, c.value) for b, c in pairs
              if b.value is not None and c.value is not None]
    n = Decimal(len(values))
    base = sum((b for b, _ in values), Decimal(0)) / n
    cand = sum((c for _, c in values), Decimal(0)) / n
    order = None
    if plan.coupled:
        values, gains, halves = _couples(benchmark.direction, values)
        order = sequential.order_effect(halves, plan.alpha_at(look))
    else:
        gains = [gain(benchmark.direction, b, c) for b, c in values]
    needed = credit_threshold(benchmark, base)
    seen = sequential.look(gains, values, floor=floor(benchmark, base), needed=needed,
                           alpha=plan.alpha_at(look), last=plan.last(look), unit=plan.unit)
    verdict = _DECIDED[seen.decision]
    digits = verdict_digits(base, cand, benchmark.display_digits)
    jobs = f" ({len(pairs)} pair jobs)" if plan.coupled else ""
    detail = (f"gain {format_number(seen.mean_gain, digits)} over {seen.pairs} {plan.unit}"
              f"{jobs} (interval {format_number(seen.low, digits)} .. "
              f"{format_number(seen.high, digits)}, noise sd {format_number(seen.sd, 3)}), "
              f"needed {format_number(needed, digits)}: {seen.reason}")
    return Judgement(verdict, base, cand, seen.mean_gain, detail, seen, order)


def pairs_per_unit(plan: GatePlan) -> int:
    """Pair jobs per unit of the test: two in a couple, else one."""
    return COUPLE if plan.coupled else 1


Measure = Callable[[int, bool], tuple[Side, Side]]
"""``measure(unit, base_first)``: one pair (base, candidate) under unit ``unit``'s
seed, the base first or not."""


def judge_sequentially(benchmark: Benchmark, submission: int, measure: Measure, *,
                       salt: str = "", coupled: bool = True,
                       run_alpha: float | None = None) -> Judgement:
    """Submission ``submission``'s verdict as the kernel's wakes reach it, in one call
    (for benchmarks of the gate and tools): ``measure(unit, base_first)`` measures one
    pair of unit ``unit`` under its fresh seed, in the order the kernel would run it
    from ``salt`` (``pairs.couple_order``: per couple, each order once, the first drawn;
    ``coupled=False``: the gate before couples, one pair per unit in the order
    ``pairs.base_first`` draws); looks follow ``plan_for`` until one decides. The
    kernel runs the same ``judge`` one look per wake (``attempt/looks.py``); at the
    run's alpha ``run_alpha`` (None: ``1 - confidence``)."""
    plan = plan_for(benchmark, submission, run_alpha, coupled=coupled)
    measured: list[tuple[Side, Side]] = []
    units = 0
    for look, size in enumerate(plan.sizes):
        label = look_label(look)
        for unit in range(units, size):
            if not coupled:
                measured.append(measure(unit, base_first(salt, label, unit)))
                continue
            ran = [(first, measure(unit, first)) for first in
                   (couple_order(salt, label, unit, half) for half in range(COUPLE))]
            measured += [sides for _, sides in sorted(ran, key=lambda item: not item[0])]
        units = size
        judged = judge(benchmark, measured, plan, look)
        if judged.verdict != GateVerdict.MORE_PAIRS:
            return judged
    raise AssertionError("the last look always decides")
