"""The settled runs' part of every view, folded once per run: per target, ``Tally``.

The board (``index.html``, ``CLIMB.md``, ``status.json``, the home's and each target's
on its research-log) and the research-log record (``BENCHMARKS.md``) showed views over
all history by walking every run ever recorded, building each settled run's record
again: at 100,000 runs, seconds per tick that records anything. A settled run has
nothing left to say, so ``Runs.summarise`` (``ledger/runs.py``) folds it into its
target's ``TargetTally`` once, when it settles, and views read the tally plus the runs
not settled:

- counts: runs, endings, model cost (integer micro-dollars: any order gives the same sum),
  the newest ``updated_at``;
- bounded windows: the ``RECENT_KEPT`` most recent runs (the board shows
  ``RECENT_RUNS``), each chart's newest ``CHART_POINTS`` measured verdicts, the newest
  ``IMPROVEMENT_ROWS`` improvements (``BENCHMARKS.md``);
- what falls out of a chart's window, folded (``Older``): how many, the lowest and
  highest value of baselines and merged candidates (the running best starts from them:
  a blocked draft's or an unmerged candidate's number is never progress), the first
  baseline, the first credited verdict that says which way is better, the latest
  ``display_digits``.

Each window point carries its standing (``ledger/standing.py``: merged, open, blocked,
not merged, superseded; None for a verdict not credited), decided as the run settles.

Everything is order-free (counts, sums, extremes, firsts and newests by key), so a tally
folded tick by tick equals one folded from scratch.

A run in the tally carries ``tallied``: the digest of the facts it contributed (``facts``).
A settled run read back (a clean, a prune, an archive) keeps it; settling again with the
same facts only refreshes its row among the recent runs. Should its facts have changed
(a duplicate ``run_queued``, an edited line), the tally is ``stale`` and is folded again
from every tallied run (rare: it reads the whole history once). Views take a read-back
run's row from the run itself (its ``updated_at`` moved), and its counts from the tally.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import msgspec

from outerloop.ledger import events as ev
from outerloop.ledger.standing import (
    credited_pr,
    latest_credited,
    merged_pr,
    standing_of,
    standing_why,
)
from outerloop.vocabulary import GateVerdict, ResultStanding

if TYPE_CHECKING:
    from outerloop.ledger.records import RunRecord

RECENT_RUNS = 200
"""The board's runs table: active runs always, then this many of the most recent."""
RECENT_KEPT = RECENT_RUNS + 50
"""Recent settled runs kept per target: the table's and some to spare. A read-back run's
row comes from the run (its kept row is skipped), at a place no older than its kept one,
so the rows kept and the runs read back always hold the table's."""
CHART_POINTS = 400
"""A chart draws (and ``status.json`` lists) its newest this many measured verdicts."""
IMPROVEMENT_ROWS = 500
"""``BENCHMARKS.md`` lists the newest this many improvements (older ones are in the
research-log's history of the file)."""
CHANGES_KEPT = 2000
"""The newest judged change keys kept per target (``TargetTally.changes``): a repeat of
an older one is measured again, from the run's own share of the budget."""
ALPHA_UNIT = 10**18
"""``TargetTally.alpha_held`` counts alphas in these units: whole numbers add up the
same in any order."""

Encoded = bytes
"""A settled run's record as its index row holds it (``history_index.encode``)."""
PointKey = tuple[str, str, int]
"""(verdict's ``at``, run id, its place among the run's verdicts): the charts' order."""
ChartPoint = tuple[PointKey, ev.Verdict, ResultStanding | None, str]
"""A measured verdict in a chart's window, with its standing (None: not credited) and
the standing's reason (``standing.standing_why``)."""
RowKey = tuple[str, str, int]
"""(run's ``queued_at``, run id, its place among the run's verdicts): BENCHMARKS.md's."""


def decimal_of(value: object) -> Decimal | None:
    """A measured value as a finite Decimal, else None (a missing or malformed number)."""
    if value is None:
        return None
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def measured(v: ev.Verdict) -> bool:
    """A verdict with a number: the charts draw it."""
    return decimal_of(v.baseline) is not None or decimal_of(v.candidate) is not None


def micro(usd: float) -> int:
    return round(usd * 1_000_000)


def facts(run: RunRecord) -> str:
    """The digest of what a run contributes to its tally's counts and windows."""
    told: tuple[Any, ...] = (run.target, run.benchmark, run.ending, micro(run.cost_usd),
                             run.pr_number, run.queued_at, run.verdicts)
    if run.alpha_fixed is not None or run.judged_changes:  # (a run before them: as it was)
        told = (*told, holds_alpha(run), alpha_units(run), run.judged_changes)
    if run.blocked:
        told = (*told, run.blocked)
    if run.gpu_seconds:
        told = (*told, run.gpu_seconds)
    # JSON, not repr: a word held as its enum or as plain text (a record read back from
    # the history index, ``history_index.decode``) tells the same facts
    return hashlib.sha256(msgspec.json.encode(told)).hexdigest()[:16]


