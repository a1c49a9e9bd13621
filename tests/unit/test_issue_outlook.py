"""Intake's decision on each issue, and why (issue 51): ``outlook`` answers for one issue
what ``plan`` acts on, so ``outerloop explain --issue`` explains an issue that never got
a run with the rule itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from outerloop.config import Settings, TargetSettings
from outerloop.contract import load_contract_text
from outerloop.forge.base import Association, Issue
from outerloop.kernel.actions import PostComment
from outerloop.kernel.lanes import intake
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger.state import RunRecord, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONTRACT = load_contract_text("""
benchmarks:
  - {name: tour, command: python e.py, metric: m, direction: min}
  - {name: spread, command: python e.py, metric: m, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 1, max_active_attempts: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")


def _issue(number: int, body: str = "try tour", *, author: str = "maintainer",
           association: Association = Association.OWNER, state: str = "open",
           age_h: int = 0) -> Issue:
    at = NOW - timedelta(hours=age_h)
    return Issue(number=number, title="idea", body=body, author=author,
                 author_association=association, state=state, created_at=at, updated_at=at)


def _view(*issues: Issue, state: State | None = None, hold: bool = False,
          contract_error: str | None = None, markers: dict[int, int] | None = None,
          claimed_by: dict[int, tuple[str, ...]] | None = None) -> TickView:
    seen = TargetObservation(repo=TARGET, contract=None if contract_error else CONTRACT,
                             contract_error=contract_error, default_branch="main",
                             base_sha="a" * 40, issues=list(issues),
                             claim_markers=markers or {}, claimed_by=claimed_by or {})
    settings = Settings(home=Path("/nonexistent"), targets=[TargetSettings(repo=TARGET)])
    return TickView(state=state or State(), obs=Observations(now=NOW, targets={TARGET: seen}),
                    settings=settings, hold=hold)


def _claims(view: TickView) -> list[int]:
    return [a.number for a in intake.plan(view, [])
            if isinstance(a, PostComment) and a.marker_kind == "claim"]


def test_outlook_is_claim_when_the_issue_names_one_benchmark_and_the_target_can_start() -> None:
    issue = _issue(5)
    view = _view(issue)
    decided = intake.outlook(view, TARGET, issue)
    assert (decided.kind, decided.benchmark) == ("claim", "tour") and _claims(view) == [5]


def test_outlook_names_both_benchmarks_when_the_issue_names_two() -> None:
    issue = _issue(5, "tour or spread?")
    view = _view(issue)
    decided = intake.outlook(view, TARGET, issue)
    assert decided.kind == "benchmarks" and decided.why == "it names 2 benchmarks (tour, spread)"
    assert _claims(view) == []


def test_outlook_names_the_author_and_the_label_when_the_author_has_no_standing() -> None:
    issue = _issue(5, author="rando", association=Association.NONE)
    view = _view(issue)
    decided = intake.outlook(view, TARGET, issue)
    assert decided.kind == "skipped" and "rando" in decided.why
    assert "outerloop:approved" in decided.why and _claims(view) == []


def test_outlook_says_the_target_waits_when_its_week_is_spent() -> None:
    state = State()
    ended = RunRecord(run_id="tour-old-agent-01", target=TARGET, benchmark="tour",
                      agent="agent-01", issue=1, issue_title="old", hypothesis="h",
                      queued_at=(NOW - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    ended.admitted, ended.state, ended.ending = True, "ended", "merged"
    state.runs[ended.run_id] = ended
    issue = _issue(5)
    decided = intake.outlook(_view(issue, state=state), TARGET, issue)
    assert decided.kind == "waits" and "runs_per_week" in decided.why


def test_outlook_is_the_target_skip_when_hold_exists() -> None:
    issue = _issue(5)
    decided = intake.outlook(_view(issue, hold=True), TARGET, issue)
    assert decided.kind == "target" and "HOLD" in decided.why


def test_outlook_names_the_contract_error_when_the_target_is_skipped_for_it() -> None:
    issue = _issue(5)
    view = _view(issue, contract_error="o/n:.outerloop.yaml: benchmarks: field required")
    decided = intake.outlook(view, TARGET, issue)
    assert decided.kind == "target" and "benchmarks: field required" in decided.why
    assert "contract" in decided.why and _claims(view) == []


def test_outlook_names_the_older_issue_when_one_claim_per_tick_goes_to_it() -> None:
    older, newer = _issue(4, age_h=2), _issue(5)
    view = _view(older, newer)
    decided = intake.outlook(view, TARGET, newer)
    assert decided.kind == "behind" and "#4" in decided.why and _claims(view) == [4]


def test_outlook_says_the_claims_are_spent_when_the_markers_reach_the_cap() -> None:
    issue = _issue(5)
    view = _view(issue, markers={5: 3})
    decided = intake.outlook(view, TARGET, issue)
    assert decided.kind == "skipped" and "claimed 3 time(s)" in decided.why
    assert "max_claims_per_issue" in decided.why and _claims(view) == []


def test_outlook_says_closed_when_the_forge_no_longer_lists_the_issue() -> None:
    closed = _issue(5, state="closed")
    decided = intake.outlook(_view(), TARGET, closed)
    assert (decided.kind, decided.why) == ("skipped", "it is closed")


def test_outlook_is_not_a_target_when_the_home_does_not_configure_it() -> None:
    issue = _issue(5)
    decided = intake.outlook(_view(issue), "x/y", issue)
    assert decided.kind == "target" and "not a target" in decided.why


def test_an_issue_claimed_by_a_run_the_ledger_does_not_hold_is_not_claimed_again() -> None:
    """A home restored from a backup older than the claim (issue 48 point 2): the
    forge's claim marker names a run the ledger lost, so the issue is not claimed."""
    issue = _issue(5)
    view = _view(issue, markers={5: 1}, claimed_by={5: ("tour-20261129T110000-agent-01",)})
    decided = intake.outlook(view, TARGET, issue)
    assert decided.kind == "skipped" and "tour-20261129T110000-agent-01" in decided.why
    assert "does not hold" in decided.why and _claims(view) == []
