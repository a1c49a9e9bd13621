"""`doctor` says whether Slurm ends every process of a job (``ProctrackType``), read
from the real local Slurm's ``scontrol show config``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from outerloop.doctor.slurm import proctrack_check
from tests.slurm.test_doctor_slurm import doctor, slurm_home

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)


def _configured() -> str:
    done = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True,
                          check=True, timeout=30)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("ProctrackType"))
    return line.split("=", 1)[1].strip()


def test_doctor_warns_with_the_fix_when_slurm_tracks_processes_without_cgroups(
        tmp_path: Path) -> None:
    configured = _configured()
    check = proctrack_check()
    if configured == "proctrack/cgroup":
        assert check.status == "ok", check.line()
        return
    assert check.status == "warn"
    assert f"ProctrackType={configured}" in check.detail
    assert "ProctrackType=proctrack/cgroup" in check.fix
    done = doctor(slurm_home(tmp_path))
    line = next(ln for ln in done.stdout.splitlines() if "slurm process tracking" in ln)
    assert line.startswith("warn") and configured in line, done.stdout
