"""An ambiguous ``sbatch``: Slurm creates the job, but sbatch reports ``Socket timed
out on send/recv operation`` and exits 1 (a controller too slow to answer in time).

Every submit of the run (the tick's climb job, and the wake, launch and eval jobs its
legs submit) goes through such an sbatch. The run must still reach review with exactly
one Slurm job per job name: each ambiguous submit is found by name, never repeated.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.support import in_review, make_home, open_issue, tick_until

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

pytestmark = pytest.mark.e2e  # a whole run: the slurm-runs group

TIMED_OUT = ("sbatch: error: Batch job submission failed: Socket timed out on send/recv "
             "operation")


def timing_out_path(tmp_path: Path) -> str:
    """A PATH whose ``sbatch`` submits with the real one, then says it timed out."""
    real = shutil.which("sbatch")
    assert real is not None
    folder = tmp_path / "bin-timeout"
    folder.mkdir()
    wrapper = folder / "sbatch"
    wrapper.write_text(f"#!/bin/sh\n{real} \"$@\" >/dev/null 2>&1\n"
                       f"echo '{TIMED_OUT}' >&2\nexit 1\n")
    wrapper.chmod(0o755)
    return os.pathsep.join([str(folder), os.environ["PATH"]])


def slurm_jobs_named(prefix: str, home: Path) -> Counter[str]:
    """How many Slurm jobs (queue and accounting) of ``home`` (their working directory
    in it) carry each name starting ``prefix``. Another test's home on the same account
    may have admitted a run of the same id in the same second (seen in a full suite:
    the eval-aware attack's run), whose jobs are not this home's."""
    listed = subprocess.run(
        ["sacct", "-X", "-P", "-n", "-u", str(os.getuid()), "-S", "now-1days",
         "-o", "JobID,JobName,WorkDir"], capture_output=True, text=True, check=True).stdout
    queued = subprocess.run(["squeue", "--me", "--noheader", "-o", "%i|%j|%Z"],
                            capture_output=True, text=True, check=True).stdout
    ids: dict[str, str] = {}
    for line in (listed + queued).splitlines():
        job_id, name, workdir = [*line.strip().split("|"), "", ""][:3]
        if name.startswith(prefix) and Path(workdir).is_relative_to(home):
            ids[job_id.split("_", 1)[0]] = name
    return Counter(ids.values())


def test_each_job_exists_once_when_sbatch_times_out_after_creating_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_home(tmp_path, compute="slurm")
    monkeypatch.setenv("PATH", timing_out_path(tmp_path))
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, lambda s: in_review(s) or any(r.ended for r in
                                                               s.runs.values()),
                       timeout_s=300, pause_s=1.0)
    (run,) = state.runs.values()
    assert run.ending is None and in_review(state), (run.state, run.ending)
    names = slurm_jobs_named(f"ol-{run.run_id}-", settings.home)
    assert {"climb", "wake"} <= {n.removeprefix(f"ol-{run.run_id}-").split("-")[0]
                                 for n in names}, names
    assert [n for n, count in names.items() if count > 1] == [], names
    recorded = [j for j in state.jobs.values() if j.run == run.run_id]
    assert sorted(j.name for j in recorded) == sorted(names), (recorded, names)
