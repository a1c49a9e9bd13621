"""``SlurmCompute`` against the real local Slurm: what only Slurm does (TMPDIR on the
node, per-task accounting of arrays, requeue and preemption, sbatch refusals, one
squeue and one sacct per observation). What every backend must do (results, endings,
TERM at cancel and time limit, afterany, arrays, names, unknown ids) is the compute
contract in ``tests/integration/test_compute_contract.py``, run here and on local
compute."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from outerloop.compute import jobscript
from outerloop.compute.base import JobObservation, JobSpec, JobState
from outerloop.compute.slurm import SlurmCompute
from outerloop.config import ComputeSettings, environ

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

QOS_LOW = os.environ.get("OUTERLOOP_SLURM_QOS_LOW", "low")
QOS_HIGH = os.environ.get("OUTERLOOP_SLURM_QOS_HIGH", "high")
CHECKPOINT = "trap 'echo saved >> ckpt; exit 0' TERM; touch ready; sleep 300 & wait"


def wait_ready(spec: JobSpec, timeout_s: float = 60) -> None:
    """Until the work command has installed its TERM handler (the job may read
    running in the queue before its step has started)."""
    deadline = time.monotonic() + timeout_s
    while not (spec.work_path / "ready").exists():
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.2)
    time.sleep(1)  # past bash's own start-up: a TERM mid-fork can skip its trap


def checkpoint_of(spec: JobSpec) -> str:
    """What the command's TERM handler wrote, or every log of the job when it wrote
    nothing, so a failure says whether the step started late, never, or died."""
    ckpt = spec.work_path / "ckpt"
    if ckpt.exists():
        return ckpt.read_text()
    logs = "".join(f"--- {path.name}:\n{path.read_text(errors='replace')}"
                   for path in sorted(spec.log_path.rglob("*")) if path.is_file())
    return f"no checkpoint; the job's logs:\n{logs}"


@pytest.fixture
def slurm() -> SlurmCompute:
    return SlurmCompute(ComputeSettings(kind="slurm", command_timeout_s=30))


@pytest.fixture(autouse=True)
def _cancel_leftovers(request: pytest.FixtureRequest) -> object:
    """Cancel every job a test submitted, so the 2-CPU node is free for the next."""
    submitted: list[str] = []
    request.node.submitted = submitted
    yield
    for job_id in submitted:
        subprocess.run(["scancel", job_id], check=False, capture_output=True)


def make_spec(tmp_path: Path, name: str, command: str, time_minutes: int = 5,
              **fields: Any) -> JobSpec:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return JobSpec(name=name, command=command, workdir=str(work),
                   log_dir=str(tmp_path / "logs" / name), time_minutes=time_minutes, **fields)


def submit(slurm: SlurmCompute, request: pytest.FixtureRequest, spec: JobSpec) -> str:
    job_id = slurm.submit(spec)
    request.node.submitted.append(job_id)
    return job_id


def watch(slurm: SlurmCompute, ids: list[str], until: Callable[[dict[str, JobObservation]], bool],
          timeout_s: float = 120, every_s: float = 0.5) -> list[dict[str, JobObservation]]:
    """Observe ``ids`` until ``until`` holds; return every observation made."""
    seen = []
    deadline = time.monotonic() + timeout_s
    while True:
        now = slurm.observe(ids)
        seen.append(now)
        if until(now):
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; last: {now}")
        time.sleep(every_s)


def all_terminal(obs: dict[str, JobObservation]) -> bool:
    return all(o.state.terminal for o in obs.values())




def test_job_log_has_no_tmpdir_error_when_its_tmpdir_does_not_exist_yet(
        slurm: SlurmCompute, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    scratch = tmp_path / "logs" / "t-tmp" / "home" / "tmp"  # as a launch's: made by no one
    spec = make_spec(tmp_path, "t-tmp", 'echo "tmp=$TMPDIR"; ls -d "$TMPDIR"',
                     env={"TMPDIR": str(scratch), "HOME": str(scratch.parent)})
    job_id = submit(slurm, request, spec)
    assert watch(slurm, [job_id], all_terminal)[-1][job_id].state == JobState.COMPLETED
    slurm_log = (spec.log_path / f"slurm-{job_id}.out").read_text()
    assert "Unable to create TMPDIR" not in slurm_log and "error" not in slurm_log, slurm_log
    assert (spec.log_path / "stdout").read_text() == f"tmp={scratch}\n{scratch}\n"


def test_job_falls_back_to_the_nodes_tmp_when_the_submitters_tmpdir_cannot_be_made(
        slurm: SlurmCompute, request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("TMPDIR", str(blocked / "tmp"))  # the login node's own scratch
    spec = make_spec(tmp_path, "t-tmp2", 'echo "tmp=$TMPDIR"')
    job_id = submit(slurm, request, spec)
    assert watch(slurm, [job_id], all_terminal)[-1][job_id].state == JobState.COMPLETED
    slurm_log = (spec.log_path / f"slurm-{job_id}.out").read_text()
    assert "Unable to create TMPDIR" not in slurm_log, slurm_log
    assert (spec.log_path / "stdout").read_text() == "tmp=/tmp\n"








def test_array_runs_at_most_k_tasks_and_reads_failed_when_one_task_fails(
        slurm: SlurmCompute, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    command = ('echo "$(date +%s.%N) +1" >> ../spans; sleep 2; '
               'echo "$(date +%s.%N) -1" >> ../spans; [ "$SLURM_ARRAY_TASK_ID" != 2 ]')
    work = tmp_path / "work" / "arr"
    work.mkdir(parents=True)
    spec = msgspec.structs.replace(make_spec(tmp_path, "t-array", command, array_size=4,
                                             array_concurrency=2), workdir=str(work))
    job_id = submit(slurm, request, spec)
    seen = watch(slurm, [job_id], all_terminal)
    final = seen[-1][job_id]
    assert final.state == JobState.FAILED and final.exit_code == 1
    assert final.tasks == {0: JobState.COMPLETED, 1: JobState.COMPLETED, 2: JobState.FAILED,
                           3: JobState.COMPLETED}
    assert max(sum(s == JobState.RUNNING for s in o[job_id].tasks.values()) for o in seen) <= 2
    running, peak = 0, 0
    events = sorted(line.split() for line in (tmp_path / "work" / "spans").read_text()
                    .splitlines())
    for _, delta in events:
        running += int(delta)
        peak = max(peak, running)
    assert peak <= 2 and len(events) == 8
    for k in range(4):
        assert (spec.log_path / str(k) / "finished").exists()
    # each task's own elapsed (sacct's per-task rows); the array's is their sum
    assert sorted(final.task_elapsed_s) == [0, 1, 2, 3]
    assert all(final.task_elapsed_s[k] >= 2 for k in range(4))
    assert final.elapsed_s == sum(final.task_elapsed_s.values())




def test_requeued_job_stays_active_and_sums_both_attempts_when_requeued_while_running(
        slurm: SlurmCompute, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    job_id = submit(slurm, request, make_spec(tmp_path, "t-requeue", "sleep 6", requeue=True))
    watch(slurm, [job_id], lambda o: o[job_id].state == JobState.RUNNING and
          o[job_id].elapsed_s >= 3)
    subprocess.run(["scontrol", "requeue", job_id], check=True, capture_output=True)
    seen = watch(slurm, [job_id], all_terminal, timeout_s=180)
    assert all(not o[job_id].state.terminal for o in seen[:-1])
    assert any(o[job_id].state == JobState.PENDING for o in seen)
    final = seen[-1][job_id]
    assert final.state == JobState.COMPLETED
    assert final.elapsed_s >= 3 + 6


UNTIL_PREEMPTED_THEN_3S = ('if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then sleep 3; '
                           'else sleep 200; fi')


def test_preempted_low_qos_job_is_waited_on_and_completes_when_it_is_requeued(
        slurm: SlurmCompute, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # the first attempt runs until it is preempted, however late the high job comes
    # under load (a fixed sleep could end first); the requeued attempt sleeps 3 s
    low = submit(slurm, request, make_spec(tmp_path, "t-low", UNTIL_PREEMPTED_THEN_3S,
                                           cpus=2, qos=QOS_LOW, requeue=True))
    watch(slurm, [low], lambda o: o[low].state == JobState.RUNNING and o[low].elapsed_s >= 2)
    high = submit(slurm, request, make_spec(tmp_path, "t-high", "sleep 2", qos=QOS_HIGH))
    seen = watch(slurm, [low, high], all_terminal, timeout_s=180)
    assert all(not o[low].state.terminal for o in seen[:-1])
    assert seen[-1][high].state == JobState.COMPLETED
    assert seen[-1][low].state == JobState.COMPLETED
    # the time of every attempt counts, as accounting records each (sacct -D)
    rows = subprocess.run(["sacct", "-D", "-X", "-n", "-P", "-o", "ElapsedRaw", "-j", low],
                          check=True, capture_output=True, text=True).stdout.split()
    assert len(rows) >= 2 and seen[-1][low].elapsed_s == sum(int(r) for r in rows)
    assert seen[-1][low].elapsed_s >= 2 + 3
    assert "PREEMPTION" in "".join(p.read_text() for p in
                                   (tmp_path / "logs" / "t-low").glob("slurm-*.out"))


def test_high_qos_job_preempts_at_once_when_a_normal_job_waits_ahead_of_it(
        slurm: SlurmCompute, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """A normal-QOS job pending ahead of a high-QOS one (submitted first, as a busy
    suite's jobs are) does not hold it back: the high job preempts the low one and
    starts first. Under priority/basic (first in, first out) the normal job, which may
    not preempt, stood first and the high job read ``Priority`` for as long as the low
    job ran (deploy/local-slurm/slurm.conf.in)."""
    low = submit(slurm, request, make_spec(tmp_path, "t-low-hold", UNTIL_PREEMPTED_THEN_3S,
                                           cpus=2, qos=QOS_LOW, requeue=True))
    watch(slurm, [low], lambda o: o[low].state == JobState.RUNNING)
    normal = submit(slurm, request, make_spec(tmp_path, "t-normal", "sleep 1", cpus=2))
    watch(slurm, [normal], lambda o: o[normal].state == JobState.PENDING)
    high = submit(slurm, request, make_spec(tmp_path, "t-high-past", "sleep 1", cpus=2,
                                            qos=QOS_HIGH))
    watch(slurm, [high], lambda o: o[high].state.terminal, timeout_s=90)
    starts = {job: subprocess.run(["sacct", "-X", "-n", "-P", "-o", "Start", "-j", job],
                                  check=True, capture_output=True, text=True).stdout.split()
              for job in (normal, high)}
    assert starts[high] and starts[high][0] != "Unknown", starts
    assert starts[normal] == [] or starts[normal][0] in ("Unknown", "None") \
        or starts[normal][0] >= starts[high][0], starts


def test_preempted_job_ends_interrupted_and_checkpoints_when_it_is_not_requeued(
        slurm: SlurmCompute, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "t-low-once", CHECKPOINT, cpus=2, qos=QOS_LOW)
    spec.log_path.mkdir(parents=True)
    script = jobscript.script_path(spec)
    script.write_text(jobscript.render_script(spec, environ()))
    argv = jobscript.sbatch_argv(spec, script)
    argv.insert(2, "--no-requeue")
    low = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()
    request.node.submitted.append(low)
    wait_ready(spec)
    submit(slurm, request, make_spec(tmp_path, "t-high-once", "true", qos=QOS_HIGH))
    final = watch(slurm, [low], all_terminal)[-1][low]
    assert final.state == JobState.INTERRUPTED
    assert final.reason is not None and "infrastructure" in final.reason
    assert "saved" in checkpoint_of(spec)






def test_sbatch_refusal_carries_slurms_message_when_the_qos_does_not_exist(
        slurm: SlurmCompute, tmp_path: Path) -> None:
    from outerloop.errors import ComputeError, ComputeUnavailable

    with pytest.raises(ComputeError, match="Invalid qos specification") as caught:
        slurm.submit(make_spec(tmp_path, "t-badqos", "true", qos="nonexistent"))
    assert not isinstance(caught.value, ComputeUnavailable)


def test_observe_asks_squeue_once_and_sacct_once_when_many_jobs_are_watched(
        slurm: SlurmCompute, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    ids = [submit(slurm, request, make_spec(tmp_path, f"t-many-{i}", "true",
                                             begin="now+3600")) for i in range(12)]
    before = slurm.calls
    seen = slurm.observe([*ids, f"{ids[0]}_0", "987654"])
    assert slurm.calls - before == 2
    assert all(seen[i].state == JobState.PENDING for i in ids)
    # Slurm's own reason for a job held by --begin; its backfill pass, planning jobs
    # whose begin falls in its window, was seen to report Resources instead while
    # other jobs held the node
    assert seen[ids[0]].reason in ("BeginTime", "Resources")
