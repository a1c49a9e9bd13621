"""The report reaches the issue in the same tick that records the run's ending."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from outerloop.config import Settings, TargetSettings
from outerloop.contract import load_contract_text
from outerloop.forge.base import PullRequest
from outerloop.kernel.actions import PostComment, RecordEvent
from outerloop.kernel.lanes import followup
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, PullObservation, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.state import RunRecord, State

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONTRACT = load_contract_text("""
benchmarks: [{name: tour, command: python e.py, metric: m, direction: min}]
budgets: {gpu_hours_per_run: 0, runs_per_week: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")


def _plan(merged: bool, state_name: str) -> list[object]:
    run = RunRecord(run_id="tour-1-agent-01", target="o/n", benchmark="tour",
                    agent="agent-01", issue=3, issue_title="i", hypothesis="h",
                    queued_at="2026-11-29T11:00:00.000000Z")
    run.state, run.park_reason, run.pr_number = "parked", "review", 7
    pr = PullRequest(number=7, title="t", body="b", author="outerloop", state=state_name,
                     head="h", base="main", head_sha="a" * 40, merged=merged,
                     created_at=NOW, updated_at=NOW)
    seen = TargetObservation(repo="o/n", contract=CONTRACT, default_branch="main",
                             base_sha="a" * 40, pulls={7: PullObservation(pr=pr)})
    state = State()
    state.runs[run.run_id] = run
    view = TickView(state=state, obs=Observations(now=NOW, targets={"o/n": seen}),
                    settings=Settings(home=Path("/nonexistent"),
                                      targets=[TargetSettings(repo="o/n")]), hold=False)
    return followup.plan(view, [])


@pytest.mark.parametrize(("merged", "state_name", "ending"),
                         [(True, "closed", "merged"), (False, "closed", "rejected")])
def test_report_is_posted_in_the_tick_that_records_the_ending(
        merged: bool, state_name: str, ending: str) -> None:
    actions = _plan(merged, state_name)
    (ended,) = [a for a in actions if isinstance(a, RecordEvent)
                and isinstance(a.event, ev.RunEnded)]
    assert isinstance(ended.event, ev.RunEnded) and ended.event.ending == ending
    (report,) = [a for a in actions if isinstance(a, PostComment)
                 and a.marker_kind == "report"]
    assert report.number == 3 and report.body == ended.event.report
    assert actions.index(ended) < actions.index(report)
