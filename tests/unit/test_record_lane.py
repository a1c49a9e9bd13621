"""The research-log planner is pure: same ledger, same files; nothing new, no action."""

from __future__ import annotations

import json

from outerloop.kernel.actions import PublishRecord
from outerloop.kernel.lanes.record import BRANCH, plan_target
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import RunRecord, State

TARGET = "demo/tinytsp"


def _state() -> State:
    state = State()
    run = RunRecord(run_id="tour-1", target=TARGET, benchmark="tour", agent="agent-01",
                    issue=1, issue_title="t", hypothesis="h", queued_at="2026-01-01",
                    state="ended", ending="merged", report="# report\n", pr_number=4)
    run.verdicts.append(ev.Verdict(seq=0, at="2026-01-02", verdict="improved",
                                   benchmark="tour", baseline="10", candidate="9", seeds=1))
    state.runs[run.run_id] = run
    state.leaders[(TARGET, "tour")] = ev.Leader(seq=0, at="2026-01-02", run="tour-1",
                                                target=TARGET, benchmark="tour", value="9",
                                                baseline="10")
    return state


def _publish(state: State, action: PublishRecord, **result: object) -> None:
    """Fold the record's intent and its ``done``, as the executor writes them."""
    file = "demo__tinytsp/tick.jsonl"
    apply_event(state, file, ev.Intent(seq=1, at="2026-01-04", key=action.key, action=action))
    apply_event(state, file, ev.Done(seq=2, at="2026-01-04", key=action.key,
                                     result=EffectResult(**result)))  # type: ignore[arg-type]


def test_record_holds_leader_improvements_and_reports_when_a_run_ended() -> None:
    action = plan_target(_state(), TARGET)
    assert action is not None and action.branch == BRANCH
    leader = json.loads(action.files["results/leader.json"])
    assert leader["tour"] == {"baseline": "10", "best": "9", "best_run": "tour-1",
                              "updated": "2026-01-02"}
    assert "| tour | tour-1 | 10 | 9 | 1 | merged | #4 |" in action.files["BENCHMARKS.md"]
    assert action.files["reports/tour-1.md"] == "# report\n"
    assert action.reports == ["tour-1"]
    assert plan_target(_state(), TARGET) == action


def test_no_record_is_planned_when_nothing_changed_since_the_last_one() -> None:
    state = _state()
    action = plan_target(state, TARGET)
    assert action is not None
    _publish(state, action, sha="a" * 40, reports=action.reports, summary=action.summary)
    assert plan_target(state, TARGET) is None


def test_only_new_reports_are_sent_when_another_run_ends() -> None:
    state = _state()
    first = plan_target(state, TARGET)
    assert first is not None
    _publish(state, first, reports=first.reports, summary=first.summary)
    state.runs["tour-2"] = RunRecord(
        run_id="tour-2", target=TARGET, benchmark="tour", agent="agent-01", issue=None,
        issue_title="", hypothesis="h", queued_at="2026-01-03", state="ended",
        ending="negative-result", report="# two\n")
    second = plan_target(state, TARGET)
    assert second is not None and second.reports == ["tour-2"]
    assert "reports/tour-1.md" not in second.files


def test_no_record_is_planned_when_a_target_has_no_history() -> None:
    assert plan_target(State(), TARGET) is None


def test_a_record_back_to_an_older_content_is_published_again() -> None:
    """The research-log shows the latest record: content that returns to what an
    older record held (A, then B, then A) is published again."""
    state = _state()
    first = plan_target(state, TARGET)
    assert first is not None
    _publish(state, first, reports=first.reports, summary=first.summary)
    older = state.leaders[(TARGET, "tour")]
    state.leaders[(TARGET, "tour")] = ev.Leader(seq=0, at="2026-01-05", run="tour-1",
                                                target=TARGET, benchmark="tour", value="8",
                                                baseline="10")
    second = plan_target(state, TARGET)
    assert second is not None
    _publish(state, second, reports=second.reports, summary=second.summary)
    state.leaders[(TARGET, "tour")] = older
    third = plan_target(state, TARGET)
    assert third is not None
    _publish(state, third, reports=third.reports, summary=third.summary)
    state.leaders[(TARGET, "tour")] = ev.Leader(seq=0, at="2026-01-05", run="tour-1",
                                                target=TARGET, benchmark="tour", value="8",
                                                baseline="10")
    assert plan_target(state, TARGET) == second
