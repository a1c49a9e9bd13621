"""The week's admitted settled runs are held with the live state (``ledger/admitted.py``):
a count of them (the week's budget, the board) is a bisection, not a query of the
history index that reads a week of rows, and it says what the index says."""

from __future__ import annotations

import copy
import pickle
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from outerloop.clock import WEEK, stamp
from outerloop.compute.base import JobSpec
from outerloop.kernel.actions import PublishRecord, SubmitJob, intent_for
from outerloop.ledger import events as ev
from outerloop.ledger.admitted import KEPT
from outerloop.ledger.book import LedgerWriter, rebuild, run_file, tick_file
from outerloop.ledger.events import EffectResult
from outerloop.ledger.records import Ending, RunRecord, RunState
from outerloop.ledger.runs import Runs
from outerloop.ledger.state import State

NOW = datetime(2026, 12, 1, tzinfo=UTC)
TARGETS = ("a/one", "b/two")


def _run(n: int, target: str, at: datetime, admitted: bool) -> RunRecord:
    run = RunRecord(run_id=f"r{n}", target=target, benchmark="b", agent="x", issue=None,
                    issue_title="", hypothesis="", queued_at=stamp(at), admitted=admitted)
    run.state, run.ending, run.ended_at = RunState.ENDED, Ending.NEGATIVE_RESULT, stamp(at)
    return run


def _settled(runs: Runs) -> list[RunRecord]:
    """The settled runs, as their rows say (every row decoded)."""
    live = set(runs.live_ids())
    return [r for run_id, r in runs.ordered() if run_id not in live]


def _by_records(settled: list[RunRecord], since: str, target: str | None) -> int:
    """The count as the settled runs' records say it."""
    return sum(1 for r in settled if r.admitted and r.queued_at >= since
               and (target is None or r.target == target))


def _by_index(runs: Runs, since: str, target: str | None) -> int:
    return runs.index.admitted_count(since, target, set(runs.live_ids()))


