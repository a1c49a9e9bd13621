"""The board's progress charts: measured verdicts per benchmark, drawn as SVG geometry.

Pure: ``charts(state, history)`` turns the ledger's verdicts into one ``Chart`` per
(target, benchmark), with every coordinate computed here (the template only writes them
out). A chart shows its newest ``MAX_CHART_POINTS`` measurements; the older ones are
counted, and what they say of the climb (the first baseline, which way is better, the
best so far) comes from the settled runs' tally (``ledger/tally.py``), so a chart costs
its window, not the benchmark's whole history.

**Progress is merged results only.** Each credited point carries its standing
(``ledger/standing.py``); the best so far (the header's and the line's) moves with
baselines (measurements of the merged code) and merged candidates alone, never with a
blocked draft's, an open or a rejected pull request's number. Those are drawn apart (a
ring: credited, not merged; a red square: blocked) and counted in the header.

The x axis is time (``board_time``: proportional, with a minimum spacing so a burst of
measurements stays readable, and dated ticks).

The y axis follows the values (``y_axis``): when every value is positive and they span
at least ``LOG_MIN_SPAN`` (two orders of magnitude, an error metric falling from
``5e-4`` to ``8.9e-16``) the axis is logarithmic with ticks at powers of ten; otherwise
it is linear with round ticks, and never runs below zero when no value is negative (an
error or a length cannot be negative, so a padded axis reaching ``-0.0001`` would only
mislead). Tick labels and point labels go through ``numfmt``, as every other number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import pairwise

from outerloop import board_time, vocabulary
from outerloop.clock import parse_stamp, shown
from outerloop.ledger.events import Leader
from outerloop.ledger.history import (
    CHART_POINTS,
    ChartPoint,
    History,
    Older,
    decimal_of,
    latest_credited,
    standing_of,
    standing_why,
)
from outerloop.ledger.state import State
from outerloop.numfmt import DEFAULT_DIGITS, format_number, verdict_digits
from outerloop.vocabulary import ResultStanding

MAX_CHART_POINTS = CHART_POINTS
"""Measurements drawn per benchmark (the most recent); older ones are counted."""
CHART_W, CHART_H = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 14, 12, 28
LOG_MIN_SPAN = 100.0
"""Positive values whose largest is at least this many times the smallest are drawn
on a log axis."""
MAX_LOG_TICKS = 6
LINEAR_TICKS = 4
"""The linear axis aims at this many intervals between round ticks."""
PAD_FRACTION = 0.08
_NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True, slots=True)
class Point:
    at: str
    run: str
    verdict: vocabulary.GateVerdict
    baseline: str | None
    candidate: str | None
    best: str | None
    """The best merged so far, up to this measurement (baselines and merged candidates)."""
    standing: ResultStanding | None = None
    """A credited result's standing (None: not credited)."""
    why: str = ""
    """The standing's reason: the review's for a blocked draft, the run's ending..."""
    delta: str | None = None
    """The gate's mean gain, in the benchmark's direction (positive is better)."""
    low: str | None = None
    high: str | None = None
    """The gain's interval as the gate read it (None: not recorded)."""
    pairs: int = 0
    """Units measured: pairs, or couples (two pair jobs each) when ``couples``."""
    couples: bool = False
    confidence: float = 0.0
    """The contract's confidence over the run (0: recorded before it existed)."""


@dataclass(frozen=True, slots=True)
class Dot:
    x: float
    y: float
    kind: str
    """``baseline``, ``other`` (measured, not credited), or a credited result's standing
    (``merged``, ``open``, ``blocked``, ``not-merged``, ``superseded``)."""
    label: str


