"""LocalCompute with real processes: the same semantics as Slurm, at test speed.

Time limits are scaled with ``seconds_per_minute=1`` so ``time_minutes=1`` is one
second; jobs meant to outlive a test use 60 "minutes" and are cancelled by the
fixture.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from outerloop.compute.base import JobObservation, JobSpec, JobState
from outerloop.compute.local import LocalCompute

WAIT_S = 15.0


@pytest.fixture
def compute(tmp_path: Path) -> Iterator[LocalCompute]:
    local = LocalCompute(tmp_path / "jobs", seconds_per_minute=1.0)
    yield local
    for row in local.queue():
        local.cancel(row.job_id)
    wait_for(lambda: not local.queue(), "leftover jobs to end")


def make_spec(tmp_path: Path, name: str, command: str, **fields: Any) -> JobSpec:
    fields.setdefault("time_minutes", 60)
    return JobSpec(name=name, command=command, workdir=str(tmp_path),
                   log_dir=str(tmp_path / "logs" / name), **fields)


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def wait_state(compute: LocalCompute, job_id: str,
               done: Callable[[JobState], bool] = lambda s: s.terminal) -> JobObservation:
    wait_for(lambda: done(compute.observe([job_id])[job_id].state), f"job {job_id}")
    return compute.observe([job_id])[job_id]


def wait_file(path: Path) -> str:
    wait_for(lambda: path.exists() and path.read_text().strip() != "", str(path))
    return path.read_text().strip()


def pid_dead(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def test_submit_returns_while_job_runs_when_command_is_slow(
        compute: LocalCompute, tmp_path: Path) -> None:
    started = time.monotonic()
    job_id = compute.submit(make_spec(tmp_path, "slow", "sleep 300"))
    assert time.monotonic() - started < 1.0
    assert compute.observe([job_id])[job_id].state in (JobState.PENDING, JobState.RUNNING)
    wait_state(compute, job_id, lambda s: s == JobState.RUNNING)


@pytest.mark.parametrize("waits", [False, True], ids=["at-once", "after-its-gate"])
def test_the_runner_is_its_own_module_not_the_command_line(
        compute: LocalCompute, tmp_path: Path, waits: bool) -> None:
    """Each job's runner is one Python start: ``runner_main``, not ``outerloop job run``
    (click and the configuration on every job), whether it starts at once or after
    waiting in its gate."""
    from outerloop.compute.local_gate import RUNNER_MODULE

    first = compute.submit(make_spec(tmp_path, "first", "sleep 1" if waits else "sleep 300"))
    job_id = compute.submit(make_spec(tmp_path, "second", "sleep 300",
                                      after_any=[first])) if waits else first
    wait_state(compute, job_id, lambda s: s == JobState.RUNNING)
    pid = int(wait_file(compute.job_dir(job_id) / "runner.pid").split()[0])
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert argv[1:3] == [b"-m", RUNNER_MODULE.encode()], argv


def test_ids_start_at_ten_million_when_jobs_dir_is_new(
        compute: LocalCompute, tmp_path: Path) -> None:
    first = compute.submit(make_spec(tmp_path, "a", "true"))
    second = compute.submit(make_spec(tmp_path, "b", "true"))
    assert (int(first), int(second)) == (10_000_000, 10_000_001)


def test_exit_code_and_output_are_recorded_when_command_fails(
        compute: LocalCompute, tmp_path: Path) -> None:
    job_id = compute.submit(make_spec(tmp_path, "fails", "echo out; echo err >&2; exit 3"))
    obs = wait_state(compute, job_id)
    logs = tmp_path / "logs" / "fails"
    assert (obs.state, obs.exit_code) == (JobState.FAILED, 3)
    assert (logs / "exit_code").read_text().strip() == "3"
    assert (logs / "finished").exists()
    assert (logs / "stdout").read_text() == "out\n"
    assert (logs / "stderr").read_text() == "err\n"


def test_job_fails_with_reason_when_workdir_is_missing(
        compute: LocalCompute, tmp_path: Path) -> None:
    spec = msgspec.structs.replace(make_spec(tmp_path, "nowhere", "true"),
                                   workdir=str(tmp_path / "missing"))
    obs = wait_state(compute, compute.submit(spec))
    assert (obs.state, obs.exit_code) == (JobState.FAILED, 127)
    assert obs.reason is not None and "missing" in obs.reason
    assert (spec.log_path / "finished").exists()


def test_job_gets_only_allowlisted_environment_when_caller_holds_secrets(
        compute: LocalCompute, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTERLOOP_TEST_SECRET", "hunter2")
    spec = make_spec(tmp_path, "env", "env > env.txt", env={"FOO": "bar"})
    job_id = compute.submit(spec)
    assert wait_state(compute, job_id).state == JobState.COMPLETED
    env = dict(line.split("=", 1) for line in (tmp_path / "env.txt").read_text().splitlines()
               if "=" in line)
    assert "OUTERLOOP_TEST_SECRET" not in env
    assert env["FOO"] == "bar"
    assert env["OUTERLOOP_JOB_ID"] == job_id
    assert env["HOME"] == str(spec.log_path / "home")
    assert env["PATH"]


def _dependency_order(compute: LocalCompute, tmp_path: Path, exit_code: int) -> None:
    dep = compute.submit(make_spec(
        tmp_path, "dep", f"sleep 1; date +%s.%N > dep_end; exit {exit_code}"))
    later = compute.submit(make_spec(
        tmp_path, "later", "date +%s.%N > later_start", after_any=(dep,)))
    assert wait_state(compute, later).state == JobState.COMPLETED
    assert float((tmp_path / "later_start").read_text()) >= \
        float((tmp_path / "dep_end").read_text())


def test_dependent_starts_after_dependency_ends_when_dependency_completes(
        compute: LocalCompute, tmp_path: Path) -> None:
    _dependency_order(compute, tmp_path, 0)


def test_dependent_starts_after_dependency_ends_when_dependency_fails(
        compute: LocalCompute, tmp_path: Path) -> None:
    _dependency_order(compute, tmp_path, 1)


def test_singleton_waits_for_older_job_when_names_match(
        compute: LocalCompute, tmp_path: Path) -> None:
    compute.submit(make_spec(tmp_path, "solo", "sleep 1; date +%s.%N > first_end"))
    second = compute.submit(make_spec(
        tmp_path, "solo", "date +%s.%N > second_start", singleton=True))
    assert wait_state(compute, second).state == JobState.COMPLETED
    assert float((tmp_path / "second_start").read_text()) >= \
        float((tmp_path / "first_end").read_text())


def test_array_runs_at_most_k_tasks_at_once_when_concurrency_is_limited(
        compute: LocalCompute, tmp_path: Path) -> None:
    command = ("k=$OUTERLOOP_ARRAY_TASK_ID; date +%s.%N > t$k.start; sleep 0.6; "
               "date +%s.%N > t$k.end")
    job_id = compute.submit(make_spec(tmp_path, "sweep", command,
                                      array_size=4, array_concurrency=2))
    obs = wait_state(compute, job_id)
    assert obs.state == JobState.COMPLETED
    assert obs.tasks == {k: JobState.COMPLETED for k in range(4)}
    events = []
    for k in range(4):
        events.append((float((tmp_path / f"t{k}.start").read_text()), 1))
        events.append((float((tmp_path / f"t{k}.end").read_text()), -1))
    running, peak = 0, 0
    for _, step in sorted(events):
        running += step
        peak = max(peak, running)
    assert peak <= 2


def test_array_fails_when_one_task_fails(compute: LocalCompute, tmp_path: Path) -> None:
    job_id = compute.submit(make_spec(
        tmp_path, "mixed", '[ "$SLURM_ARRAY_TASK_ID" != 1 ] || exit 4', array_size=3))
    obs = wait_state(compute, job_id)
    assert obs.state == JobState.FAILED
    assert obs.exit_code == 4
    assert obs.tasks == {0: JobState.COMPLETED, 1: JobState.FAILED, 2: JobState.COMPLETED}


def test_one_task_is_observed_when_id_names_an_array_task(
        compute: LocalCompute, tmp_path: Path) -> None:
    job_id = compute.submit(make_spec(
        tmp_path, "pair", 'exit "$SLURM_ARRAY_TASK_ID"', array_size=2))
    wait_state(compute, job_id)
    tasks = compute.observe([f"{job_id}_0", f"{job_id}_1", f"{job_id}_7"])
    assert (tasks[f"{job_id}_0"].state, tasks[f"{job_id}_0"].exit_code) == \
        (JobState.COMPLETED, 0)
    assert (tasks[f"{job_id}_1"].state, tasks[f"{job_id}_1"].exit_code) == (JobState.FAILED, 1)
    assert tasks[f"{job_id}_7"].state == JobState.GONE


def test_only_that_task_is_cancelled_when_cancel_names_an_array_task(
        compute: LocalCompute, tmp_path: Path) -> None:
    job_id = compute.submit(make_spec(tmp_path, "pairs", "sleep 300", array_size=2))
    wait_for(lambda: compute.observe([job_id])[job_id].tasks ==
             {0: JobState.RUNNING, 1: JobState.RUNNING}, "both tasks to run")
    assert compute.cancel(f"{job_id}_1") is True
    wait_state(compute, f"{job_id}_1")
    obs = compute.observe([job_id])[job_id]
    assert obs.tasks == {0: JobState.RUNNING, 1: JobState.CANCELLED}
    assert obs.state == JobState.RUNNING


def test_job_times_out_with_its_process_group_when_past_time_limit(
        compute: LocalCompute, tmp_path: Path) -> None:
    job_id = compute.submit(make_spec(
        tmp_path, "slowpoke", "sleep 300 & echo $! > child.pid; sleep 300", time_minutes=1))
    child = int(wait_file(tmp_path / "child.pid"))
    obs = wait_state(compute, job_id)
    assert obs.state == JobState.TIMEOUT
    assert (tmp_path / "logs" / "slowpoke" / "finished").exists()
    wait_for(lambda: pid_dead(child), f"background child {child} to die")


def test_running_job_is_cancelled_when_cancel_is_requested(
        compute: LocalCompute, tmp_path: Path) -> None:
    job_id = compute.submit(make_spec(tmp_path, "victim", "echo $$ > pid; sleep 300"))
    pid = int(wait_file(tmp_path / "pid"))
    assert compute.cancel(job_id) is True
    assert wait_state(compute, job_id).state == JobState.CANCELLED
    wait_for(lambda: pid_dead(pid), f"task {pid} to die")


def test_pending_job_never_starts_when_cancelled_before_its_dependency_ends(
        compute: LocalCompute, tmp_path: Path) -> None:
    blocker = compute.submit(make_spec(tmp_path, "blocker", "sleep 300"))
    waiting = compute.submit(make_spec(tmp_path, "waiting", "touch ran", after_any=(blocker,)))
    wait_state(compute, blocker, lambda s: s == JobState.RUNNING)
    wait_for(lambda: compute.observe([waiting])[waiting].reason == "Dependency", "Dependency")
    assert compute.cancel(waiting) is True
    obs = wait_state(compute, waiting)
    assert obs.state == JobState.CANCELLED
    assert compute.observe([blocker])[blocker].state == JobState.RUNNING
    compute.cancel(blocker)
    wait_state(compute, blocker)
    assert not (tmp_path / "ran").exists()


def test_cancel_returns_true_when_job_is_finished_or_unknown(
        compute: LocalCompute, tmp_path: Path) -> None:
    job_id = compute.submit(make_spec(tmp_path, "quick", "true"))
    wait_state(compute, job_id)
    assert compute.cancel(job_id) is True
    assert compute.cancel("99999999") is True
    assert compute.observe([job_id])[job_id].state == JobState.COMPLETED


def test_observe_reports_gone_when_id_is_unknown(compute: LocalCompute) -> None:
    obs = compute.observe(["12345678", "12345678_3"])
    assert obs["12345678"].state == JobState.GONE
    assert obs["12345678_3"].state == JobState.GONE


def test_a_submit_killed_while_indexing_leaves_the_job_findable_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The submitting tick dies (here: at its first ``touch`` in the name index): a
    retry's ``find_by_name`` must find the job rather than submit a second one."""
    compute = LocalCompute(tmp_path / "jobs")

    class Killed(BaseException):
        pass

    def killed(path: Path, *args: object, **kwargs: object) -> None:
        raise Killed(str(path))

    monkeypatch.setattr(Path, "touch", killed)
    with pytest.raises(Killed):
        compute.submit(make_spec(tmp_path, "half-indexed", "true"))
    monkeypatch.undo()
    found = compute.find_by_name("half-indexed")
    assert found is not None and compute.job_dir(found).is_dir()


