"""GPUs on the real local Slurm (four stand-in GPUs, gres ``gpu:4``): what the kernel
asks for, what jobs see, and the GPU-hours it charges, checked against sacct."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from outerloop import budgets
from outerloop.compute.base import JobState
from outerloop.compute.slurm import SlurmCompute
from outerloop.config import Settings
from outerloop.kernel.actions import SubmitJob, intent_for
from outerloop.kernel.tick import record_job_ends
from outerloop.ledger import events as ev
from outerloop.ledger.book import Book, LedgerWriter, rebuild, tick_file
from outerloop.ledger.events import EffectResult
from outerloop.run import jobs
from tests.slurm.test_slurm_compute import (  # noqa: F401 (_cancel_leftovers: autouse)
    QOS_HIGH,
    QOS_LOW,
    _cancel_leftovers,
    all_terminal,
    make_spec,
    submit,
    watch,
)

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

TARGET = "demo/gpu"


def _settings(tmp_path: Path, **compute: object) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True, mode=0o700)
    return Settings.model_validate({"home": home, "compute": {"kind": "slurm", **compute}})


def sacct_gpu_seconds(job_id: str) -> int:
    """sacct's own figure: AllocTRES gres/gpu x ElapsedRaw over every attempt (-D)."""
    out = subprocess.run(["sacct", "-j", job_id, "-D", "-X", "-n", "-P", "-o",
                          "AllocTRES,ElapsedRaw"], capture_output=True, text=True,
                         check=True).stdout
    total = 0
    for line in out.splitlines():
        tres, _, elapsed = line.partition("|")
        gpus = next((int(p.split("=")[1]) for p in tres.split(",")
                     if p.startswith("gres/gpu=")), 0)
        total += gpus * int(elapsed or 0)
    return total


