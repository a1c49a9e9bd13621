"""A ledger of settled runs written straight into a home, for the tests of how the
fold keeps them (the history index, the quiet cache, a job reading the index)."""

from __future__ import annotations

from pathlib import Path

from outerloop.kernel.actions import CleanWorkspace, PruneJobs, PublishRecord
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, run_file, tick_file
from outerloop.ledger.events import EffectResult


def record(tick: LedgerWriter, target: str, n: int, reports: list[str],
           board: str = "") -> str:
    """A research-log record of ``reports`` (intent and done); its key."""
    action = PublishRecord(target=target, branch="research-log", files={}, reports=reports,
                           summary=f"s{n}", board=board, digest=f"d{n}")
    tick.append(ev.Intent(key=action.key, action=action))
    tick.append(ev.Done(key=action.key, result=EffectResult(
        reports=reports, summary=action.summary, board=board or None)))
    return action.key


def settled_runs(home: Path, target: str, runs: int, first: int = 0, *,
                 housekeeping: bool = False) -> LedgerWriter:
    """``runs`` runs that ended and were recorded: settled; with ``housekeeping`` also
    cleaned and pruned (in no selection a tick reads every time). The tick file's writer."""
    tick = LedgerWriter(tick_file(home, target))
    for n in range(first, first + runs):
        run = f"tour-{n}-agent-01"
        tick.append(ev.RunQueued(run=run, target=target, benchmark="tour", agent="agent-01",
                                 issue=None, hypothesis="h"))
        LedgerWriter(run_file(home, target, run), tick.clock).append(
            ev.LegStarted(run=run, leg=1, role="climb"))
        tick.append(ev.RunEnded(run=run, ending="negative-result", report="r"))
        record(tick, target, n, [run])
        if housekeeping:
            for action in (CleanWorkspace(target=target, run=run),
                           PruneJobs(target=target, run=run)):
                tick.append(ev.Intent(key=action.key, run=run, action=action))
                tick.append(ev.Done(key=action.key, run=run,
                                    result=EffectResult(freed_bytes=0)))
    return tick