def _shuffled_history(seed: int, count: int = 300, days: int = 30) -> Runs:
    """Runs over ``days`` days, settled, some read back (live again), some settled again,
    some removed."""
    rng = random.Random(seed)
    runs = Runs()
    for n in range(count):
        at = NOW - timedelta(days=days) + timedelta(minutes=rng.randrange(days * 1440))
        runs[f"r{n}"] = _run(n, rng.choice(TARGETS), at, rng.random() < 0.8)
        if rng.random() < 0.9:
            runs.summarise(f"r{n}")
    for n in rng.sample(range(count), count // 5):
        if runs.summarised(f"r{n}"):
            runs[f"r{n}"].cleaned = True  # read back: live again
            if rng.random() < 0.5:
                runs.summarise(f"r{n}")
    for n in rng.sample(range(count), 5):
        if f"r{n}" in runs:
            del runs[f"r{n}"]
    return runs


def _sinces() -> list[str]:
    return [stamp(NOW - timedelta(days=d, hours=h)) for d in (0, 1, 3, 7, 8) for h in (0, 5)]


@pytest.mark.parametrize("seed", range(6))
def test_the_week_held_counts_what_the_index_and_the_records_count(seed: int) -> None:
    runs = _shuffled_history(seed)
    settled = _settled(runs)
    for since in [*_sinces(), ""]:
        for target in (*TARGETS, None):
            assert runs.admitted.count(since, target) is not None  # all held: no cut yet
            want = _by_records(settled, since, target)
            assert runs.admitted_since(since, target) == want
            assert copy.deepcopy(runs).admitted_since(since, target) == want  # a view's copy
            assert _by_index(runs, since, target) == want


@pytest.mark.parametrize("seed", range(4))
def test_a_cache_round_trip_keeps_a_week_and_a_day_and_still_counts_right(seed: int) -> None:
    """Pickled (the fold cache), the held week is cut at a week and a day before its
    newest queue time: what is held stays a week's runs, however long the history; a
    count from before the cut is asked of the index."""
    runs = _shuffled_history(seed, days=60)
    index = runs.index
    back: Runs = pickle.loads(pickle.dumps(runs))
    back.index = index  # as the cache's load attaches the home's database
    settled = _settled(runs)
    newest = max(max(t) for t in back.admitted.by_target.values())
    cut = stamp(datetime.fromisoformat(newest[:-1]).replace(tzinfo=UTC) - KEPT)
    assert back.admitted.horizon == cut
    assert all(q >= cut for times in back.admitted.by_target.values() for q in times)
    for since in [*_sinces(), stamp(NOW - timedelta(days=20)), ""]:
        for target in (*TARGETS, None):
            assert back.admitted_since(since, target) == _by_records(settled, since, target)
    old = stamp(NOW - timedelta(days=20))
    assert back.admitted.count(old, None) is None  # before the cut: the index answers


def test_a_count_within_the_week_asks_the_index_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _shuffled_history(1)
    back: Runs = pickle.loads(pickle.dumps(runs))
    back.index = runs.index

    def refused(*_: object) -> int:
        raise AssertionError("the index was asked to count the week")

    monkeypatch.setattr(back.index, "admitted_count", refused)
    week_ago, settled = stamp(NOW - WEEK), _settled(runs)
    assert back.admitted_since(week_ago, TARGETS[0]) == _by_records(settled, week_ago, TARGETS[0])
    assert back.admitted_since(week_ago) == _by_records(settled, week_ago, None)


def test_a_run_read_back_leaves_the_held_count_and_comes_back_when_settled_again() -> None:
    runs = Runs()
    runs["r1"] = _run(1, "a/one", NOW - timedelta(days=1), True)
    runs["r2"] = _run(2, "a/one", NOW - timedelta(days=1), True)  # the same queue time
    runs.summarise("r1")
    runs.summarise("r2")
    since = stamp(NOW - WEEK)
    assert runs.admitted_since(since, "a/one") == 2
    runs["r1"].pruned = True  # read back: counted among the live runs by the callers
    assert runs.admitted_since(since, "a/one") == 1
    runs.summarise("r1")
    assert runs.admitted_since(since, "a/one") == 2
    runs["r2"] = _run(2, "a/one", NOW - timedelta(days=1), True)  # set over its row
    assert runs.admitted_since(since, "a/one") == 1
    del runs["r2"]
    assert runs["r1"].admitted  # read back
    assert runs.admitted_since(since, "a/one") == 0
    assert runs.admitted.by_target == {}


def _ledger(home: Path, count: int, first: int = 0) -> None:
    """Runs admitted (a climb job done and ended), ended and recorded: settled. Every
    third is not admitted."""
    tick = LedgerWriter(tick_file(home, TARGETS[0]))
    for n in range(first, first + count):
        run = f"tour-{n}-agent-01"
        tick.append(ev.RunQueued(run=run, target=TARGETS[0], benchmark="tour",
                                 agent="agent-01", hypothesis="h"))
        if n % 3:
            spec = JobSpec(name=f"ol-{run}-climb", command="true", workdir=str(home),
                           log_dir=str(home), time_minutes=5)
            submit = SubmitJob(target=TARGETS[0], run=run, purpose="climb", spec=spec)
            tick.append(intent_for(submit))
            tick.append(ev.Done(run=run, key=submit.key,
                                result=EffectResult(job_id=f"{10000 + n}")))
            tick.append(ev.JobEnded(job_id=f"{10000 + n}", state="completed", exit_code=0))
        LedgerWriter(run_file(home, TARGETS[0], run), tick.clock).append(
            ev.LegStarted(run=run, leg=1, role="climb"))
        tick.append(ev.RunEnded(run=run, ending="negative-result", report="r"))
        record = PublishRecord(target=TARGETS[0], branch="research-log", files={},
                               reports=[run], summary=f"s{n}", digest=f"d{n}")
        tick.append(intent_for(record))
        tick.append(ev.Done(key=record.key, result=EffectResult(reports=[run])))


def test_the_fold_cache_holds_the_week_the_index_counts(tmp_path: Path) -> None:
    """Through the fold and its cache: a cold fold, a fold on the cache, one on top of
    more lines; the held count is the index's and no row is left unsettled."""
    hour_ago = stamp(datetime.now(UTC) - timedelta(hours=1))

    def counts(state: State, admitted: int) -> None:
        assert state.runs.live() == []
        assert state.runs.admitted.count(hour_ago, TARGETS[0]) == admitted
        for since in ("", stamp(NOW - WEEK), hour_ago):
            assert state.runs.admitted_since(since, TARGETS[0]) == admitted == _by_index(
                state.runs, since, TARGETS[0])

    _ledger(tmp_path, 30)
    counts(rebuild(tmp_path), 20)  # cold
    counts(rebuild(tmp_path), 20)  # on the cache
    _ledger(tmp_path, 6, first=30)
    counts(rebuild(tmp_path), 24)  # on the cache, more lines folded
