"""The sweep's decision when a leg job died of the machine (a full disk or quota): wait
for space, then deliver the leg again as a retry, never a recovery (pure, no I/O)."""

from __future__ import annotations

import errno
from datetime import UTC, datetime, timedelta
from pathlib import Path

from outerloop import infra
from outerloop.config import LimitsSettings, Settings, TargetSettings
from outerloop.infra import Space
from outerloop.kernel.actions import Action, RecordEvent, SubmitJob
from outerloop.kernel.lanes import sweep
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations
from outerloop.ledger import events as ev
from outerloop.ledger.state import JobRecord, RunRecord, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
RUNS = "/home/x/runs"
FULL = Space(path=RUNS, free_bytes=0, total_bytes=16 << 20, free_inodes=100,
             total_inodes=4000)
ROOMY = Space(path=RUNS, free_bytes=15 << 20, total_bytes=16 << 20, free_inodes=3000,
              total_inodes=4000)


def _stamp(delta: timedelta = timedelta()) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _job(job_id: str, purpose: str, lc: int, *, state: str = "failed",
         exit_code: int | None = infra.NO_SPACE_EXIT,
         ended: timedelta = timedelta(minutes=-5)) -> JobRecord:
    return JobRecord(job_id=job_id, name=f"ol-r-{purpose}-{job_id}", purpose=purpose,
                     run="r", target=TARGET, launch=None, submitted_at=_stamp(ended),
                     submitted_lc=lc, state=state, exit_code=exit_code, ended_at=_stamp(ended))


def _state(*jobs: JobRecord, **fields: object) -> State:
    run = RunRecord(run_id="r", target=TARGET, benchmark="tour", agent="agent-01", issue=1,
                    issue_title="idea", hypothesis="h", queued_at=_stamp(), state="running",
                    admitted=True, legs=1, leg_open=True, job_ids=[j.job_id for j in jobs])
    for key, value in fields.items():
        setattr(run, key, value)
    return State(runs={"r": run}, jobs={j.job_id: j for j in jobs})


def _plan(state: State, space: Space = FULL, no_space: dict[str, str] | None = None,
          now: datetime = NOW) -> list[Action]:
    obs = Observations(now=now, space=[space], no_space=no_space or {})
    settings = Settings(home=Path("/home/x"), targets=[TargetSettings(repo=TARGET)],
                        limits=LimitsSettings(grace_minutes=0))
    return sweep.plan(TickView(state=state, obs=obs, settings=settings), [])


def _waits(actions: list[Action]) -> list[ev.InfraWait]:
    return [a.event for a in actions if isinstance(a, RecordEvent)
            and isinstance(a.event, ev.InfraWait)]


def _submits(actions: list[Action]) -> list[SubmitJob]:
    return [a for a in actions if isinstance(a, SubmitJob)]


def _wait_on(state: State, job_id: str) -> None:
    state.runs["r"].infra_wait = ev.InfraWait(job_id=job_id, cause="exited 75",
                                              paths=[RUNS], message="m")


def test_sweep_waits_and_names_the_full_path_when_the_leg_job_exited_no_space() -> None:
    state = _state(_job("1", "climb", 1), _job("2", "recover", 2), _job("3", "recover", 3))
    actions = _plan(state)  # both recoveries spent: an ordinary death would abort now
    (wait,) = _waits(actions)
    assert wait.job_id == "3" and RUNS in wait.message and "fix: free space" in wait.message
    assert [RUNS in p for p in wait.paths] == [True]
    assert actions == [a for a in actions if isinstance(a, RecordEvent)]  # no job, no end
    assert not any(isinstance(a.event, ev.RunEnded) for a in actions
                   if isinstance(a, RecordEvent))


def test_sweep_delivers_nothing_while_space_stays_short_when_the_wait_is_recorded() -> None:
    state = _state(_job("1", "climb", 1))
    _wait_on(state, "1")
    assert _plan(state) == []
    assert state.machine_wait(state.runs["r"]) is not None


def test_sweep_retries_and_ends_the_wait_when_space_is_back() -> None:
    state = _state(_job("1", "climb", 1))
    _wait_on(state, "1")
    (retry,) = _plan(state, ROOMY)
    assert isinstance(retry, SubmitJob) and retry.purpose == "retry"
    assert retry.spec.name == "ol-r-retry-1" and "wake" in retry.spec.command
    state.jobs["9"] = _job("9", "retry", 9, state="pending", exit_code=None)
    state.runs["r"].job_ids.append("9")
    assert state.machine_wait(state.runs["r"]) is None  # a retry registered ends it


def test_sweep_records_the_wait_and_retries_at_once_when_space_is_already_back() -> None:
    actions = _plan(_state(_job("1", "wake", 1)), ROOMY)  # a quota: statvfs sees room
    assert len(_waits(actions)) == 1 and "quota" in _waits(actions)[0].message
    assert [s.purpose for s in _submits(actions)] == ["retry"]


def test_sweep_backs_off_when_the_retry_died_of_no_space_again() -> None:
    state = _state(_job("1", "climb", 1), _job("2", "retry", 2, ended=timedelta(seconds=-30)))
    _wait_on(state, "2")
    assert _plan(state, ROOMY) == []  # 30 s after the second death: 60 s are due
    later = _plan(state, ROOMY, now=NOW + timedelta(seconds=31))
    assert [s.spec.name for s in _submits(later)] == ["ol-r-retry-2"]


