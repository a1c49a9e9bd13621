"""Hostile code in a launch or an eval, as jobs really run it: on the local runner and
on the real Slurm, the job script's child is confined (the job-side code that writes
``exit_code`` and ``finished`` stays outside, and the child cannot forge them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from outerloop.compute.base import Compute
from outerloop.compute.local import LocalCompute
from outerloop.config import ComputeSettings
from tests.local_slurm import NO_REAL_SLURM
from tests.security.fixtures import fixture, run_probe_job, skip_reason

pytestmark = pytest.mark.security


def compute_for(kind: str, tmp_path: Path) -> Compute:
    if kind == "slurm":
        if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
            pytest.skip(NO_REAL_SLURM)
        from outerloop.compute.slurm import SlurmCompute

        return SlurmCompute(ComputeSettings(kind="slurm", command_timeout_s=30))
    return LocalCompute(tmp_path / "jobs")


@pytest.mark.parametrize("compute", ["local", "slurm"])
@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_job_child_cannot_reach_home_or_forge_its_result_when_sandboxed(
        kind: str, compute: str, tmp_path: Path) -> None:
    reason = skip_reason(kind, None)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    runner = compute_for(compute, tmp_path)
    with fixture(None) as fx:
        before = fx.snapshot()
        found = run_probe_job(runner, kind, fx)
        leaked = {k: v for k, v in found["leaks"].items() if v == "ok"}
        broken = {k: v for k, v in found["controls"].items() if v != "ok"}
        assert leaked == {}, f"{kind} job on {compute} leaked: {leaked}"
        assert broken == {}, f"{kind} job on {compute} broke normal work: {broken}"
        after = fx.snapshot()
        job_files = {k for k in after if k.startswith("runs/r1/jobs/probe")
                     or k.startswith("runs/r1/trees")}
        assert {k: v for k, v in after.items() if k not in job_files} == before