def test_find_by_name_returns_newest_when_names_repeat(
        compute: LocalCompute, tmp_path: Path) -> None:
    compute.submit(make_spec(tmp_path, "twice", "true"))
    newest = compute.submit(make_spec(tmp_path, "twice", "true"))
    compute.submit(make_spec(tmp_path, "other", "true"))
    assert compute.find_by_name("twice") == newest
    assert compute.find_by_name("never-submitted") is None


def test_queue_lists_only_unfinished_jobs_when_some_have_ended(
        compute: LocalCompute, tmp_path: Path) -> None:
    done = compute.submit(make_spec(tmp_path, "done", "true"))
    busy = compute.submit(make_spec(tmp_path, "busy", "sleep 300"))
    wait_state(compute, done)
    wait_state(compute, busy, lambda s: s == JobState.RUNNING)
    rows = compute.queue()
    assert [(r.job_id, r.name, r.state, r.limit) for r in rows] == \
        [(busy, "busy", JobState.RUNNING, "1:00:00")]


def test_observe_reports_node_fail_when_runner_died(
        compute: LocalCompute, tmp_path: Path) -> None:
    job_id = compute.submit(make_spec(tmp_path, "orphaned", "echo $$ > pid; sleep 300"))
    task_pid = int(wait_file(tmp_path / "pid"))
    record = compute.current_record(job_id)
    assert record is not None and record.runner_pid is not None
    os.kill(record.runner_pid, signal.SIGKILL)
    obs = wait_state(compute, job_id)
    assert obs.state == JobState.NODE_FAIL
    assert obs.reason is not None and "runner" in obs.reason
    assert compute.cancel(job_id) is True
    wait_for(lambda: pid_dead(task_pid), f"orphaned task {task_pid} to die")


