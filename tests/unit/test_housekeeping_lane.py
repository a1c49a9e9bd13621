"""Housekeeping as a pure planner: archive jobs for ended runs, retries, pruning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from outerloop.config import ArchiveSettings, Settings, TargetSettings, load_settings
from outerloop.errors import ConfigError
from outerloop.kernel.actions import CancelJob, CleanWorkspace, PruneJobs, SubmitJob
from outerloop.kernel.lanes import housekeeping, sweep
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations
from outerloop.ledger import events as ev
from outerloop.ledger.state import JobRecord, RunRecord, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _stamp(delta: timedelta = timedelta()) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _view(state: State, archive: ArchiveSettings | None = None) -> TickView:
    settings = Settings(home=Path("/home/h"), targets=[TargetSettings(repo=TARGET)],
                        archive=archive or ArchiveSettings())
    return TickView(state=state, obs=Observations(now=NOW, jobs={}, targets={}),
                    settings=settings)


ARCHIVE = ArchiveSettings(to="s3://bucket/outerloop", after_days=7)


def _ended(run_id: str = "tour-1-agent-01", days_ago: float = 8) -> RunRecord:
    return RunRecord(run_id=run_id, target=TARGET, benchmark="tour", agent="agent-01",
                     issue=None, issue_title="", hypothesis="", queued_at=_stamp(),
                     state="ended", ending="negative-result",
                     ended_at=_stamp(-timedelta(days=days_ago)), cleaned=True)


def _state(*runs: RunRecord) -> State:
    return State(runs={r.run_id: r for r in runs})


def _job(job_id: str, run: RunRecord, state: str, purpose: str = "archive",
         ended: timedelta | None = None) -> JobRecord:
    return JobRecord(job_id=job_id, name=f"ol-{run.run_id}-x", purpose=purpose, run=run.run_id,
                     target=TARGET, launch=None, submitted_at=_stamp(), state=state,
                     ended_at=_stamp(ended) if ended is not None else None)


def test_archive_job_is_planned_when_a_run_ended_longer_ago_than_after_days() -> None:
    run = _ended()
    (action,) = housekeeping.plan(_view(_state(run), ARCHIVE), [])
    assert isinstance(action, SubmitJob) and action.purpose == "archive"
    assert action.spec.name == f"ol-{run.run_id}-archive-1" and action.spec.gpus == 0
    assert "archive run" in action.spec.command and "--target o/n" in action.spec.command
    assert "secret" not in action.spec.command and action.spec.env == {}
    assert str(action.spec.log_dir).startswith("/home/h/archive/jobs/")


def test_nothing_is_archived_when_the_run_ended_recently_or_no_archive_is_set() -> None:
    assert housekeeping.plan(_view(_state(_ended(days_ago=6)), ARCHIVE), []) == []
    assert not any(isinstance(a, SubmitJob)
                   for a in housekeeping.plan(_view(_state(_ended())), []))


def test_nothing_is_archived_when_a_job_of_the_run_is_still_live() -> None:
    run = _ended()
    state = _state(run)
    state.jobs["7"] = _job("7", run, "running", purpose="launch")
    run.job_ids.append("7")
    assert housekeeping.plan(_view(state, ARCHIVE), []) == []


def test_a_failed_archive_is_retried_with_a_new_job_when_the_last_one_ended() -> None:
    run = _ended()
    state = _state(run)
    run.archive_jobs.append("8")
    state.jobs["8"] = _job("8", run, "running")
    assert housekeeping.plan(_view(state, ARCHIVE), []) == []
    state.jobs["8"].state = "failed"
    (action,) = housekeeping.plan(_view(state, ARCHIVE), [])
    assert action.spec.name.endswith("-archive-2")


def test_retries_slow_down_when_three_attempts_failed() -> None:
    run = _ended()
    state = _state(run)
    for n in ("1", "2", "3"):
        run.archive_jobs.append(n)
        state.jobs[n] = _job(n, run, "failed", ended=-timedelta(hours=1))
    assert housekeeping.plan(_view(state, ARCHIVE), []) == []
    state.jobs["3"].ended_at = _stamp(-timedelta(hours=7))
    (action,) = housekeeping.plan(_view(state, ARCHIVE), [])
    assert action.spec.name.endswith("-archive-4")


def test_an_archived_run_is_neither_archived_again_nor_cleaned() -> None:
    run = _ended()
    run.cleaned = False
    run.archive = ev.Archived(seq=0, at=run.ended_at or "", run=run.run_id,
                              where="s3://bucket/outerloop/o__n/r/", files=[])
    assert housekeeping.plan(_view(_state(run), ARCHIVE), []) == []


def test_archive_jobs_in_flight_are_capped_when_many_runs_are_due() -> None:
    runs = [_ended(f"tour-{n}-agent-01") for n in range(6)]
    actions = housekeeping.plan(_view(_state(*runs), ARCHIVE), [])
    assert len(actions) == housekeeping.MAX_LIVE_ARCHIVES


def test_jobs_dirs_are_pruned_after_retention_when_no_archive_is_set() -> None:
    old, recent = _ended("tour-1-agent-01", days_ago=31), _ended("tour-2-agent-01", days_ago=3)
    actions = housekeeping.plan(_view(_state(old, recent)), [])
    assert actions == [PruneJobs(target=TARGET, run=old.run_id)]
    old.pruned = True
    assert housekeeping.plan(_view(_state(old, recent)), []) == []


def test_workspace_clean_still_comes_first_when_a_run_ended_a_day_ago() -> None:
    run = _ended(days_ago=2)
    run.cleaned = False
    assert housekeeping.plan(_view(_state(run)), []) == [
        CleanWorkspace(target=TARGET, run=run.run_id)]


def test_sweep_leaves_an_ended_runs_archive_job_running_when_it_cancels_the_rest() -> None:
    run = _ended()
    state = _state(run)
    state.jobs["5"] = _job("5", run, "running")
    state.jobs["6"] = _job("6", run, "running", purpose="launch")
    actions = sweep.plan(_view(state), [])
    assert [a.job_id for a in actions if isinstance(a, CancelJob)] == ["6"]


@pytest.mark.parametrize("to", ["s3://B/x", "http://bucket", "-remote:x", "s3://b x/y",
                                "remote:a;b"])
def test_archive_destination_is_refused_with_the_setting_named_when_malformed(
        tmp_path: Path, to: str) -> None:
    (tmp_path / "outerloop.toml").write_text(f'[archive]\nto = "{to}"\n')
    tmp_path.chmod(0o755)
    with pytest.raises(ConfigError, match=r"archive\.to"):
        load_settings(tmp_path)
