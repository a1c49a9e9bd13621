"""The views from the settled runs' tally (``ledger/tally.py``, ``ledger/history.py``)
equal the views from every run, and never read a settled run kept apart.

The reference is the same history with no run summarised: every view then reads every
run itself, as the board did before the tally. Windows are exceeded on purpose (more
runs than the board's table and the tally's spare rows, more measurements than a chart
draws, more improvements than BENCHMARKS.md lists), and keys are shuffled so that
folding order and time order differ.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from outerloop.board import render_board
from outerloop.config import Settings, TargetSettings
from outerloop.errors import OuterloopError
from outerloop.kernel.lanes.record import plan_target
from outerloop.ledger import events as ev
from outerloop.ledger.history import CHART_POINTS, IMPROVEMENT_ROWS, RECENT_KEPT, History, Runs
from outerloop.ledger.state import RunRecord, State

TARGETS = ("lab/solver", "lab/sim")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = "2026-12-01T00:00:00.000000Z"


def _at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _run(n: int, rng: random.Random, *, live: bool = False) -> RunRecord:
    queued = rng.uniform(0, 400_000)
    target = TARGETS[n % 2]
    run = RunRecord(run_id=f"run-{n:05d}", target=target, benchmark="tour", agent="agent-01",
                    issue=n, issue_title=f"idea {n} | with a pipe", hypothesis="",
                    queued_at=_at(queued), updated_at=_at(queued + rng.uniform(0, 9000)),
                    admitted=True, cost_usd=round(rng.uniform(0, 2), 6),
                    gpu_seconds=rng.randrange(0, 7200), pr_number=n if n % 3 == 0 else None)
    for k in range(rng.choice((1, 1, 2))):
        improved = rng.random() < 0.7 or live
        base = rng.uniform(50, 100)
        run.verdicts.append(ev.Verdict(
            seq=k, at=_at(queued + 60 * (k + 1)), verdict="improved" if improved else "error",
            benchmark=rng.choice(("tour", "tour", "speed")), baseline=f"{base:.4f}",
            candidate=f"{base - rng.uniform(-1, 5):.4f}" if k or n % 7 else None,
            seeds=rng.randrange(1, 5), display_digits=rng.choice((None, 4, 6))))
    if live:
        run.state = "running"
        return run
    run.state, run.ending = "ended", rng.choice(("merged", "negative-result", "withdrawn",
                                                 "rejected"))
    if n % 5 == 0:  # a draft the review blocked: never progress (ledger/standing.py)
        run.blocked = "1 blocking finding: tamper check: writes the scorer's output"
    run.ended_at = run.updated_at
    run.end_reason = "why it ended"
    run.report_posted = run.recorded = run.settled = True
    run.verdicts = [v for v in run.verdicts if v.verdict == "improved"]  # as compact leaves it
    return run


def _histories(settled: int = 1400, live: int = 12) -> tuple[State, State]:
    """(summarised, walked): one history, its settled runs summarised or all kept whole."""
    rng = random.Random(27)
    runs = [_run(n, rng) for n in range(settled)]
    runs += [_run(settled + n, rng, live=True) for n in range(live)]
    rng.shuffle(runs)
    walked = State(runs={r.run_id: r for r in runs}, last_at=NOW)
    summarised = copy.deepcopy(walked)
    for run in summarised.runs.live():
        if run.settled:
            summarised.runs.summarise(run.run_id)
    return summarised, walked


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path, targets=[TargetSettings(repo=t) for t in TARGETS])


def _views(settings: Settings, state: State) -> dict[str, str]:
    files = render_board(settings, state, NOW)
    for target in TARGETS:
        action = plan_target(state, target, settings)
        assert action is not None
        files.update({f"{target}/{name}": text for name, text in action.files.items()})
    return files


def _whole(state: State) -> State:
    """The history with every run a whole record again, marked as folded nowhere."""
    runs = {run_id: dataclasses.replace(run, tallied="") for run_id, run in state.runs.items()}
    return dataclasses.replace(state, runs=Runs(runs))


def test_the_views_from_the_tally_equal_the_views_from_every_run(tmp_path: Path) -> None:
    summarised, walked = _histories()
    assert len(summarised.runs.live()) == 12
    history = History.of(summarised.runs)
    assert history.total == 1412 and history.untallied == history.live
    tally = summarised.runs.tally.targets[TARGETS[0]]
    assert len(tally.recent) == RECENT_KEPT
    assert len(tally.charts["tour"].window) == CHART_POINTS and tally.charts["tour"].older.count
    assert len(tally.improvements) == IMPROVEMENT_ROWS and tally.improvements_older

    settings = _settings(tmp_path)
    expected = _views(settings, walked)
    assert _views(settings, summarised) == expected
    assert "older ones are in this file's history" in expected["lab/solver/BENCHMARKS.md"]


def test_runs_read_back_after_they_settled_show_as_they_are_now(tmp_path: Path) -> None:
    """A clean or a prune reads a settled run back and moves its ``updated_at``: the board
    shows it at its new place, its counts stay counted once, settling again changes
    nothing; a fact that changed makes the tally fold again."""
    summarised, _ = _histories()
    settings = _settings(tmp_path)
    oldest = sorted((r for r in summarised.runs.values() if r.settled),
                    key=lambda r: r.updated_at)[:30]
    for run in oldest:
        back = summarised.runs[run.run_id]
        back.cleaned, back.updated_at = True, NOW
    assert _views(settings, summarised) == _views(settings, _whole(summarised))
    for run in oldest:
        summarised.runs.summarise(run.run_id)
    assert not summarised.runs.tally.stale
    assert _views(settings, summarised) == _views(settings, _whole(summarised))

    changed = summarised.runs[oldest[0].run_id]
    changed.cost_usd += 100.0
    changed.ending = "aborted"
    assert _views(settings, summarised) == _views(settings, _whole(summarised))
    summarised.runs.summarise(changed.run_id)
    assert _views(settings, summarised) == _views(settings, _whole(summarised))


def test_a_tally_folded_run_by_run_equals_one_folded_from_scratch(tmp_path: Path) -> None:
    summarised, _ = _histories(settled=700)
    again = copy.deepcopy(summarised)
    again.runs.tally.stale = True
    assert again.runs.fresh_tally() == summarised.runs.tally
    pickled = pickle.loads(pickle.dumps(summarised))
    assert pickled.runs.tally == summarised.runs.tally


def unreadable_rows(state: State) -> State:
    """A copy of ``state`` whose settled runs' rows cannot be read: a reader that decodes
    one raises (``Runs._decode``)."""
    copied = copy.deepcopy(state)
    copied.runs.index.db.execute("UPDATE pending SET record = x'c1'")
    return copied


def test_the_board_never_reads_a_settled_run(tmp_path: Path) -> None:
    """Settled runs are rows of the history index, read only when a lane needs them;
    rendering every view reads the tally and the live runs, never a row."""
    summarised, _ = _histories(settled=600)
    for run in summarised.runs.live():
        run.updated_at = NOW  # the week before holds no settled run (the budgets' count)
    for run in [r for r in summarised.runs.values() if r.settled]:  # archived: not hot
        back = summarised.runs[run.run_id]
        back.archive = ev.Archived(run=run.run_id, where="s3://b/x/", files=[])
        summarised.runs.summarise(run.run_id)
    cached = unreadable_rows(summarised)
    with pytest.raises(OuterloopError, match="cannot be read"):
        list(cached.runs.values())
    cached = unreadable_rows(summarised)
    assert _views(_settings(tmp_path), cached) == _views(_settings(tmp_path), summarised)


def test_the_board_reads_every_settled_run_when_its_recent_window_runs_short(
        tmp_path: Path) -> None:
    """More of the newest settled runs read back than the window keeps to spare: the
    runs table is made from every settled run (slow, rare), never shown short."""
    summarised, _ = _histories()
    newest = sorted((r for r in summarised.runs.values() if r.settled),
                    key=lambda r: r.updated_at, reverse=True)[:120]
    for run in newest:
        summarised.runs[run.run_id].cleaned = True  # read back, not summarised again
    settings = _settings(tmp_path)
    assert _views(settings, summarised) == _views(settings, _whole(summarised))