def test_failed_job_is_never_written_with_the_placeholder_reason_when_it_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``state.json`` the runner writes for an ended job carries its real reason
    (observers read the file between two writes: the state must not come first)."""
    from outerloop.compute import local_runner
    from outerloop.compute.local_records import read_record, read_runner_pid, write_record

    compute = LocalCompute(tmp_path / "jobs", seconds_per_minute=1.0)
    job_id = compute.submit(make_spec(tmp_path, "fails", "exit 3", begin="now+3600"))
    job_dir = compute.job_dir(job_id)
    wait_for(lambda: read_runner_pid(job_dir) is not None, "the job's process to start")
    written = read_runner_pid(job_dir)
    assert written is not None
    os.kill(written[0], signal.SIGKILL)
    wait_for(lambda: pid_dead(written[0]), "the job's first process to die")
    record = read_record(job_dir)
    assert record is not None
    record.begin_at, record.runner_pid, record.runner_identity = None, None, None
    write_record(job_dir, record)
    written: list[tuple[str, str | None]] = []

    def spy(folder: Path, rec: Any) -> None:
        written.append((rec.state.value, rec.reason))
        write_record(folder, rec)

    monkeypatch.setattr(local_runner, "write_record", spy)
    assert local_runner.run_job(compute.jobs_dir, job_id) == 0
    ended = [(state, reason) for state, reason in written if state == "failed"]
    assert ended and all(reason not in (None, "None") for _, reason in ended), written
    assert compute.observe([job_id])[job_id].reason not in (None, "None")
