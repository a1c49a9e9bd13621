"""Empty legs are bounded (issue 46): with a model agent every leg is a paid session, so
an agent that hands over nothing the kernel can act on ends its run with a reason,
through real ticks and real jobs on local compute.

- ``sleep`` with nothing staged: the agent is told, and the ``MAX_EMPTY_SLEEPS_IN_A_ROW``-th
  such sleep in a row ends the run (it got 202 legs in one job in ~100 s before);
- any other request refused again and again: one job runs at most ``MAX_LEGS_PER_JOB``
  legs, then the run ends with that reason.

Each run is driven with a timeout, so the unbounded loop fails the test rather than
hanging it; whatever job is left is cancelled at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from outerloop.attempt.leg import MAX_LEGS_PER_JOB
from outerloop.attempt.request import MAX_EMPTY_SLEEPS_IN_A_ROW
from outerloop.config import Settings
from outerloop.ledger.state import State
from tests.support import (
    TARGET,
    forge,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e

SCRIPTED_LEGS = 400
"""More legs than any bound: an unbounded loop plays on for minutes."""
TIMEOUT_S = 120


def _script(path: Path, leg: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"legs": [leg] * SCRIPTED_LEGS}, sort_keys=False))
    return path


@pytest.fixture
def homes() -> Iterator[list[Settings]]:
    """The homes a test drives; their jobs still running at its end are cancelled (an
    unbounded run would otherwise play on after a failed test)."""
    made: list[Settings] = []
    yield made
    from outerloop.compute.factory import make_compute

    for settings in made:
        compute = make_compute(settings)
        for job in state_of(settings).jobs.values():
            if not job.terminal:
                compute.cancel(job.job_id)


def _reported(state: State) -> bool:
    return bool(state.runs) and all(r.ended and r.report_posted for r in state.runs.values())


def _issue_text(settings: Settings, issue: int) -> str:
    return "\n".join(c.body for c in forge(settings).list_comments(TARGET, issue))


def test_run_ends_with_a_reason_when_the_agent_sleeps_with_nothing_staged_again_and_again(
        tmp_path: Path, homes: list[Settings]) -> None:
    settings = jobs_import_this_checkout(make_home(
        tmp_path, _script(tmp_path / "idle.yaml", [{"syscall": "sleep"}])))
    homes.append(settings)
    issue = open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, _reported, timeout_s=TIMEOUT_S)
    (run,) = state.runs.values()
    assert run.legs == MAX_EMPTY_SLEEPS_IN_A_ROW, run.legs
    assert "nothing staged" in run.end_reason
    assert f"{MAX_EMPTY_SLEEPS_IN_A_ROW} times in a row" in run.end_reason
    assert f"{MAX_EMPTY_SLEEPS_IN_A_ROW} times in a row" in _issue_text(settings, issue)


def test_run_ends_at_the_leg_ceiling_when_every_request_of_a_job_is_refused(
        tmp_path: Path, homes: list[Settings]) -> None:
    """A submission with no code change is refused each time (a request, not an empty
    sleep): only the job's leg ceiling ends it."""
    leg = [{"write": {"path": "report.md", "content": "# Nothing changed\n"}},
           {"syscall": "submit --report report.md"}, {"syscall": "sleep"}]
    settings = jobs_import_this_checkout(make_home(tmp_path, _script(tmp_path / "r.yaml", leg)))
    homes.append(settings)
    issue = open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, _reported, timeout_s=TIMEOUT_S)
    (run,) = state.runs.values()
    assert run.legs == MAX_LEGS_PER_JOB, run.legs
    assert f"{MAX_LEGS_PER_JOB} agent legs" in run.end_reason
    assert "no code change" in run.end_reason  # the kernel's last refusal, named
    assert f"{MAX_LEGS_PER_JOB} agent legs" in _issue_text(settings, issue)