@dataclass(slots=True)
class Chart:
    target: str
    benchmark: str
    direction: str
    """``min`` / ``max`` as inferred from credited verdicts; ``""`` when unknown."""
    first_baseline: str | None
    best: str | None
    """The best merged so far: baselines and merged candidates only."""
    leader: str | None
    leader_run: str | None
    points: list[Point]
    omitted: int
    results: dict[str, int] = field(default_factory=dict)
    """The drawn credited results by standing (``merged``, ``open``, ``blocked``...)."""
    display_digits: int | None = None
    """The benchmark's ``display_digits`` as its latest verdict recorded it."""
    digits: int = DEFAULT_DIGITS
    """Significant digits of the header's numbers (``numfmt.verdict_digits`` of the
    first baseline and the best, at ``display_digits``)."""
    log_axis: bool = False
    dots: list[Dot] = field(default_factory=list)
    baseline_line: str = ""
    best_line: str = ""
    y_ticks: list[tuple[float, str]] = field(default_factory=list)
    x_labels: list[tuple[float, str, str]] = field(default_factory=list)
    """(x, text-anchor, text): dated ticks (``board_time.ticks``)."""


DRAWING_FIELDS = ("dots", "baseline_line", "best_line", "y_ticks", "x_labels", "digits",
                  "display_digits", "log_axis")
"""Chart fields that only draw: ``status.json`` leaves them out."""


# --------------------------------------------------------------------------- the axis


@dataclass(frozen=True, slots=True)
class Axis:
    """A y axis: where a value sits between the bottom (0.0) and the top (1.0)."""

    low: float
    high: float
    log: bool
    ticks: tuple[tuple[float, str], ...]
    """(fraction of the height from the bottom, label)"""

    def fraction(self, value: Decimal) -> float:
        """Where ``value`` sits: 0.0 at the bottom, 1.0 at the top."""
        if self.log:
            return (_log10(value) - self.low) / (self.high - self.low)
        return (float(value) - self.low) / (self.high - self.low)


def _log10(value: Decimal) -> float:
    """log10 of a positive decimal, exact in range for any exponent a float cannot hold."""
    return float(value.log10())


def y_axis(values: list[Decimal]) -> Axis:
    """The axis for ``values`` (not empty): logarithmic when all are positive and span
    ``LOG_MIN_SPAN``, else linear with round ticks, clipped at zero when none is
    negative."""
    low, high = min(values), max(values)
    if low > 0 and high / low >= Decimal(LOG_MIN_SPAN):
        return _log_axis(low, high)
    return _linear_axis(float(low), float(high), clip_at_zero=low >= 0)


def _log_axis(low: Decimal, high: Decimal) -> Axis:
    bottom, top = math.floor(_log10(low)), math.ceil(_log10(high))
    top = max(top, bottom + 1)
    step = max(1, math.ceil((top - bottom) / (MAX_LOG_TICKS - 1)))
    decades = reversed(range(top, bottom - 1, -step))  # every step-th power from the top
    ticks = tuple(((d - bottom) / (top - bottom), format_number(Decimal(1).scaleb(d)))
                  for d in decades)
    return Axis(float(bottom), float(top), True, ticks)


def _nice_step(span: float) -> float:
    raw = span / LINEAR_TICKS
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in _NICE_STEPS if m * magnitude >= raw * (1 - 1e-9))


def _linear_axis(low: float, high: float, clip_at_zero: bool) -> Axis:
    pad = (high - low) * PAD_FRACTION or abs(high) * 0.05 or 1.0
    bottom, top = low - pad, high + pad
    if clip_at_zero:
        bottom = max(bottom, 0.0)
    step = _nice_step(top - bottom)
    first, last = math.ceil(bottom / step - 1e-9), math.floor(top / step + 1e-9)
    values = [k * step for k in range(first, last + 1)]
    digits = max([DEFAULT_DIGITS] + [verdict_digits(a, b) for a, b in pairwise(values)])
    ticks = tuple(((v - bottom) / (top - bottom),
                   format_number(0 if abs(v) < step * 1e-9 else v, digits)) for v in values)
    return Axis(bottom, top, False, ticks)


# --------------------------------------------------------------------------- the charts


_decimal = decimal_of


def _short_time(at: str) -> str:
    try:
        return shown(parse_stamp(at))
    except ValueError:
        return at


