"""The whole research run (issue -> PR -> review -> merge) with ``compute = "slurm"``:
every leg, launch and eval is a real Slurm job, observed by real ticks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import TARGET, ended, forge, in_review, make_home, open_issue, tick_until

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

pytestmark = pytest.mark.e2e  # a whole run: the slurm-runs group


def test_issue_becomes_merged_run_when_jobs_run_on_slurm(tmp_path: Path) -> None:
    settings = make_home(tmp_path, compute="slurm")
    issue = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=300, pause_s=1.0)
    (run,) = state.runs.values()
    assert run.pr_number is not None and run.issue == issue
    slurm_ids = [j.job_id for j in state.jobs.values() if j.run == run.run_id]
    assert slurm_ids and all(int(j.split("_")[0]) < 10_000_000 for j in slurm_ids)
    (launch,) = run.launches
    assert launch.array == 2

    local = forge(settings)
    local.comment_as(TARGET, run.pr_number, "Does 2-opt keep the runtime small?", "maintainer")
    tick_until(settings, lambda s: any(
        "Thanks for the review" in c.body for c in
        local.list_comments(TARGET, run.pr_number)), timeout_s=300, pause_s=1.0)

    local.merge_pr(TARGET, run.pr_number)
    state = tick_until(settings, ended, timeout_s=300, pause_s=1.0)
    (run,) = state.runs.values()
    assert run.ending == "merged"
    assert state.leaders[(TARGET, "tour")].run == run.run_id
    assert all(j.terminal for j in state.jobs.values())
