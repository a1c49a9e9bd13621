"""Steering from the issue thread (issue 50 point 4): a maintainer's comment on a live
run's issue reaches the run's next wake, fenced and attributed, once; a comment by
someone without standing, and the discussion before the claim, do not. Through real
ticks on the local forge with local compute and a scripted agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.ledger.state import State
from tests.support import TARGET, ended, forge, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

STEER = "STEER-42: keep the change inside tour.py and try or-opt next"
DRIVE_BY = "DRIVEBY-9: rewrite it all in Rust"
BEFORE = "BEFORE-3: the discussion before anyone claimed this"

AGENT = """\
legs:
  - - write: {path: solver/note.txt, content: "first"}
    - syscall: 'launch --name wait-a-bit --minutes 5 --why "hold the run parked" -- sleep 8'
    - syscall: sleep
  - - expect: "STEER-42: keep the change inside tour.py"
    - syscall: 'launch --name again --minutes 5 --why "one more wake" -- sleep 1'
    - syscall: sleep
  - - expect: "again"
    - syscall: stop
"""


def _parked_on_jobs(state: State) -> bool:
    return any(r.state == "parked" and r.park_reason == "jobs" and r.legs == 1
               for r in state.runs.values())


def test_a_maintainers_issue_comment_reaches_the_live_runs_next_wake_once(
        tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENT)
    settings = make_home(tmp_path, agent)
    local = forge(settings)
    local.set_role("drive-by", "none")
    issue = open_issue(settings, "Shorter tours", "Try anything on tour.")
    local.comment_as(TARGET, issue, BEFORE, "maintainer")
    state = tick_until(settings, _parked_on_jobs)
    (run,) = state.runs.values()
    local.comment_as(TARGET, issue, STEER, "maintainer")
    local.comment_as(TARGET, issue, DRIVE_BY, "drive-by")

    state = tick_until(settings, ended, timeout_s=180)
    run = state.runs[run.run_id]
    assert run.ending == "negative-result", run.end_reason
    legs = settings.home / "runs" / run.run_id / "legs"
    wake = (legs / "002-prompt.md").read_text()
    section = wake.split("(issue comment)", 1)[1]
    assert "`maintainer`" in wake.split("(issue comment)", 1)[0].rsplit("###", 1)[1]
    assert STEER in section.split("```", 2)[1]  # quoted inside the fence, as data
    assert DRIVE_BY not in wake and BEFORE not in wake
    assert STEER not in (legs / "003-prompt.md").read_text()  # delivered once
