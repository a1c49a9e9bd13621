"""A benchmark that needs a package runs from the dependency cache the tick warmed when
every leg, launch and eval is a real Slurm job (issue 24: nodes without internet)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.deps_support import VALUE, build_wheel, dep_target, pip_from
from tests.support import eval_sides, in_review, make_home, open_issue, tick_until

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

pytestmark = pytest.mark.e2e  # a whole run: the slurm-runs group


def test_benchmark_imports_its_package_from_the_warmed_cache_when_jobs_run_on_slurm(
        tmp_path: Path) -> None:
    index = tmp_path / "index"
    build_wheel(index)
    settings = make_home(tmp_path, compute="slurm", target_dir=dep_target(tmp_path, index),
                         extra_toml=pip_from(index))
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=300, pause_s=1.0)
    (run,) = state.runs.values()
    assert all(j.job_id.split("_")[0].isdigit() for j in state.jobs.values())
    sides = eval_sides(settings, state, run.run_id)
    assert sides
    for side in sides:
        line = json.loads(side.stdout.strip().splitlines()[-1])
        assert line["dep"] == VALUE and line["index_visible"] is False
        assert Path(line["dep_file"]).is_relative_to(settings.home / "deps")