def test_job_with_two_gpus_sees_two_devices_and_sacct_records_gres_gpu_2(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Any job kind asks Slurm for GPUs the same way (an eval pair job through a real
    run: tests/slurm/test_gpu_budget_run.py)."""
    settings = _settings(tmp_path)
    slurm = SlurmCompute(settings.compute)
    spec = jobs.launch_spec(settings, "gpu-run", "ol-gpu-run-s1-probe",
                            'echo "devices=$CUDA_VISIBLE_DEVICES"; sleep 3', 5, None, None,
                            gpus=2)
    spec.work_path.mkdir(parents=True)
    job = submit(slurm, request, spec)
    final = watch(slurm, [job], all_terminal, timeout_s=180)[-1][job]
    assert final.state == JobState.COMPLETED
    assert (spec.log_path / "stdout").read_text().strip() == "devices=0,1"
    tres = subprocess.run(["sacct", "-j", job, "-X", "-n", "-P", "-o", "AllocTRES"],
                          capture_output=True, text=True, check=True).stdout
    assert "gres/gpu=2" in tres
    assert final.gpu_seconds == sacct_gpu_seconds(job) >= 2 * 3


def _running_gpus(name: str) -> int:
    """GPUs held right now by this test's own running jobs (by name, for this user)."""
    out = subprocess.run(["squeue", "--me", "-r", "-h", "-n", name, "-t", "RUNNING",
                          "-o", "%b"], capture_output=True, text=True, check=True).stdout
    return sum(int(line.rsplit(":", 1)[-1]) for line in out.split() if "gpu" in line)


def test_gpu_array_never_holds_more_than_the_cap_when_max_concurrent_gpus_is_2(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings = _settings(tmp_path, cpus=1)
    slurm = SlurmCompute(settings.compute)
    name = f"ol-gpucap-{os.getpid()}-s1-sweep"
    concurrency = budgets.array_concurrency(4, gpus=1, cap=2)
    assert concurrency == 2
    spec = jobs.launch_spec(settings, "gpucap", name, "sleep 6", 5, 4, concurrency, gpus=1)
    for task in range(4):
        (spec.work_path / str(task)).mkdir(parents=True)
    job = submit(slurm, request, spec)
    samples: list[int] = []
    deadline = time.monotonic() + 240
    while True:
        samples.append(_running_gpus(name))
        if slurm.observe([job])[job].state.terminal:
            break
        assert time.monotonic() < deadline, f"array did not end; samples {samples}"
        time.sleep(0.3)
    assert max(samples) <= 2
    assert max(samples) >= 1
    assert slurm.observe([job])[job].state == JobState.COMPLETED


def test_gpu_hours_charged_equal_saccts_figures_when_a_gpu_job_was_preempted_and_requeued(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings = _settings(tmp_path)
    slurm = SlurmCompute(settings.compute)
    # the first attempt runs until it is preempted, however late the high job comes
    # under load (a fixed sleep could end first: then nothing is preempted); the
    # requeued attempt ends at once
    low_spec = make_spec(tmp_path, "t-gpu-low", 'if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; '
                         'then sleep 1; else sleep 200; fi', cpus=2, qos=QOS_LOW,
                         requeue=True, gpus=1)
    low = submit(slurm, request, low_spec)
    watch(slurm, [low], lambda o: o[low].state == JobState.RUNNING and o[low].elapsed_s >= 3,
          timeout_s=180)
    submit(slurm, request, make_spec(tmp_path, "t-gpu-high", "sleep 1", qos=QOS_HIGH))
    final = watch(slurm, [low], all_terminal, timeout_s=240)[-1][low]
    assert final.state == JobState.COMPLETED
    attempts = subprocess.run(["sacct", "-j", low, "-D", "-X", "-n", "-P", "-o", "State"],
                              capture_output=True, text=True, check=True).stdout.split()
    assert "PREEMPTED" in attempts or "REQUEUED" in attempts
    expected = sacct_gpu_seconds(low)
    assert final.gpu_seconds == expected >= 3 + 1

    # The tick charges exactly that to the job's run, in the ledger.
    home = settings.home
    writer = LedgerWriter(tick_file(home, TARGET))
    writer.append(ev.RunQueued(run="r-gpu", target=TARGET, benchmark="b", agent="agent-01"))
    writer.append(intent_for(SubmitJob(target=TARGET, run="r-gpu", purpose="launch",
                                       spec=low_spec)))
    writer.append(ev.Done(run="r-gpu", key="job:t-gpu-low", result=EffectResult(job_id=low)))
    state = rebuild(home, save_cache=False)
    assert state.jobs[low].gpus == 1
    assert record_job_ends(state, slurm.observe([low]), Book(home).writers) == 1
    state = rebuild(home, save_cache=False)
    assert state.runs["r-gpu"].gpu_seconds == expected
    assert state.jobs[low].gpu_seconds == expected


def test_job_environment_carries_pass_env_and_setup_when_it_runs_on_slurm(
        tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("UNLISTED_VAR", "must-not-pass")
    settings = _settings(tmp_path, pass_env=["HTTPS_PROXY"],
                         setup=["export FROM_SETUP=module-loaded", "cd /"])
    slurm = SlurmCompute(settings.compute)
    spec = make_spec(tmp_path, "t-env", "env; pwd")
    job = submit(slurm, request, spec)
    assert watch(slurm, [job], all_terminal)[-1][job].state == JobState.COMPLETED
    lines = (spec.log_path / "stdout").read_text().splitlines()
    assert "HTTPS_PROXY=http://proxy.example:3128" in lines
    assert "FROM_SETUP=module-loaded" in lines
    assert not any(line.startswith("UNLISTED_VAR=") for line in lines)
    assert lines[-1] == str(spec.workdir)  # the work still runs in its own directory


def test_job_fails_with_the_setup_exit_code_when_a_setup_line_fails_on_slurm(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings = _settings(tmp_path, setup=["module-that-does-not-exist load cuda"])
    slurm = SlurmCompute(settings.compute)
    spec = make_spec(tmp_path, "t-setup-bad", "echo work")
    job = submit(slurm, request, spec)
    final = watch(slurm, [job], all_terminal)[-1][job]
    assert final.state == JobState.FAILED and final.exit_code == 126
    assert "setup line 1 failed" in (spec.log_path / "stderr").read_text()
    assert not (spec.log_path / "stdout").exists()  # the work never started