def holds_alpha(run: RunRecord) -> bool:
    """The run holds its share of its target's false-credit budget (``alpha_budget.py``):
    it has one, and it has not settled without a look of its sequential test on record
    (a run that settled so measured nothing, and gives its share back)."""
    return run.alpha_fixed is not None and (run.looked or not run.settled)


def alpha_units(run: RunRecord) -> int:
    return round(run.alpha_fixed.alpha * ALPHA_UNIT) if run.alpha_fixed is not None else 0


@dataclass(frozen=True, slots=True)
class JudgedChange:
    """A submission the gate settled, by its change key (``attempt/change_key.py``)."""

    change: str
    run: str
    submission: int
    verdict: str
    pr: int | None


def agent_key(run: RunRecord) -> str:
    """What the leaderboard counts a run under: its agent name, and the seat it was
    claimed in when recorded (``agent@seat``)."""
    return f"{run.agent}@{run.seat}" if run.seat else run.agent


@dataclass(slots=True)
class AgentCounts:
    """What one agent name's runs of a target did (the leaderboard's counts, summed in
    whole units so any order gives the same totals)."""

    runs: int = 0
    credited_prs: int = 0
    """Runs whose pull request carries a credited result (``standing.credited_pr``)."""
    merged_prs: int = 0
    """Runs that ended ``merged``."""
    gpu_seconds: int = 0
    cost_micro: int = 0

    def add(self, run: RunRecord) -> None:
        self.runs += 1
        self.credited_prs += credited_pr(run)
        self.merged_prs += merged_pr(run)
        self.gpu_seconds += run.gpu_seconds
        self.cost_micro += micro(run.cost_usd)

    def merge(self, other: AgentCounts) -> None:
        self.runs += other.runs
        self.credited_prs += other.credited_prs
        self.merged_prs += other.merged_prs
        self.gpu_seconds += other.gpu_seconds
        self.cost_micro += other.cost_micro


# --------------------------------------------------------------------------- a chart


@dataclass(slots=True)
class Older:
    """A chart's measured verdicts older than its window, folded."""

    count: int = 0
    low: Decimal | None = None
    high: Decimal | None = None
    """The extremes of their baselines and merged candidates (the running best)."""
    first_baseline: tuple[PointKey, str] | None = None
    first_direction: tuple[PointKey, str] | None = None
    """The first credited verdict with two different numbers: ``min`` or ``max``."""
    latest_digits: tuple[PointKey, int] | None = None

    def add(self, key: PointKey, v: ev.Verdict, standing: ResultStanding | None) -> None:
        self.count += 1
        base, cand = decimal_of(v.baseline), decimal_of(v.candidate)
        improved = v.verdict == GateVerdict.IMPROVED
        for value in (base, cand if standing is not None and standing.counts else None):
            if value is not None:
                self.low = value if self.low is None else min(self.low, value)
                self.high = value if self.high is None else max(self.high, value)
        if base is not None and (self.first_baseline is None or key < self.first_baseline[0]):
            self.first_baseline = (key, str(v.baseline))
        if improved and base is not None and cand is not None and base != cand and (
                self.first_direction is None or key < self.first_direction[0]):
            self.first_direction = (key, "min" if cand < base else "max")
        if v.display_digits and (self.latest_digits is None or key > self.latest_digits[0]):
            self.latest_digits = (key, v.display_digits)

    def merge(self, other: Older) -> None:
        self.count += other.count
        for value in (other.low, other.high):
            if value is not None:
                self.low = value if self.low is None else min(self.low, value)
                self.high = value if self.high is None else max(self.high, value)
        if other.first_baseline is not None and (
                self.first_baseline is None or other.first_baseline[0] < self.first_baseline[0]):
            self.first_baseline = other.first_baseline
        if other.first_direction is not None and (
                self.first_direction is None
                or other.first_direction[0] < self.first_direction[0]):
            self.first_direction = other.first_direction
        if other.latest_digits is not None and (
                self.latest_digits is None or other.latest_digits[0] > self.latest_digits[0]):
            self.latest_digits = other.latest_digits


@dataclass(slots=True)
class ChartTally:
    """One benchmark's measured verdicts: the newest ``CHART_POINTS``, the rest folded."""

    window: list[ChartPoint] = field(default_factory=list)
    older: Older = field(default_factory=Older)

    def add(self, key: PointKey, v: ev.Verdict, standing: ResultStanding | None,
            why: str = "") -> None:
        bisect.insort(self.window, (key, v, standing, why), key=_first)
        if len(self.window) > CHART_POINTS:
            old_key, old, old_standing, _why = self.window.pop(0)
            self.older.add(old_key, old, old_standing)


def _first(item: tuple[Any, ...]) -> Any:
    return item[0]


# --------------------------------------------------------------------------- a target


