"""The integrator (issue 50 point 2) through real ticks on the local forge: two credited
wins of one benchmark that change different files are proposed for combining once (a
kernel ``combine`` issue); a third slot takes it, gets both wins as patches in its home,
builds the combined tree and submits it; the gate measures it like any submission; its
pull request says which it supersedes, and when it merges those are closed."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.forge.markers import parse_markers
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import ParkReason, State
from tests.support import (
    TARGET,
    forge,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    target_with_slots,
    tick_until,
)

pytestmark = pytest.mark.e2e
AGENT = Path(__file__).with_name("integrate_agent.yaml")


def _in_review(count: int):  # type: ignore[no-untyped-def]
    def done(state: State) -> bool:
        return sum(1 for r in state.runs.values() if r.park_reason == ParkReason.REVIEW
                   and r.pr_number is not None) >= count
    return done


def test_two_compatible_wins_are_combined_by_a_third_slot_and_superseded_when_it_merges(
        tmp_path: Path) -> None:
    settings = jobs_import_this_checkout(
        make_home(tmp_path, AGENT, target_dir=target_with_slots(tmp_path, 3)))
    local = forge(settings)
    open_issue(settings, "Shorter tours in the tour module", "Try local search on tour.")
    open_issue(settings, "Shorter tours in the package", "Try local search on tour, again.")
    state = tick_until(settings, _in_review(2), timeout_s=300)
    wins = sorted((r for r in state.runs.values() if r.pr_number is not None),
                  key=lambda r: r.agent)  # (either may reach its PR first)
    assert [r.agent for r in wins] == ["agent-01", "agent-02"]
    assert [r.publish.paths for r in wins if r.publish] == [["solver/tour.py"],
                                                             ["solver/__init__.py"]]
    a, b = sorted(r.pr_number or 0 for r in wins)

    state = tick_until(settings, _in_review(3), timeout_s=300)
    (combined,) = [r for r in state.runs.values() if r.combines]
    assert combined.combines == [a, b] and combined.agent == "agent-03"
    issue = local.get_issue(TARGET, combined.issue or 0)
    assert issue.author == settings.forge.login and f"Combine #{a} and #{b}" in issue.title
    assert [(m.kind, m.key) for m in parse_markers(issue.body)] == [("combine", f"{a}-{b}")]
    patches = sorted(p.name for p in (settings.home / "runs" / combined.run_id / "home"
                                      / "wins").iterdir())
    assert patches == [f"{a}.patch", f"{b}.patch"]
    assert combined.publish is not None
    assert combined.publish.paths == ["solver/__init__.py", "solver/tour.py"]
    assert [v.verdict for v in combined.verdicts][-1] == "improved"
    body = local.get_pr(TARGET, combined.pr_number or 0).body
    assert f"Supersedes #{a}, #{b}: this combines their credited changes" in body
    assert state.combined == {(TARGET, a, b): []}  # proposed once; nothing else to pair

    local.merge_pr(TARGET, combined.pr_number or 0)
    state = tick_until(settings, lambda s: all(r.ended for r in s.runs.values()),
                       timeout_s=300)
    for _ in range(2):
        run_tick(settings)
    state = state_of(settings)
    assert state.runs[combined.run_id].ending == "merged"
    for number in (a, b):
        assert local.get_pr(TARGET, number).state == "closed"
        notes = [c.body for c in local.list_comments(TARGET, number)
                 if "outerloop:superseded" in c.body]
        assert len(notes) == 1 and f"#{combined.pr_number}, merged" in notes[0]


@pytest.mark.github
def test_on_github_two_compatible_wins_are_combined_and_superseded_when_it_merges(
        tmp_path: Path) -> None:
    from tests.e2e.test_github_research_run import _as, github_home
    from tests.github.fake import FakeGitHub
    from tests.github.fixtures import KERNEL, MAINTAINER, finish

    fake = FakeGitHub(tmp_path / "fake-github").start()
    fake.create_repo(TARGET, target_with_slots(tmp_path, 3))
    fake.grant(TARGET, MAINTAINER, "admin")
    fake.grant(TARGET, KERNEL, "write")
    try:
        settings = jobs_import_this_checkout(github_home(tmp_path, fake, script=str(AGENT)))
        repo = _as(fake, MAINTAINER)
        repo.create_issue(title="Shorter tours in the tour module", body="Try 2-opt on tour.")
        repo.create_issue(title="Shorter tours in the package", body="Try 2-opt on tour.")
        state = tick_until(settings, _in_review(2), timeout_s=300)
        a, b = sorted(r.pr_number or 0 for r in state.runs.values())
        state = tick_until(settings, _in_review(3), timeout_s=300)
        (combined,) = [r for r in state.runs.values() if r.combines]
        assert combined.combines == [a, b]
        issue = repo.get_issue(combined.issue)
        assert issue.user.login == KERNEL and f"Combine #{a} and #{b}" in issue.title
        pull = repo.get_pull(combined.pr_number)
        assert f"Supersedes #{a}, #{b}" in pull.body
        pull.merge()
        state = tick_until(settings, lambda s: all(r.ended for r in s.runs.values()),
                           timeout_s=300)
        assert state.runs[combined.run_id].ending == "merged"
        for number in (a, b):
            assert repo.get_pull(number).state == "closed"
            notes = [c.body for c in repo.get_issue(number).get_comments()
                     if "outerloop:superseded" in c.body]
            assert len(notes) == 1
    finally:
        fake.stop()
    finish(fake)
