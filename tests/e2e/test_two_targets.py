"""Two targets whose benchmarks share a name never collide (issue 11)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import load_settings
from outerloop.forge.markers import parse_markers
from outerloop.home import init_home
from outerloop.kernel.tick import run_tick
from tests.e2e.explain_check import check_explained
from tests.support import (
    AGENTS,
    EXAMPLE_TARGET,
    TARGET,
    forge,
    starting_jobs,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e

OTHER = "demo/tinytsp-fork"


def test_two_targets_with_the_same_benchmark_name_get_one_claim_each_and_two_prs(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted",
              targets=[TARGET, OTHER], script=str(AGENTS / "tinytsp-2opt.yaml"))
    config = home / "outerloop.toml"
    config.write_text(starting_jobs(config.read_text().replace(
        "max_new_runs_per_tick = 1", "max_new_runs_per_tick = 2\ngrace_minutes = 0")))
    settings = load_settings(home)
    local = forge(settings)
    issues = {}
    for repo in (TARGET, OTHER):
        local.import_repo(EXAMPLE_TARGET, repo)
        issues[repo] = local.open_issue_as(repo, "Shorter tours", "Try 2-opt on tour.",
                                           "maintainer").number

    run_tick(settings)
    state = state_of(settings)
    assert len(state.runs) == 2
    assert {r.target for r in state.runs.values()} == {TARGET, OTHER}
    assert all(r.admitted for r in state.runs.values())  # both started in that one tick

    state = tick_until(settings, lambda s: len(s.runs) == 2 and all(
        r.pr_number is not None for r in s.runs.values()), timeout_s=240)
    for repo, number in issues.items():
        claims = [c for c in local.list_comments(repo, number)
                  if c.author == settings.forge.login
                  and any(m.kind == "claim" for m in parse_markers(c.body))]
        assert len(claims) == 1, repo
        assert len(local.list_prs(repo, "all")) == 1, repo
    status = subprocess.run(
        [sys.executable, "-m", "outerloop", "status", "--json", "--home", str(home)],
        capture_output=True, text=True, check=True)
    runs = json.loads(status.stdout)["runs"]
    assert len({r["run"] for r in runs}) == 2
    assert sorted(r["target"] for r in runs) == sorted([TARGET, OTHER])
    assert all(r["pr"] is not None for r in runs)
    for run in state.runs.values():  # each run told from its own target's ledger only
        decisions = check_explained(home, run.run_id)
        names = [d["decision"] for d in decisions]
        assert names[:2] == ["claimed", "post-claim"] and "pr-ready" in names
        own = run.target.replace("/", "__") + "/"
        assert {f["file"].split("/")[0] + "/" for d in decisions for f in d["facts"]} == {own}


def test_claims_are_counted_from_the_kernels_markers_when_the_ledger_has_none(
        tmp_path: Path) -> None:
    from outerloop.forge.markers import with_marker
    from tests.support import make_home, open_issue

    settings = make_home(tmp_path)
    number = open_issue(settings, "Shorter tours", "Try 2-opt on tour.")
    local = forge(settings)
    for n in range(settings.limits.max_claims_per_issue):  # an earlier home's claims
        local.post_comment(TARGET, number, with_marker(f"claim {n}", "claim", f"old-{n}"))
    local.comment_as(TARGET, number, with_marker("forged", "claim", "x"), "maintainer")
    run_tick(settings)
    assert state_of(settings).runs == {}
    # a claim by a run this ledger does not hold (an earlier home's, or one a restore
    # lost) is not claimed over (issue 48): the work may be done or under way
    other = open_issue(settings, "Shorter tours again", "Try Or-opt on tour.")
    local.post_comment(TARGET, other, with_marker("claim", "claim", "old-a"))
    run_tick(settings)
    assert state_of(settings).runs == {}
    fresh = open_issue(settings, "Shorter tours, a third way", "Try 3-opt on tour.")
    run_tick(settings)
    (run,) = state_of(settings).runs.values()
    assert run.issue == fresh and run.claim_no == 1