def _direction(measured: list[ChartPoint], older: Older) -> str:
    """Which way is better, read off the first credited verdict with two different
    numbers (the contract is not in the ledger); unknown until something was credited."""
    found = older.first_direction
    for key, v, _standing, _why in measured:
        if found is not None and found[0] < key:
            break
        base, cand = _decimal(v.baseline), _decimal(v.candidate)
        if v.verdict == vocabulary.GateVerdict.IMPROVED and base is not None and cand is not None \
                and base != cand:
            return "min" if cand < base else "max"
    return found[1] if found is not None else ""


def _better(direction: str, a: Decimal | None, b: Decimal | None) -> Decimal | None:
    if a is None or b is None:
        return b if a is None else a
    return min(a, b) if direction == "min" else max(a, b)


def _first_baseline(measured: list[ChartPoint], older: Older) -> str | None:
    found = older.first_baseline
    for key, v, _standing, _why in measured:
        if found is not None and found[0] < key:
            break
        if _decimal(v.baseline) is not None:
            return v.baseline
    return found[1] if found is not None else None


def _recorded_digits(measured: list[ChartPoint], older: Older) -> int | None:
    """The benchmark's ``display_digits`` as its latest verdict that has one recorded it."""
    found = older.latest_digits
    for key, v, _standing, _why in reversed(measured):
        if found is not None and key < found[0]:
            break
        if v.display_digits:
            return v.display_digits
    return found[1] if found is not None else None


def chart(target: str, benchmark: str, measured: list[ChartPoint],
          leader: Leader | None, older: Older | None = None) -> Chart:
    """The chart of one benchmark from its measured verdicts ``((at, run, n), verdict,
    standing, why)`` (the tally's window and the unsettled runs' verdicts) and
    ``older``: the settled measurements older than the window, folded. Every one of
    ``older`` is older than every point the chart shows (the window holds
    ``MAX_CHART_POINTS`` newer ones)."""
    older = older or Older()
    measured.sort(key=lambda m: m[0])
    direction = _direction(measured, older)
    points: list[Point] = []
    best: Decimal | None = None
    if direction and older.count:
        best = older.low if direction == "min" else older.high
    for (at, run_id, _n), v, standing, why in measured:
        base, cand = _decimal(v.baseline), _decimal(v.candidate)
        best = _better(direction, best, base) if direction else best
        if standing is not None and standing.counts and direction:
            best = _better(direction, best, cand)
        points.append(Point(at=at, run=run_id, verdict=v.verdict,
                            baseline=None if base is None else v.baseline,
                            candidate=None if cand is None else v.candidate,
                            best=None if best is None else str(best),
                            standing=standing, why=why, delta=v.delta, low=v.low,
                            high=v.high, pairs=v.seeds, couples=v.order is not None,
                            confidence=v.confidence))
    shown_points = points[-MAX_CHART_POINTS:]
    first_baseline = _first_baseline(measured, older)
    last_best = points[-1].best if points else None
    recorded = _recorded_digits(measured, older)
    results: dict[str, int] = {}
    for p in shown_points:
        if p.standing is not None:
            results[p.standing] = results.get(p.standing, 0) + 1
    drawn = Chart(target=target, benchmark=benchmark, direction=direction,
                  first_baseline=first_baseline, best=last_best,
                  leader=leader.value if leader is not None else None,
                  leader_run=(leader.run or "") if leader is not None else None,
                  points=shown_points, omitted=older.count + len(points) - len(shown_points),
                  results=dict(sorted(results.items(), key=_standing_rank)),
                  display_digits=recorded,
                  digits=verdict_digits(first_baseline, last_best, recorded))
    _draw(drawn, shown_points, recorded)
    return drawn


def _standing_rank(item: tuple[str, int]) -> int:
    """Merged first, then open, blocked, not merged, superseded (the enum's order)."""
    order = list(ResultStanding)
    return order.index(ResultStanding(item[0]))


def _seconds(at: str) -> float | None:
    try:
        return parse_stamp(at).timestamp()
    except ValueError:
        return None


