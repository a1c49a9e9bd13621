"""Recovery of a run whose leg died: the next session is told what it needs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from outerloop.attempt.paths import RunPaths
from tests.support import AGENTS, ended, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

DIE_ONCE = ("test -e .outerloop/died-once || { touch .outerloop/died-once; "
            "kill -9 $PPID; sleep 5; }")
"""Kills the job running the leg (the harness's process), once: a job killed mid-leg."""


def test_first_leg_recovery_gets_the_brief_when_the_first_leg_died(tmp_path: Path) -> None:
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    script["legs"][0] = [{"shell": DIE_ONCE}, {"expect": "# Research brief"},
                         *script["legs"][0]]
    path = tmp_path / "dies-in-leg-1.yaml"
    path.write_text(yaml.safe_dump(script))
    settings = make_home(tmp_path, path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")

    state = tick_until(settings, lambda s: ended(s) or any(
        r.legs >= 2 and not r.leg_open and r.sleeps >= 1 for r in s.runs.values()),
        timeout_s=240)

    (run,) = state.runs.values()
    legs = RunPaths.of(settings.home, run.run_id).legs
    second = (legs / "002-prompt.md").read_text()
    assert second.startswith("# Research brief")
    assert "previous session was interrupted" in second
    assert run.launches and run.launches[0]["name"] == "try-2opt"
