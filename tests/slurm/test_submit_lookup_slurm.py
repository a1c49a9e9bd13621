"""Before a submit with no intent on record (a restored ledger lost it) the executor
looks the job's name up among the jobs Slurm still lists, never in the account's
accounting: a live job of that name is recorded instead of a second one; an ended job
of that name (another home's, a test's, or one the ledger lost) is no reason not to
submit (``executor.LOOKED_UP_FIRST``)."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from outerloop.compute.base import JobSpec
from outerloop.kernel.actions import SubmitJob
from outerloop.kernel.executor import Effects, Executor
from outerloop.ledger.book import LedgerWriter, tick_file
from outerloop.vocabulary import JobPurpose
from tests.support import TARGET, make_home

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)


def _submit(tmp_path: Path, name: str, command: str) -> str | None:
    settings = make_home(tmp_path / uuid.uuid4().hex[:8], compute="slurm")
    spec = JobSpec(name=name, command=command, workdir=str(settings.home),
                   log_dir=str(settings.home / "probe"), time_minutes=2)
    executor = Executor(Effects(settings), lambda _t: LedgerWriter(
        tick_file(settings.home, TARGET)))
    outcome = executor.run(SubmitJob(target=TARGET, purpose=JobPurpose("probe"), spec=spec))
    assert outcome.ok, outcome.error
    return outcome.result.job_id


def _listed(job_id: str) -> bool:
    out = subprocess.run(["squeue", "--noheader", "-j", job_id, "-o", "%i"],
                         capture_output=True, text=True, check=False).stdout
    return job_id in out


def _accounted(job_id: str, name: str) -> bool:
    out = subprocess.run(["sacct", "-X", "-P", "-n", "-u", str(os.getuid()), "--name", name,
                          "-S", "now-1days", "-o", "JobID"], capture_output=True, text=True,
                         check=False).stdout
    return job_id in out.split()


def test_a_live_job_of_the_name_is_found_and_an_ended_one_is_submitted_again(
        tmp_path: Path) -> None:
    name = f"ol-probe-{uuid.uuid4().hex[:10]}"
    first = _submit(tmp_path, name, "sleep 30")
    assert first is not None
    again = _submit(tmp_path, name, "sleep 30")  # a ledger without the first's intent
    assert again == first
    subprocess.run(["scancel", first], check=True)
    deadline = time.monotonic() + 60
    while _listed(first) or not _accounted(first, name):
        assert time.monotonic() < deadline, f"job {first} still listed, or not accounted"
        time.sleep(1)
    third = _submit(tmp_path, name, "true")
    assert third is not None and third != first
