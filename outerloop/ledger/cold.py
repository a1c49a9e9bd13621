"""Which settled runs the fold cache keeps apart (``ColdPart``), and which it keeps hot.

Most settled runs are read by nothing a tick does: they are pickled apart
(``cache/settled-<token>.pickle``) and loaded only when something asks for them. A run
stays in the cache itself (hot) while a lane reads it every tick: it ended on an outage
(the cooldown), its issue has no report posted (follow-up), or housekeeping will act on
it soon: cleaned a day after its ending, pruned ``retention_days`` after it or archived
``after_days`` after it.

"Soon" is ``HOT_AHEAD_S``: when the tick says when housekeeping acts (``DueAfter``, kept in
the cache), a run waiting for a clean, prune or archive is hot only from that long before
it is due. Before, every run not yet pruned was hot: at one run a minute and 30 days'
retention, 43,000 summaries loaded by every quiet tick. A part is made again when one of
its runs comes within the horizon (``ColdPart.ending_from``), so a lane's cut finds its
due runs hot and the part is loaded about once per ``HOT_AHEAD_S`` of time, not per tick.
"""

from __future__ import annotations

import bisect
import dataclasses
from array import array
from datetime import datetime, timedelta

from outerloop.clock import DAY_S, parse_stamp, stamp
from outerloop.ledger.summary import (
    ADMITTED,
    ARCHIVE,
    BY_ENDING,
    CLEANED,
    ENDED_AT,
    IN,
    ISSUE,
    OUTAGE,
    PRUNED,
    QUEUED_AT,
    REPORT_POSTED,
    TARGET,
    Summary,
)

SPILL_AT = 1000
"""Runs settled since the cold part was made wait in the fold cache until this many."""
HOT_AHEAD_S = 2 * DAY_S
"""A run housekeeping will act on is hot from this long before it is due."""
REMAKE_AHEAD_S = DAY_S
"""A part is made again when one of its runs is due within this long: about once a day
(its runs are all due more than ``HOT_AHEAD_S`` after it was made)."""
ADMITTED_KEPT_S = 8 * DAY_S
"""A part keeps the queue times of its admitted runs queued this long before it was made:
the week's budgets count them every tick (``ColdPart.admitted_count``) without a load."""

DueAfter = dict[str, float]
"""Per selection of ``BY_ENDING`` a lane cuts at an ending: how many seconds after the
ending it acts (``kernel.lanes.housekeeping.due_after``)."""
Horizons = dict[str, str]
"""Per selection: runs ended at or before this stamp are hot."""


@dataclasses.dataclass(frozen=True, slots=True)
class ColdPart:
    """The summaries kept apart from the fold cache and what a quiet tick must know of
    them without loading them: how many, and which selections they hold runs of
    (``SELECTIONS``; for ``admitted``, the latest ``queued_at``; for each of
    ``BY_ENDING``, the earliest ending)."""

    token: str
    count: int
    holds: frozenset[str]
    admitted_until: str | None = None
    issues: dict[str, array[int]] = dataclasses.field(default_factory=dict)
    """Per target, the issues its runs answered, sorted (an array: 8 bytes each, not a
    set's ~100): ``runs_of_issue`` for an open issue (every tick, for each issue that
    may be claimed) loads the part only when it holds runs of that issue."""
    ending_from: dict[str, str] = dataclasses.field(default_factory=dict)
    """Per selection of ``BY_ENDING`` it holds runs of: their earliest ending ("" for a
    run with none). A cut at an ending before it needs no load."""
    admitted_at: dict[str, array[float]] = dataclasses.field(default_factory=dict)
    """Per target, the queue times (epoch seconds, sorted) of its admitted runs queued at
    ``admitted_from`` or later."""
    admitted_from: float = float("inf")

    def admitted_count(self, since: str, target: str | None) -> int | None:
        """How many of its runs (of ``target``; None: any) were admitted and queued at
        ``since`` or later; None when it does not know (``since`` is before what it kept)."""
        if "admitted" not in self.holds or (
                since and self.admitted_until is not None and self.admitted_until < since):
            return 0
        try:
            at = parse_stamp(since).timestamp() if since else float("-inf")
        except ValueError:
            return None
        if at < self.admitted_from:
            return None
        times = self.admitted_at.values() if target is None else (
            [self.admitted_at[target]] if target in self.admitted_at else [])
        return sum(len(t) - bisect.bisect_left(t, at) for t in times)

    def answered(self, target: str, issue: int) -> bool:
        numbers = self.issues.get(target)
        if numbers is None:
            return False
        at = bisect.bisect_left(numbers, issue)
        return at < len(numbers) and numbers[at] == issue

    def needs(self, among: str, since: str | None, ended_by: str | None) -> bool:
        """Whether it may hold runs of the selection ``among`` (queued at ``since`` or
        later; ended by ``ended_by``)."""
        if among not in self.holds:
            return False
        if among in BY_ENDING and ended_by is not None:
            earliest = self.ending_from.get(among)
            return earliest is None or earliest <= ended_by
        return among != "admitted" or since is None or (
            self.admitted_until is not None and self.admitted_until >= since)

    def comes_due(self, horizons: Horizons | None) -> bool:
        """One of its runs is within a horizon now: it should be hot."""
        if not horizons:
            return False
        return any(among in self.ending_from and self.ending_from[among] <= until
                   for among, until in horizons.items())