def _times(points: list[Point]) -> list[float]:
    """Each point's time in seconds, not decreasing (an unreadable stamp takes the one
    before it: the points are in key order, which is the stamps' order)."""
    times: list[float] = []
    for p in points:
        seconds = _seconds(p.at)
        previous = times[-1] if times else None
        if seconds is None or (previous is not None and seconds < previous):
            seconds = previous if previous is not None else 0.0
        times.append(seconds)
    return times


def _draw(drawn: Chart, points: list[Point], display_digits: int | None) -> None:
    """Fill in the SVG geometry: x by time (``board_time``: proportional, a minimum
    spacing keeping a burst readable, dated ticks), y on ``y_axis`` over every value
    shown."""
    values = [d for p in points for d in (_decimal(p.baseline), _decimal(p.candidate),
                                          _decimal(p.best)) if d is not None]
    if not values:
        return
    axis = y_axis(values)
    drawn.log_axis = axis.log
    plot_h = CHART_H - TOP - BOTTOM
    times = _times(points)
    xs = board_time.positions(times, float(LEFT), float(CHART_W - RIGHT))

    def y_of(value: str | None) -> float | None:
        number = _decimal(value)
        if number is None:
            return None
        return round(TOP + (1 - axis.fraction(number)) * plot_h, 1)

    def label(value: str | None, pair: str | None) -> str:
        return format_number(value or "", verdict_digits(value, pair, display_digits))

    base_pts: list[str] = []
    best_pts: list[str] = []
    start = y_of(points[0].baseline) if drawn.direction else None
    if start is not None:  # the climb starts from the first baseline
        best_pts.append(f"{float(LEFT)},{start}")
    for x, p in zip(xs, points, strict=True):
        yb, yc, yv = y_of(p.baseline), y_of(p.candidate), y_of(p.best)
        if yb is not None:
            base_pts.append(f"{x},{yb}")
            drawn.dots.append(Dot(x, yb, "baseline",
                                  f"baseline {label(p.baseline, p.candidate)} ({p.run})"))
        if yc is not None:
            kind = str(p.standing) if p.standing is not None else "other"
            told = f"{p.standing}" + (f" ({p.why})" if p.why else "") \
                if p.standing is not None else str(p.verdict)
            drawn.dots.append(Dot(x, yc, kind, f"{told}: {label(p.candidate, p.baseline)} "
                                               f"({p.run}, {_short_time(p.at)})"))
        if yv is not None:
            if best_pts:
                best_pts.append(f"{x},{best_pts[-1].split(',')[1]}")
            best_pts.append(f"{x},{yv}")
    if best_pts:  # the best holds until now: carry it to the right edge
        best_pts.append(f"{float(CHART_W - RIGHT)},{best_pts[-1].split(',')[1]}")
    drawn.baseline_line, drawn.best_line = " ".join(base_pts), " ".join(best_pts)
    drawn.y_ticks = [(round(TOP + plot_h * (1 - fraction), 1), text)
                     for fraction, text in axis.ticks]
    drawn.x_labels = [(x, "middle", text) for x, text in board_time.ticks(times, xs)]


def charts(state: State, history: History) -> list[Chart]:
    """One chart per (target, benchmark) with a measured verdict, sorted: the settled
    runs' from their tally, the others' from the runs (their standing decided now)."""
    measured: dict[tuple[str, str], list[ChartPoint]] = {}
    older: dict[tuple[str, str], Older] = {}
    for target, tally in history.tallies.items():
        for bench, kept in tally.charts.items():
            measured.setdefault((target, bench), []).extend(kept.window)
            older[(target, bench)] = kept.older
    for run in history.untallied:
        latest = latest_credited(run)
        for n, v in enumerate(run.verdicts):
            if _decimal(v.baseline) is None and _decimal(v.candidate) is None:
                continue
            bench = v.benchmark or run.benchmark
            standing = standing_of(run, n, latest)
            measured.setdefault((run.target, bench), []).append(
                ((v.at, run.run_id, n), v, standing, standing_why(run, standing)))
    return [chart(t, b, measured[(t, b)], state.leaders.get((t, b)), older.get((t, b)))
            for t, b in sorted(measured)]
