"""Reviewer comments are never lost: read by the forge's own cursor (the newest stamp the
forge returned, with an overlap and de-duplication by id), never by the tick's clock.
Through real ticks: a burst of comments and review line comments posted while ticks run
(on the local forge and on the fake GitHub), and a tick host whose clock is a day
ahead, then set right (real ``outerloop tick`` processes)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from github import Auth, Github

from outerloop.config import Settings
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import RunRecord
from tests.e2e.test_github_research_run import github_home
from tests.github.fake import FakeGitHub
from tests.github.fixtures import MAINTAINER
from tests.support import (
    AGENTS,
    TARGET,
    forge,
    in_review,
    make_home,
    open_issue,
    state_of,
    tick_process,
    tick_until,
)

pytestmark = pytest.mark.e2e

BURST = 120
BURST_GAP_S = 0.03
DAY_AHEAD = {"OUTERLOOP_CLOCK_OFFSET_S": str(24 * 3600)}
CLOCK_RIGHT = {"OUTERLOOP_CLOCK_OFFSET_S": "0"}


def _sleepy_agent(tmp_path: Path) -> Path:
    """The 2-opt agent up to its PR, then asleep at every wake (40 of them), so the run
    stays in review however many comments wake it."""
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    script["legs"] = script["legs"][:2] + [[{"syscall": "sleep"}]] * 40
    path = tmp_path / "sleeps-at-every-wake.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def _reviewed_home(tmp_path: Path) -> tuple[Settings, RunRecord]:
    """A home (local forge) whose run is parked in review on an open PR."""
    settings = make_home(tmp_path, _sleepy_agent(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    return settings, run


def _feedback_texts(settings: Settings, run_id: str) -> list[str]:
    """The reviewer comments and review comments recorded for the run's wakes (what a
    wake delivers), each once."""
    run = state_of(settings).runs[run_id]
    return sorted(f.text for sid, f in run.feedback.items() if sid.startswith(("c", "rc")))


def _burst_while_ticking(settings: Settings, post: Callable[[int, str], None]) -> list[str]:
    """Post ``BURST`` comments (every fourth a review's line comment) from a thread
    while ticks run back to back here, then tick 3 more times; what was posted."""
    posted: list[str] = []

    def burst() -> None:
        for i in range(BURST):
            body = f"burst comment {i:03d}"
            post(i, body)
            posted.append(body)
            time.sleep(BURST_GAP_S)

    poster = threading.Thread(target=burst)
    poster.start()
    while poster.is_alive():
        run_tick(settings)
    poster.join()
    for _ in range(3):
        run_tick(settings)
    assert len(posted) == BURST
    return sorted(posted)


def _assert_all_delivered(settings: Settings, run_id: str, posted: list[str]) -> None:
    seen = _feedback_texts(settings, run_id)
    lost = sorted(set(posted) - set(seen))
    assert lost == [], f"{len(lost)} of {BURST} comments never reached the run: {lost[:5]}"
    assert seen == posted


def test_every_comment_reaches_the_run_when_posted_while_ticks_run(tmp_path: Path) -> None:
    settings, run = _reviewed_home(tmp_path)
    number = run.pr_number or 0
    reviewer = forge(settings)

    def post(i: int, body: str) -> None:
        if i % 4 == 3:
            reviewer.review_as(TARGET, number, "", "maintainer",
                               comments=[("solver/tour.py", 1 + i, body)])
        else:
            reviewer.comment_as(TARGET, number, body, "maintainer")

    _assert_all_delivered(settings, run.run_id, _burst_while_ticking(settings, post))


@pytest.mark.github
def test_every_comment_reaches_the_run_when_posted_on_github_while_ticks_run(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    settings = github_home(tmp_path, fake_github, str(_sleepy_agent(tmp_path)))
    maintainer = Github(base_url=fake_github.base_url, retry=None,
                        auth=Auth.Token(fake_github.token_for(MAINTAINER)),
                        seconds_between_requests=None, seconds_between_writes=None)
    repo = maintainer.get_repo(TARGET)
    repo.create_issue(title="Shorter tours", body="Try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=180)
    (run,) = state.runs.values()
    pull = repo.get_pull(run.pr_number or 0)

    def post(i: int, body: str) -> None:
        if i % 4 == 3:
            pull.create_review(body="", event="COMMENT", comments=[
                {"path": "solver/tour.py", "line": 1 + i, "body": body}])
        else:
            pull.create_issue_comment(body)

    _assert_all_delivered(settings, run.run_id, _burst_while_ticking(settings, post))


def test_every_comment_reaches_the_run_when_the_tick_clock_is_a_day_ahead(
        tmp_path: Path) -> None:
    settings, run = _reviewed_home(tmp_path)
    assert run.pr_number is not None
    reviewer = forge(settings)
    bodies = []
    for n, env in enumerate([DAY_AHEAD, DAY_AHEAD, CLOCK_RIGHT, CLOCK_RIGHT]):
        body = f"comment {n} (tick clock {'ahead' if env is DAY_AHEAD else 'right'})"
        reviewer.comment_as(TARGET, run.pr_number, body, "maintainer")
        bodies.append(body)
        done = tick_process(settings, env)
        assert done.returncode == 0, done.stderr
    assert _feedback_texts(settings, run.run_id) == sorted(bodies)
