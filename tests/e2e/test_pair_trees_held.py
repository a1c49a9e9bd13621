"""A retried leg never rewrites a submitted pair job's trees.

Seen in the crash-recovery suite under load: the wake job died after its intent, the
recovery leg played the submission again, and ``submit_pair`` checked every pair's
trees out afresh, removing a scorer's tree while that pair's job ran in it ("can't open
file .../score-0/score.py"): the gate recorded an eval error and the run ended
``negative-result`` for a candidate that measured better. Here a real run reaches
review, then the leg's submit of one of its pair jobs is played again (as a recovery
leg plays it): the job is found by its intent and its trees are left as they are.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.attempt.context import RunContext
from outerloop.attempt.pair_flow import submit_pair
from outerloop.vocabulary import JobPurpose
from tests.support import in_review, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e


def test_a_pair_submitted_again_by_a_retried_leg_keeps_its_job_and_its_trees(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    ctx = RunContext.load(settings, run.run_id)
    pair_jobs = [j for j in ctx.state.jobs.values()
                 if j.run == run.run_id and j.purpose == JobPurpose.EVAL]
    assert len(pair_jobs) >= 6  # three couples
    job = pair_jobs[0]
    trees = ctx.paths.tree(job.name)
    held = [trees / side / "held-by-the-job" for side in ("0", "score-0", "1", "score-1")]
    for mark in held:  # what a running job leaves in its trees (a scorer's __pycache__)
        assert mark.parent.is_dir(), mark.parent
        mark.write_text("in use")
    (candidate,) = run.trees.values()
    assert run.base_sha is not None
    again = submit_pair(ctx, job.name, ctx.benchmark, 7, ctx.benchmark.eval_minutes, True,
                        run.base_sha, candidate)
    assert again is not None and again.base == job.job_id  # found by its intent
    assert [mark.exists() for mark in held] == [True] * len(held)
    assert {j.name for j in ctx.state.jobs.values()} == {j.name for j in state.jobs.values()}
