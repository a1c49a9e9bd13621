"""On a real Slurm, the agent's live ``queue`` shows a sibling's job submitted after the
leg started, with Slurm's own pending reason, its GPUs, and the lane load from sinfo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.attempt.channel import install_channel
from outerloop.attempt.live import watcher_for
from outerloop.compute.base import JobSpec
from outerloop.kernel.actions import SubmitJob
from outerloop.kernel.executor import Effects, Executor
from outerloop.ledger import events as ev
from outerloop.ledger import store
from tests.support import TARGET, make_home

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

PARTITION = os.environ.get("OUTERLOOP_SLURM_PARTITION", "debug")
OURS = "tour-20261130T020000-agent-01"
SIBLING = "tour-20261130T020100-agent-02"


def test_queue_shows_slurms_pending_reason_gpus_and_lane_load_when_asked(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, compute="slurm")
    for run_id, agent in ((OURS, "agent-01"), (SIBLING, "agent-02")):
        store.LedgerWriter(store.run_file(settings.home, TARGET, run_id)).append(
            ev.RunQueued(run=run_id, target=TARGET, benchmark="tour", agent=agent))
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    install_channel(ws, {})
    writer = store.LedgerWriter(store.run_file(settings.home, TARGET, SIBLING))
    effects = Effects(settings)
    with watcher_for(settings, ws, TARGET):
        spec = JobSpec(name=f"ol-{SIBLING}-later", command="true", workdir=str(tmp_path),
                       log_dir=str(tmp_path / "logs"), time_minutes=5, gpus=1,
                       begin="now+1hour", partition=PARTITION)
        outcome = Executor(effects, lambda _t: writer).run(
            SubmitJob(target=TARGET, run=SIBLING, purpose="launch", launch="later", spec=spec))
        assert outcome.ok, outcome.error
        job_id = str(outcome.result.job_id)
        try:
            result = subprocess.run([sys.executable, ".outerloop/syscall", "queue", "--wait",
                                     "30"], cwd=ws, capture_output=True, text=True, timeout=60)
        finally:
            effects.compute().cancel(job_id)
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if f"job {job_id}" in x)
    assert "agent-02" in line and "pending (BeginTime)" in line and "1 GPU(s)" in line
    assert f"lane {PARTITION} (sinfo" in result.stdout
