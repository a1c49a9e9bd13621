"""The operator's time caps against what a target's jobs need (``time_caps``, issue 51):
a cap below need is named with the setting, the figure and the fix; a session cap
between the floor and the contract's job minutes shortens the session instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from outerloop.config import ComputeSettings, Settings
from outerloop.contract import load_contract_text
from outerloop.limits import target_limits
from outerloop.time_caps import SESSION_JOB_FLOOR_MINUTES, pair_minutes, shortfalls
from tests.support import EXAMPLE_TARGET

CONTRACT = load_contract_text((EXAMPLE_TARGET / ".outerloop.yaml").read_text())
REPO = "demo/tinytsp"
SCORED_NEED = pair_minutes(5, scored=True)  # eval_minutes 5, a trusted scorer: 22


def _settings(**compute: Any) -> Settings:
    return Settings(home=Path("/nonexistent"),
                    compute=ComputeSettings.model_validate({"kind": "slurm", **compute}))


def test_eval_cap_below_the_pair_jobs_need_names_the_setting_figure_and_fix() -> None:
    found = shortfalls(_settings(eval={"time_minutes": 1}), REPO, CONTRACT)
    assert len(found) == 2  # both benchmarks
    assert found[0].startswith(f"[compute.eval] time_minutes = 1 is below the "
                               f"{SCORED_NEED} minutes benchmark tour's")
    assert f"raise [compute.eval] time_minutes to at least {SCORED_NEED}" in found[0]
    assert "benchmarks[0].eval_minutes" in found[0]


def test_eval_cap_at_the_pair_jobs_need_is_no_shortfall() -> None:
    assert shortfalls(_settings(eval={"time_minutes": SCORED_NEED}), REPO, CONTRACT) == []
    assert shortfalls(_settings(), REPO, CONTRACT) == []


def test_a_compute_wide_cap_is_named_as_compute_when_the_kind_has_none() -> None:
    found = shortfalls(_settings(time_minutes=10), REPO, CONTRACT)
    assert found and all(line.startswith("[compute] time_minutes = 10") for line in found)


def test_session_cap_below_the_floor_is_a_shortfall() -> None:
    found = shortfalls(_settings(session={"time_minutes": SESSION_JOB_FLOOR_MINUTES - 1}),
                       REPO, CONTRACT)
    assert len(found) == 1 and found[0].startswith(
        f"[compute.session] time_minutes = {SESSION_JOB_FLOOR_MINUTES - 1} is below the "
        f"{SESSION_JOB_FLOOR_MINUTES}-minute floor")


def test_session_cap_above_the_floor_shortens_the_session_instead() -> None:
    settings = _settings(session={"time_minutes": 60})
    assert shortfalls(settings, REPO, CONTRACT) == []
    limits = target_limits(CONTRACT, settings)
    assert limits.attempt_job_minutes == 60 and limits.session_minutes == 40
