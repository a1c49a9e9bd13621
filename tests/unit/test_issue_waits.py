"""An issue that cannot start is not claimed; why it waits is said once (issue 11)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from outerloop.config import Settings, TargetSettings
from outerloop.contract import load_contract_text
from outerloop.forge.base import Association, Issue
from outerloop.kernel.actions import PostComment, RecordEvent
from outerloop.kernel.lanes import intake
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.events import EffectResult
from outerloop.ledger.fold import apply_event
from outerloop.ledger.records import RunRecord, State

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
