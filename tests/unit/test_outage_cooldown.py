"""Outage classification and each endpoint's latch (pure): the fold sets and lifts it,
the lanes read it (``kernel/lanes/endpoints.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from outerloop.clock import STAMP_FORMAT
from outerloop.config import Settings
from outerloop.harness.outage import classify
from outerloop.harness.probe import ProbeResult
from outerloop.kernel.actions import RecordEvent, SubmitJob
from outerloop.kernel.lanes import endpoints
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.state import EndpointLatch, JobRecord, RunRecord, State

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _at(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime(STAMP_FORMAT)


def _down(refusal: str | None, minutes_ago: float, source: str = "leg") -> EndpointLatch:
    return EndpointLatch(down=True, since=_at(minutes_ago), at=_at(minutes_ago),
                         source=source, refusal=refusal)


def test_classify_names_refusal_kind_when_status_or_message_says_so() -> None:
    assert classify(401, "invalid x-api-key") == "auth"
    assert classify(400, "Your credit balance is too low") == "credit"
    assert classify(429) == "rate_limit"
    assert classify(529, "Overloaded") == "overload"
    assert classify(None, "unexpected status 401 Unauthorized: url: http://127.0.0.1:4011/") \
        == "auth"
    assert classify(400, "messages: field required") is None


def test_account_refusal_blocks_its_endpoint_for_45_minutes_and_throttling_for_5() -> None:
    assert endpoints.blocked(_down("auth", 44), NOW)
    assert not endpoints.blocked(_down("auth", 46), NOW)
    assert endpoints.blocked(_down("overload", 4), NOW)
    assert not endpoints.blocked(_down("rate_limit", 6), NOW)
    assert endpoints.blocked(_down("overload", 60 * 26, source="probe"), NOW), \
        "a probe's down lasts until a probe answers"
    assert not endpoints.blocked(None, NOW) and not endpoints.blocked(EndpointLatch(), NOW)


def test_fold_latches_each_endpoint_apart_and_an_answered_leg_lifts_only_its_own() -> None:
    state = State()
    state.runs["r"] = RunRecord(run_id="r", target="o/r", benchmark="b", agent="agent-01",
                                issue=1, issue_title="", hypothesis="", queued_at="q")
    for event in [
            ev.EndpointDown(endpoint="west", source="probe", refusal="overload", at=_at(9)),
            ev.EndpointDown(endpoint="east", source="leg", refusal="auth", at=_at(8)),
            ev.LegStarted(leg=1, role="climb", endpoint="east", run="r", at=_at(7)),
            ev.LegEnded(leg=1, stop_reason="end_turn", run="r", at=_at(6))]:
        apply_event(state, "f", event)
    assert state.endpoints["west"].down and state.endpoints["west"].since == _at(9)
    assert not state.endpoints["east"].down, "a leg on east was answered to its end"


def _view(tmp_path: Path, state: State, probes: dict[str, ProbeResult]) -> TickView:
    settings = Settings.model_validate({
        "home": tmp_path, "harness": {"kind": "scripted", "script": "s.yaml"},
        "endpoints": {"west": {"probe": "http://127.0.0.1:9/health"},
                      "east": {}},
        "targets": [{"repo": "o/r", "agents": [{"endpoint": "west"}, {"endpoint": "east"}]}]})
    return TickView(state=state, obs=Observations(now=NOW, endpoints=probes),
                    settings=settings)


def _waiting(state: State, run_id: str, agent: str, endpoint: str) -> None:
    state.runs[run_id] = RunRecord(run_id=run_id, target="o/r", benchmark="b", agent=agent,
                                   issue=1, issue_title="", hypothesis="", queued_at=run_id,
                                   admitted=True, job_ids=[f"j-{run_id}"])
    state.jobs[f"j-{run_id}"] = JobRecord(job_id=f"j-{run_id}", name=f"{run_id}-wake-1",
                                          purpose="wake", run=run_id, target="o/r", launch=None,
                                          state="completed", submitted_at=_at(20),
                                          ended_at=_at(19))
    state.runs[run_id].endpoint_wait = ev.EndpointWait(endpoint=endpoint,
                                                       job_id=f"j-{run_id}")


def test_waiting_runs_are_retried_only_when_their_own_endpoint_may_be_used(
        tmp_path: Path) -> None:
    state = State()
    state.endpoints["west"] = _down("overload", 30, source="probe")
    state.endpoints["east"] = _down("overload", 2)
    _waiting(state, "a", "agent-01", "west")
    _waiting(state, "b", "agent-02", "east")
    still_down = endpoints.plan(_view(tmp_path, state, {
        "west": ProbeResult(False, "529", "overload")}), [])
    assert still_down == [], "no retry while both are down; west stays probe-down"
    back = endpoints.plan(_view(tmp_path, state, {"west": ProbeResult(True, "200")}), [])
    assert [type(a.event).__name__ for a in back if isinstance(a, RecordEvent)] == \
        ["EndpointUp"]
    assert [a.run for a in back if isinstance(a, SubmitJob)] == ["a"]
    state.endpoints["east"] = _down("overload", 6)  # cooled, no probe: one leg probes it
    _waiting(state, "c", "agent-04", "east")
    cooled = endpoints.plan(_view(tmp_path, state, {"west": ProbeResult(False, "x")}), [])
    assert [a.run for a in cooled if isinstance(a, SubmitJob)] == ["b"]
    report = endpoints.report(state, _view(tmp_path, state, {}).settings, NOW)
    assert report["west"]["state"] == "down" and report["west"]["waiting"] == ["a"]
    assert report["east"]["state"] == "probing"
    assert report["east"]["waiting"] == ["b", "c"]
