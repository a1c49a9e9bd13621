"""A crash after every effect's intent and after every effect of one full run never
duplicates a job, a comment or a pull request, and the run reaches the same ending.

Crash points are fnmatch patterns over ``after-intent:<key>`` / ``after-effect:<key>``
written to ``<home>/CRASH_AT``; each fires once, in whichever process (tick or job)
reaches it. Ticks run as real processes, so a crash kills only that tick.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from outerloop.kernel.executor import CRASH_FILE
from outerloop.ledger.state import State
from tests.support import TARGET, ended, forge, in_review, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

TICK_SIDE = [
    f"after-{phase}:{key}"
    for key in ("comment:*:claim:*", "workspace:*", "job:ol-*-climb", "pr:*",
                "job:ol-*-review-*", "comment:*:reply:*", "comment:*:report:*")
    for phase in ("intent", "effect")
]
# Job-side points, two per run and in different legs (a run recovers from a few
# deaths of its jobs; more in a row is treated as a broken run and aborted).
PAIR = "ol-*-" + "[0-9a-f]" * 10
"""An eval pair job: ``ol-<run>-<token>`` (``attempt/pairs.py``); a submission's first
look submits six (three couples), one after another."""
JOB_SIDE = [
    ("after-intent:job:ol-*-s1-try-2opt", f"after-effect:job:{PAIR}"),
    ("after-effect:job:ol-*-s1-try-2opt", f"after-intent:job:{PAIR}"),
    ("after-intent:job:ol-*-wake-1", "after-effect:job:ol-*-wake-2"),
    ("after-effect:job:ol-*-wake-1", f"after-intent:job:{PAIR}"),
    (f"after-intent:job:{PAIR}", f"after-effect:job:{PAIR}"),
]


def _assert_no_duplicates(settings: object, state: State) -> None:
    home = settings.home  # type: ignore[attr-defined]
    names = home / "jobs" / "names"
    per_name = {d.name: [p for p in d.iterdir() if p.name != "latest"] for d in names.iterdir()}
    twice = {n: len(ids) for n, ids in per_name.items() if len(ids) > 1}
    assert twice == {}
    local = forge(settings)  # type: ignore[arg-type]
    assert len(local.list_prs(TARGET, "all")) == 1
    markers = Counter()
    for number in (1, 2):
        for comment in local.list_comments(TARGET, number):
            for line in comment.body.splitlines():
                if line.startswith("<!-- outerloop:"):
                    markers[line] += 1
    assert [m for m, n in markers.items() if n > 1] == []


def _crash_file(settings: object, points: list[str] | tuple[str, ...]) -> Path:
    path: Path = settings.home / CRASH_FILE  # type: ignore[attr-defined]
    path.write_text("".join(p + "\n" for p in points))
    return path


def test_full_run_reaches_merged_once_when_every_tick_effect_crashes(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    crash_file = _crash_file(settings, TICK_SIDE)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review, subprocess_ticks=True, timeout_s=240)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    local = forge(settings)
    local.comment_as(TARGET, run.pr_number, "Does 2-opt keep the runtime small?", "maintainer")
    tick_until(settings, lambda s: any("outerloop:reply" in c.body for c in
                                       local.list_comments(TARGET, run.pr_number or 0)),
               subprocess_ticks=True, timeout_s=240)
    local.merge_pr(TARGET, run.pr_number)
    tick_until(settings, lambda s: ended(s) and any(
        "outerloop:report" in c.body for c in local.list_comments(TARGET, 1)),
        subprocess_ticks=True, timeout_s=240)
    tick_until(settings, lambda s: True, subprocess_ticks=True)
    state = tick_until(settings, ended, subprocess_ticks=True)
    assert crash_file.read_text().strip() == ""
    (run,) = state.runs.values()
    assert run.ending == "merged"
    _assert_no_duplicates(settings, state)


@pytest.mark.parametrize("points", JOB_SIDE, ids=lambda p: "+".join(x[6:24] for x in p))
def test_run_reaches_review_once_when_job_effects_crash(tmp_path: Path,
                                                         points: tuple[str, str]) -> None:
    settings = make_home(tmp_path)
    crash_file = _crash_file(settings, points)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review, subprocess_ticks=True, timeout_s=480)
    assert crash_file.read_text().strip() == ""
    (run,) = state.runs.values()
    assert run.verdicts[-1].verdict == "improved"
    _assert_no_duplicates(settings, state)
