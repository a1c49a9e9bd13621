"""The integrator's planner (``kernel/lanes/integrate.py``): two credited pull requests
of one benchmark in review are looked at once; changing no file in common they get one
kernel ``combine`` issue, else a note on the newer one naming the files; a merged
combination closes what it superseded. Pure: typed state in, actions out (through real
ticks: tests/e2e/test_integrate.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from outerloop.config import Settings, TargetSettings
from outerloop.forge.base import Association, Issue
from outerloop.kernel.actions import Action, CloseIssue, OpenIssue, PostComment, RecordEvent
from outerloop.kernel.lanes import integrate
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import RunRecord, State, StepFailures
from outerloop.retry_rule import Cause

TARGET = "o/n"
NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
AT = "2026-12-06T10:00:00.000000Z"


def _now() -> str:
    return NOW.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _win(n: int, pr: int, paths: list[str], benchmark: str = "tour") -> RunRecord:
    run = RunRecord(run_id=f"r{n}", target=TARGET, benchmark=benchmark, agent=f"agent-0{n}",
                    issue=n, issue_title="t", hypothesis="h", queued_at=AT, admitted=True,
                    state="parked", park_reason="review", pr_number=pr)
    run.verdicts.append(ev.Verdict(seq=0, at=AT, verdict="improved",  # type: ignore[arg-type]
                                   benchmark=benchmark, baseline="7.5", candidate="6.5"))
    run.publish = ev.PublishReady(seal_sha="a" * 40, branch=f"b{n}", title="t", body="b",
                                  paths=paths)
    return run


def _plan(*runs: RunRecord, state: State | None = None) -> list[Action]:
    state = state or State()
    for run in runs:
        state.runs[run.run_id] = run
    view = TickView(state=state,
                    obs=Observations(now=NOW, targets={TARGET: TargetObservation(repo=TARGET)}),
                    settings=Settings(home=Path("/nonexistent"),
                                      targets=[TargetSettings(repo=TARGET)]))
    return integrate.plan(view, [])


def test_two_wins_changing_different_files_get_one_combine_issue() -> None:
    wins = (_win(1, 11, ["solver/tour.py"]), _win(2, 12, ["solver/__init__.py"]))
    (opened,) = _plan(*wins)
    assert isinstance(opened, OpenIssue) and opened.marker_key == "11-12"
    assert opened.title == "Combine #11 and #12 on tour"
    assert "$HOME/wins/11.patch" in opened.body and "`tour`" in opened.body
    done = State(done_keys={opened.key: EffectResult(number=20)})  # the tick after
    (recorded,) = _plan(*wins, state=done)
    assert isinstance(recorded, RecordEvent) and recorded.event == ev.CombineProposed(
        target=TARGET, prs=[11, 12], conflict=[])


def test_a_combine_issue_that_failed_is_tried_again_never_recorded_as_done() -> None:
    wins = (_win(1, 11, ["x"]), _win(2, 12, ["y"]))
    (opened,) = _plan(*wins)
    failed = State(failures={opened.key: StepFailures(count=1, cause=Cause.TRANSIENT, error="502",
                                                      first_at=_now(), last_at=_now())})
    assert _plan(*wins, state=failed) == []  # backed off: nothing recorded meanwhile


def test_wins_changing_a_file_in_common_are_said_to_conflict_on_the_newer_one() -> None:
    wins = (_win(1, 11, ["solver/tour.py", "a.py"]), _win(2, 12, ["solver/tour.py"]))
    (note,) = _plan(*wins)
    assert isinstance(note, PostComment) and note.number == 12
    assert "#11" in note.body and "they conflict, both change `solver/tour.py`" in note.body
    (recorded,) = _plan(*wins, state=State(done_keys={note.key: EffectResult(comment_id=5)}))
    assert isinstance(recorded, RecordEvent)
    assert recorded.event.conflict == ["solver/tour.py"]  # type: ignore[union-attr]


def test_a_pair_looked_at_another_benchmark_or_an_uncredited_run_is_left_alone() -> None:
    looked = State(combined={(TARGET, 11, 12): []})
    assert _plan(_win(1, 11, ["x"]), _win(2, 12, ["y"]), state=looked) == []
    assert _plan(_win(1, 11, ["x"]), _win(2, 12, ["y"], benchmark="spread")) == []
    plain = _win(2, 12, ["y"])
    plain.verdicts.clear()
    assert _plan(_win(1, 11, ["x"]), plain) == []


def test_a_merged_combination_closes_the_pull_requests_it_superseded() -> None:
    state = State(superseded={(TARGET, 11): 13})
    actions = _plan(_win(1, 11, ["x"]), state=state)
    note, close = actions
    assert isinstance(note, PostComment) and "#13, merged" in note.body and note.number == 11
    assert isinstance(close, CloseIssue) and close.pull and close.number == 11


def test_only_the_kernels_own_combine_marker_makes_a_combine_issue() -> None:
    body = "Combine them.\n\n<!-- outerloop:combine key=11-12 -->\n"

    def issue(author: str) -> Issue:
        return Issue(number=5, title="t", body=body, author=author,
                     author_association=Association.OWNER, state="open", created_at=NOW,
                     updated_at=NOW)
    assert integrate.combine_prs(issue("outerloop"), ["outerloop"]) == [11, 12]
    assert integrate.combine_prs(issue("maintainer"), ["outerloop"]) == []