@dataclass(frozen=True, slots=True)
class Improvement:
    """A row of ``BENCHMARKS.md`` for a settled run (it has ended: its status is its
    ending)."""

    benchmark: str
    run: str
    verdict: ev.Verdict
    pr: int | None
    ending: str


@dataclass(slots=True)
class TargetTally:
    runs: int = 0
    endings: dict[str, int] = field(default_factory=dict)
    cost_micro: int = 0
    latest: str = ""
    """The newest ``updated_at`` of its runs."""
    recent: list[tuple[tuple[str, str], Encoded]] = field(default_factory=list)
    """((updated_at, run id), its encoded record), oldest first: the newest
    ``RECENT_KEPT``."""
    charts: dict[str, ChartTally] = field(default_factory=dict)
    improvements: list[tuple[RowKey, Improvement]] = field(default_factory=list)
    improvements_older: int = 0
    alpha_holders: int = 0
    """Its settled runs that hold a share of the false-credit budget (``holds_alpha``)."""
    alpha_held: int = 0
    """Their alphas, summed in ``ALPHA_UNIT``."""
    changes: list[tuple[RowKey, JudgedChange]] = field(default_factory=list)
    """The newest ``CHANGES_KEPT`` judged changes of its settled runs, oldest first."""
    agents: dict[str, AgentCounts] = field(default_factory=dict)
    """Per agent name (``agent-NN``), its settled runs' counts (the leaderboard's)."""

    def add(self, run: RunRecord, row: Encoded) -> None:
        self.runs += 1
        self.agents.setdefault(agent_key(run), AgentCounts()).add(run)
        if holds_alpha(run):
            self.alpha_holders += 1
            self.alpha_held += alpha_units(run)
        for change, submission, verdict in run.judged_changes:
            bisect.insort(self.changes, ((run.queued_at, run.run_id, submission), JudgedChange(
                change, run.run_id, submission, verdict, run.pr_number)), key=_first)
        del self.changes[:-CHANGES_KEPT]
        ending = run.ending or "ended"
        self.endings[ending] = self.endings.get(ending, 0) + 1
        self.cost_micro += micro(run.cost_usd)
        latest = latest_credited(run)
        for index, v in enumerate(run.verdicts):
            if measured(v):
                chart = self.charts.setdefault(v.benchmark or run.benchmark, ChartTally())
                standing = standing_of(run, index, latest)
                chart.add((v.at, run.run_id, index), v, standing, standing_why(run, standing))
            if v.verdict == GateVerdict.IMPROVED:
                bisect.insort(self.improvements, ((run.queued_at, run.run_id, index), Improvement(
                    run.benchmark, run.run_id, v, run.pr_number, ending)), key=_first)
        if len(self.improvements) > IMPROVEMENT_ROWS:
            dropped = len(self.improvements) - IMPROVEMENT_ROWS
            del self.improvements[:dropped]
            self.improvements_older += dropped
        self.offer(run, row)

    def offer(self, run: RunRecord, row: Encoded) -> None:
        """The run among the recent ones (again: a read-back run's ``updated_at`` moves
        only forward)."""
        self.latest = max(self.latest, run.updated_at)
        self.recent = [item for item in self.recent if item[0][1] != run.run_id]
        key = (run.updated_at, run.run_id)
        if len(self.recent) >= RECENT_KEPT and key < self.recent[0][0]:
            return
        bisect.insort(self.recent, (key, row), key=_first)
        if len(self.recent) > RECENT_KEPT:
            del self.recent[0]


@dataclass(slots=True)
class Tally:
    """Per target, its settled runs folded (``TargetTally``)."""

    targets: dict[str, TargetTally] = field(default_factory=dict)
    stale: bool = False
    """A tallied run's facts changed: fold the tally again before reading it."""

    def settle(self, run: RunRecord, encode: Callable[[RunRecord], Encoded]) -> Encoded:
        """Fold ``run`` as it settles; returns its encoded record (made by ``encode``
        after ``run.tallied`` is set, so the row carries it)."""
        digest = facts(run)
        if run.tallied == digest:
            row: Encoded = encode(run)
            self.targets.setdefault(run.target, TargetTally()).offer(run, row)
            return row
        if run.tallied:
            self.stale = True  # its old facts are in the tally: fold it again
        run.tallied = digest
        row = encode(run)
        if not self.stale:
            self.targets.setdefault(run.target, TargetTally()).add(run, row)
        return row

    def forget(self, tallied: str) -> None:
        """A run marked ``tallied`` left the mapping (deleted or replaced): fold again."""
        if tallied:
            self.stale = True

    def refold(self, runs: Iterable[tuple[RunRecord, Encoded]]) -> None:
        """Fold the tally again (``stale``) from every run it holds, marked with their
        facts now (``Runs.fresh_tally``)."""
        self.targets = {}
        self.stale = False
        for run, row in runs:
            self.targets.setdefault(run.target, TargetTally()).add(run, row)
