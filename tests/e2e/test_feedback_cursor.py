"""Reviewer comments are never lost: read by the forge's own cursor (the newest stamp the
forge returned, with an overlap and de-duplication by id), never by the tick's clock.
Through real ticks on the local forge: a burst of comments posted while ticks run, and
a tick host whose clock is a day ahead, then set back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml

from outerloop.config import Settings
from outerloop.kernel.tick import run_tick
from outerloop.ledger.records import RunRecord
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


def _reviewed_home(tmp_path: Path) -> tuple[Settings, RunRecord]:
    """A home whose run is parked in review on an open PR; its agent sleeps at every
    wake (40 of them), so the run stays in review however many comments wake it."""
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    script["legs"] = script["legs"][:2] + [[{"syscall": "sleep"}]] * 40
    path = tmp_path / "sleeps-at-every-wake.yaml"
    path.write_text(yaml.safe_dump(script))
    settings = make_home(tmp_path, path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    return settings, run


def _comment_texts(settings: Settings, run_id: str) -> list[str]:
    """The reviewer comments recorded for the run's wakes (what a wake delivers)."""
    run = state_of(settings).runs[run_id]
    return sorted(f.text for sid, f in run.feedback.items() if sid.startswith("c"))


def test_every_comment_reaches_the_run_when_posted_while_ticks_run(tmp_path: Path) -> None:
    settings, run = _reviewed_home(tmp_path)
    assert run.pr_number is not None
    number = run.pr_number
    posted: list[str] = []

    def post_burst() -> None:
        reviewer = forge(settings)
        for i in range(BURST):
            body = f"burst comment {i:03d}"
            reviewer.comment_as(TARGET, number, body, "maintainer")
            posted.append(body)
            time.sleep(BURST_GAP_S)

    poster = threading.Thread(target=post_burst)
    poster.start()
    while poster.is_alive():
        run_tick(settings)
    poster.join()
    for _ in range(3):
        run_tick(settings)
    assert len(posted) == BURST
    seen = _comment_texts(settings, run.run_id)
    lost = sorted(set(posted) - set(seen))
    assert lost == [], f"{len(lost)} of {BURST} comments never reached the run: {lost[:5]}"
    assert seen == sorted(posted)


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
    assert _comment_texts(settings, run.run_id) == sorted(bodies)
