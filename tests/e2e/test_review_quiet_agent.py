"""A credited run in review is never ended by an agent that answers review wakes without
handing over. A session that ends cleanly without a request in review means "nothing to
add" (``attempt/request.py``); counted across wakes (``empty_legs`` resets only on a
request), the third such wake used to end the run ``negative-result`` with its ready
PR open, so three reviewer comments answered quietly lost a credited win."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from outerloop.ledger.state import State
from tests.support import AGENTS, TARGET, forge, in_review, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e
COMMENTS = 4


def _quiet_in_review(tmp_path: Path) -> Path:
    """The 2-opt agent up to its PR; at every later wake it looks and ends its session
    without `sleep` or `stop`."""
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    script["legs"] = script["legs"][:2] + [[{"shell": "git status --short"}]] * 12
    path = tmp_path / "quiet-in-review.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def test_reviewer_comments_answered_without_a_hand_over_never_end_a_credited_run(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, _quiet_in_review(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    reviewer = forge(settings)
    for n in range(COMMENTS):
        legs = run.legs
        reviewer.comment_as(TARGET, run.pr_number, f"question {n}: why 2-opt?", "maintainer")

        def answered(s: State, legs: int = legs, run_id: str = run.run_id) -> bool:
            r = s.runs[run_id]
            return r.ended or (r.legs > legs and in_review(s))
        state = tick_until(settings, answered)
        run = state.runs[run.run_id]
        assert not run.ended, (n, run.ending, run.end_reason)
    assert run.legs >= 2 + COMMENTS and run.empty_legs >= COMMENTS
    assert reviewer.get_pr(TARGET, run.pr_number).state == "open"
