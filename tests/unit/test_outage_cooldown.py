"""Outage classification and the admission cooldown (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from outerloop.clock import STAMP_FORMAT
from outerloop.harness.outage import classify
from outerloop.kernel.lanes.cooldown import admission_allowance
from outerloop.ledger.state import RunRecord, State

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _state(refusal: str, minutes_ago: float, *, probe_legs: int | None = None) -> State:
    state = State()
    ended = RunRecord(run_id="a", target="o/r", benchmark="b", agent="agent-01", issue=1,
                      issue_title="", hypothesis="", queued_at="x", state="ended",
                      outage=True, refusal=refusal,
                      ended_at=(NOW - timedelta(minutes=minutes_ago)).strftime(STAMP_FORMAT))
    state.runs["a"] = ended
    if probe_legs is not None:
        state.runs["b"] = RunRecord(run_id="b", target="o/r", benchmark="b", agent="agent-01",
                                    issue=1, issue_title="", hypothesis="", queued_at="y",
                                    state="running", admitted=True, legs=probe_legs)
    return state


def test_classify_names_refusal_kind_when_status_or_message_says_so() -> None:
    assert classify(401, "invalid x-api-key") == "auth"
    assert classify(400, "Your credit balance is too low") == "credit"
    assert classify(429) == "rate_limit"
    assert classify(529, "Overloaded") == "overload"
    assert classify(None, "unexpected status 401 Unauthorized: url: http://127.0.0.1:4011/") \
        == "auth"
    assert classify(400, "messages: field required") is None


def test_admission_pauses_when_account_refusal_is_under_45_minutes_old() -> None:
    assert admission_allowance(_state("auth", 44), NOW, 3) == 0
    assert admission_allowance(_state("auth", 46), NOW, 3) == 1


def test_admission_pauses_when_throttling_is_under_5_minutes_old() -> None:
    assert admission_allowance(_state("overload", 4), NOW, 3) == 0
    assert admission_allowance(_state("rate_limit", 6), NOW, 3) == 1


def test_admission_waits_for_probe_when_it_has_not_finished_its_first_leg() -> None:
    assert admission_allowance(_state("overload", 10, probe_legs=0), NOW, 3) == 0
    assert admission_allowance(_state("overload", 10, probe_legs=2), NOW, 3) == 1


def test_admission_is_unrestricted_when_outage_is_a_day_old() -> None:
    assert admission_allowance(_state("auth", 60 * 26), NOW, 3) == 3
