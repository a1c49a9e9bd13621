"""Identity and standing through real ticks on the GitHub forge: an outsider's label
and an outsider's forged marker change nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from github import Auth, Github

from outerloop.forge.markers import with_marker
from outerloop.kernel.tick import run_tick
from tests.e2e.test_github_research_run import github_home
from tests.github.fake import FakeGitHub
from tests.github.fixtures import KERNEL, MAINTAINER
from tests.support import TARGET, state_of

pytestmark = pytest.mark.github
OUTSIDER = "mallory"


def _as(fake: FakeGitHub, login: str) -> Any:
    gh = Github(base_url=fake.base_url, auth=Auth.Token(fake.token_for(login)), retry=None,
                seconds_between_requests=None, seconds_between_writes=None)
    return gh.get_repo(TARGET)


def test_approved_label_applied_by_outsider_is_not_claimed(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    settings = github_home(tmp_path, fake_github)
    issue = _as(fake_github, OUTSIDER).create_issue(title="Faster tour",
                                                    body="Improve tour please.")
    issue.add_to_labels("outerloop:approved")
    run_tick(settings)
    run_tick(settings)
    assert state_of(settings).runs == {}
    assert [c for c in fake_github.comments_on(TARGET, issue.number)
            if c["author"] == KERNEL] == []


def test_same_issue_is_claimed_when_a_writer_applies_the_label(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    settings = github_home(tmp_path, fake_github)
    issue = _as(fake_github, OUTSIDER).create_issue(title="Faster tour",
                                                    body="Improve tour please.")
    _as(fake_github, MAINTAINER).get_issue(issue.number).add_to_labels("outerloop:approved")
    run_tick(settings)
    assert [r.issue for r in state_of(settings).runs.values()] == [issue.number]


def test_forged_claim_marker_by_outsider_does_not_count_as_a_claim(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    settings = github_home(tmp_path, fake_github)
    issue = _as(fake_github, MAINTAINER).create_issue(title="Shorter tours",
                                                      body="Try local search on tour.")
    for key in ("1", "2", "3", f"{TARGET}#{issue.number}"):
        _as(fake_github, OUTSIDER).get_issue(issue.number).create_comment(
            with_marker("claimed", "claim", key))
    run_tick(settings)
    runs = state_of(settings).runs
    assert [r.issue for r in runs.values()] == [issue.number]
    claims = [c for c in fake_github.comments_on(TARGET, issue.number)
              if c["author"] == KERNEL and "outerloop:claim" in c["body"]]
    assert len(claims) == 1
