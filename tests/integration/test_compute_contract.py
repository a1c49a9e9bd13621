"""The compute contract, run against every backend from one suite: local compute (real
processes on this machine) started fresh (``exec``) and forked from a warm interpreter
(``fork``, what the behaviour tests use), and the real Slurm
(``deploy/local-slurm/start.sh``).

What the kernel relies on from any backend: a job's result files (``stdout``,
``stderr``, ``exit_code``, ``finished``) in its log dir, its ending read as the same
state on both, TERM reaching the work before the job ends at cancel and at its time
limit, ``afterany`` waking a job after one that failed, arrays bounded by their
concurrency, names found newest first, unknown ids read ``gone``, cancel safe to retry.
Backend-only behaviour (requeue, preemption, TMPDIR, sbatch refusals; the local
runner's own records) stays in ``tests/slurm/test_slurm_compute.py`` and
``tests/integration/test_local_compute.py``.

Local time limits are scaled (``seconds_per_minute``) so a one-minute job limit takes
seconds there and a minute on Slurm.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from outerloop.compute.base import Compute, JobObservation, JobSpec, JobState
from outerloop.compute.local import LocalCompute
from outerloop.compute.slurm import SlurmCompute
from outerloop.config import ComputeSettings
from tests.local_slurm import NO_REAL_SLURM

CHECKPOINT = "trap 'echo saved >> ckpt; exit 0' TERM; touch ready; sleep 300 & wait"
"""A command that checkpoints when TERM reaches it, and says when its handler is set."""


@dataclass
class Backend:
    """One compute under test, the length of its job minute, and what it submitted."""
    compute: Compute
    minute_s: float
    submitted: list[str] = field(default_factory=list)

    def submit(self, spec: JobSpec) -> str:
        job_id = self.compute.submit(spec)
        self.submitted.append(job_id)
        return job_id

    def watch(self, ids: list[str], until: Callable[[dict[str, JobObservation]], bool],
              timeout_s: float = 120) -> list[dict[str, JobObservation]]:
        """Observe ``ids`` until ``until`` holds; every observation made."""
        seen = []
        deadline = time.monotonic() + timeout_s
        while True:
            now = self.compute.observe(ids)
            seen.append(now)
            if until(now):
                return seen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; last: {now}")
            time.sleep(0.3)

    def final(self, job_id: str, timeout_s: float = 120) -> JobObservation:
        return self.watch([job_id], all_terminal, timeout_s)[-1][job_id]


def all_terminal(obs: dict[str, JobObservation]) -> bool:
    return all(o.state.terminal for o in obs.values())


@pytest.fixture(params=["local", "fork", "slurm"])
def compute(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "slurm":
        if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
            pytest.skip(NO_REAL_SLURM)
        backend = Backend(SlurmCompute(ComputeSettings(kind="slurm", command_timeout_s=30)),
                          minute_s=60.0)
    else:
        start = "fork" if request.param == "fork" else "exec"
        backend = Backend(LocalCompute(tmp_path / "jobs", seconds_per_minute=4.0,
                                       settings=ComputeSettings(local_start=start)),
                          minute_s=4.0)
    yield backend
    for job_id in backend.submitted:
        backend.compute.cancel(job_id)
    if request.param == "slurm":
        for job_id in backend.submitted:  # the 2-CPU node is free for the next test
            subprocess.run(["scancel", job_id], check=False, capture_output=True)


def make_spec(tmp_path: Path, name: str, command: str, **fields: Any) -> JobSpec:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    fields.setdefault("time_minutes", 30)
    return JobSpec(name=name, command=command, workdir=str(work),
                   log_dir=str(tmp_path / "logs" / name), **fields)


def wait_ready(spec: JobSpec, timeout_s: float = 60) -> None:
    """Until the work command has installed its TERM handler."""
    deadline = time.monotonic() + timeout_s
    while not (spec.work_path / "ready").exists():
        assert time.monotonic() < deadline, f"the step never started; {logs_of(spec)}"
        time.sleep(0.1)
    time.sleep(1)  # past bash's own start-up: a TERM mid-fork can skip its trap


def logs_of(spec: JobSpec) -> str:
    """Every file the job wrote to its log dir, for a failure message."""
    return "the job's logs:\n" + "".join(
        f"--- {path.name}:\n{path.read_text(errors='replace')}"
        for path in sorted(spec.log_path.rglob("*")) if path.is_file())


def checkpoint_of(spec: JobSpec) -> str:
    """What the command's TERM handler wrote, or the job's logs when it wrote nothing."""
    ckpt = spec.work_path / "ckpt"
    return ckpt.read_text() if ckpt.exists() else f"no checkpoint; {logs_of(spec)}"


def test_job_completes_with_its_output_and_result_files_when_it_exits_zero(
        compute: Backend, tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "c-ok", "echo out; echo err >&2; sleep 2")
    seen = compute.watch([job_id := compute.submit(spec)], all_terminal)
    states = [o[job_id].state for o in seen]
    # UNKNOWN: a busy slurmdbd can record the end a moment after squeue forgets the job
    assert set(states) <= {JobState.PENDING, JobState.RUNNING, JobState.COMPLETING,
                           JobState.UNKNOWN, JobState.COMPLETED}
    final = seen[-1][job_id]
    assert (final.state, final.exit_code) == (JobState.COMPLETED, 0)
    assert final.elapsed_s >= 2
    assert (spec.log_path / "stdout").read_text() == "out\n"
    assert "err" in (spec.log_path / "stderr").read_text()
    assert (spec.log_path / "exit_code").read_text().strip() == "0"
    assert (spec.log_path / "finished").exists()


def test_job_reads_failed_with_its_exit_code_when_the_command_exits_nonzero(
        compute: Backend, tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "c-fail", "echo out; exit 3")
    final = compute.final(compute.submit(spec))
    assert (final.state, final.exit_code) == (JobState.FAILED, 3)
    assert (spec.log_path / "exit_code").read_text().strip() == "3"
    assert (spec.log_path / "stdout").read_text() == "out\n"


def test_job_fails_with_127_when_its_workdir_is_missing(
        compute: Backend, tmp_path: Path) -> None:
    spec = msgspec.structs.replace(make_spec(tmp_path, "c-nowhere", "true"),
                                   workdir=str(tmp_path / "missing"))
    final = compute.final(compute.submit(spec))
    assert (final.state, final.exit_code) == (JobState.FAILED, 127)
    assert (spec.log_path / "exit_code").read_text().strip() == "127"


def test_job_sees_only_allowlisted_variables_when_the_submitter_holds_secrets(
        compute: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTERLOOP_TEST_SECRET", "hunter2")
    spec = make_spec(tmp_path, "c-env", "env > env.txt", env={"FOO": "bar"})
    job_id = compute.submit(spec)
    assert compute.final(job_id).state == JobState.COMPLETED
    env = dict(line.split("=", 1) for line in
               (spec.work_path / "env.txt").read_text().splitlines() if "=" in line)
    assert "OUTERLOOP_TEST_SECRET" not in env
    assert env["FOO"] == "bar"
    assert env["OUTERLOOP_JOB_ID"] == job_id
    assert env["HOME"] == str(spec.log_path / "home")


def test_cancel_sends_term_that_the_work_catches_before_the_job_ends_cancelled(
        compute: Backend, tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "c-cancel", CHECKPOINT)
    job_id = compute.submit(spec)
    wait_ready(spec)
    assert compute.compute.cancel(job_id) is True
    assert compute.final(job_id).state == JobState.CANCELLED
    assert "saved" in checkpoint_of(spec)
    assert compute.compute.cancel(job_id) is True  # safe to retry


def test_job_reads_timeout_and_gets_term_first_when_it_reaches_its_time_limit(
        compute: Backend, tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "c-limit", CHECKPOINT, time_minutes=1)
    job_id = compute.submit(spec)
    wait_ready(spec, timeout_s=compute.minute_s * 0.8)  # the handler is set before the limit
    final = compute.final(job_id, timeout_s=compute.minute_s * 2.5)
    assert final.state == JobState.TIMEOUT
    assert final.elapsed_s >= compute.minute_s * 0.9
    assert "saved" in checkpoint_of(spec)


def test_afterany_job_waits_then_runs_when_the_job_it_waits_for_failed(
        compute: Backend, tmp_path: Path) -> None:
    failing = compute.submit(make_spec(tmp_path, "c-exp", "sleep 2; date +%s.%N > end; exit 1"))
    wake = compute.submit(make_spec(tmp_path, "c-wake", "date +%s.%N > start; echo woke",
                                    after_any=(failing,)))
    seen = compute.watch([failing, wake], all_terminal)
    assert all(o[wake].state == JobState.PENDING for o in seen
               if o[failing].state == JobState.RUNNING)
    assert seen[-1][failing].state == JobState.FAILED
    assert seen[-1][wake].state == JobState.COMPLETED
    work = tmp_path / "work"
    assert float((work / "start").read_text()) >= float((work / "end").read_text())
    assert (tmp_path / "logs" / "c-wake" / "stdout").read_text() == "woke\n"


def test_array_runs_at_most_k_tasks_and_reads_failed_when_one_task_fails(
        compute: Backend, tmp_path: Path) -> None:
    command = ('echo "$(date +%s.%N) +1" >> ../spans; sleep 2; '
               'echo "$(date +%s.%N) -1" >> ../spans; '
               '[ "${SLURM_ARRAY_TASK_ID:-$OUTERLOOP_ARRAY_TASK_ID}" != 2 ]')
    work = tmp_path / "work" / "arr"
    work.mkdir(parents=True)
    spec = msgspec.structs.replace(make_spec(tmp_path, "c-array", command, array_size=4,
                                             array_concurrency=2), workdir=str(work))
    final = compute.final(compute.submit(spec))
    assert (final.state, final.exit_code) == (JobState.FAILED, 1)
    assert final.tasks == {0: JobState.COMPLETED, 1: JobState.COMPLETED, 2: JobState.FAILED,
                           3: JobState.COMPLETED}
    running, peak = 0, 0
    events = sorted(line.split() for line in (tmp_path / "work" / "spans").read_text()
                    .splitlines())
    for _, delta in events:
        running += int(delta)
        peak = max(peak, running)
    assert peak <= 2 and len(events) == 8
    assert all((spec.log_path / str(k) / "finished").exists() for k in range(4))


def test_find_by_name_returns_the_newest_job_when_two_share_a_name(
        compute: Backend, tmp_path: Path) -> None:
    first = compute.submit(make_spec(tmp_path, "c-same", "true"))
    second = compute.submit(make_spec(tmp_path, "c-same", "true"))
    assert compute.compute.find_by_name("c-same") == second != first
    assert compute.compute.find_by_name("c-never-submitted-xyz") is None


def test_unknown_id_reads_gone_and_cancelling_it_is_safe(compute: Backend) -> None:
    assert compute.compute.observe(["987654"])["987654"].state == JobState.GONE
    assert compute.compute.cancel("987654") is True
