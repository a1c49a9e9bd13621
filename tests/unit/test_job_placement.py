"""Each kind of job is placed as its own `[compute.<kind>]` says, falling back to
`[compute]`, and carries the GPUs its benchmark or launch asked for."""

from __future__ import annotations

from pathlib import Path

from outerloop.compute import jobscript
from outerloop.config import Settings
from outerloop.kernel.start import resident_spec
from outerloop.run import jobs
from outerloop.settings_snapshot import SNAPSHOT_VAR

SETTINGS = Settings.model_validate({"home": Path("/h"), "compute": {
    "kind": "slurm", "partition": "cpu", "account": "lab", "gpu_type": "a100",
    "kernel": {"qos": "long", "time_minutes": 600},
    "session": {"partition": "interactive", "mem_mb": 8000},
    "launch": {"partition": "gpu", "qos": "low", "gpu_request": "gres"},
    "eval": {"partition": "gpu", "qos": "high", "constraint": "ib",
             "extra_sbatch": ["--reservation=evals"]},
}})


def test_each_job_kind_goes_where_its_section_says_when_placement_is_configured() -> None:
    kernel = resident_spec(SETTINGS, 720)
    session = jobs.attempt_spec(SETTINGS, "r1", "start", "ol-r1-climb", 120)
    launch = jobs.launch_spec(SETTINGS, "r1", "ol-r1-s1-a", "python t.py", 30, 4, 4, gpus=1)
    evals = jobs.measure_spec(SETTINGS, "r1", "ol-r1-0123456789", 60, gpus=2, nodes=2)
    assert (kernel.partition, kernel.account, kernel.qos, kernel.time_minutes) == (
        "cpu", "lab", "long", 600)
    assert "--walltime-minutes 600" in kernel.command  # hands over before the limit
    assert (session.partition, session.account, session.mem_mb) == ("interactive", "lab", 8000)
    assert SNAPSHOT_VAR in session.env
    argv = jobscript.sbatch_argv(launch, Path("/s"))
    assert "--partition=gpu" in argv and "--qos=low" in argv and "--gres=gpu:a100:1" in argv
    argv = jobscript.sbatch_argv(evals, Path("/s"))
    for flag in ("--partition=gpu", "--qos=high", "--constraint=ib", "--reservation=evals",
                 "--gpus-per-node=a100:2", "--nodes=2", "--account=lab"):
        assert flag in argv, flag
