"""What the views read of the runs: the unsettled ones in full, the settled ones folded.

``History`` is the board's and the research-log record's one way to the runs: every run
not summarised (``live``), the settled runs' ``TargetTally`` per target
(``ledger/tally.py``; the settled runs themselves are rows of the history index,
``ledger/history_index.py``), and what both say together (how many runs, their endings, cost
and targets, the most recent). It costs the unsettled runs plus bounded windows, not a
pass over every run ever recorded; ``History.of(runs)`` reads no settled run's record
unless the tally must be folded again (``Tally.stale``).

One of the ledger's four doors (``ledger/book.py`` says which): what code outside
``ledger/`` asks of settled runs (the tally's rows, a credited result's standing, the
named selections of ``State.runs``) it imports from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.change_sketch import NEAR_IDENTICAL, likeness
from outerloop.ledger.history_index import BY_ENDING as BY_ENDING
from outerloop.ledger.history_index import SELECTIONS as SELECTIONS
from outerloop.ledger.history_index import decode
from outerloop.ledger.records import RunRecord
from outerloop.ledger.runs import Runs as Runs
from outerloop.ledger.standing import blocked_why as blocked_why
from outerloop.ledger.standing import credited_pr as credited_pr
from outerloop.ledger.standing import latest_credited as latest_credited
from outerloop.ledger.standing import standing_of as standing_of
from outerloop.ledger.standing import standing_why as standing_why
from outerloop.ledger.tally import (
    ALPHA_UNIT,
    TargetTally,
    agent_key,
    alpha_units,
    facts,
    micro,
)
from outerloop.ledger.tally import CHART_POINTS as CHART_POINTS
from outerloop.ledger.tally import IMPROVEMENT_ROWS as IMPROVEMENT_ROWS
from outerloop.ledger.tally import RECENT_KEPT as RECENT_KEPT
from outerloop.ledger.tally import RECENT_RUNS as RECENT_RUNS  # the window's floor: recent()
from outerloop.ledger.tally import AgentCounts as AgentCounts
from outerloop.ledger.tally import ChartPoint as ChartPoint
from outerloop.ledger.tally import JudgedChange as JudgedChange
from outerloop.ledger.tally import Older as Older
from outerloop.ledger.tally import RowKey as RowKey
from outerloop.ledger.tally import decimal_of as decimal_of
from outerloop.ledger.tally import holds_alpha as holds_alpha


@dataclass(frozen=True, slots=True)
class History:
    runs: Runs
    target: str | None
    """The one target this history is of (None: every target)."""
    live: list[RunRecord]
    """Every run not summarised (of ``target``), in queue order."""
    untallied: list[RunRecord]
    """Those the tally does not hold: every fact of theirs counts from the run itself.
    The others were read back after they settled (their counts are in the tally)."""
    tallies: dict[str, TargetTally]

    @staticmethod
    def of(runs: Runs, target: str | None = None) -> History:
        tally = runs.fresh_tally()
        live = [r for r in runs.live() if target is None or r.target == target]
        if any(r.tallied and facts(r) != r.tallied for r in live):
            tally.stale = True  # a read-back run's facts changed: its old ones are counted
            tally = runs.fresh_tally()
        tallies = dict(tally.targets) if target is None else (
            {target: tally.targets[target]} if target in tally.targets else {})
        return History(runs, target, live, [r for r in live if not r.tallied], tallies)

    def live_runs(self) -> Runs:
        """Its live runs, as a state's ``runs`` (a board's part of the state)."""
        return Runs({r.run_id: r for r in self.live})

    @property
    def total(self) -> int:
        """How many runs there are (of ``target``)."""
        return sum(t.runs for t in self.tallies.values()) + len(self.untallied)

    @property
    def targets(self) -> set[str]:
        return {repo for repo, t in self.tallies.items() if t.runs} | {
            r.target for r in self.live}

    def endings(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for t in self.tallies.values():
            for ending, n in t.endings.items():
                counts[ending] = counts.get(ending, 0) + n
        for r in self.untallied:
            if r.ended:
                counts[r.ending or "ended"] = counts.get(r.ending or "ended", 0) + 1
        return counts

    def cost_usd(self) -> float:
        """The model cost of every run, in USD (summed in micro-dollars)."""
        total = sum(t.cost_micro for t in self.tallies.values())
        return (total + sum(micro(r.cost_usd) for r in self.untallied)) / 1_000_000

    def agent_counts(self) -> dict[tuple[str, str], AgentCounts]:
        """Per (target, agent key: its name and recorded seat, ``tally.agent_key``), what
        its runs did: the tally's settled runs and the runs it does not hold
        (``AgentCounts``), never a pass over every run."""
        counts: dict[tuple[str, str], AgentCounts] = {}
        for repo, t in self.tallies.items():
            for agent, told in t.agents.items():
                counts.setdefault((repo, agent), AgentCounts()).merge(told)
        for r in self.untallied:
            counts.setdefault((r.target, agent_key(r)), AgentCounts()).add(r)
        return counts

    def latest(self) -> str:
        """The newest ``updated_at`` of the runs."""
        return max([t.latest for t in self.tallies.values()]
                   + [r.updated_at for r in self.live], default="")

    def admitted_since(self, since: str) -> int:
        """Runs admitted and queued at ``since`` or later."""
        live = sum(1 for r in self.live if r.admitted and r.queued_at >= since)
        return live + self.runs.admitted_since(since, self.target)

    def newest_ended(self, count: int) -> list[RunRecord]:
        """The ``count`` runs that ended last (by ``ended_at``, then id), newest first,
        from ``recent``'s window: a run ends before its last event, so the newest
        endings are among the newest events while fewer than ``RECENT_RUNS`` older
        endings were touched after them (a settled run's events stop once it settles)."""
        ended = [r for r in self.recent() if r.ended]
        ended.sort(key=lambda r: (r.ended_at or "", r.run_id), reverse=True)
        return ended[:count]

    def ended_total(self) -> int:
        """How many runs have ended (of ``target``)."""
        return self.total - sum(1 for r in self.live if not r.ended)

    def recent(self) -> list[RunRecord]:
        """The unsettled runs and the most recent settled ones (by ``updated_at``, then
        id), as records, newest first: at least the ``RECENT_RUNS`` newest of all. A
        settled run's kept row is skipped when the run was read back (it is among the
        unsettled, at its ``updated_at`` now, which only moves forward), so the window's
        ``RECENT_KEPT`` rows and those runs always hold every run newer than the rest."""
        live_ids = {r.run_id for r in self.live}
        settled = [decode(row) for t in self.tallies.values() for (_, run_id), row in t.recent
                   if run_id not in live_ids]
        every = self.live + settled
        every.sort(key=lambda r: (r.updated_at, r.run_id), reverse=True)
        return every

    def alpha_holders(self) -> tuple[int, float]:
        """(how many runs hold a share of the target's false-credit budget, what they
        hold together): the tally's settled holders and the runs it does not hold
        (``tally.holds_alpha``; ``alpha_budget.py`` says why they never pass the budget)."""
        counted = [r for r in self.untallied if holds_alpha(r)]
        units = sum(t.alpha_held for t in self.tallies.values()) + sum(
            alpha_units(r) for r in counted)
        return (sum(t.alpha_holders for t in self.tallies.values()) + len(counted),
                units / ALPHA_UNIT)

    def judged_change(self, change: str, *, besides: str = "") \
            -> tuple[JudgedChange, float] | None:
        """The submission the gate settled that ``change`` repeats, with how alike they
        are (``change_sketch.likeness``, at least ``NEAR_IDENTICAL``): the most alike,
        then the newest (runs not in the tally, then the tally's window of
        ``CHANGES_KEPT``), leaving out run ``besides``; None when none is known."""
        found: list[tuple[float, tuple[str, str, int], JudgedChange]] = []
        for r in self.untallied:
            if r.run_id == besides:
                continue
            for key, submission, verdict in r.judged_changes:
                alike = likeness(change, key)
                if alike >= NEAR_IDENTICAL:
                    found.append((alike, (r.queued_at, r.run_id, submission), JudgedChange(
                        key, r.run_id, submission, verdict, r.pr_number)))
        for t in self.tallies.values():
            for order, judged in t.changes:
                alike = likeness(change, judged.change)
                if judged.run != besides and alike >= NEAR_IDENTICAL:
                    found.append((alike, order, judged))
        if not found:
            return None
        alike, _, judged = max(found, key=lambda item: item[:2])
        return judged, alike
