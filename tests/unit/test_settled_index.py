"""``Runs``' selections stay right as the mapping changes after they were made.

The selections are made in one pass over the summaries and then kept (a pass per change
cost a tick about 25 ms per 10,000 settled runs, seven times a tick). Each change is
checked against a copy whose selections are made afresh: runs read back (a clean, a
prune), changed and summarised again, new runs, runs summarised for the first time,
runs removed.
"""

from __future__ import annotations

import copy
import random

from outerloop.ledger.history import BY_ENDING, SELECTIONS, Runs
from outerloop.ledger.state import RunRecord

TARGET = "o/n"


def _run(n: int, rng: random.Random) -> RunRecord:
    at = f"2026-0{1 + n % 9}-{1 + n % 28:02d}T00:00:{n % 60:02d}.000000Z"
    return RunRecord(run_id=f"r{n:04d}", target=TARGET, benchmark="b", agent="a",
                     issue=n % 17 or None, issue_title="t", hypothesis="", queued_at=at,
                     updated_at=at, state="ended", ending="merged", ended_at=at,
                     admitted=rng.random() < 0.7, outage=rng.random() < 0.1,
                     report_posted=rng.random() < 0.8, cleaned=rng.random() < 0.5,
                     pruned=rng.random() < 0.3, recorded=True, settled=True)


def _answers(runs: Runs) -> dict[str, list[str]]:
    picks = {among: [r.run_id for r in runs.select(among)] for among in SELECTIONS}
    picks.update({f"{among} by June": [r.run_id for r in runs.select(
        among, ended_by="2026-06-01T00:00:00.000000Z")] for among in BY_ENDING})
    picks["admitted since March"] = [r.run_id for r in runs.select(
        "admitted", since="2026-03-01T00:00:00.000000Z")]
    picks["count since March"] = [str(runs.admitted_since("2026-03-01T00:00:00.000000Z"))]
    return picks


def _fresh(runs: Runs) -> dict[str, list[str]]:
    again = copy.copy(runs)  # a new mapping: its selections are made from scratch
    return _answers(again)


def test_selections_kept_across_changes_equal_selections_made_afresh() -> None:
    rng = random.Random(5)
    runs = Runs()
    made = 0
    for _ in range(300):
        run = _run(made, rng)
        runs[run.run_id] = run
        runs.summarise(run.run_id)
        made += 1
    assert _answers(runs) == _fresh(runs)  # the selections are made here, then kept
    for step in range(400):
        ids = [k for k in runs]
        choice = rng.random()
        if choice < 0.35:  # read back, changed as housekeeping would, summarised again
            back = runs[rng.choice(ids)]
            back.cleaned = back.cleaned or rng.random() < 0.5
            back.pruned = back.pruned or rng.random() < 0.5
            back.report_posted = True
            if rng.random() < 0.8:
                runs.summarise(back.run_id)
        elif choice < 0.55:  # a new run, live for now
            run = _run(made, rng)
            run.state, run.settled = "running", False
            runs[run.run_id] = run
            made += 1
        elif choice < 0.85:  # a live run settles
            live = [r for r in runs.live()]
            if live:
                run = rng.choice(live)
                run.state, run.settled = "ended", True
                runs.summarise(run.run_id)
        else:
            del runs[rng.choice(ids)]
        assert _answers(runs) == _fresh(runs), step
