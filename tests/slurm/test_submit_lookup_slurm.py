"""Before a submit with no intent on record (a restored ledger lost it) the executor
looks the job's name up among the jobs Slurm still lists, never in the account's
accounting: a live job of that name is recorded instead of a second one; an ended job
of that name (one the ledger lost) is no reason not to submit
(``executor.LOOKED_UP_FIRST``). A job of that name another home submitted on the same
Slurm account is never taken for this home's, live or ended: run ids are a benchmark,
a second and an agent, so two homes can name a job alike (seen in the suite: a test's
ambiguous submit adopted another test's climb job, and its run ended ``aborted``)."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from outerloop.compute.base import JobSpec
from outerloop.config import Settings
from outerloop.kernel.actions import SubmitJob
from outerloop.kernel.executor import Effects, Executor
from outerloop.ledger.book import LedgerWriter, tick_file
from outerloop.vocabulary import JobPurpose
from tests.support import TARGET, make_home

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)


def _home(tmp_path: Path) -> Settings:
    return make_home(tmp_path / uuid.uuid4().hex[:8], compute="slurm")


def _submit(settings: Settings, name: str, command: str) -> str | None:
    """Submit through a fresh executor and ledger writer: no intent of an earlier submit
    is known to it (a ledger that lost it)."""
    spec = JobSpec(name=name, command=command, workdir=str(settings.home),
                   log_dir=str(settings.home / "probe" / uuid.uuid4().hex[:8]),
                   time_minutes=2)
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
    home = _home(tmp_path)
    first = _submit(home, name, "sleep 30")
    assert first is not None
    again = _submit(home, name, "sleep 30")  # a ledger without the first's intent
    assert again == first
    subprocess.run(["scancel", first], check=True)
    deadline = time.monotonic() + 60
    while _listed(first) or not _accounted(first, name):
        assert time.monotonic() < deadline, f"job {first} still listed, or not accounted"
        time.sleep(1)
    third = _submit(home, name, "true")
    assert third is not None and third != first


def test_another_homes_job_of_the_same_name_is_never_taken_for_this_homes(
        tmp_path: Path) -> None:
    from outerloop.compute.slurm import SlurmCompute

    name = f"ol-probe-{uuid.uuid4().hex[:10]}"
    their_home = _home(tmp_path)
    theirs = _submit(their_home, name, "sleep 30")
    ours_home = _home(tmp_path)
    try:
        ours = _submit(ours_home, name, "sleep 30")  # newer: a lookup by name alone finds it
        assert ours is not None and theirs is not None and ours != theirs
        compute = SlurmCompute(ours_home.compute)
        assert compute.find_by_name(name, home=their_home.home) == theirs
        subprocess.run(["scancel", ours], check=True)
        deadline = time.monotonic() + 60
        while _listed(ours) or not _accounted(ours, name):
            assert time.monotonic() < deadline, f"job {ours} still listed, or not accounted"
            time.sleep(1)
        # ours has ended: the queue holds only theirs, the accounting ours
        assert compute.find_by_name(name, live_only=True, home=ours_home.home) is None
        assert compute.find_by_name(name, home=ours_home.home) == ours
        assert compute.find_by_name(name, home=tmp_path / "no-such-home") is None
    finally:
        subprocess.run(["scancel", "-n", name], check=False)
