"""A pull request the kernel opened, whose branch a maintainer moved before the kernel
recorded it, is found again, not opened a second time on a fresh branch (issue 48;
chaos's ``moves`` fault beside its tick kills).

The tick dies right after opening the PR (its ``done`` never written); the maintainer
pushes a fix-up onto the PR's branch; the next tick reconciles the open intent by the
forge's facts. The PR's head is now the maintainer's commit, which contains the
kernel's candidate: it is the kernel's PR all the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.kernel.executor import CRASH_FILE
from outerloop.ledger.state import State
from tests.support import (
    TARGET,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e


def _opened(settings: object) -> bool:
    return bool(forge(settings).list_prs(TARGET, "all"))  # type: ignore[arg-type]


def test_pr_whose_branch_a_maintainer_moved_before_its_record_is_found_not_reopened(
        tmp_path: Path) -> None:
    settings = jobs_import_this_checkout(make_home(tmp_path))
    (settings.home / CRASH_FILE).write_text("after-effect:pr:*\n")
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    tick_until(settings, lambda _s: _opened(settings), subprocess_ticks=True, timeout_s=600)
    local = forge(settings)
    (pr,) = local.list_prs(TARGET, "all")
    (run,) = state_of(settings).runs.values()
    assert run.pr_number is None  # the tick died before it recorded the PR
    head = local.branch_head(TARGET, pr.head)
    from outerloop.forge.local import LocalForge

    LocalForge(settings.home / "forge", "maintainer").commit_files(
        TARGET, pr.head, {"docs/maintainer.md": b"A fix-up by the maintainer.\n"},
        "maintainer fix-up", head)

    def recorded(state: State) -> bool:
        return in_review(state) or len(local.list_prs(TARGET, "all")) > 1

    state = tick_until(settings, recorded, subprocess_ticks=True, timeout_s=300)
    prs = [(p.number, p.head, p.state) for p in local.list_prs(TARGET, "all")]
    assert prs == [(pr.number, pr.head, "open")]
    assert state.runs[run.run_id].pr_number == pr.number