def horizons(due_after: DueAfter | None, now: datetime, ahead_s: float = HOT_AHEAD_S
             ) -> Horizons | None:
    """Per selection, the latest ending of a run due within ``ahead_s`` (None: not told,
    every run waiting for housekeeping is hot)."""
    if not due_after:
        return None
    return {among: stamp(now - timedelta(seconds=after - ahead_s))
            for among, after in due_after.items()}


def hot(e: Summary, ahead: Horizons | None) -> bool:
    """Kept in the cache itself: a lane reads it every tick."""
    if e[OUTAGE] or (e[ISSUE] is not None and not e[REPORT_POSTED]):
        return True
    if e[ARCHIVE] is not None:
        return False
    if ahead is None:
        return not e[CLEANED] or not e[PRUNED]
    ended = e[ENDED_AT] or ""
    for among, until in ahead.items():  # noqa: SIM110 - a loop, not any(): per summary per save
        if ended <= until and IN[among](e):
            return True
    return False


def make_part(token: str, entries: list[tuple[int, str, Summary]], now: datetime
              ) -> ColdPart:
    """What a quiet tick knows of the summaries ``entries`` kept apart under ``token``."""
    holds: set[str] = set()
    admitted_until: str | None = None
    ending_from: dict[str, str] = {}
    issues: dict[str, set[int]] = {}
    kept_from = now.timestamp() - ADMITTED_KEPT_S
    kept_stamp = stamp(now - timedelta(seconds=ADMITTED_KEPT_S))
    admitted_at: dict[str, list[float]] = {}
    for _, _, e in entries:
        if e[ISSUE] is not None:
            issues.setdefault(e[TARGET], set()).add(e[ISSUE])
        for among in BY_ENDING:
            if IN[among](e):
                ended = e[ENDED_AT] or ""
                holds.add(among)
                if among not in ending_from or ended < ending_from[among]:
                    ending_from[among] = ended
        if e[ADMITTED]:
            holds.add("admitted")
            if admitted_until is None or e[QUEUED_AT] > admitted_until:
                admitted_until = e[QUEUED_AT]
            if e[QUEUED_AT] >= kept_stamp:
                try:  # the stamp format, read by C (``clock.parse_stamp``: strptime)
                    queued = datetime.fromisoformat(e[QUEUED_AT]).timestamp()
                except ValueError:  # a stamp that is not one: say nothing is known
                    kept_from = float("inf")
                    continue
                admitted_at.setdefault(e[TARGET], []).append(queued)
    return ColdPart(token, len(entries), frozenset(holds), admitted_until,
                    {target: array("q", sorted(of)) for target, of in issues.items()},
                    ending_from, {target: array("d", sorted(at))
                                  for target, at in admitted_at.items()}, kept_from)
