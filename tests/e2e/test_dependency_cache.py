"""A benchmark that needs a package its jobs cannot fetch runs from the cache the tick
warmed (issue 24: compute nodes without internet)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.deps_support import PACKAGE, VALUE, build_wheel, dep_target, pip_from
from tests.support import eval_sides, in_review, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e


def test_benchmark_imports_its_package_from_the_warmed_cache_when_jobs_cannot_reach_the_index(
        tmp_path: Path) -> None:
    assert importlib.util.find_spec(PACKAGE) is None  # only the cache can provide it
    index = tmp_path / "index"
    build_wheel(index)
    settings = make_home(tmp_path, target_dir=dep_target(tmp_path, index),
                         extra_toml=pip_from(index))
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=240)
    (run,) = state.runs.values()
    sides = eval_sides(settings, state, run.run_id)
    assert sides
    cache = settings.home / "deps"
    for side in sides:
        line = json.loads(side.stdout.strip().splitlines()[-1])
        assert line["dep"] == VALUE
        assert Path(line["dep_file"]).is_relative_to(cache)
        assert line["index_visible"] is False
