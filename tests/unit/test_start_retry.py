"""A run's start the machine failed: the climb job waits for its workspace (the
executor's ``Effect.after`` rule), the fold counts the failure, admission backs off and
tells the issue once (``lanes/starting.py``)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from outerloop.compute.spec import JobSpec
from outerloop.config import Settings, TargetSettings
from outerloop.kernel.actions import PostComment, PrepareWorkspace, SubmitJob
from outerloop.kernel.executor import Effects, Executor
from outerloop.kernel.lanes import admission, starting, sweep
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, rebuild, tick_file
from outerloop.ledger.state import JobRecord, State
from outerloop.settings_snapshot import SNAPSHOT_VAR
from tests.unit.test_lanes import NOW, TARGET, _run, _stamp, _starts, _view

RUN = "tour-1-agent-01"


def _executor(home: Path) -> Executor:
    settings = Settings(home=home, targets=[TargetSettings(repo=TARGET)])
    return Executor(Effects(settings), lambda target: LedgerWriter(tick_file(home, target)))


def _workspace() -> PrepareWorkspace:
    return PrepareWorkspace(target=TARGET, run=RUN, base="a" * 40, branch=f"b/{RUN}")


def _climb(home: Path) -> SubmitJob:
    """A climb job naming a settings snapshot this process does not write: performed,
    it fails at once (no job is ever started by this test)."""
    spec = JobSpec(name=f"ol-{RUN}-climb", command="true", workdir=str(home),
                   log_dir=str(home / "log"), time_minutes=1,
                   env={SNAPSHOT_VAR: str(home / "not-this-snapshot.json")})
    return SubmitJob(target=TARGET, run=RUN, purpose="climb", spec=spec)


def test_climb_job_is_not_performed_when_its_workspace_failed_this_tick(
        tmp_path: Path) -> None:
    executor = _executor(tmp_path)
    assert _climb(tmp_path).after == _workspace().key
    assert not executor.run(_workspace()).ok  # no forge holds the target here
    waited = executor.run(_climb(tmp_path), done={_workspace().key})
    assert waited.waited and not waited.ok
    state = rebuild(tmp_path, use_cache=False)
    assert _climb(tmp_path).key not in state.failures  # not failed: not performed
    assert [p.key for p in state.intents.values()] == []


def test_climb_job_is_not_performed_when_its_workspace_was_never_done(
        tmp_path: Path) -> None:
    outcome = _executor(tmp_path).run(_climb(tmp_path))
    assert outcome.waited
    assert not tick_file(tmp_path, TARGET).exists()  # nothing recorded at all


def test_climb_job_is_performed_when_its_workspace_is_done_in_the_ledger(
        tmp_path: Path) -> None:
    outcome = _executor(tmp_path).run(_climb(tmp_path), done={_workspace().key})
    assert not outcome.waited and "snapshot" in (outcome.error or "")


def test_fold_counts_a_failed_start_when_the_workspace_intent_fails(tmp_path: Path) -> None:
    writer = LedgerWriter(tick_file(tmp_path, TARGET))
    writer.append(ev.RunQueued(run=RUN, target=TARGET, benchmark="tour", agent="agent-01",
                               issue=1, issue_title="t", hypothesis="h"))
    for _ in range(2):
        writer.append(ev.Intent(run=RUN, key=_workspace().key, action=_workspace()))
        writer.append(ev.Failed(run=RUN, key=_workspace().key, error="git clone failed: 502"))
    run = rebuild(tmp_path, use_cache=False).runs[RUN]
    assert run.start_failures == 2 and run.start_error == "git clone failed: 502"
    assert run.start_failed_since <= run.start_failed_at and not run.admitted


def test_start_backoff_doubles_from_ten_seconds_up_to_an_hour() -> None:
    assert [starting.retry_delay_s(n) for n in range(6)] == [0, 10, 20, 40, 80, 160]
    assert starting.retry_delay_s(9) == 2560 and starting.retry_delay_s(10) == 3600
    assert starting.retry_delay_s(10_000) == 3600


def _failed_run(ago: timedelta, failures: int = 1) -> State:
    run = _run(RUN, start_failures=failures, start_failed_since=_stamp(-ago),
               start_failed_at=_stamp(-ago), start_error="git clone failed: 502 from /srv")
    return State(runs={RUN: run})


def test_admission_waits_out_the_backoff_when_the_start_failed_moments_ago() -> None:
    state = _failed_run(timedelta(seconds=5))
    actions = _starts(admission.plan(_view(state), []))
    (post,) = actions  # no workspace, no climb job: only the issue is told
    assert isinstance(post, PostComment) and post.marker_key == f"start-delayed-{RUN}"
    assert "forge" in post.body and "/srv" not in post.body and "no claim" in post.body
    why = admission.why_waiting(_view(state), actions)[RUN]
    assert "failed 1 time(s)" in why and "502" in why and "retried after" in why


def test_admission_starts_again_when_the_backoff_has_passed() -> None:
    state = _failed_run(timedelta(seconds=11))
    kinds = [a.kind for a in _starts(admission.plan(_view(state), []))]
    assert kinds == ["post_comment", "prepare_workspace", "submit_job"]
    third = _failed_run(timedelta(seconds=30), failures=3)  # waits 40 s after the third
    assert [a.kind for a in _starts(admission.plan(_view(third), []))] == ["post_comment"]


def test_admission_tells_the_issue_once_when_the_delay_comment_is_done() -> None:
    state = _failed_run(timedelta(seconds=5))
    (post,) = _starts(admission.plan(_view(state), []))
    state.done_keys[post.key] = ev.EffectResult(comment_id=3)
    assert _starts(admission.plan(_view(state), [])) == []


def test_tick_names_a_start_that_has_failed_for_over_an_hour() -> None:
    state = _failed_run(timedelta(hours=2), failures=12)
    note = starting.stalled_note(state.runs[RUN], NOW)
    assert note is not None and f"outerloop end {RUN}" in note and "12 time(s)" in note
    assert starting.stalled_note(_failed_run(timedelta(minutes=5)).runs[RUN], NOW) is None


def _dead_nodes(ended_ago: timedelta) -> State:
    """An admitted run whose climb job and two recovery jobs all died of their nodes
    before its first leg."""
    names = [f"ol-{RUN}-climb", f"ol-{RUN}-recover-1", f"ol-{RUN}-recover-2"]
    jobs = {str(n): JobRecord(job_id=str(n), name=name, run=RUN, target=TARGET,
                              purpose="climb" if name.endswith("climb") else "recover",
                              launch=None, submitted_at=_stamp(-ended_ago), state="node_fail",
                              ended_at=_stamp(-ended_ago))
            for n, name in enumerate(names, 1)}
    run = _run(RUN, admitted=True, job_ids=list(jobs))
    return State(runs={RUN: run}, jobs=jobs)


def test_sweep_starts_again_after_a_backoff_when_nodes_keep_failing_before_the_first_leg(
        ) -> None:
    waiting = sweep.plan(_view(_dead_nodes(timedelta(seconds=5))), [])
    (post,) = waiting  # the third death waits 20 s; the issue is told, nothing released
    assert isinstance(post, PostComment) and post.marker_key == f"start-delayed-{RUN}"
    assert "node" in post.body and "release" not in post.body
    state = _dead_nodes(timedelta(seconds=25))
    state.done_keys[post.key] = ev.EffectResult(comment_id=4)
    (again,) = sweep.plan(_view(state), [])
    assert isinstance(again, SubmitJob) and again.spec.name == f"ol-{RUN}-recover-3"
