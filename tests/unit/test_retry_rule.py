"""The one rule for every step the kernel retries (``retry_rule``, issue 48): which
failures wait on a human, when a step is tried again, what the forges' refusals are."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from outerloop.clock import now, stamp
from outerloop.config import Settings
from outerloop.errors import (
    BranchMoved,
    ForgeConflict,
    ForgeError,
    ForgeForbidden,
    ForgeUnavailable,
    NotFound,
    OuterloopError,
)
from outerloop.human_waits import human_waits
from outerloop.kernel.actions import OpenPR, PostComment
from outerloop.kernel.lanes.common import step_due
from outerloop.kernel.lanes.followup import publish_head
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations
from outerloop.ledger.state import RunRecord, State, StepFailures
from outerloop.retry_rule import (
    HUMAN_RETRY_S,
    MAX_FRESH_BRANCHES,
    QUICK_TRIES,
    RETRY_FIRST_S,
    RETRY_MAX_S,
    STALE_AFTER_S,
    Cause,
    backoff_s,
    cause_of,
    needs_human,
    retry_delay_s,
)
from outerloop.settings_sections import LimitsSettings
from tests.support import TARGET


@pytest.mark.parametrize(("exc", "cause"), [
    (ForgeForbidden("403 Resource not accessible by integration"), Cause.RIGHTS),
    (BranchMoved("refusing to push: fast-forward only"), Cause.MOVED),
    (ForgeConflict("409"), Cause.CONFLICT),
    (ForgeUnavailable("502"), Cause.TRANSIENT),
    (NotFound("no issue 7"), Cause.FAILED),
    (ForgeError("422 Validation Failed"), Cause.FAILED),
    (OuterloopError("anything"), Cause.FAILED),
])
def test_a_refusal_is_classified_by_what_can_remove_it_when_caught(
        exc: Exception, cause: Cause) -> None:
    assert cause_of(exc) == cause


def test_refused_rights_a_moved_branch_and_a_conflict_wait_on_a_human_at_the_first_failure(
        ) -> None:
    for cause in (Cause.RIGHTS, Cause.MOVED, Cause.CONFLICT):
        assert needs_human(1, cause)
        assert retry_delay_s(1, cause) == HUMAN_RETRY_S


def test_an_unknown_cause_is_backed_off_then_waits_on_a_human_after_the_quick_tries() -> None:
    assert [needs_human(n, Cause.FAILED) for n in range(QUICK_TRIES + 1)] == \
        [False] * QUICK_TRIES + [True]
    assert [retry_delay_s(n, Cause.FAILED) for n in range(QUICK_TRIES)] == \
        [0.0, RETRY_FIRST_S, 2 * RETRY_FIRST_S]
    assert retry_delay_s(QUICK_TRIES, Cause.FAILED) == HUMAN_RETRY_S


def test_a_transient_cause_is_backed_off_doubling_to_the_cap_before_it_waits_on_a_human(
        ) -> None:
    delays = [retry_delay_s(n, Cause.TRANSIENT) for n in range(1, 7)]
    assert delays == [60.0, 120.0, 240.0, 480.0, 960.0, RETRY_MAX_S]
    assert not needs_human(7, Cause.TRANSIENT) and needs_human(8, Cause.TRANSIENT)


def test_backoff_is_never_a_tight_loop_nor_unbounded_when_failures_grow() -> None:
    assert backoff_s(0, 10, 3600) == 0
    assert [backoff_s(n, 10, 3600) for n in (1, 2, 3)] == [10, 20, 40]
    assert backoff_s(10_000, 10, 3600) == 3600
    assert all(retry_delay_s(n, c) >= RETRY_FIRST_S for n in range(1, 50) for c in Cause)


def test_a_recorded_cause_reads_back_and_an_old_line_reads_as_failed() -> None:
    assert Cause.recorded("rights") == Cause.RIGHTS
    assert Cause.recorded("") == Cause.FAILED
    assert Cause.recorded("a newer word") == Cause.FAILED


def _view(state: State, at_s: float = 0.0, human_retry_minutes: float = 10.0) -> TickView:
    settings = Settings(home=Path("/nonexistent"),
                        limits=LimitsSettings(human_retry_minutes=human_retry_minutes))
    return TickView(state=state, obs=Observations(now=now() + timedelta(seconds=at_s)),
                    settings=settings)


def _post() -> PostComment:
    return PostComment(target=TARGET, run="r1", number=3, body="b", marker_kind="report",
                       marker_key="r1")


def _failed(count: int, cause: Cause, ago_s: float, kind: str = "post_comment") -> StepFailures:
    at = stamp(now() - timedelta(seconds=ago_s))
    return StepFailures(count, cause, "refused", at, at, "r1", TARGET, kind)


def test_a_failed_step_is_due_again_only_after_its_delay_and_never_dropped() -> None:
    post = _post()
    state = State()
    assert step_due(_view(state), post)
    state.failures[post.key] = _failed(1, Cause.FAILED, ago_s=10)
    assert not step_due(_view(state), post)
    assert step_due(_view(state, RETRY_FIRST_S), post)
    state.failures[post.key] = _failed(50, Cause.RIGHTS, ago_s=HUMAN_RETRY_S - 5)
    assert not step_due(_view(state), post)
    assert step_due(_view(state, 10), post)  # fifty failures later: still tried
    state.done_keys[post.key] = None  # type: ignore[assignment]
    assert not step_due(_view(state, 10_000), post)


def test_a_step_waiting_on_a_human_is_tried_as_often_as_the_operator_sets_when_set() -> None:
    post = _post()
    state = State()
    state.failures[post.key] = _failed(3, Cause.RIGHTS, ago_s=40)
    assert not step_due(_view(state), post)
    assert step_due(_view(state, human_retry_minutes=0.5), post)
    (wait,) = human_waits(State(last_at=stamp(now()), failures=state.failures), None, 30.0)
    assert wait.next_try_at < stamp(now())


def test_a_wait_on_a_human_is_shown_while_tried_and_not_once_stale_or_done() -> None:
    post = _post()
    state = State(last_at=stamp(now()))
    state.failures[post.key] = _failed(1, Cause.RIGHTS, ago_s=60)
    (wait,) = human_waits(state)
    assert wait.run == "r1" and wait.cause == Cause.RIGHTS and "rights" in wait.words
    assert "token" in wait.fix
    state.failures[post.key] = _failed(2, Cause.FAILED, ago_s=60)
    assert human_waits(state) == []  # an unknown cause: not yet
    state.failures[post.key] = _failed(1, Cause.RIGHTS, ago_s=STALE_AFTER_S + 60)
    assert human_waits(state) == []  # no longer tried: superseded
    state.failures[post.key] = _failed(1, Cause.RIGHTS, ago_s=60)
    state.failures[post.key].start = True
    assert human_waits(state) == []  # a start: lanes/starting gives its own account


def _run(moved: list[str], pr_head: str | None = None) -> RunRecord:
    run = RunRecord(run_id="r1", target=TARGET, benchmark="tour", agent="a", issue=3,
                    issue_title="t", hypothesis="h", queued_at="")
    run.moved_heads, run.pr_head = moved, pr_head
    return run


def test_a_candidate_goes_to_a_fresh_branch_when_someone_moved_its_own() -> None:
    assert publish_head(_run([]), "b") == "b"
    assert publish_head(_run(["b"]), "b") == "b-2"
    assert publish_head(_run(["b"], pr_head="b-2"), "b") == "b-2"
    assert publish_head(_run(["b", "b-2"], pr_head="b-2"), "b") == "b-3"
    every = ["b", *(f"b-{n}" for n in range(2, MAX_FRESH_BRANCHES + 2))]
    assert publish_head(_run(every), "b") == every[-1]  # all moved: it waits on a human


def test_a_moved_branch_waits_on_a_human_only_once_every_fresh_branch_was_moved() -> None:
    state = State(last_at=stamp(now()))
    key = OpenPR(target=TARGET, run="r1", head="b", base="main", sha="0" * 40, source="/x",
                 title="t", body="b").key
    state.failures[key] = _failed(1, Cause.MOVED, ago_s=60, kind="open_pr")
    state.runs["r1"] = _run(["b"])
    assert human_waits(state) == []  # followup publishes on b-2 by itself
    state.runs["r1"].moved_heads = ["b", *(f"b-{n}" for n in range(2, MAX_FRESH_BRANCHES + 2))]
    assert [w.cause for w in human_waits(state)] == [Cause.MOVED]


def _fold_pr_tries(*tries: tuple[str, str, str]) -> State:
    """A run's PR tries folded: each (head, sha, "done" or a failure's cause)."""
    from outerloop.kernel.actions import intent_for
    from outerloop.ledger import events as ev
    from outerloop.ledger.book import apply_event
    from outerloop.ledger.events import EffectResult

    state = State()
    apply_event(state, "t.jsonl", ev.RunQueued(seq=1, at="2026-11-30T10:00:00.000000Z",
                                               run="r1", target=TARGET, benchmark="tour",
                                               agent="a"))
    for n, (head, sha, outcome) in enumerate(tries):
        action = OpenPR(target=TARGET, run="r1", head=head, base="main", sha=sha * 40,
                        source="/x", title="t", body="b")
        at = f"2026-11-30T11:{n:02d}:00.000000Z"
        intent = intent_for(action)
        apply_event(state, "t.jsonl", ev.Intent(seq=2 * n + 2, at=at,
                                                action=intent.action))
        result: ev.Event = ev.Done(seq=2 * n + 3, at=at, key=action.key,
                                   result=EffectResult(number=7)) if outcome == "done" \
            else ev.Failed(seq=2 * n + 3, at=at, run="r1", key=action.key, error="no",
                           cause=outcome)
        apply_event(state, "t.jsonl", result)
    return state


def test_the_fold_keeps_each_steps_failures_with_their_cause_and_drops_them_once_done(
        ) -> None:
    state = _fold_pr_tries(("b", "a", "rights"), ("b", "a", "rights"))
    (failed,) = state.failures.values()
    assert (failed.count, failed.cause, failed.kind, failed.run) == (2, Cause.RIGHTS,
                                                                     "open_pr", "r1")
    assert _fold_pr_tries(("b", "a", "rights"), ("b", "a", "done")).failures == {}


def test_the_fold_drops_a_runs_earlier_pr_tries_when_a_later_candidate_opens(
        ) -> None:
    state = _fold_pr_tries(("b", "a", "rights"), ("b", "c", "done"))
    assert state.failures == {}  # sha a's refusal is superseded: no wait left behind


def test_the_fold_remembers_a_branch_someone_moved_when_a_push_is_refused_for_it() -> None:
    state = _fold_pr_tries(("b", "a", "moved"), ("b-2", "a", "done"))
    assert state.runs["r1"].moved_heads == ["b"] and state.runs["r1"].pr_head == "b-2"
    assert _fold_pr_tries(("b", "a", "failed")).runs["r1"].moved_heads == []


def test_a_post_that_goes_through_at_last_leaves_no_failure_behind() -> None:
    from outerloop.kernel.actions import intent_for
    from outerloop.ledger import events as ev
    from outerloop.ledger.book import apply_event

    state, post = State(), _post()
    at = "2026-11-30T11:00:00.000000Z"
    for seq, event in enumerate([
            ev.Intent(at=at, action=intent_for(post).action),
            ev.Failed(at=at, run="r1", key=post.key, error="403", cause="rights"),
            ev.Intent(at=at, action=intent_for(post).action),
            ev.Done(at=at, key=post.key)], 1):
        apply_event(state, "t.jsonl", msgspec_replace(event, seq=seq))
        if seq == 2:
            assert state.failures[post.key].cause == Cause.RIGHTS
    assert state.failures == {} and post.key in state.done_keys


def msgspec_replace(event: object, **changes: object) -> object:
    import msgspec

    return msgspec.structs.replace(event, **changes)  # type: ignore[type-var]
