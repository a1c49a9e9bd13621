"""Slurm outages: a scheduler command that fails, hangs past ``command_timeout_s`` or
is missing from PATH makes the tick defer with a logged reason and change no run.

The premise is checked each time: the run's only job really was cancelled meanwhile,
and once Slurm answers again the next tick records that and the sweep ends the run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop.compute.base import JobSpec
from outerloop.compute.slurm import SlurmCompute
from outerloop.config import ComputeSettings
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import State
from tests.support import make_home, open_issue, state_of, tick_until

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

SLURM_TOOLS = ("squeue", "sacct", "sbatch", "scancel", "sinfo", "scontrol")


@pytest.fixture
def blocker(tmp_path: Path) -> Iterator[str]:
    """A job holding both CPUs, so the run's climb job stays pending."""
    slurm = SlurmCompute(ComputeSettings(kind="slurm"))
    spec = JobSpec(name="t-blocker", command="sleep 600", workdir=str(tmp_path),
                   log_dir=str(tmp_path / "blocker"), time_minutes=15, cpus=2)
    job_id = slurm.submit(spec)
    yield job_id
    slurm.cancel(job_id)


def fake_path(tmp_path: Path, kind: str) -> str:
    """A PATH on which the Slurm tools fail, hang, or do not exist at all."""
    fake = tmp_path / f"bin-{kind}"
    fake.mkdir()
    original = os.environ["PATH"].split(os.pathsep)
    if kind == "missing":
        for folder in original:
            for entry in Path(folder).glob("*") if Path(folder).is_dir() else []:
                target = fake / entry.name
                if entry.name not in SLURM_TOOLS and not target.exists() and \
                        os.access(entry, os.X_OK):
                    target.symlink_to(entry)
        return str(fake)
    body = ("echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1"
            if kind == "failing" else "exec sleep 30")
    for tool in SLURM_TOOLS:
        (fake / tool).write_text(f"#!/bin/sh\n{body}\n")
        (fake / tool).chmod(0o755)
    return os.pathsep.join([str(fake), *original])


def snapshot(state: State) -> tuple[object, ...]:
    runs = tuple(sorted((r.run_id, r.state, r.park_reason, r.ending, r.admitted, r.legs)
                        for r in state.runs.values()))
    jobs = tuple(sorted((j.job_id, j.state, j.exit_code) for j in state.jobs.values()))
    return runs, jobs


@pytest.mark.parametrize("kind", ["failing", "hanging", "missing"])
def test_tick_defers_and_changes_no_run_when_slurm_commands_are(
        kind: str, tmp_path: Path, blocker: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_home(tmp_path, compute="slurm")
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, lambda s: any(not j.terminal for j in s.jobs.values()),
                       timeout_s=60)
    (climb,) = [j.job_id for j in state.jobs.values() if not j.terminal]
    subprocess.run(["scancel", climb], check=True)
    before = snapshot(state_of(settings))

    with monkeypatch.context() as patched:
        patched.setenv("PATH", fake_path(tmp_path, kind))
        patched.setenv("OUTERLOOP_COMPUTE_COMMAND_TIMEOUT_S", "1")
        from outerloop.config import load_settings

        report = run_tick(load_settings(settings.home))
    assert any("compute unavailable" in note for note in report.notes), report.notes
    assert snapshot(state_of(settings)) == before

    state = tick_until(settings, lambda s: all(r.ended for r in s.runs.values()), timeout_s=60)
    assert state.jobs[climb].state == "cancelled"
    assert [r.ending for r in state.runs.values()] == ["aborted"]
