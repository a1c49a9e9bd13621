"""The settled runs admitted in the last week, per target, held with the live state.

The week's budget (``kernel/lanes/waiting.py``) and the board's "started last week" count
the runs admitted and queued in the last 7 days. A busy home admits ~10,000 runs a week,
nearly all of them settled: counted in the history index (SQLite), each count read a
week of rows, ~20 ms at 10,000 runs, twice a quiet tick and more a busy one, and it grows
with the rate of runs a week, the index's size too. So ``Runs`` keeps, beside its live
runs (pickled with them), each target's queue times of its settled admitted runs queued
since ``horizon``, sorted: a count is a bisection.

``horizon`` moves up as the fold moves on (``prune``: a week and a day before the newest
queue time held; the day covers a tick whose clock is behind its writers'), so what is
held is a week's runs, not history. A count from before ``horizon`` (a view of an older
window) is not answered here (None): the caller asks the index.

Every entry stands for a settled run with a row: added when ``Runs.summarise`` settles
an admitted run, removed when the run is read back (live again, counted among the live
runs by the callers) from the row's own record, so an entry and its row agree.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from datetime import timedelta
from typing import TYPE_CHECKING

from outerloop.clock import WEEK, parse_stamp, stamp

if TYPE_CHECKING:
    from outerloop.ledger.records import RunRecord

KEPT = WEEK + timedelta(days=1)
"""How far before the newest queue time held entries are kept."""

Held = tuple[dict[str, list[str]], str, str]
"""What is pickled: (per target its sorted queue times, horizon, newest)."""


class AdmittedWeek:
    """Per target, the sorted queue times of the settled admitted runs queued at
    ``horizon`` or later (every such run: none is left out)."""

    __slots__ = ("by_target", "horizon", "newest")

    def __init__(self, held: Held | None = None) -> None:
        by_target, horizon, newest = held if held is not None else ({}, "", "")
        self.by_target: dict[str, list[str]] = {t: list(q) for t, q in by_target.items()}
        self.horizon = horizon
        """Every settled admitted run queued at this stamp or later is held ("": all)."""
        self.newest = newest
        """The newest queue time ever added (``prune`` cuts a week and a day before it)."""

    def held(self) -> Held:
        return self.by_target, self.horizon, self.newest

    def copy(self) -> AdmittedWeek:
        return AdmittedWeek(self.held())

    def add(self, run: RunRecord) -> None:
        """``run`` settled (its row written)."""
        if run.admitted and run.queued_at >= self.horizon:
            insort(self.by_target.setdefault(run.target, []), run.queued_at)
            if run.queued_at > self.newest:
                self.newest = run.queued_at

    def remove(self, run: RunRecord) -> None:
        """``run``, as its row holds it, is live again (read back) or gone."""
        if not run.admitted or run.queued_at < self.horizon:
            return
        times = self.by_target.get(run.target)
        if times is None:
            return
        at = bisect_left(times, run.queued_at)
        if at < len(times) and times[at] == run.queued_at:
            del times[at]
            if not times:
                del self.by_target[run.target]

    def count(self, since: str, target: str | None) -> int | None:
        """How many held runs (of ``target``; None: any) were queued at ``since`` or
        later; None when ``since`` is before ``horizon`` (not all are held)."""
        if since < self.horizon:
            return None
        if target is not None:
            times = self.by_target.get(target, [])
            return len(times) - bisect_left(times, since)
        return sum(len(t) - bisect_left(t, since) for t in self.by_target.values())

    def prune(self) -> None:
        """Forget what was queued more than ``KEPT`` before the newest queue time."""
        try:
            cut = stamp(parse_stamp(self.newest) - KEPT)
        except ValueError:  # nothing held yet, or a stamp of another form: keep all
            return
        if cut <= self.horizon:
            return
        for target in list(self.by_target):
            times = self.by_target[target]
            del times[:bisect_left(times, cut)]
            if not times:
                del self.by_target[target]
        self.horizon = cut
