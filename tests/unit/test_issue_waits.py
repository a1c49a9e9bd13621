"""An issue that cannot start is not claimed; why it waits is said once (issue 11)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest

from outerloop.config import Settings, TargetSettings
from outerloop.contract import load_contract_text
from outerloop.forge.base import Association, Issue
from outerloop.kernel.actions import PostComment, RecordEvent, SubmitJob
from outerloop.kernel.lanes import admission, intake
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import RunRecord, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONTRACT = load_contract_text("""
benchmarks: [{name: tour, command: python e.py, metric: m, direction: min}]
budgets: {gpu_hours_per_run: 0, runs_per_week: 1, max_active_attempts: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")


def _view(state: State) -> TickView:
    issue = Issue(number=5, title="idea", body="try tour", author="maintainer",
                  author_association=Association.OWNER, state="open", created_at=NOW,
                  updated_at=NOW)
    seen = TargetObservation(repo=TARGET, contract=CONTRACT, default_branch="main",
                             base_sha="a" * 40, issues=[issue])
    settings = Settings(home=Path("/nonexistent"), targets=[TargetSettings(repo=TARGET)])
    return TickView(state=state, obs=Observations(now=NOW, targets={TARGET: seen}),
                    settings=settings, hold=False)


def _spent_week() -> State:
    state = State()
    ended = RunRecord(run_id="tour-old-agent-01", target=TARGET, benchmark="tour",
                      agent="agent-01", issue=1, issue_title="old", hypothesis="h",
                      queued_at=(NOW - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    ended.admitted, ended.state, ended.ending = True, "ended", "merged"
    state.runs[ended.run_id] = ended
    return state


def test_issue_is_not_claimed_and_the_reason_is_said_when_the_week_budget_is_spent() -> None:
    actions = intake.plan(_view(_spent_week()), [])
    assert not [a for a in actions if isinstance(a, PostComment) and a.marker_kind == "claim"]
    (post,) = [a for a in actions if isinstance(a, PostComment)]
    assert post.number == 5 and "budget of 1 run(s) per week is spent" in post.body
    (waits,) = [a for a in actions if isinstance(a, RecordEvent)]
    assert isinstance(waits.event, ev.IssueWaits) and waits.event.issue == 5


def test_reason_is_said_only_once_when_the_issue_keeps_waiting() -> None:
    state = _spent_week()
    first = intake.plan(_view(state), [])
    post = next(a for a in first if isinstance(a, PostComment))
    state.done_keys[post.key] = EffectResult(comment_id=1)
    waits = next(a for a in first if isinstance(a, RecordEvent))
    assert isinstance(waits.event, ev.IssueWaits)
    apply_event(state, "o__n/tick.jsonl", msgspec.structs.replace(
        waits.event, seq=1, at="2026-11-29T12:00:00.0Z"))
    assert intake.plan(_view(state), []) == []
    assert state.waiting[(TARGET, 5)][0] == waits.event.reason


def test_issue_is_claimed_when_the_target_can_start_a_run() -> None:
    actions = intake.plan(_view(State()), [])
    assert [a.marker_kind for a in actions if isinstance(a, PostComment)] == ["claim"]


GPU_CONTRACT = load_contract_text("""
benchmarks: [{name: tour, command: python e.py, metric: m, direction: min, gpus: 1}]
budgets: {gpu_hours_per_run: 2, runs_per_week: 3, max_active_attempts: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")


def _gpu_week_spent() -> TickView:
    state = State()
    state.gpu_days[TARGET] = {(NOW - timedelta(days=1)).strftime("%Y-%m-%d"): 3 * 2 * 3600}
    view = _view(state)
    view.obs.targets[TARGET].contract = GPU_CONTRACT
    return view


def test_issue_is_not_claimed_when_the_targets_gpu_week_is_spent() -> None:
    """Admission would make the run wait for the week's GPU-hours: intake claims nothing
    and says why once, as for every other wait."""
    actions = intake.plan(_gpu_week_spent(), [])
    posts = [a for a in actions if isinstance(a, PostComment)]
    assert [p.marker_kind for p in posts] == ["status"]
    assert "GPU-hours are spent (6.00 of 6 in the last 7 days)" in posts[0].body
    assert not [a for a in actions if isinstance(a, RecordEvent)
                and isinstance(a.event, ev.RunQueued)]
    (waits,) = [a for a in actions if isinstance(a, RecordEvent)]
    assert isinstance(waits.event, ev.IssueWaits) and "GPU-hours" in waits.event.reason


def _admitted(n: int, *, ended: bool, days_ago: float = 1) -> RunRecord:
    run = RunRecord(run_id=f"tour-{n}-agent-{n:02d}", target=TARGET, benchmark="tour",
                    agent=f"agent-{n:02d}", issue=100 + n, issue_title="old", hypothesis="h",
                    queued_at=(NOW - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    run.admitted = True
    if ended:
        run.state, run.ending = "ended", "merged"
    return run


def _budget_state(case: str) -> State:
    state = State()
    day = (NOW - timedelta(days=1)).strftime("%Y-%m-%d")
    if case == "active-cap":
        for n in (1, 2):
            state.runs[f"tour-{n}-agent-{n:02d}"] = _admitted(n, ended=False)
    elif case == "week-budget":
        for n in (1, 2, 3):
            state.runs[f"tour-{n}-agent-{n:02d}"] = _admitted(n, ended=True)
    elif case == "gpu-week":
        state.gpu_days[TARGET] = {day: 6 * 3600}
    elif case == "money-week":
        state.cost_days[TARGET] = {day: 2_000_000}
    return state


def _budget_view(state: State) -> TickView:
    view = _view(state)
    view.obs.targets[TARGET].contract = GPU_CONTRACT
    view.settings.limits.usd_per_week = 1.0
    return view


@pytest.mark.parametrize("case", ["none", "active-cap", "week-budget", "gpu-week",
                                  "money-week"])
def test_intake_claims_exactly_when_admission_would_start_the_run(case: str) -> None:
    """The issue is claimed iff a run queued for it would be started in the same state."""
    claimed = any(isinstance(a, RecordEvent) and isinstance(a.event, ev.RunQueued)
                  for a in intake.plan(_budget_view(_budget_state(case)), []))
    state = _budget_state(case)
    queued = RunRecord(run_id="tour-q-agent-03", target=TARGET, benchmark="tour",
                       agent="agent-03", issue=5, issue_title="idea", hypothesis="h",
                       queued_at=NOW.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    state.runs[queued.run_id] = queued
    started = any(isinstance(a, SubmitJob) and a.run == queued.run_id
                  for a in admission.plan(_budget_view(state), []))
    assert claimed == started == (case == "none")
