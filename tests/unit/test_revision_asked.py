"""A blocked candidate sent back to its agent (``revision_asked``): what the fold makes
of it, what the board shows, and what the sweep does when the revision cannot finish."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from outerloop.board import _state_label
from outerloop.kernel.actions import RecordEvent
from outerloop.kernel.lanes import sweep
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, rebuild, run_file, tick_file
from outerloop.ledger.state import PANEL_AUTHOR, JobRecord, State
from tests.unit.test_lanes import TARGET as LANE_TARGET
from tests.unit.test_lanes import _run, _stamp, _view

TARGET = "owner/name"
FINDING = ev.ReviewFinding(severity="blocking", file="solver/tour.py", line=42,
                           summary="skips the closing edge", detail="see the loop bound",
                           source="judge-1")
ADVICE = ev.ReviewFinding(severity="advisory", summary="name the constant", source="judge-1")
DRAFT = ev.PublishReady(seal_sha="c" * 40, branch="outerloop/agent-01/r1", title="t",
                        body="draft body", draft=True, findings=[FINDING])


def _asked(submission: int = 1, round_: int = 1) -> ev.RevisionAsked:
    return ev.RevisionAsked(submission=submission, round=round_, findings=[ADVICE, FINDING],
                            draft=DRAFT)


def _ledger(tmp_path: Path) -> LedgerWriter:
    LedgerWriter(tick_file(tmp_path, TARGET)).append(ev.RunQueued(
        run="r1", target=TARGET, benchmark="tour", agent="agent-01", issue=1, hypothesis="h"))
    return LedgerWriter(run_file(tmp_path, TARGET, "r1"))


def test_an_ask_makes_the_run_revising_with_the_findings_waiting_as_the_panels_feedback(
        tmp_path: Path) -> None:
    writer = _ledger(tmp_path)
    writer.append(ev.RevisionAsked(run="r1", submission=1, round=1,
                                   findings=[ADVICE, FINDING], draft=DRAFT))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert run.revising and run.revisions == 1 and run.revision is not None
    assert run.revision.draft.body == "draft body"
    entry = run.undelivered["revision-1"]
    assert entry.author == PANEL_AUTHOR and entry.kind == "review of submission 1"
    assert entry.text.startswith("[blocking] from judge-1 at solver/tour.py:42: skips the "
                                 "closing edge\nsee the loop bound\n\n[advisory]")
    assert _state_label(run, State()) == "revising: review round 1"
    for leg in (1, 2, 3):  # legs that gave nothing: the sweep publishes the draft
        writer.append(ev.LegEnded(run="r1", leg=leg, stop_reason="end_turn", progress=False))
    assert rebuild(tmp_path).runs["r1"].wakes_without_progress == 3
    writer.append(ev.PublishReady(run="r1", seal_sha="d" * 40, branch="b", title="t",
                                  body="ready"))
    run = rebuild(tmp_path).runs["r1"]
    assert not run.revising and run.revision is None and run.revisions == 1
    assert run.wakes_without_progress == 0  # so the sweep does not end it stuck next
    assert _state_label(run, State()) == "parked: publish"


def test_the_sweep_publishes_the_blocked_draft_when_the_revisions_legs_keep_dying() -> None:
    run = _run(state="running", admitted=True, job_ids=["1", "2", "3"], revision=_asked(),
               revisions=1)
    state = State(runs={run.run_id: run})
    for job_id, purpose in (("1", "wake"), ("2", "recover"), ("3", "recover")):
        state.jobs[job_id] = JobRecord(job_id, f"ol-{purpose}-{job_id}", purpose, run.run_id,
                                       LANE_TARGET, None, _stamp(), state="failed",
                                       ended_at=_stamp(-timedelta(hours=1)),
                                       submitted_lc=int(job_id))
    (action,) = sweep.plan(_view(state), [])
    assert isinstance(action, RecordEvent) and action.event == DRAFT
    run.revision = None  # not revising: the same deaths end the run
    (action,) = sweep.plan(_view(state), [])
    assert isinstance(action, RecordEvent) and isinstance(action.event, ev.RunEnded)
    assert action.event.ending == "aborted"


def test_the_sweep_publishes_the_blocked_draft_instead_of_ending_a_revision_stuck() -> None:
    run = _run(state="parked", park_reason="review", admitted=True, revision=_asked(),
               revisions=1, wakes_without_progress=3)
    state = State(runs={run.run_id: run})
    (action,) = sweep.plan(_view(state), [])
    assert isinstance(action, RecordEvent) and action.event == DRAFT
