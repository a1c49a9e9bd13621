"""The sweep's decision when the deployment stopped a run's job (issue 23): a failing
setup line, a command that could not start, a placement the scheduler refuses. The run
waits (never ended, never released, never recovered), the issue is told once, and the
leg is tried again when the settings change or after a backoff (pure, no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from outerloop import infra
from outerloop.attempt.refusals import refusal_gist
from outerloop.config import ComputeSettings, LimitsSettings, Settings, TargetSettings
from outerloop.kernel.actions import Action, PostComment, RecordEvent, SubmitJob
from outerloop.kernel.lanes import sweep
from outerloop.kernel.lanes.machine import deployment_digest
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations
from outerloop.ledger import events as ev
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import JobRecord, RunRecord, State

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SETUP_LINE = "outerloop: [compute] setup line 1 failed: module load cuda/12.4"
BROKEN = ComputeSettings(setup=["module load cuda/12.4"])
FIXED = ComputeSettings(setup=["module load cuda/12.6"])


def _stamp(delta: timedelta = timedelta()) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _job(job_id: str, purpose: str, lc: int, *, exit_code: int = infra.SETUP_FAILED_EXIT,
         ended: timedelta = timedelta(seconds=-30), state: str = "failed") -> JobRecord:
    return JobRecord(job_id=job_id, name=f"ol-r-{purpose}-{job_id}", purpose=purpose,
                     run="r", target=TARGET, launch=None, submitted_at=_stamp(ended),
                     submitted_lc=lc, state=state, exit_code=exit_code,
                     ended_at=_stamp(ended))


def _state(*jobs: JobRecord, queued: bool = True) -> State:
    run = RunRecord(run_id="r", target=TARGET, benchmark="tour", agent="agent-01", issue=1,
                    issue_title="idea", hypothesis="h", queued_at=_stamp(),
                    state="queued" if queued else "running", admitted=True,
                    legs=0 if queued else 1, leg_open=not queued,
                    job_ids=[j.job_id for j in jobs])
    return State(runs={"r": run}, jobs={j.job_id: j for j in jobs})


def _settings(compute: ComputeSettings = BROKEN) -> Settings:
    return Settings(home=Path("/home/x"), targets=[TargetSettings(repo=TARGET)],
                    compute=compute, limits=LimitsSettings(grace_minutes=0))


def _plan(state: State, *, deployment: dict[str, str] | None = None,
          compute: ComputeSettings = BROKEN, now: datetime = NOW) -> list[Action]:
    obs = Observations(now=now, deployment=deployment or {})
    return sweep.plan(TickView(state=state, obs=obs, settings=_settings(compute)), [])


def _wait_on(state: State, job_id: str, compute: ComputeSettings = BROKEN) -> None:
    state.runs["r"].infra_wait = ev.InfraWait(
        job_id=job_id, cause=SETUP_LINE, message="m", origin="deployment",
        settings_digest=deployment_digest(_settings(compute)))
    told = PostComment(target=TARGET, run="r", number=1, body="", marker_kind="status",
                       marker_key="start-delayed-r")
    state.done_keys[told.key] = EffectResult()  # the issue was told when the wait began


def _ended(actions: list[Action]) -> bool:
    return any(isinstance(a, RecordEvent) and isinstance(a.event, ev.RunEnded)
               for a in actions)


def test_climb_stopped_by_a_setup_line_waits_quoting_it_and_tells_the_issue_once() -> None:
    actions = _plan(_state(_job("1", "climb", 1)), deployment={"1": SETUP_LINE})
    (wait,) = [a.event for a in actions if isinstance(a, RecordEvent)
               and isinstance(a.event, ev.InfraWait)]
    assert wait.origin == "deployment" and SETUP_LINE in wait.message
    assert "runs/r/jobs/ol-r-climb-1/stderr" in wait.message
    (post,) = [a for a in actions if isinstance(a, PostComment)]
    assert post.marker_key == "start-delayed-r" and "module load" not in post.body
    assert not _ended(actions) and not [a for a in actions if isinstance(a, SubmitJob)]


def test_climb_that_failed_for_no_deployment_reason_is_still_a_failed_start() -> None:
    actions = _plan(_state(_job("1", "climb", 1, exit_code=1)))
    assert _ended(actions)
    assert [a.marker_kind for a in actions if isinstance(a, PostComment)] == ["release"]


def test_wait_holds_while_the_settings_are_unchanged_and_the_backoff_runs() -> None:
    state = _state(_job("1", "climb", 1))
    _wait_on(state, "1")
    assert _plan(state) == []  # 30 s after the death: 60 s are due
    (retry,) = [a for a in _plan(state, now=NOW + timedelta(seconds=31))
                if isinstance(a, SubmitJob)]
    assert retry.purpose == "retry" and "wake" in retry.spec.command


def test_operators_fix_of_the_settings_retries_at_the_next_tick() -> None:
    state = _state(_job("1", "climb", 1))
    _wait_on(state, "1")
    actions = _plan(state, compute=FIXED)
    assert [a.purpose for a in actions if isinstance(a, SubmitJob)] == ["retry"]
    assert not [a for a in actions if isinstance(a, PostComment)]  # told once already


def test_backoff_doubles_when_the_retry_is_stopped_again() -> None:
    state = _state(_job("1", "climb", 1), _job("2", "retry", 2, ended=timedelta(seconds=-90)))
    _wait_on(state, "2")
    assert _plan(state) == []  # the second death in a row: 120 s
    assert [a.purpose for a in _plan(state, now=NOW + timedelta(seconds=31))
            if isinstance(a, SubmitJob)] == ["retry"]


def test_wake_leg_stopped_by_the_deployment_waits_instead_of_a_recovery() -> None:
    state = _state(_job("1", "climb", 1, exit_code=0, state="completed"),
                   _job("2", "wake", 2, exit_code=infra.DEPLOY_EXIT), queued=False)
    line = f"{infra.DEPLOY_PREFIX}the scheduler refuses eval job e of run r: no node"
    actions = _plan(state, deployment={"2": line})
    assert [type(a.event).__name__ for a in actions if isinstance(a, RecordEvent)] == [
        "InfraWait"]
    assert not [a for a in actions if isinstance(a, SubmitJob)]  # no recovery


def test_a_deployment_line_counts_only_with_its_own_exit_code() -> None:
    text = f"starting\n{SETUP_LINE}\n"
    assert infra.says_deployment(text, infra.SETUP_FAILED_EXIT) == SETUP_LINE
    assert infra.says_deployment(text, 1) is None  # printed by something else
    missing = "bash: line 1: /opt/venv/bin/python: No such file or directory"
    assert infra.says_deployment(f"{missing}\n", 127) == missing
    assert infra.says_deployment("", 127) is not None
    refusal = f"{infra.DEPLOY_PREFIX}the scheduler refuses eval job x"
    assert infra.says_deployment(f"noise\n{refusal}\n", infra.DEPLOY_EXIT) == refusal
    assert infra.says_deployment(f"{refusal}\n", 0) is None


def test_refusal_gist_keeps_the_kernels_words_and_drops_the_agents() -> None:
    assert refusal_gist(["Refused: no code change. The working tree equals the base."]) \
        == "Refused: no code change"
    gist = refusal_gist(["Refused: these paths are outside the scope this contract allows "
                         "(solver/): [@someone](http://x). Revert them."])
    assert gist == "Refused: these paths are outside the scope this contract allows"
    assert refusal_gist(["Your previous session was interrupted before it ended."]) == ""


CAPPED = ComputeSettings(session={"time_minutes": 1})


def test_climb_timed_out_under_a_session_cap_below_the_floor_waits_naming_it() -> None:
    """Issue 51: the job never had the time; the settings say so, not the job."""
    actions = _plan(_state(_job("1", "climb", 1, exit_code=0, state="timeout")),
                    compute=CAPPED)
    (wait,) = [a.event for a in actions if isinstance(a, RecordEvent)
               and isinstance(a.event, ev.InfraWait)]
    assert wait.origin == "deployment"
    assert "[compute.session] time_minutes = 1 is below" in wait.message
    assert not _ended(actions)


def test_wake_timed_out_under_a_session_cap_below_the_floor_waits_without_grace() -> None:
    state = _state(_job("1", "climb", 1, exit_code=0, state="completed"),
                   _job("2", "wake", 2, exit_code=0, state="timeout",
                        ended=timedelta(seconds=-1)), queued=False)
    settings = _settings(CAPPED).model_copy(update={"limits": LimitsSettings(
        grace_minutes=15)})
    view = TickView(state=state, obs=Observations(now=NOW), settings=settings)
    actions = sweep.plan(view, [])
    assert [type(a.event).__name__ for a in actions if isinstance(a, RecordEvent)] == [
        "InfraWait"]  # at once: no 15-minute grace showing "running" with no job


def test_a_timeout_with_the_session_cap_at_the_floor_is_no_deployment_wait() -> None:
    actions = _plan(_state(_job("1", "climb", 1, exit_code=0, state="timeout")),
                    compute=ComputeSettings(session={"time_minutes": 40}))
    assert not [a for a in actions if isinstance(a, RecordEvent)
                and isinstance(a.event, ev.InfraWait)]
