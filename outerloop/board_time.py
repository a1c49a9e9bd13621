"""The board charts' time axis: where each measurement sits across, and its dated ticks.

**Decision: time-proportional x with a minimum spacing.** Measurements come in bursts
(a run's pairs judged within minutes, then nothing for a day), so x strictly by time
would pile a burst onto one pixel, and x by order (as the board drew before) hid time
altogether: its axis was one date. Here each gap between successive measurements takes
the width its duration earns, but never less than ``MIN_GAP_PX`` (when the chart holds
too many for that, every gap is equal: order spacing). The axis is then piecewise
linear in time (monotone: later is always to the right), and ticks at round times
(``TICK_STEPS_S``: minutes to a year) are placed by that same map, every tick that
keeps ``MIN_TICK_GAP_PX`` from the one before it labelled. A stretch compressed by a
burst shows fewer ticks; a stretch of calm shows them evenly. When no round time falls
where a label fits, the first and the last measurement's own times are the ticks.

Pure: numbers in, numbers out; the labels are ``clock`` forms.
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise

from outerloop.clock import day, shown

MIN_GAP_PX = 6.0
"""The least width between two successive measurements (chart units: the SVG's 640)."""
EDGE_PX = 10.0
"""The first and the last measurement sit this far inside the plot."""
MIN_TICK_GAP_PX = 84.0
"""Labelled ticks keep at least this far apart (a ``2024-05-01`` label is ~64 units)."""
MAX_TICKS = 5
HOUR_S = 3600
DAY_S = 24 * HOUR_S
TICK_STEPS_S = (60, 5 * 60, 10 * 60, 30 * 60, HOUR_S, 3 * HOUR_S, 6 * HOUR_S,
                12 * HOUR_S, DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 28 * DAY_S,
                91 * DAY_S, 364 * DAY_S)
"""Round steps between ticks; the smallest giving at most ``MAX_TICKS`` over the span."""
_SEARCH_STEPS = 60


def positions(times: list[float], left: float, right: float) -> list[float]:
    """The x of each measurement (``times``: POSIX seconds, not decreasing) between
    ``left`` and ``right``: gaps in proportion to time, none under ``MIN_GAP_PX``."""
    count = len(times)
    if count == 0:
        return []
    start, end = left + EDGE_PX, right - EDGE_PX
    if count == 1:
        return [round((left + right) / 2, 1)]
    width = end - start
    gaps = [max(0.0, b - a) for a, b in pairwise(times)]
    least = min(MIN_GAP_PX, width / len(gaps))
    if sum(gaps) <= 0:
        spans = [width / len(gaps)] * len(gaps)
    else:
        scale = _scale(gaps, least, width)
        spans = [max(g * scale, least) for g in gaps]
        total = sum(spans)
        spans = [s * width / total for s in spans]
    xs = [start]
    for span in spans:
        xs.append(xs[-1] + span)
    return [round(x, 1) for x in xs]


def _scale(gaps: list[float], least: float, width: float) -> float:
    """The pixels per second ``s`` with ``sum(max(g * s, least)) == width`` (the sum
    grows with ``s``: bisection)."""
    low, high = 0.0, width / min(g for g in gaps if g > 0)
    for _ in range(_SEARCH_STEPS):
        middle = (low + high) / 2
        if sum(max(g * middle, least) for g in gaps) < width:
            low = middle
        else:
            high = middle
    return high


def ticks(times: list[float], xs: list[float]) -> list[tuple[float, str]]:
    """Dated ticks (x, label) for measurements at ``times`` drawn at ``xs``."""
    if not times:
        return []
    first, last = times[0], times[-1]
    if last <= first:
        return [(xs[0], _label(first, DAY_S if _midnight(first) else 0))]
    step = next((s for s in TICK_STEPS_S if (last - first) / s <= MAX_TICKS),
                TICK_STEPS_S[-1])
    found: list[tuple[float, str]] = []
    moment = (first // step + 1) * step if first % step else first
    while moment <= last:
        x = _x_at(moment, times, xs)
        if not found or x - found[-1][0] >= MIN_TICK_GAP_PX:
            found.append((x, _label(moment, step)))
        moment += step
    if len(found) < 2:  # no round time where a label fits: the measurements' own times
        found = [(xs[0], _label(first, 0))]
        if xs[-1] - xs[0] >= MIN_TICK_GAP_PX:
            found.append((xs[-1], _label(last, 0)))
    return found


def _x_at(moment: float, times: list[float], xs: list[float]) -> float:
    """Where ``moment`` (within the measurements' span) falls on the piecewise map."""
    for (t0, x0), (t1, x1) in pairwise(zip(times, xs, strict=True)):
        if t0 <= moment <= t1:
            fraction = (moment - t0) / (t1 - t0) if t1 > t0 else 0.0
            return round(x0 + fraction * (x1 - x0), 1)
    return xs[-1]


def _midnight(seconds: float) -> bool:
    return seconds % DAY_S == 0


def _label(seconds: float, step: float) -> str:
    """A day (``2024-05-01``) for steps of days, else ``05-01 12:30`` (UTC)."""
    moment = datetime.fromtimestamp(seconds, UTC)
    if step >= DAY_S:
        return day(moment)
    return shown(moment)[5:16]