def test_sweep_waits_when_the_leg_jobs_stderr_says_no_space() -> None:
    state = _state(_job("1", "climb", 1, exit_code=1))
    words = "OSError: [Errno 28] No space left on device: 'legs/001.json'"
    (wait,) = _waits(_plan(state, ROOMY, no_space={"1": words}))
    assert words in wait.cause


def test_sweep_waits_when_the_leg_job_failed_while_a_filesystem_is_full() -> None:
    (wait,) = _waits(_plan(_state(_job("1", "climb", 1, exit_code=120))))
    assert "while a filesystem it writes is full" in wait.cause


def test_sweep_recovers_as_before_when_nothing_points_at_the_machine() -> None:
    (recover,) = _plan(_state(_job("1", "climb", 1, exit_code=1)), ROOMY)
    assert isinstance(recover, SubmitJob) and recover.purpose == "recover"
    state = _state(_job("1", "climb", 1, exit_code=1), _job("2", "recover", 2, exit_code=1),
                   _job("3", "recover", 3, exit_code=1))
    (end,) = _plan(state, ROOMY)
    assert isinstance(end, RecordEvent) and isinstance(end.event, ev.RunEnded)


def test_sweep_does_not_count_retries_against_recoveries_when_a_later_death_is_ordinary(
        ) -> None:
    state = _state(_job("1", "climb", 1), _job("2", "retry", 2), _job("3", "retry", 3),
                   _job("4", "retry", 4, exit_code=1))
    (recover,) = _plan(state, ROOMY)
    assert isinstance(recover, SubmitJob) and recover.purpose == "recover"


def test_sweep_waits_instead_of_redelivering_the_wake_when_a_parked_runs_wake_died() -> None:
    state = _state(_job("1", "climb", 1, state="completed", exit_code=0),
                   _job("2", "wake", 2), state="parked", park_reason="jobs", leg_open=False)
    actions = _plan(state)
    assert len(_waits(actions)) == 1 and _submits(actions) == []


def test_shortage_names_the_path_when_less_than_the_floor_is_free() -> None:
    assert infra.shortage(ROOMY) is None
    short = infra.shortage(FULL)
    assert short is not None and short.startswith(RUNS) and "needs 0.8 MiB" in short
    big = Space(path="/big", free_bytes=2 << 30, total_bytes=100 << 40, free_inodes=10**6,
                total_inodes=10**9)
    assert infra.shortage(big) is None  # 1 GiB is enough however large the disk
    inodes = Space(path="/i", free_bytes=15 << 20, total_bytes=16 << 20, free_inodes=3,
                   total_inodes=4000)
    assert "inodes" in (infra.shortage(inodes) or "")
    assert "unknown" in (infra.shortage(Space(path="/gone", error="ENOENT")) or "")


def test_retry_backoff_doubles_to_an_hour_when_deaths_repeat() -> None:
    assert [infra.retry_after_s(n) for n in (1, 2, 3, 4)] == [0.0, 60.0, 120.0, 240.0]
    assert infra.retry_after_s(50) == infra.RETRY_MAX_S


def test_no_space_error_is_found_when_wrapped_in_another_error() -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    try:
        try:
            raise full
        except OSError as exc:
            raise RuntimeError("saving the transcript failed") from exc
    except RuntimeError as outer:
        assert infra.no_space_error(outer) is full
    assert infra.no_space_error(OSError(errno.EACCES, "Permission denied")) is None
    assert infra.no_space_error(OSError(errno.EDQUOT, "Disk quota exceeded")) is not None


def test_says_no_space_reads_the_last_such_line_when_stderr_has_one() -> None:
    text = "step 1\nfatal: write error: No space left on device\nbye\n"
    assert infra.says_no_space(text) == "fatal: write error: No space left on device"
    assert infra.says_no_space("cp: Disk quota exceeded") == "cp: Disk quota exceeded"
    node = "Error: ENOSPC: no space left on device, write"
    assert infra.says_no_space(f"{node}\n    at writeSync (fs.js:1)\n") == node  # any case
    assert infra.says_no_space("all fine\n") is None


def test_sweep_starts_again_without_a_release_when_the_climb_job_died_of_no_space() -> None:
    state = _state(_job("1", "climb", 1), state="queued", legs=0, leg_open=False)
    actions = _plan(state)
    (again,) = _submits(actions)
    assert again.purpose == "recover"
    assert not any(isinstance(a, RecordEvent) and isinstance(a.event, ev.RunEnded)
                   for a in actions)
    assert not any(getattr(a, "marker_kind", "") == "release" for a in actions)


def test_sweep_tells_the_issue_the_start_waits_for_space_when_the_climb_died_twice() -> None:
    state = _state(_job("1", "climb", 1, ended=timedelta(hours=-2)),
                   _job("2", "recover", 2, ended=timedelta(hours=-1)),
                   state="queued", legs=0, leg_open=False)
    bodies = [str(getattr(a, "body", "")) for a in _plan(state)]
    assert any("disk or quota" in b and "no claim" in b for b in bodies)
